"""One big file indexed in ranges: the file is cut at record boundaries, workers
prescan ranges (lines found, headers parsed, kernels found) and the loading thread applies them
in file order, reading the other ranges itself. The index must be the one a single read makes,
whatever the cut points and whichever ranges were prescanned: compiles open at a cut, string
tables, episode counters (torch._dynamo.reset) and header caches included."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from pathlib import Path

import pytest
from conftest import FIXTURES, SAMPLES
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from model_equal import differences

from tcview.ingest import index, parallel, tracefile
from tcview.ingest.index import TraceSet
from tcview.ingest.load import Hooks
from tcview.ingest.source import load_source
from tcview.ingest.tracefile import BOUNDARY, KERNEL_LINE, boundaries, kernel_defs, prescan

# Real traces with output code, graph breaks, recompiles, resets, and the hostile fixtures
# (junk lines, bad JSON, wrong types, missing strings, truncation, long lines).
FILES = [
    next((SAMPLES / "cpu_breaks_recompiles" / "trace").iterdir()),
    next((SAMPLES / "gpu_triton_user" / "trace").iterdir()),
    *sorted((FIXTURES / "hostile").glob("*.log")),
]

IGNORE = ("version",)  # a count of changes (for redraws): one per feed, and a split feeds more


@pytest.fixture(scope="module")
def files(fixture_runs: Path) -> list[Path]:
    return [*FILES, *sorted((fixture_runs / "resets" / "trace").glob("*.log"))]


def _serial(path: Path) -> TraceSet:
    ts = TraceSet(path)
    tf = ts.add_file(path)
    tf.feed_from(Hooks())
    tf.finish()
    return ts


def _in_ranges(path: Path, targets: list[int], prescanned: list[bool]) -> tuple[TraceSet, int]:
    """Indexed as `_feed_split` does, with these cut targets; range i is prescanned (and sent
    through pickle, as from a worker) when prescanned[i] says so, the last one never."""
    ts = TraceSet(path)
    tf = ts.add_file(path)
    size = path.stat().st_size
    cuts = boundaries(path, targets, size)
    ranges = list(zip([0, *cuts], [*cuts, size], strict=True))
    applied = 0
    for i, (lo, hi) in enumerate(ranges):
        if i < len(ranges) - 1 and prescanned[i % len(prescanned)]:
            tf.apply_lines(pickle.loads(pickle.dumps(prescan(path, lo, hi))))
            applied += 1
        else:
            tf.feed_range(Hooks(), lo, hi)
    tf.finish()
    return ts, applied


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(0, 100),
    st.lists(st.floats(0, 1), min_size=1, max_size=30),
    st.lists(st.booleans(), min_size=1, max_size=8),
)
def test_any_split_into_prescanned_ranges_equals_one_read(
    files: list[Path], which: int, targets: list[float], prescanned: list[bool]
) -> None:
    path = files[which % len(files)]
    size = path.stat().st_size
    split, _ = _in_ranges(path, [int(t * size) for t in targets], prescanned)
    assert differences(_serial(path), split, IGNORE) == []


def test_every_record_boundary_cut_equals_one_read(files: list[Path]) -> None:
    """Each range one line long, every one prescanned: every record crosses a cut."""
    for path in files:
        data = path.read_bytes()
        cuts = [m.start() + 1 for m in BOUNDARY.finditer(data)]
        split, applied = _in_ranges(path, cuts, [True])
        assert applied >= min(len(cuts), 1), path
        assert differences(_serial(path), split, IGNORE) == [], path.name


def test_a_prescanned_range_sends_each_context_once() -> None:
    """A worker's result holds one object per distinct context of its fast-path headers, so
    that it is pickled and read back once: a big file's range 0.53 -> 0.31 MB."""
    path = FILES[1]  # chromium events and describe_* headers, a few compiles
    lines = prescan(path, 0, path.stat().st_size).lines
    segs = [line[-1] for line in lines if len(line) in (2, 3)]
    assert len(segs) > 20 and len(set(segs)) < len(segs) / 4
    assert len({id(seg) for seg in segs}) == len(set(segs))
    back = pickle.loads(pickle.dumps(lines))
    assert len({id(line[-1]) for line in back if len(line) in (2, 3)}) == len(set(segs))


def test_a_boundary_past_a_long_payload_is_found(tmp_path: Path) -> None:
    """A boundary is looked for in a small block first, then in larger ones: one behind a
    payload longer than several blocks (an output code's) is found all the same."""
    path = tmp_path / "t.log"
    payload = b"\tx = 1\n" * 400_000  # 2.8 MB
    path.write_bytes(b"H1\n" + payload + b"H2\n\tx\n")
    size = path.stat().st_size
    assert boundaries(path, [10, 1_000_000], size) == [3 + len(payload)]


def test_boundaries_are_line_starts_of_records(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    path.write_bytes(b"H1\n\tpay\n\tload\n\nH2\n\tx\nH3\n")
    size = path.stat().st_size
    # Inside H1's payload, on the empty line, on H2 itself, past H3: the next header or none.
    assert boundaries(path, [4, 15, 17, 30], size) == [15, 21]
    assert boundaries(path, [0], size) == [15]  # 0 is no cut: the first record starts there
    assert boundaries(path, [size - 1], size) == []


def test_a_big_file_is_split_across_worker_processes(
    files: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the loader and real workers (fork and spawn): ranges of 4 KB."""
    monkeypatch.setattr(index, "SPLIT_MIN_BYTES", 1)
    monkeypatch.setattr(index, "RANGE_BYTES", 4096)
    for path in (files[0], files[-1]):
        monkeypatch.setenv(parallel.JOBS_ENV, "1")
        serial = load_source(str(path), cache=False)
        assert isinstance(serial, TraceSet) and serial.load_stats.ranges == 0
        monkeypatch.setenv(parallel.JOBS_ENV, "3")
        for method in ("fork", "spawn"):
            monkeypatch.setattr(parallel, "start_method", lambda m=method: m)
            split = load_source(str(path), cache=False)
            assert isinstance(split, TraceSet)
            stats = split.load_stats
            assert stats.start_method == method and stats.worker_errors == []
            assert stats.ranges > 3 and 0 < stats.prescanned < stats.ranges
            assert differences(serial, split, IGNORE) == []
            assert split.summary_counts() == serial.summary_counts()


def test_a_range_too_long_to_prescan_is_read_here(
    files: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ranges past PRESCAN_MAX (a record longer than the range size) are not sent."""
    monkeypatch.setattr(index, "SPLIT_MIN_BYTES", 1)
    monkeypatch.setattr(index, "RANGE_BYTES", 2048)
    monkeypatch.setattr(index, "PRESCAN_MAX", 6000)
    monkeypatch.setattr(tracefile, "PRESCAN_MAX", 6000)  # the forked workers' limit too
    monkeypatch.setattr(parallel, "start_method", lambda: "fork")
    monkeypatch.setenv(parallel.JOBS_ENV, "1")
    serial = load_source(str(files[0]), cache=False)
    monkeypatch.setenv(parallel.JOBS_ENV, "3")
    split = load_source(str(files[0]), cache=False)
    assert isinstance(split, TraceSet)
    stats = split.load_stats
    assert stats.worker_errors == [] and 0 < stats.prescanned < stats.ranges
    assert differences(serial, split, IGNORE) == []


def test_cuts_inside_lines_still_give_one_reads_index(
    files: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that changed between cutting and reading: a range that does not start at a
    line is refused by `apply_lines`, and the rest is read here."""
    monkeypatch.setattr(index, "SPLIT_MIN_BYTES", 1)
    monkeypatch.setattr(index, "RANGE_BYTES", 4096)
    monkeypatch.setattr(parallel, "start_method", lambda: "fork")

    def cuts(path: Path, targets: list[int], size: int) -> list[int]:
        # every other cut 5 bytes into a line: ranges that start there end at a boundary
        return [c + 5 * (i % 2) for i, c in enumerate(boundaries(path, targets, size))]

    monkeypatch.setattr(index, "boundaries", cuts)
    monkeypatch.setenv(parallel.JOBS_ENV, "1")
    serial = load_source(str(files[0]), cache=False)
    monkeypatch.setenv(parallel.JOBS_ENV, "3")
    split = load_source(str(files[0]), cache=False)
    assert isinstance(split, TraceSet) and split.load_stats.ranges > 3
    assert differences(serial, split, IGNORE) == []


def test_small_files_and_one_core_stay_serial(files: list[Path]) -> None:
    os.environ[parallel.JOBS_ENV] = "4"
    try:
        model = load_source(str(files[0]), cache=False)
    finally:
        del os.environ[parallel.JOBS_ENV]
    assert isinstance(model, TraceSet)
    assert model.load_stats.ranges == 0 and model.load_stats.workers == 0


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                b"\tbuf0 = async_compile.triton(",  # a whole definition, and its pieces
                b"\n",
                b"\t",
                b" = async_compile.",
                b"cpp_pybinding(",
                b"buf0",
                b" ",
            ]
        ),
        max_size=40,
    ),
    st.integers(0, 60),
    st.integers(0, 400),
)
@example([b"\t", b"\tbuf0 = async_compile.triton(", b"\tbuf0 = async_compile.triton("], 0, 400)
@example([b"\tbuf0 = async_compile.triton(", b" = async_compile."], 0, 400)
def test_kernel_definitions_found_from_their_mark_are_the_regexs(
    parts: list[bytes], lo: int, upto: int
) -> None:
    buf = b"".join(parts)
    lo, upto = min(lo, len(buf)), min(upto, len(buf))
    want = [(m.start(), m.groups()) for m in KERNEL_LINE.finditer(buf, lo, upto)]
    assert [(m.start(), m.groups()) for m in kernel_defs(buf, lo, upto)] == want


def test_workers_use_idle_cores_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ranges are applied in order: a worker without a core of its own only makes the
    loading thread wait. This process counts as one of the load; TCVIEW_JOBS overrides."""
    monkeypatch.delenv(parallel.JOBS_ENV, raising=False)
    monkeypatch.setattr(os, "process_cpu_count", lambda: 2, raising=False)
    monkeypatch.setattr(parallel, "LOADAVG", "/nonexistent")  # the load average alone
    for load, workers in ((0.0, 1), (1.0, 1), (1.5, 0), (4.0, 0)):
        monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, load, load))
        assert parallel.idle_workers() == workers, load
    monkeypatch.setattr(os, "process_cpu_count", lambda: 16, raising=False)
    assert parallel.idle_workers() == 12  # load 4: 3 other busy cores
    monkeypatch.setenv(parallel.JOBS_ENV, "2")
    assert parallel.idle_workers() == 1


def test_cores_freed_just_now_count_as_idle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The load average still counts jobs that ended in the last minute (a benchmark's
    previous round): the tasks runnable now say whether a core is free."""
    monkeypatch.delenv(parallel.JOBS_ENV, raising=False)
    monkeypatch.setattr(os, "process_cpu_count", lambda: 2, raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.8, 1.2, 0.9))
    loadavg = tmp_path / "loadavg"
    monkeypatch.setattr(parallel, "LOADAVG", str(loadavg))
    loadavg.write_text("1.80 1.20 0.90 1/345 12345\n")  # this process alone runs now
    assert parallel.idle_workers() == 1
    loadavg.write_text("1.80 1.20 0.90 2/345 12345\n")  # and another job
    assert parallel.idle_workers() == 0
    monkeypatch.setattr(os, "getloadavg", lambda: (0.2, 0.2, 0.2))  # threads of this process
    assert parallel.idle_workers() == 1


# ---------------------------------------------------------------------- fast-path headers

_KEYS = st.sampled_from(["id", "ndim", "size", "stride", "dtype", "x_y", "é", "a b", "frame_id"])
_SCALARS = (
    st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.booleans()
    | st.none()
    | st.text(max_size=12)
    | st.sampled_from(["device(type='cuda', index=0)", 'say "hi"', "tab\there", "\x7f", "\\"])
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=8,
)
_CONTEXT = st.lists(
    st.tuples(
        st.sampled_from(
            ["frame_id", "frame_compile_id", "attempt", "compiled_autograd_id", "rank", "stack"]
        ),
        st.integers(0, 3) | st.none() | st.sampled_from(["1", 10**19, 2.0, [1]]),
    ),
    max_size=5,
)
_PREFIX_TEXT = "V1125 10:00:00.000000 4242 torch/_subclasses/meta_utils.py:1] "


# Metadata that is not JSON, or JSON that only the stdlib parser reads, written as is.
_RAW_META = [
    b'{"a": "\\q"}',  # a bad escape
    b'{"a": "x\x01y"}',  # a raw control character
    b'{"a": "\xff\xfe"}',  # not UTF-8
    b'{"a": NaN}',
    b'{"a": 1e999}',
    b'{"a": 123456789012345678901234567890}',
    b'{"a": 1,}',
    b'{"a": [1, 2}',
    b'{"a": "\\"}',
    b'{"a": "say \\"hi\\""}',
    b'{"a": "\\u00e9"}',
    b'{"a": 01}',
    b'{"a" : 1}',
    b'{"a": {"b": {"c": 1}}}',
    b'{"a": {"has_payload": "0123456789abcdef0123456789abcdef"}}',  # what `_md5_key` cuts
    b'{"has_payload": "0123456789abcdef0123456789abcdef"}',
    b'{"a": "' + b"[" * 1000 + b'"}',  # as nested as json cannot read, by its count
]


def _header(kind: str, meta: object, context: list[tuple[str, object]]) -> bytes:
    import json

    raw = meta if isinstance(meta, bytes) else json.dumps(meta).encode()
    fields = [json.dumps(kind).encode() + b": " + raw]
    fields += [f"{json.dumps(k)}: {json.dumps(v)}".encode() for k, v in context]
    if kind != "chromium_event":
        return _PREFIX_TEXT.encode() + b"{" + b", ".join(fields) + b"}"
    # As torch writes them: with a payload (the event), its md5 last.
    event = b'{"name": "dynamo", "ph": "B"}'
    fields.append(b'"has_payload": "' + hashlib.md5(event).hexdigest().encode() + b'"')
    return _PREFIX_TEXT.encode() + b"{" + b", ".join(fields) + b"}\n\t" + event


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(
                [
                    "describe_tensor",
                    "describe_storage",
                    "describe_source",
                    "describe_other",
                    "chromium_event",
                ]
            ),
            st.dictionaries(_KEYS, _VALUES, max_size=6) | st.sampled_from(_RAW_META),
            _CONTEXT,
        ),
        min_size=1,
        max_size=12,
    )
)
@example([("describe_tensor", {"id": 1, "size": [2, 3], "o": {}}, [("frame_id", 0)])])
@example([("describe_storage", raw, [("frame_id", 0)]) for raw in _RAW_META])
@example([("chromium_event", {}, [("compiled_autograd_id", None), ("frame_id", 0)])])
@example([("describe_source", {"id": 2}, [("compiled_autograd_id", None), ("frame_id", None)])])
def test_fast_path_headers_index_as_json_parsed_ones(
    tmp_path_factory: pytest.TempPathFactory,
    records: list[tuple[str, dict[str, object] | bytes, list[tuple[str, object]]]],
) -> None:
    """A describe_* or chromium_event header recognised by its shape (no JSON parser) is
    indexed as parsing it would: kinds and their order, compiles, ranks, offsets, unparsed and
    slow-JSON counts."""
    path = tmp_path_factory.mktemp("fast") / "dedicated_log_torch_trace_x.log"
    start = _PREFIX_TEXT + '{"dynamo_start": {"stack": []}, "frame_id": 0, "frame_compile_id": 0}'
    end = start.replace('"frame_id": 0', '"frame_id": 1')
    lines = [start.encode(), *(_header(*r) for r in records), end.encode()]
    path.write_bytes(b"\n".join(lines) + b"\n")
    fast = _serial(path)
    real = tracefile.find_lines
    try:
        tracefile.find_lines = tracefile.regex_lines(tracefile.line_regex((), chromium=False))
        slow = _serial(path)
    finally:
        tracefile.find_lines = real
    assert differences(slow, fast, IGNORE) == []
    assert fast.files[0].kinds["dynamo_start"] == 2  # the lines are records
    # The fast path was taken (this shape is the common one in real traces).
    kind, meta, context = records[0]
    plain = all(k != "stack" and (v is None or type(v) is int and v <= 3) for k, v in context)
    if kind != "describe_other" and meta == {} and plain:
        first = tracefile.LINE.search(path.read_bytes()[len(start) :])
        assert first is not None and first.group(4 if kind == "chromium_event" else 5) is not None


def test_real_describe_headers_take_the_fast_path() -> None:
    """Most describe_* headers of a real run are recognised by their shape (else the fast path
    would be dead code): all but the few holding escapes or nested values."""
    data = b"\n" + next((SAMPLES / "gpu_triton_user" / "trace").iterdir()).read_bytes()
    fast = sum(1 for m in tracefile.LINE.finditer(data) if m.group(5) is not None)
    describe = data.count(b'] {"describe_')
    assert describe >= 10 and fast >= 0.9 * describe


_MD5 = b"0123456789abcdef0123456789abcdef"


@settings(max_examples=80, deadline=None)
@given(st.dictionaries(_KEYS, _VALUES, max_size=6) | st.sampled_from(_RAW_META), st.booleans())
@example(b'{"has_payload": "x"}', False)  # a second has_payload: the last one's value wins
def test_a_long_header_read_whole_derives_what_its_blanked_copy_does(
    meta: dict[str, object] | bytes, context_first: bool
) -> None:
    """A header too long to cache is parsed as it is, its md5 blanked in the value, not in a
    copy of its bytes: what it derives is the same."""
    import json

    raw = meta if isinstance(meta, bytes) else json.dumps(meta).encode()
    pad = b'"pad": "' + b"p" * 700 + b'"'
    fields = [b'"compilation_metrics": ' + raw, pad, b'"frame_id": 0']
    if context_first:
        fields.reverse()
    js = b"{" + b", ".join(fields) + b', "has_payload": "' + _MD5 + b'"}'
    md5, data, blank, key = tracefile._md5_split(js)
    assert (md5, data, blank, key) == (_MD5.decode(), js, True, None)  # read whole, not cached
    cut_md5, cut = tracefile._md5_key(js)
    assert cut_md5 == md5 and cut != js
    whole = tracefile.header_info(data, len(js), blank)
    copied = tracefile.header_info(cut, len(js), False)
    assert repr(whole) == repr(copied)  # (repr: NaN is not equal to itself)


def test_only_values_nested_past_json_s_reach_are_left_to_json(tmp_path: Path) -> None:
    """orjson reads 1,024 levels, json fewer: a value nested deeper than `NESTING_MAX` is read
    by json, which refuses one past its recursion limit as unparsed; brackets in a string nest
    nothing and are read by orjson."""
    if tracefile.fast_loads(b"1") is tracefile.SLOW:
        pytest.skip("orjson is not installed")

    def nested(depth: int) -> bytes:
        return b"[" * depth + b"]" * depth

    metas = [b'"' + b"[{" * 600 + b'"', nested(500), nested(1010), b"[[1]]"]
    lines = [_PREFIX_TEXT.encode() + b'{"artifact": ' + m + b', "frame_id": 0}' for m in metas]
    path = tmp_path / "dedicated_log_torch_trace_x.log"
    path.write_bytes(b"\n".join(lines) + b"\n")
    tf = _serial(path).files[0]
    # Where json's own reach ends depends on the Python (3.13's reads 1,010 levels).
    try:
        json.loads(nested(1010))
        json_reads_it = True
    except RecursionError:
        json_reads_it = False
    read = [0, 1, 2, 3] if json_reads_it else [0, 1, 3]
    assert (tf.kinds["artifact"], tf.slow_json, len(tf.unparsed)) == (len(read), 2, 4 - len(read))
    starts = [sum(len(line) + 1 for line in lines[:i]) for i in range(len(lines))]
    assert [rec.offset for rec in tf.records] == [starts[i] for i in read]
