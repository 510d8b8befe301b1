"""The trace engine on real traces: counts, derived facts, incremental indexing, bad input."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, SAMPLES, TCVIEW_CLI, shared_run_dirs, unpack_shared
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from refcount import count

from tcview.analysis.kernels import split_output_code
from tcview.ingest.builder import Builder
from tcview.ingest.detect import discover
from tcview.ingest.index import TraceSet
from tcview.ingest.tracefile import TraceFile
from tcview.model.compile_id import CompileKey, FrameKey, parse_compile_id
from tcview.model.facts import short_guard
from tcview.model.objects import Record

REF_KEYS = [
    "files",
    "records",
    "compiles",
    "frames",
    "recompiles",
    "empty_graphs",
    "graph_breaks",
    "failures",
    "output_codes",
    "kernels",
    "unparsed_lines",
    "ranks",
    "fx_graph_cache",
]


def _trace_dirs() -> list[Path]:
    dirs = [p / "trace" for p in sorted(SAMPLES.iterdir()) if (p / "trace").is_dir()]
    root = unpack_shared()
    if root is not None:
        dirs += [p / "trace" for p in shared_run_dirs() if (p / "trace").is_dir()]
        corpus = root / "tlparse-corpus"
        dirs += sorted(p for p in corpus.iterdir() if p.is_file() and p.suffix in (".log", ".txt"))
        dirs += sorted(p for p in corpus.iterdir() if p.is_dir())
    return dirs


@pytest.mark.parametrize("path", _trace_dirs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_counts_equal_independent_reference(path: Path) -> None:
    ts = TraceSet.load(path)
    got = ts.summary_counts()
    ref = count([tf.path for tf in ts.files])
    assert {k: got[k] for k in REF_KEYS} == {k: ref[k] for k in REF_KEYS}


IMPORT_LINE = re.compile(r"(?m)^\s*(import|from)\s+(textual|rich|torch|triton)\b")


@pytest.mark.e2e
def test_trace_package_imports_no_ui_and_no_torch() -> None:
    banned = ("textual", "rich", "torch", "triton")
    # commands too: they reach Textual and torch only through ui/ and run/ (doctor's probe of
    # the user's torch is run/_doctor_probe.py, run there as text)
    pure = ("text", "model", "analysis", "ingest", "report", "commands")
    files = [py for layer in pure for py in (REPO / "tcview" / layer).glob("*.py")]
    assert len(files) > 40, files
    for py in files:
        tree = ast.parse(py.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            for name in names:
                assert name.split(".")[0] not in banned, f"{py.name} imports {name}"
        # and no code that does, held in a string to run elsewhere
        found = IMPORT_LINE.search(py.read_text())
        assert found is None, f"{py.name}: {found.group(0).strip()}"
    code = (
        "import sys, tcview.model.objects, tcview.ingest.source, tcview.report.summary, "
        "tcview.analysis.kernels\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('textual', 'rich', 'torch')]\n"
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


# ---------------------------------------------------------------- derived facts


def test_cpu_sample_facts() -> None:
    ts = TraceSet.load(SAMPLES / "cpu_breaks_recompiles" / "trace")
    s = ts.summary_counts()
    assert (s["compiles"], s["graph_breaks"], s["recompiles"], s["kernels"]) == (5, 3, 3, 5)
    groups = ts.grouped_breaks()
    assert len(groups) == 1 and groups[0].count == 3
    gb = groups[0].first
    assert gb.reason == "Failed to trace builtin operator"
    assert gb.short_location == "script.py:13"
    assert gb.hints and "print" in gb.hints[0]
    assert gb.url.startswith("https://") and "gb" in gb.url
    assert any("script.py:13" in frame for frame in gb.user_stack)
    reasons = {rc.compile.id_text: [short_guard(r) for r in rc.reasons] for rc in ts.recompiles}
    assert reasons["0/1"] == ["0/0: scale == 2.0"]
    assert any("dtype mismatch" in r for r in reasons["0/2"])
    frame = ts.files[0].frames[FrameKey(None, 0)]
    assert frame.label == "scale_shift (script.py:11)"
    assert [c.id_text for c in frame.compiles] == ["0/0", "0/1", "0/2"]
    assert all(k.kind == "cpp" for k in ts.kernels)
    comp = ts.files[0].compiles[CompileKey(None, 0, 0)]
    assert comp.status == "graph break" and comp.compile_time_s and comp.compile_time_s > 0
    assert {r.attempt for r in comp.records} == {0, 1} and comp.retried


def test_gpu_sample_kernel_kinds_and_launch_order() -> None:
    ts = TraceSet.load(SAMPLES / "gpu_triton_user" / "trace")
    kinds = {k.name: k.kind for k in ts.kernels}
    assert kinds["add_kernel_0"] == "user"
    assert kinds["triton_tem_fused_addmm_t_0"] == "template"
    assert kinds["triton_poi_fused_mul_relu_0"] == "pointwise"
    out = next(k.output for k in ts.kernels if k.name == "add_kernel_0")
    spans = split_output_code(out.payload())
    assert [(s.name, s.launch) for s in spans] == [
        ("add_kernel_0", 0),
        ("triton_poi_fused_mul_relu_0", 1),
    ]
    lines = out.payload().split("\n")
    assert "def add_kernel(" in spans[0].source(lines)
    assert spans[0].source(lines).rstrip().endswith("device_str='cuda')")


def test_frame_labels_skip_torch_internal_frames() -> None:
    ts = TraceSet.load(SAMPLES / "gpu_tinyblock" / "trace")
    labels = [f.label for tf in ts.files for f in tf.frames.values()]
    assert labels and all("external_utils" not in label for label in labels)
    assert any(label.startswith("forward (tinyblock.py:") for label in labels)


def test_shared_failures_recompile_limit_and_cache(shared_traces: Path) -> None:
    gpu = shared_traces / "h200-torch2.11"
    ts = TraceSet.load(gpu / "compile_failures" / "trace")
    assert {f.fail_type for f in ts.failures} == {"BackendCompilerFailed", "Unsupported"}
    ts = TraceSet.load(gpu / "recompiles" / "trace")
    assert any(f.is_recompile_limit for f in ts.failures)
    warm = TraceSet.load(gpu / "cache_warm" / "trace").summary_counts()
    assert warm["fx_graph_cache"]["hit"] > 0
    ddp = TraceSet.load(gpu / "ddp2" / "trace")
    assert ddp.summary_counts()["ranks"] == [0, 1]
    assert len(ddp.runs) == 1 and [r.rank for r in ddp.runs[0].ranks] == [0, 1]
    ca = TraceSet.load(shared_traces / "cpu-torch2.13" / "k_compiled_autograd" / "trace")
    assert {"!0", "!0/1/0"} <= {c.id_text for c in ca.compiles}


def test_runs_group_piled_up_files(shared_traces: Path) -> None:
    ts = TraceSet.load(shared_traces / "cpu-torch2.13" / "i_ranks_env" / "trace")
    assert len(ts.files) == 2
    assert sum(len(r.files) for r in ts.runs) == 2


def test_compile_id_forms() -> None:
    assert parse_compile_id("[0/1]") == (CompileKey(None, 0, 1), 0)
    assert parse_compile_id("0/0_1") == (CompileKey(None, 0, 0), 1)
    assert parse_compile_id("!0/1/0") == (CompileKey(0, 1, 0), 0)
    assert parse_compile_id("!3") == (CompileKey(3, None, None), 0)
    assert parse_compile_id("triton_poi_fused_0") is None
    assert parse_compile_id("0/0 #2") == (CompileKey(None, 0, 0, 2), 0)
    assert parse_compile_id("[0/0_1] #3") == (CompileKey(None, 0, 0, 3), 1)
    for key in (CompileKey(None, 0, 0, 2), CompileKey(1, 2, 3, 4), CompileKey(None, 5, 1)):
        assert parse_compile_id(key.label) == (key, 0)
    assert CompileKey(0, 1, 0).text == "!0/1/0"


def test_discover_lists_skipped_files(tmp_path: Path) -> None:
    src = next((SAMPLES / "cpu_breaks_recompiles" / "trace").iterdir())
    (tmp_path / "renamed.txt").write_bytes(src.read_bytes())
    (tmp_path / "notes.txt").write_text("hello\n")
    (tmp_path / "empty.log").write_text("")
    found, skipped = discover(tmp_path)
    assert [p.name for p in found] == ["renamed.txt"]
    assert {p.name: why for p, why in skipped} == {
        "notes.txt": "first line is not a trace record header",
        "empty.log": "empty",
    }


# ---------------------------------------------------------------- incremental


def _snapshot(tf: TraceFile) -> tuple:
    return (
        [(r.offset, r.hdr_end, r.end, r.kind, r.name, r.key, r.md5, r.closed) for r in tf.records],
        list(tf.chromium_offsets()),
        tf.unparsed,
        [(k.name, k.method, k.output.offset, k.index) for k in tf.kernels],
        sorted(tf.compiles, key=lambda k: k.sort_key()),
        {k: (c.chromium, c.retried, len(c.breaks)) for k, c in tf.compiles.items()},
        dict(tf.kinds),
        sorted(tf.ranks),
        sorted(tf.pids),
        tf.first_ts,
        tf.last_ts,
        tf.failure_count,
    )


def _index(path: Path, cuts: list[int], settle: bool) -> TraceFile:
    data = path.read_bytes()
    tf = TraceFile(path)
    prev = 0
    for cut in sorted(set(cuts)) + [len(data)]:
        tf.feed(data[prev:cut], settle=settle)
        prev = cut
    tf.finish()
    return tf


SPLIT_FILE = next((SAMPLES / "cpu_breaks_recompiles" / "trace").iterdir())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, SPLIT_FILE.stat().st_size), max_size=40), st.booleans())
def test_any_split_gives_the_same_index(cuts: list[int], settle: bool) -> None:
    whole = _index(SPLIT_FILE, [], settle=False)
    assert _snapshot(_index(SPLIT_FILE, cuts, settle)) == _snapshot(whole)


@settings(max_examples=15, deadline=None)
@given(st.binary(max_size=3000), st.lists(st.integers(0, 3000), max_size=10))
def test_any_split_of_hostile_bytes_gives_the_same_index(
    tmp_path_factory: pytest.TempPathFactory, blob: bytes, cuts: list[int]
) -> None:
    header = SPLIT_FILE.read_bytes()[:20000]
    path = tmp_path_factory.mktemp("h") / "t.log"
    path.write_bytes(header + blob + header[:7000])
    size = path.stat().st_size
    whole = _index(path, [], settle=False)
    assert _snapshot(_index(path, [c % (size + 1) for c in cuts], True)) == _snapshot(whole)


def test_last_record_is_pending_until_its_md5_matches(tmp_path: Path) -> None:
    data = SPLIT_FILE.read_bytes()
    path = tmp_path / "live.log"
    tf = TraceFile(path)
    # stop in the middle of the payload of an output code record
    start = data.index(b'{"inductor_output_code"')
    mid = data.index(b"\n\t", start) + 200
    path.write_bytes(data[:mid])
    tf.feed(data[:mid])
    last = tf.records[-1]
    assert last.kind == "inductor_output_code" and not last.closed
    end = data.index(b"\nV", mid) + 1
    path.write_bytes(data[:end])
    tf.feed(data[mid:end])
    assert last.closed and last.md5_ok()


# ---------------------------------------------------------------- bad input


def _write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "dedicated_log_torch_trace_bad.log"
    path.write_bytes(data)
    return path


GOOD = SPLIT_FILE.read_bytes()


def test_garbage_invalid_utf8_and_truncation_are_counted(tmp_path: Path) -> None:
    cut = GOOD.index(b"\nV", 100000) + 1
    data = (
        b"garbage line\n\xff\xfe not utf-8 \x00\n"
        + GOOD[:cut]
        + b'V1121 05:00:00.000000 1 x.py:1] {"broken json\n'
        + b"V1121 05:00:00.000000 1 x.py:1] [1, 2, 3]\n"
        + b'V1121 05:00:00.000000 1 x.py:1] {"artifact": {"name": "\xff\xfe"}, "frame_id": "x"}\n'
        + b"x" * 300_000
        + b"\n"
        + GOOD[cut : cut + 5000]  # truncated record at the end, no newline
    )
    path = _write(tmp_path, data)
    ts = TraceSet.load(path)
    got = ts.summary_counts()
    ref = count([path])
    assert {k: got[k] for k in REF_KEYS} == {k: ref[k] for k in REF_KEYS}
    assert got["unparsed_lines"] >= 4
    first = ts.files[0].unparsed[0]
    assert first == (0, 1)
    assert ts.files[0].line_at(first[0]) == b"garbage line"
    assert "(not an object)" in ts.files[0].kinds


def test_md5_mismatch_is_flagged_not_fatal(tmp_path: Path) -> None:
    i = GOOD.index(b"\n\t", 1000) + 2
    data = GOOD[:i] + b"X" + GOOD[i + 1 :]
    ts = TraceSet.load(_write(tmp_path, data))
    assert ts.summary_counts(verify=True)["md5_mismatches"] == 1


@pytest.mark.e2e
def test_summary_cli_json_and_fail_on(tmp_path: Path) -> None:
    sample = SAMPLES / "cpu_breaks_recompiles" / "trace"
    run = subprocess.run(
        [*TCVIEW_CLI, "summary", "--json", str(sample)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    for key in REF_KEYS:
        assert key in data
    gate = subprocess.run(
        [*TCVIEW_CLI, "summary", "--fail-on", "graph_breaks", str(sample)],
        capture_output=True,
        cwd=REPO,
    )
    assert gate.returncode == 1
    ok = subprocess.run(
        [*TCVIEW_CLI, "summary", "--fail-on", "failures", str(sample)],
        capture_output=True,
        cwd=REPO,
    )
    assert ok.returncode == 0
    typo = subprocess.run(
        [*TCVIEW_CLI, "summary", "--fail-on", "graph_break", str(sample)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert typo.returncode == 2 and "graph_breaks" in typo.stderr
    text = subprocess.run(
        [*TCVIEW_CLI, "summary", str(sample)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert "Graph breaks (3, 1 distinct)" in text.stdout
    assert "Recompiles (3)" in text.stdout


def test_without_orjson_the_index_is_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    from tcview.ingest import tracefile

    path = SAMPLES / "gpu_triton_user" / "trace"
    fast = TraceSet.load(path).summary_counts()
    monkeypatch.setattr(tracefile, "loads", tracefile._loads_json)
    assert TraceSet.load(path).summary_counts() == fast


def test_overlong_lines_are_counted_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tcview.ingest import linebuffer

    monkeypatch.setattr(linebuffer, "MAX_LINE", 100_000)  # real headers stay under it
    cut = GOOD.index(b"\nV", 50000) + 1
    data = GOOD[:cut] + b"junk" * 75_000 + b"\n" + b"\t" + b"p" * 400_000 + b"\n" + GOOD[cut:]
    path = _write(tmp_path, data)
    chunked = _index(path, list(range(0, len(data), 40_000)), settle=False)
    assert len(chunked.unparsed) == count([path])["unparsed_lines"] == 1
    assert chunked.unparsed[0][0] == cut
    for cuts in (
        [cut + 10, cut + 70_000, cut + 150_000, cut + 300_000],
        range(0, len(data), 17_77),
    ):
        assert _snapshot(_index(path, list(cuts) + [cut + 1], settle=True)) == _snapshot(chunked)


# ---------------------------------------------------------------- a handler that raises


def test_the_string_table_is_kept_and_its_records_located(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`str` records are counted, located (`minor`) and their strings kept, not kept as
    records; one whose handler raises is kept, so that its damage entry names it, and survives
    a snapshot."""
    from model_equal import differences

    from tcview.ingest import handlers, snapshot
    from tcview.ingest.load import Hooks

    path = next((SAMPLES / "cpu_breaks_recompiles" / "trace").glob("*.log"))
    raw = path.read_bytes()
    starts = [m.start() for m in re.finditer(rb'\n[^\t\n]*\] \{"str": ', b"\n" + raw)]
    clean = TraceSet.load(path.parent).files[0]
    assert len(starts) == clean.kinds["str"] == 14 and set(starts) <= set(clean.minor)
    assert not any(r.kind == "str" for r in clean.records)
    assert any(f.filename.endswith(".py") for fr in clean.frames.values() for f in fr.stack)
    handler = handlers.HEADER_HANDLERS["str"]

    def boom(b: Builder, tf: TraceFile, rec: Record) -> None:
        if rec.offset == starts[1]:
            raise RuntimeError("boom")
        handler(b, tf, rec)

    monkeypatch.setitem(handlers.HEADER_HANDLERS, "str", boom)
    hurt = TraceFile(path)
    hurt.feed_from(Hooks())
    (error,) = hurt.handler_errors
    assert [r.offset for r in hurt.records if r.kind == "str"] == [starts[1]]
    assert error.record.offset == starts[1] and hurt.kinds["str"] == 14
    body = snapshot.encode(hurt, hurt.builder.facts)
    restored = TraceFile(path)
    restored.builder.adopt(snapshot.restore(restored, body, path.stat().st_size))
    hurt.finish()
    restored.finish()
    assert differences(hurt, restored) == []


@pytest.mark.parametrize(
    "table,name,phase",
    [
        ("HEADER_HANDLERS", "dynamo_start", "header"),
        ("CLOSE_HANDLERS", "dynamo_graph_break_reason", "close"),
    ],
)
def test_a_handler_that_raises_is_damage_not_the_end(
    monkeypatch: pytest.MonkeyPatch, table: str, name: str, phase: str
) -> None:
    """The load goes on past a handler that raises on one record; every other
    count stays, and one damage entry names the record."""
    from tcview.ingest import handlers
    from tcview.report.summary import summary_json

    path = SAMPLES / "cpu_breaks_recompiles" / "trace"
    clean = TraceSet.load(path)
    target = [r for r in clean.files[0].records if r.label == name][1]  # the second one
    handler = getattr(handlers, table)[name]

    def boom(b: Builder, tf: TraceFile, rec: Record) -> None:
        if rec.offset == target.offset:
            raise RuntimeError("boom")
        handler(b, tf, rec)

    monkeypatch.setitem(getattr(handlers, table), name, boom)
    hurt = TraceSet.load(path)
    got, want = summary_json(hurt), summary_json(clean)
    assert got["damage"].pop("handler_errors") == 1 and want["damage"].pop("handler_errors") == 0
    # the findings and the stacks tree are read from the facts, and the record's own fact (a
    # graph break, a compile's stack) is lost
    for key in ("findings", "stacks"):
        got.pop(key), want.pop(key)
    assert got == want
    (error,) = hurt.handler_errors()
    assert (error.offset, error.line_number(), error.kind, error.phase) == (
        target.offset,
        target.line_number(),
        name,
        phase,
    )
    assert (error.error, error.message) == ("RuntimeError", "boom")
    assert error.record is next(r for r in hurt.files[0].records if r.offset == target.offset)
    assert f":{target.line_number()}: {name} ({phase} handler): RuntimeError: boom" in error.text()
    assert len(hurt.records_of(name)) == len(clean.records_of(name))  # the record is kept


def test_compile_identity_lives_in_one_method() -> None:
    """Every lookup of a compile by id goes through Builder.compile_for, the chromium fast path
    included: a builder that changes what an id names (as reset() episodes will) mid-file, and
    forgets its memos, gets every later record and chromium event on its new compiles."""
    from tcview.model.compile_id import CompileKey as Key
    from tcview.model.objects import Compile, LogSource

    class Episodes(Builder):
        def __init__(self) -> None:
            super().__init__()
            self.episode = 0
            self.made: dict[tuple[int, Key], Compile] = {}

        def compile_for(self, source: LogSource, key: Key, start: bool = False) -> Compile:
            comp = self.made.get((self.episode, key))
            if comp is None:
                comp = self.made[(self.episode, key)] = Compile(source, key)
            return comp

        def next_episode(self) -> None:
            self.episode += 1
            self.forget()

    data = SPLIT_FILE.read_bytes()
    cut = data.index(b"\nV", len(data) // 2) + 1
    builder = Episodes()
    tf = TraceFile(SPLIT_FILE, builder=builder)
    tf.feed(data[:cut])
    first = len(tf.records), len(tf.chromium)
    builder.next_episode()
    tf.feed(data[cut:])
    tf.finish()
    earlier = [c for (episode, _), c in builder.made.items() if episode == 0]
    later = [c for (episode, _), c in builder.made.items() if episode == 1]
    keyed = [r for r in tf.records[first[0] :] if r.key is not None]
    assert keyed and all(any(r.compile is c for c in later) for r in keyed)
    assert all(at < cut for c in earlier for at in c.chromium_at)
    assert all(at >= cut for c in later for at in c.chromium_at)
    assert sum(c.chromium for c in later) > 0
