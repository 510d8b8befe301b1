"""Parallel indexing equals the serial index; the index cache.

Every comparison is a deep one (model_equal.differences: every attribute of every record,
compile, frame, kernel and fact, and the identities between them) plus `summary --json` byte
for byte. Nothing here depends on timing.
"""

from __future__ import annotations

import errno
import json
import multiprocessing
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from array import array
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, REPO, SAMPLES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from model_equal import differences
from rankdir import build as build_rank_dir
from rankdir import templates

from tcview.analysis import divergence
from tcview.ingest import cache as cache_mod
from tcview.ingest import parallel, signatures, snapshot
from tcview.ingest.index import TraceSet
from tcview.ingest.load import Hooks
from tcview.ingest.source import load_source
from tcview.ingest.tracefile import TraceFile
from tcview.model.objects import Facts, Model, PlacedLine
from tcview.report.summary import summary_json

SHARED_RANK_INPUTS = (
    "h200-torch2.11/ddp2",
    "cpu-torch2.13/i_ranks_env",
    "cpu-torch2.13/i_ranks_gloo",
    "tlparse-corpus/collectives_parity",
    "tlparse-corpus/graph_exec_order_tests",
    "tlparse-corpus/multi_rank_messy_input",
    "tlparse-corpus/multi_rank_runtime",
    "tlparse-corpus/multi_rank_schedule",
)


def _summary(model: Any) -> str:
    return json.dumps(summary_json(model), indent=2)


def _load(path: Path, jobs: int, cache: bool) -> TraceSet:
    os.environ[parallel.JOBS_ENV] = str(jobs)
    try:
        model = load_source(str(path), cache=cache)
    finally:
        del os.environ[parallel.JOBS_ENV]
    assert isinstance(model, TraceSet)
    return model


# A file fed in other pieces (resumed from an entry) counts other feeds in its `version`.
FED_OTHERWISE = ("version",)


def _same(a: Model, b: Model, ignore: tuple[str, ...] = ()) -> None:
    assert differences(a, b, ignore) == []
    assert _summary(a) == _summary(b)


@pytest.fixture
def tiny_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers for any input with two files or more (the real threshold is tens of MB), and
    every file to them (the loading thread takes none of its own)."""
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr("tcview.ingest.index.PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr("tcview.ingest.index.own_share", lambda workers, caching: 0.0)


@pytest.fixture
def own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache of the test's own, outside the directories its traces are in."""
    root = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv(cache_mod.DIR_ENV, str(root))
    monkeypatch.delenv(cache_mod.NO_CACHE_ENV, raising=False)
    return root


@pytest.fixture(scope="module")
def many_ranks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """24 rank files built from the repo's samples (renumbered ranks), a run directory's
    text log beside them."""
    out = tmp_path_factory.mktemp("ranks") / "trace"
    build_rank_dir(out, 24, 200_000, templates(None, SAMPLES), seed=3)
    return out


def _entries(root: Path) -> list[Path]:
    return sorted((root / "index").glob("*.idx"))


# ---------------------------------------------------------------------- parallel == serial


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_parallel_index_equals_serial_on_many_ranks(
    many_ranks: Path, tiny_threshold: None, method: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parallel, "start_method", lambda: method)
    serial = _load(many_ranks, 1, cache=False)
    par = _load(many_ranks, 3, cache=False)
    assert serial.load_stats.workers == 0
    assert par.load_stats.workers == 2 and par.load_stats.start_method == method
    assert par.load_stats.from_workers == len(par.files) == 24
    assert par.load_stats.worker_errors == [] and par.load_stats.snapshot_errors == 0
    assert len({f.rank for f in par.files}) == 24
    _same(serial, par)


def test_a_spawned_worker_collects_garbage_as_its_parent_does(many_ranks: Path) -> None:
    """The command raises the collector's thresholds for its process (cli.py); a forked worker
    inherits them, and a spawned one (the app's) is started with them, and still works."""
    import gc

    before = gc.get_threshold()
    gc.set_threshold(123_456, 7, 8)
    try:
        with parallel.Workers(1, "spawn") as workers:
            popen = workers._workers[0].popen
            assert popen is not None and isinstance(popen.args, list)
            assert "gc.set_threshold(*(123456, 7, 8))" in str(popen.args[-1])
            job = parallel.Job(str(sorted(many_ranks.iterdir())[0]))
            (done,) = list(workers.map([job]))
    finally:
        gc.set_threshold(*before)
    assert done is not None and done.how == "indexed" and done.body


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads /proc (Linux)")
def test_a_worker_frees_each_jobs_index_under_the_commands_thresholds(tmp_path: Path) -> None:
    """A file's index is full of reference cycles, and the command's collector thresholds
    (cli.GC_THRESHOLDS, inherited by a forked worker) leave them for many jobs: a worker
    collects each job's objects when it is done. Without that, 48 jobs of 8 MB files grew the
    worker by 20 MB; with it, by none."""
    import gc

    from tcview.commands.cli import GC_THRESHOLDS

    build_rank_dir(tmp_path / "r", 6, 8_000_000, templates(None, SAMPLES), seed=3)
    files = sorted((tmp_path / "r").glob("*.log"))

    def resident_mb(pid: int) -> float:
        size = parallel.resident_bytes(pid)
        assert size is not None
        return size / 1e6

    before = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        with parallel.Workers(1, "fork") as workers:
            proc = workers._workers[0].proc
            assert proc is not None and proc.pid is not None
            assert [d.how for d in workers.map([parallel.Job(str(files[0]))]) if d] == ["indexed"]
            first = resident_mb(proc.pid)
            done = list(workers.map([parallel.Job(str(p)) for p in files * 8]))
            grown = resident_mb(proc.pid) - first
    finally:
        gc.set_threshold(*before)
    assert [d.how if d else None for d in done] == ["indexed"] * 48
    assert grown < 8, f"the worker grew by {grown:.1f} MB over 48 jobs"


@pytest.mark.parametrize("name", SHARED_RANK_INPUTS)
def test_parallel_index_equals_serial_on_shared_ranks(
    shared_traces: Path, name: str, tiny_threshold: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = shared_traces / name  # run directories load their text log too
    serial = _load(path, 1, cache=False)
    par = _load(path, 3, cache=False)
    if len(par.files) > 1:
        assert par.load_stats.from_workers == len(par.files)
    _same(serial, par)


def test_the_loading_thread_indexes_its_share(
    many_ranks: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With one worker, this thread indexes every other file itself (in order, beside the
    worker's snapshots): the same index."""
    monkeypatch.setattr("tcview.ingest.index.PARALLEL_MIN_BYTES", 0)
    serial = _load(many_ranks, 1, cache=False)
    par = _load(many_ranks, 2, cache=False)
    stats = par.load_stats
    assert stats.workers == 1 and stats.from_workers == stats.indexed_here == 12
    _same(serial, par)


@pytest.mark.parametrize("workers", [1, 3])
def test_the_share_makes_the_loading_thread_as_busy_as_a_worker(workers: int) -> None:
    """The loading thread's share of the files leaves it as busy as each worker: it restores
    their snapshots besides its own files, and with the cache it also encodes and stores its
    own files' snapshots, so that it keeps fewer."""
    e, r, s = parallel.ENCODE_COST, parallel.RESTORE_COST, parallel.STORE_COST
    for caching, own, theirs in ((False, 1, 1 + e), (True, 1 + e + s, 1 + e + s)):
        x = parallel.own_share(workers, caching)
        assert x * own + (1 - x) * r == pytest.approx((1 - x) * theirs / workers)
    assert parallel.own_share(workers, True) < parallel.own_share(workers)


_SERIAL: dict[Path, TraceSet] = {}


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(jobs=st.integers(2, 4), share=st.floats(0.0, 1.0), files=st.integers(2, 24))
def test_any_split_among_workers_equals_the_serial_index(
    many_ranks: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    jobs: int,
    share: float,
    files: int,
) -> None:
    """However many workers, whatever share the loading thread keeps, however many files:
    the parallel index is the serial one."""
    monkeypatch.setattr("tcview.ingest.index.PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr("tcview.ingest.index.own_share", lambda workers, caching: share)
    monkeypatch.setattr(parallel, "start_method", lambda: "fork")
    trace = many_ranks.parent / f"first_{files}"
    if trace not in _SERIAL:
        trace.mkdir(exist_ok=True)
        for src in sorted(many_ranks.iterdir())[:files]:
            shutil.copy(src, trace / src.name)
        _SERIAL[trace] = _load(trace, 1, cache=False)
    par = _load(trace, jobs, cache=False)
    stats = par.load_stats
    assert stats.workers == min(jobs, files) - 1
    assert stats.from_workers + stats.indexed_here == files and stats.worker_errors == []
    _same(_SERIAL[trace], par)


def test_small_inputs_stay_in_one_process(many_ranks: Path, tmp_path: Path) -> None:
    for p in sorted(many_ranks.iterdir())[:4]:
        shutil.copy(p, tmp_path / p.name)
    assert sum(p.stat().st_size for p in tmp_path.iterdir()) < parallel.PARALLEL_MIN_BYTES
    ts = _load(tmp_path, 2, cache=False)
    assert ts.load_stats.workers == 0 and ts.load_stats.indexed_here == len(ts.files) == 4


def test_snapshot_round_trip_of_every_shared_trace(shared_traces: Path) -> None:
    """Every trace of the archive (damaged ones included) survives encode/restore whole."""
    paths = sorted(p for p in shared_traces.rglob("*.log") if p.stat().st_size)
    assert len(paths) > 40
    for path in paths:
        direct = TraceFile(path)
        direct.feed_from(Hooks())
        body = snapshot.encode(direct, direct.builder.facts)
        restored = TraceFile(path)
        restored.builder.adopt(snapshot.restore(restored, body, path.stat().st_size))
        direct.finish()
        restored.finish()
        assert differences(direct, restored) == [], path
        assert differences(direct.builder.facts, restored.builder.facts) == [], path


def test_workers_that_die_leave_their_files_to_the_parent(
    many_ranks: Path, tiny_threshold: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    serial = _load(many_ranks, 1, cache=False)
    real = parallel.run_job

    def dies_on_rank_5(job: parallel.Job) -> parallel.Done:
        if "_rank_5_" in job.path:
            os._exit(3)  # the worker is killed mid-job
        return real(job)

    monkeypatch.setattr(parallel, "run_job", dies_on_rank_5)  # forked workers inherit it
    monkeypatch.setattr(parallel, "start_method", lambda: "fork")
    par = _load(many_ranks, 2, cache=False)
    stats = par.load_stats
    assert any("worker died" in e for e in stats.worker_errors)
    assert stats.indexed_here >= 1 and stats.from_workers + stats.indexed_here == 24
    _same(serial, par)
    assert multiprocessing.active_children() == []


def test_workers_are_sent_jobs_ahead_before_a_result_is_asked_for(
    many_ranks: Path, own_cache: Path
) -> None:
    """`map` sends each worker JOBS_AHEAD jobs at once: it indexes them one after the other
    (each writes its cache entry) while the caller does its own share, before any result is
    asked for."""
    files = sorted(many_ranks.glob("*.log"))[: max(2, parallel.JOBS_AHEAD)]
    pool = parallel.Workers(1)
    try:
        results = pool.map([parallel.Job(str(p), str(own_cache), 1 << 30) for p in files])
        deadline = time.monotonic() + 60
        while len(_entries(own_cache)) < len(files):
            assert time.monotonic() < deadline, f"{len(_entries(own_cache))} jobs were run"
            time.sleep(0.01)
        assert [r.how if r is not None else None for r in results] == ["indexed"] * len(files)
    finally:
        pool.close()


def test_a_stopped_load_ends_its_workers(
    many_ranks: Path, tiny_threshold: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(parallel.JOBS_ENV, "2")
    seen: list[int] = []
    ts = TraceSet(many_ranks)
    from tcview.ingest.detect import discover

    found, _ = discover(many_ranks)
    hooks = Hooks(progress=lambda done, total: seen.append(len(ts.files)))
    hooks.stop = lambda: len(ts.files) >= 5
    ts.load_files(found, hooks, None)
    assert len(ts.files) == 5
    assert seen[:5] == [1, 2, 3, 4, 5]  # the files appear one by one, in order
    assert multiprocessing.active_children() == []


def test_the_model_is_published_before_any_file_is_indexed(
    many_ranks: Path, tiny_threshold: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(parallel.JOBS_ENV, "3")
    published: list[int] = []
    hooks = Hooks(publish=lambda model: published.append(len(model.files)))
    ts = TraceSet.load(many_ranks, hooks=hooks, cache=False)
    assert published == [0] and len(ts.files) == 24 and ts.load_stats.workers == 2


# ---------------------------------------------------------------------- memory


def _without_orjson(monkeypatch: pytest.MonkeyPatch) -> None:
    """As where orjson is not installed: headers and snapshots read and written by json."""
    from tcview.ingest import tracefile

    monkeypatch.setattr(snapshot, "HAVE_ORJSON", False)
    monkeypatch.setattr(tracefile, "fast_loads", lambda data: tracefile.SLOW)


@pytest.mark.parametrize("orjson", [True, False])
@pytest.mark.parametrize("jobs", [1, 3])
def test_ranks_of_one_program_share_what_they_log_alike(
    many_ranks: Path, tiny_threshold: None, jobs: int, orjson: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What keeps 1,024 ranks under 300 MB: a header's value, a payload md5 and a divergence
    signature that files log alike are one object, indexed here or restored from a worker,
    with orjson or without (608 MB without, when values were shared by orjson's text only);
    the string table's records are located, not kept; the model's objects have no
    `__dict__`."""
    if not orjson:
        _without_orjson(monkeypatch)
    model = _load(many_ranks, jobs, cache=False)
    records = [r for f in model.files for r in f.records]
    metas = [r.meta for r in records if r.kind == "compilation_metrics"]
    assert len({id(m) for m in metas}) * 4 < len(metas)
    md5s: dict[str, str] = {}
    assert all(md5s.setdefault(r.md5, r.md5) is r.md5 for r in records if r.md5)
    assert len(md5s) < sum(1 for r in records if r.md5) // 5
    sigs: dict[str, Any] = {}
    for f in model.files:
        sig = f.signatures[divergence.DIVERGENCE_SIGNATURE]
        assert sigs.setdefault(json.dumps(sig), sig) is sig
    assert len(sigs) < len(model.files)
    assert not any(r.kind == "str" for r in records)
    assert sum(f.kinds["str"] for f in model.files) > 100
    comp = model.compiles[0]
    for obj in (comp, comp.frame, model.kernels[0], records[0]):
        assert not hasattr(obj, "__dict__"), type(obj).__name__


@pytest.mark.parametrize("orjson", [True, False])
@pytest.mark.parametrize("jobs", [1, 3])
def test_values_are_shared_only_when_equal(
    tmp_path: Path, tiny_threshold: None, jobs: int, orjson: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """orjson writes NaN as null: a NaN that the stdlib read never becomes another file's
    null; a number orjson refuses (past a double's range) is read and kept exactly; strings
    with different lone surrogates stay different (their UTF-8 must not be replaced by `?`)."""
    if not orjson:
        _without_orjson(monkeypatch)
    prefix = b"V1121 05:00:00.000000 1 x.py:1] "
    values = [b"NaN", b"null", b"NaN", b"1" + b"0" * 400, b"1e400"]
    # Lone surrogates (a path that is not UTF-8): orjson refuses them, json reads them.
    values += [b'"caf\\udcc3\\udca9.py"', b'"caf\\udce9\\udca0.py"', b'"caf??.py"']
    for rank, value in enumerate(values):
        header = b'{"dynamo_start": {"x": %s}, "frame_id": 0, "frame_compile_id": 0}' % value
        (tmp_path / f"dedicated_log_torch_trace_rank_{rank}_ab.log").write_bytes(
            prefix + header + b"\n"
        )
    model = _load(tmp_path, jobs, cache=False)
    got = [f.records[0].meta for f in sorted(model.files, key=lambda f: f.rank or 0)]
    assert [repr(m["x"]) for m in got if isinstance(m, dict)] == [
        "nan", "None", "nan", "1" + "0" * 400, "inf",
        repr("caf\udcc3\udca9.py"), repr("caf\udce9\udca0.py"), repr("caf??.py"),
    ]  # fmt: skip
    assert len({id(m) for m in got}) == 8


# ---------------------------------------------------------------------- nothing dropped


def test_a_new_trace_file_attribute_is_not_dropped_in_silence(
    many_ranks: Path, tiny_threshold: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = TraceFile.__init__

    def with_more(self: TraceFile, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.collectives = [1, 2, 3]  # type: ignore[attr-defined]

    monkeypatch.setattr(TraceFile, "__init__", with_more)
    tf = TraceFile(next(many_ranks.iterdir()))
    with pytest.raises(snapshot.CodecError, match="collectives"):
        snapshot.encode(tf, tf.builder.facts)
    monkeypatch.setattr(parallel, "start_method", lambda: "fork")
    par = _load(many_ranks, 2, cache=False)  # every worker fails: the parent indexes
    assert par.load_stats.from_workers == 0 and par.load_stats.indexed_here == 24
    assert all("CodecError" in e for e in par.load_stats.worker_errors)


def test_a_new_fact_list_or_field_type_is_not_dropped_in_silence(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    original = Facts.__init__

    def with_more(self: Facts) -> None:
        original(self)
        self.collectives = []  # type: ignore[attr-defined]

    tf = TraceFile(next((SAMPLES / "gpu_tinyblock" / "trace").iterdir()))
    monkeypatch.setattr(Facts, "__init__", with_more)
    with pytest.raises(snapshot.CodecError, match="collectives"):
        snapshot.encode(tf, tf.builder.facts)
    monkeypatch.setattr(Facts, "__init__", original)
    with pytest.raises(snapshot.CodecError, match="cannot write a field"):
        snapshot.field_codec(set[int])
    # Facts only a TORCH_LOGS capture makes are not written: a trace file that made one is
    # indexed in the loading process instead.
    monkeypatch.undo()
    tf.feed_from(Hooks())
    facts = tf.builder.facts
    comp = next(iter(tf.compiles.values()))
    facts.autotune_lines.append(PlacedLine(0, 1, comp))
    with pytest.raises(snapshot.CodecError, match="autotune_lines"):
        snapshot.encode(tf, facts)
    facts.autotune_lines.clear()
    tf.builder.cudagraph_note(comp, tf.records[0], "recorded", "a graph")
    with pytest.raises(snapshot.CodecError, match="cudagraph_notes"):
        snapshot.encode(tf, facts)
    facts.cudagraph_notes.clear()
    with pytest.raises(snapshot.CodecError, match="CudagraphNote"):
        snapshot.encode(tf, facts)  # the compile's own list
    comp.cudagraph_notes.clear()
    snapshot.encode(tf, facts)
    # A stack frame's fields are written by hand: a new one must be added there too.
    monkeypatch.setattr(snapshot, "STACK_FIELDS", ("filename", "line", "name"))
    with pytest.raises(snapshot.CodecError, match="StackFrame"):
        snapshot.encode(tf, tf.builder.facts)


def test_every_model_field_is_written() -> None:
    """The codecs cover each dataclass field of the model, and Record's slots."""
    import dataclasses

    from tcview.model.objects import Record

    for cls in snapshot.TABLES:
        c = snapshot.codec(cls)
        skipped = snapshot.SKIPPED_FIELDS.get(cls, frozenset())
        expected = [
            f.name for f in dataclasses.fields(cls) if f.name not in skipped and f.name != "file"
        ]
        assert c.names == expected, cls
    assert Record.__slots__ == snapshot.RECORD_SLOTS


# ---------------------------------------------------------------------- the cache


def test_reopen_from_the_cache_equals_the_first_open(many_ranks: Path, own_cache: Path) -> None:
    first = _load(many_ranks, 1, cache=True)
    assert first.load_stats.cache_written == 24 and len(_entries(own_cache)) == 24
    again = _load(many_ranks, 1, cache=True)
    assert again.load_stats.from_cache == 24 and again.load_stats.indexed_here == 0
    _same(first, again)
    _same(_load(many_ranks, 1, cache=False), again)


def test_workers_write_the_cache_and_the_reopen_is_the_same(
    many_ranks: Path, own_cache: Path, tiny_threshold: None
) -> None:
    first = _load(many_ranks, 2, cache=True)
    assert first.load_stats.from_workers == 24 and len(_entries(own_cache)) == 24
    again = _load(many_ranks, 2, cache=True)
    assert again.load_stats.from_cache == 24 and again.load_stats.workers == 0
    _same(first, again)


def test_the_cache_never_lives_in_the_trace_directory(
    many_ranks: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    trace = tmp_path / "trace"
    shutil.copytree(many_ranks, trace)
    monkeypatch.setenv(cache_mod.DIR_ENV, str(trace / ".cache"))
    monkeypatch.delenv(cache_mod.NO_CACHE_ENV, raising=False)
    _load(trace, 1, cache=True)
    assert not (trace / ".cache").exists()
    assert sorted(os.listdir(trace)) == sorted(os.listdir(many_ranks))


def test_a_file_beside_its_cache_directory_is_cached(
    many_ranks: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`tcview open ~/trace.log` with the cache in ~/.cache/tcview: the file's folder holds
    the cache, the file does not; the reopen comes from the cache and equals the first open."""
    trace = tmp_path / "trace.log"
    shutil.copy(next(many_ranks.glob("*.log")), trace)
    cache = tmp_path / ".cache" / "tcview"
    monkeypatch.setenv(cache_mod.DIR_ENV, str(cache))
    monkeypatch.delenv(cache_mod.NO_CACHE_ENV, raising=False)
    first = _load(trace, 1, cache=True)
    assert first.load_stats.cache_written == 1 and len(_entries(cache)) == 1
    again = _load(trace, 1, cache=True)
    assert again.load_stats.from_cache == 1 and again.load_stats.indexed_here == 0
    _same(first, again)


def test_no_cache_flag_and_environment(
    many_ranks: Path, own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _load(many_ranks, 1, cache=False)
    assert not (own_cache / "index").exists()
    monkeypatch.setenv(cache_mod.NO_CACHE_ENV, "1")
    _load(many_ranks, 1, cache=True)
    assert not (own_cache / "index").exists()
    from tcview.commands.cli import main

    monkeypatch.delenv(cache_mod.NO_CACHE_ENV)
    assert main(["summary", "--json", "-q", "--no-cache", str(many_ranks)]) == 0
    assert not (own_cache / "index").exists()
    assert main(["summary", "--json", "-q", str(many_ranks)]) == 0
    assert len(_entries(own_cache)) == 24


CUT_SOURCE = SAMPLES / "cpu_breaks_recompiles" / "trace"


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.floats(0.0, 1.0))
def test_a_grown_file_resumes_from_its_entry(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, share: float
) -> None:
    """Cut anywhere (mid-line, mid-payload), indexed and cached, then grown to the whole
    file: the load resumes from the entry, and equals an index of the whole file."""
    tmp = tmp_path_factory.mktemp("grow")
    monkeypatch.setenv(cache_mod.DIR_ENV, str(tmp_path_factory.mktemp("cache")))
    monkeypatch.delenv(cache_mod.NO_CACHE_ENV, raising=False)
    data = next(CUT_SOURCE.iterdir()).read_bytes()
    path = tmp / "dedicated_log_torch_trace_rank_0_x.log"
    cut = max(1, int(len(data) * share))
    path.write_bytes(data[:cut])
    assert _load(path, 1, cache=True).load_stats.cache_written == 1
    with open(path, "ab") as fh:
        fh.write(data[cut:])
    grown = _load(path, 1, cache=True)
    if cut < len(data):
        assert grown.load_stats.resumed == 1
    _same(_load(path, 1, cache=False), grown, FED_OTHERWISE)
    again = _load(path, 1, cache=True)  # the grown file was cached whole
    assert again.load_stats.from_cache == 1
    _same(grown, again)


def test_a_grown_file_resumes_in_a_worker(
    many_ranks: Path, tmp_path: Path, own_cache: Path, tiny_threshold: None
) -> None:
    trace = tmp_path / "trace"
    trace.mkdir()
    for p in sorted(many_ranks.iterdir())[:6]:
        data = p.read_bytes()
        (trace / p.name).write_bytes(data[: len(data) // 3])
    _load(trace, 2, cache=True)
    for p in sorted(many_ranks.iterdir())[:6]:
        data = p.read_bytes()
        with open(trace / p.name, "ab") as fh:
            fh.write(data[len(data) // 3 :])
    grown = _load(trace, 2, cache=True)
    assert grown.load_stats.from_workers == 6 and grown.load_stats.resumed == 6
    _same(_load(trace, 1, cache=False), grown, FED_OTHERWISE)
    assert _load(trace, 1, cache=True).load_stats.from_cache == 6


def test_a_changed_beginning_is_not_resumed(tmp_path: Path, own_cache: Path) -> None:
    data = next(CUT_SOURCE.iterdir()).read_bytes()
    path = tmp_path / "dedicated_log_torch_trace_a.log"
    path.write_bytes(data[: len(data) // 2])
    _load(path, 1, cache=True)
    # Rewritten: a different first record, and longer than before.
    path.write_bytes(data[:100].replace(b"V", b"W", 1) + data[100:])
    again = _load(path, 1, cache=True)
    assert again.load_stats.resumed == 0 and again.load_stats.from_cache == 0
    _same(_load(path, 1, cache=False), again)


def test_a_stale_entry_is_a_miss(tmp_path: Path, own_cache: Path) -> None:
    data = next(CUT_SOURCE.iterdir()).read_bytes()
    path = tmp_path / "dedicated_log_torch_trace_a.log"
    path.write_bytes(data)
    _load(path, 1, cache=True)
    path.write_bytes(data[: len(data) // 2])  # shrunk
    shrunk = _load(path, 1, cache=True)
    assert shrunk.load_stats.from_cache == 0 and shrunk.load_stats.resumed == 0
    _same(_load(path, 1, cache=False), shrunk)
    os.utime(path, ns=(1, 1))  # same size, another mtime
    other = _load(path, 1, cache=True)
    assert other.load_stats.from_cache == 0


def test_a_file_that_changes_while_it_is_read_is_not_cached(
    tmp_path: Path, own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = next(CUT_SOURCE.iterdir()).read_bytes()
    path = tmp_path / "dedicated_log_torch_trace_a.log"
    path.write_bytes(data)
    monkeypatch.setattr("tcview.ingest.load.CHUNK", 64 << 10)

    appended: list[int] = []

    def append(done: int, total: int) -> None:
        if not appended:  # the file grows once, while it is being read
            appended.append(done)
            with open(path, "ab") as fh:
                fh.write(b'V1121 05:00:00.000000 1 x.py:1] {"str": ["x", 9]}\n')

    ts = TraceSet(path)
    ts.load_files([path], Hooks(progress=append), cache_mod.IndexCache(own_cache))
    assert ts.load_stats.cache_written == 0 and _entries(own_cache) == []


def test_entries_of_another_format_are_misses(
    many_ranks: Path, own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache's format and the snapshot's format: an entry of another version (older or
    newer tcview) is never read as this one's."""
    first = _load(many_ranks, 1, cache=True)
    monkeypatch.setattr(cache_mod, "CACHE_FORMAT", cache_mod.CACHE_FORMAT + 1)
    newer = _load(many_ranks, 1, cache=True)
    assert newer.load_stats.from_cache == 0 and newer.load_stats.cache_written == 24
    monkeypatch.undo()  # this version again, the newer one's entries in the cache
    monkeypatch.setenv(cache_mod.DIR_ENV, str(own_cache))
    monkeypatch.delenv(cache_mod.NO_CACHE_ENV, raising=False)
    older = _load(many_ranks, 1, cache=True)
    assert older.load_stats.from_cache == 0 and older.load_stats.cache_written == 24
    monkeypatch.setattr(snapshot, "FORMAT", snapshot.FORMAT + 1)  # snapshots of another layout
    other = _load(many_ranks, 1, cache=True)
    assert other.load_stats.from_cache == 0 and other.load_stats.snapshot_errors == 24
    for model in (newer, older, other):
        _same(first, model)


def test_code_changes_make_entries_misses(
    many_ranks: Path, own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _load(many_ranks, 1, cache=True)
    monkeypatch.setitem(
        cache_mod._fingerprints, cache_mod.INDEXING_LAYERS, "another version of the indexer"
    )
    again = _load(many_ranks, 1, cache=True)
    assert again.load_stats.from_cache == 0 and again.load_stats.cache_written == 24


def _one_entry(tmp_path: Path, own_cache: Path) -> tuple[Path, Path, TraceSet]:
    path = tmp_path / "dedicated_log_torch_trace_rank_0_a.log"
    shutil.copy(next(CUT_SOURCE.iterdir()), path)
    first = _load(path, 1, cache=True)
    (entry,) = _entries(own_cache)
    return path, entry, first


def test_corrupt_and_foreign_entries_are_rebuilt(tmp_path: Path, own_cache: Path) -> None:
    path, entry, first = _one_entry(tmp_path, own_cache)
    good = entry.read_bytes()
    other = tmp_path / "dedicated_log_torch_trace_rank_1_b.log"
    shutil.copy(path, other)
    foreign = cache_mod.IndexCache(own_cache).entry_path(other)
    shutil.copy(entry, foreign)  # another file's entry under this file's name
    assert _load(other, 1, cache=True).load_stats.from_cache == 0
    middle = len(good) // 2
    broken = {
        "empty": b"",
        "truncated": good[:middle],
        "garbage": os.urandom(len(good)),
        "a flipped byte": good[:middle] + bytes([good[middle] ^ 1]) + good[middle + 1 :],
        "another magic": b"X" + good[1:],
        "a huge header length": good[:13] + struct.pack("<I", 1 << 31) + good[17:],
        "a header that is a list": good[:13] + struct.pack("<I", 2) + b"[]",
    }
    for why, data in broken.items():
        entry.write_bytes(data)
        again = _load(path, 1, cache=True)
        assert again.load_stats.from_cache == 0, why
        _same(first, again)
    entry.unlink()
    entry.symlink_to(foreign)
    assert _load(path, 1, cache=True).load_stats.from_cache == 0  # links are not followed


def _reseal(entry: Path, edit: Any, ints: Any = None) -> None:
    """Rewrite an entry's snapshot with `edit(doc)` (and `ints(array)` on its int section)
    and a payload hash that matches: only the snapshot's own checks can refuse it."""
    data = entry.read_bytes()
    header, payload = cache_mod._split(data)
    assert header is not None
    body_len, sigs_len = header["payload"]
    body = payload[:body_len]
    flags, (text, blob, raw) = snapshot._sections(body)
    doc = json.loads(bytes(text))
    edit(doc)
    text2 = json.dumps(doc).encode()
    numbers = array("q", bytes(blob))
    if ints is not None:
        ints(numbers)
    parts = [text2, numbers.tobytes(), bytes(raw)]
    body2 = snapshot._HEAD.pack(snapshot.MAGIC, snapshot.FORMAT, flags, 3) + b"".join(
        snapshot._LENGTH.pack(len(p)) for p in parts
    )
    body2 += b"".join(parts)
    payload2 = body2 + payload[body_len:]
    import hashlib

    header["payload"] = [len(body2), sigs_len]
    header["sha256"] = hashlib.sha256(payload2).hexdigest()
    head = json.dumps(header).encode()
    entry.write_bytes(cache_mod.MAGIC + struct.pack("<I", len(head)) + head + payload2)


def test_crafted_entries_are_refused_by_their_content(tmp_path: Path, own_cache: Path) -> None:
    """An entry whose hash matches but whose snapshot lies (offsets past the end, references
    out of range, wrong types) is refused and the file indexed again."""
    path, entry, first = _one_entry(tmp_path, own_cache)
    good = entry.read_bytes()
    size = path.stat().st_size

    def set_file(key: str, value: Any) -> Any:
        return lambda doc: doc["file"].__setitem__(key, value)

    def first_refs(doc: Any) -> None:
        doc["compiles"]["records"][0] = [10**6]

    def poke(column: str, value: int) -> Any:
        """Set the int section's values of a records column to `value`."""

        def edit(ints: Any) -> None:
            start, n = doc_of["records"][column]
            for i in range(start, start + n):
                ints[i] = value

        return edit

    doc_of: dict[str, Any] = {}
    edits = {
        "indexed past the end": (set_file("pos", size + 10), None),
        "a bad type": (set_file("failure_count", "many"), None),
        "a reference out of range": (first_refs, None),
        "a compile key of the wrong shape": (
            lambda doc: doc["compiles"]["key"].__setitem__(0, [1]),
            None,
        ),
        "a kernel position": (lambda doc: doc["kernels"]["index"].__setitem__(0, 7), None),
        "strings that are not strings": (
            lambda doc: doc["records"].__setitem__("strings", [1]),
            None,
        ),
        "a column past the int section": (
            lambda doc: doc["records"].__setitem__("meta", [10**9, doc["n_records"]]),
            None,
        ),
        "a finished file": (set_file("finished", True), None),
        "an unknown key missing": (lambda doc: doc.pop("values"), None),
        "offsets past the end": (doc_of.update, poke("end", 10**12)),
        "negative offsets": (doc_of.update, poke("offset", -5)),
        "a meta out of range": (doc_of.update, poke("meta", 10**6)),
        "a kind out of range": (doc_of.update, poke("kind", -1)),
    }
    for why, (edit, ints) in edits.items():
        entry.write_bytes(good)
        _reseal(entry, edit, ints)
        again = _load(path, 1, cache=True)
        assert again.load_stats.from_cache == 0 and again.load_stats.snapshot_errors == 1, why
        _same(first, again)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.tuples(st.integers(0, 1 << 30), st.integers(0, 255)), min_size=1, max_size=8))
def test_any_damage_to_an_entry_is_never_trusted(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, edits: list
) -> None:
    tmp = tmp_path_factory.mktemp("fuzz")
    root = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv(cache_mod.DIR_ENV, str(root))
    monkeypatch.delenv(cache_mod.NO_CACHE_ENV, raising=False)
    path, entry, first = _one_entry(tmp, root)
    data = bytearray(entry.read_bytes())
    for at, byte in edits:
        data[at % len(data)] = byte
    entry.write_bytes(bytes(data))
    _same(first, _load(path, 1, cache=True))


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_cache_directory(tmp_path: Path, own_cache: Path, many_ranks: Path) -> None:
    (own_cache / "index").mkdir(parents=True)
    os.chmod(own_cache / "index", 0o500)
    try:
        ts = _load(many_ranks, 1, cache=True)
        assert ts.load_stats.cache_written == 0
        _same(_load(many_ranks, 1, cache=False), ts)
    finally:
        os.chmod(own_cache / "index", 0o700)


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EDQUOT])
def test_a_cache_directory_that_cannot_be_written(
    tmp_path: Path, own_cache: Path, many_ranks: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    """A full disk (ENOSPC when the entry is written), a read-only file system: the load goes
    on, nothing is left half-written."""
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, fd: int, mode: str) -> None:
            self.fh = real_fdopen(fd, mode)

        def write(self, data: bytes) -> int:
            raise OSError(code, os.strerror(code))

        def __enter__(self) -> Full:
            return self

        def __exit__(self, *exc: object) -> None:
            self.fh.close()

    monkeypatch.setattr(cache_mod.os, "fdopen", Full)
    ts = _load(many_ranks, 1, cache=True)
    assert ts.load_stats.cache_written == 0
    assert list((own_cache / "index").iterdir()) == []  # no temporary file left behind
    _same(_load(many_ranks, 1, cache=False), ts)


def test_a_directory_where_no_file_can_be_made(
    own_cache: Path, many_ranks: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a read-only directory does to root too (chmod does not stop root)."""

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refused)  # (cache.py imports it where it writes)
    ts = _load(many_ranks, 1, cache=True)
    assert ts.load_stats.cache_written == 0
    assert list((own_cache / "index").iterdir()) == []  # no temporary file left behind
    _same(_load(many_ranks, 1, cache=False), ts)


def test_an_unusable_cache_path(
    many_ranks: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    monkeypatch.setenv(cache_mod.DIR_ENV, str(blocker))
    monkeypatch.delenv(cache_mod.NO_CACHE_ENV, raising=False)
    ts = _load(many_ranks, 1, cache=True)
    assert ts.load_stats.cache_written == 0 and len(ts.files) == 24


def test_the_size_cap_evicts_the_least_recently_used(
    many_ranks: Path, own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _load(many_ranks, 1, cache=True)
    entries = _entries(own_cache)
    sizes = {p: p.stat().st_size for p in entries}
    for i, p in enumerate(entries):  # a known order of use
        os.utime(p, (1000 + i, 1000 + i))
    cap = sum(sizes.values()) // 2
    monkeypatch.setenv(cache_mod.MAX_ENV, str(cap / (1 << 20)))
    store = cache_mod.IndexCache(own_cache)
    assert store.evict() > 0
    kept = _entries(own_cache)
    assert sum(sizes[p] for p in kept) <= cap
    assert kept == entries[len(entries) - len(kept) :]  # the oldest went first
    # A load keeps the cap too: what it writes makes room by evicting.
    again = _load(many_ranks, 1, cache=True)
    assert sum(p.stat().st_size for p in _entries(own_cache)) <= cap
    assert again.load_stats.from_cache == len(kept)


def test_signatures_are_made_where_the_file_is_indexed_and_cached(
    many_ranks: Path, own_cache: Path, tiny_threshold: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []

    def compile_ids(tf: TraceFile) -> list[str]:
        calls.append(os.getpid())
        return [c.id_label for c in tf.compiles.values()]

    monkeypatch.setitem(signatures.SIGNATURES, "compile_ids", compile_ids)
    monkeypatch.setattr(parallel, "start_method", lambda: "fork")
    serial = _load(many_ranks, 1, cache=False)
    expected = [f.signatures for f in serial.files]
    assert all(s["compile_ids"] for s in expected)
    calls.clear()
    par = _load(many_ranks, 2, cache=True)
    assert [f.signatures for f in par.files] == expected
    assert os.getpid() not in calls  # made in the workers
    calls.clear()
    again = _load(many_ranks, 1, cache=True)
    assert again.load_stats.from_cache == 24 and calls == []  # read from the cache
    assert [f.signatures for f in again.files] == expected


@pytest.mark.parametrize("name", SHARED_RANK_INPUTS)
def test_divergence_reads_the_signatures_made_by_the_indexers(
    shared_traces: Path,
    name: str,
    own_cache: Path,
    tiny_threshold: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The divergence pass over files indexed in workers, or read from the cache, uses the
    signatures made there (no file's steps are made again) and finds what it finds when it
    makes every file's steps itself."""
    path = shared_traces / name
    here = divergence.analyze(_load(path, 1, cache=False), signature=lambda source: None)
    monkeypatch.setattr(parallel, "start_method", lambda: "fork")
    par = _load(path, 3, cache=True)
    again = _load(path, 1, cache=True)
    assert again.load_stats.from_cache == len(again.files)

    def made_again(source: object) -> None:
        raise AssertionError(f"steps made again for {source}")

    monkeypatch.setattr(divergence, "source_steps", made_again)
    for model in (par, again):
        if any(not isinstance(f, TraceFile) for f in model.files):
            continue  # a run directory's text log has no indexer of its own
        found = divergence.analyze(model)
        assert found.json() == here.json()
        assert (found.first, found.pair, found.groups) == (here.first, here.pair, here.groups)


def test_without_orjson_snapshots_are_the_same(
    many_ranks: Path, own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _load(many_ranks, 1, cache=True)
    monkeypatch.setattr(snapshot, "HAVE_ORJSON", False)
    again = _load(many_ranks, 1, cache=True)  # orjson's entries read with json
    assert again.load_stats.from_cache == 24
    _same(first, again)
    shutil.rmtree(own_cache)
    _load(many_ranks, 1, cache=True)  # written with json
    monkeypatch.setattr(snapshot, "HAVE_ORJSON", True)
    third = _load(many_ranks, 1, cache=True)
    assert third.load_stats.from_cache == 24
    _same(first, third)


def test_values_only_json_reads_round_trip(tmp_path: Path, own_cache: Path) -> None:
    """NaN, huge numbers and lone surrogates (headers orjson refuses) come back exactly."""
    prefix = b"V1121 05:00:00.000000 1 x.py:1] "
    lines = [
        b'{"dynamo_start": {"stack": [], "x": NaN}, "frame_id": 0, "frame_compile_id": 0}',
        b'{"compilation_metrics": {"co_name": "\\ud800", "n": 123456789012345678901234567890,'
        b' "graph_op_count": 1e999}, "frame_id": 0, "frame_compile_id": 0}',
    ]
    path = tmp_path / "dedicated_log_torch_trace_x.log"
    path.write_bytes(b"".join(prefix + ln + b"\n" for ln in lines))
    first = _load(path, 1, cache=True)
    assert first.files[0].slow_json == 2
    again = _load(path, 1, cache=True)
    assert again.load_stats.from_cache == 1
    _same(first, again)
    metrics = again.files[0].records[1].meta
    assert isinstance(metrics, dict)
    assert metrics["co_name"] == "\ud800" and metrics["n"] == 123456789012345678901234567890


# ---------------------------------------------------------------------- follow mode


def test_follow_mode_reads_the_cache_first_and_never_writes_it(
    many_ranks: Path, tmp_path: Path, own_cache: Path
) -> None:
    """A followed directory starts from the cache entries of its files, fed on as they grow;
    the model is the one follow mode makes without a cache. Follow mode writes no entry."""
    from tcview.ingest.live import Follower

    trace = tmp_path / "trace"
    trace.mkdir()
    names = sorted(p.name for p in many_ranks.iterdir())[:5]
    for name in names:
        data = (many_ranks / name).read_bytes()
        (trace / name).write_bytes(data[: len(data) // 2])
    _load(trace, 1, cache=True)
    written = {p: p.read_bytes() for p in _entries(own_cache)}
    assert len(written) == 5
    for name in names[:2]:  # two files grow before the follower starts, one more later
        data = (many_ranks / name).read_bytes()
        with open(trace / name, "ab") as fh:
            fh.write(data[len(data) // 2 :])

    def follow() -> Follower:
        follower = Follower(str(trace))
        follower.step()
        return follower

    cached = follow()
    assert cached.cache is not None and cached.cache.hits == 3 and cached.cache.resumed == 2
    os.environ[cache_mod.NO_CACHE_ENV] = "1"
    try:
        plain = follow()
    finally:
        del os.environ[cache_mod.NO_CACHE_ENV]
    assert plain.cache is None
    _same(plain.model, cached.model, FED_OTHERWISE)
    data = (many_ranks / names[2]).read_bytes()
    with open(trace / names[2], "ab") as fh:
        fh.write(data[len(data) // 2 :])
    cached.step()
    plain.step()
    _same(plain.model, cached.model, FED_OTHERWISE)
    assert {p: p.read_bytes() for p in _entries(own_cache)} == written  # read, not written


# ---------------------------------------------------------------------- kept reports


def _results(root: Path) -> list[Path]:
    return sorted((root / "results").glob("*.res"))


def _summary_out(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    from tcview.commands.cli import main

    assert main(["summary", "-q", *args]) == 0
    return capsys.readouterr().out


def test_an_unchanged_inputs_summary_is_kept(
    tmp_path: Path, own_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`tcview summary` again on an unchanged trace directory prints what it printed, from
    the kept report: it reads no index (there is none left to read)."""
    trace = tmp_path / "trace"
    shutil.copytree(CUT_SOURCE, trace)
    for form in (["--json"], []):
        fresh = _summary_out(capsys, "--no-cache", *form, str(trace))
        first = _summary_out(capsys, *form, str(trace))
        shutil.rmtree(own_cache / "index")
        again = _summary_out(capsys, *form, str(trace))
        assert fresh == first == again
        assert not (own_cache / "index").exists()
    assert len(_results(own_cache)) == 2  # one for each form


def test_a_kept_summary_of_a_directory_not_named_in_utf8(
    tmp_path: Path, own_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A directory whose name is not UTF-8 (bytes the OS allows): its report is kept and found
    again (the key hashed the name as text, which raised)."""
    trace = Path(os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9"))
    shutil.copytree(CUT_SOURCE, trace)
    first = _summary_out(capsys, "--json", str(trace))
    shutil.rmtree(own_cache / "index")
    assert _summary_out(capsys, "--json", str(trace)) == first
    assert len(_results(own_cache)) == 1


def test_kept_summaries_keep_the_cache_under_its_cap(
    tmp_path: Path,
    own_cache: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A kept report counts under the cache's cap as index entries do: writing one evicts the
    least recently used, also when the index was found and nothing else was written (the text
    report after the JSON one)."""
    traces = []
    for n in range(4):
        traces.append(tmp_path / f"trace{n}")
        shutil.copytree(CUT_SOURCE, traces[-1])
    _summary_out(capsys, "--json", str(traces[0]))
    each = sum(p.stat().st_size for p in own_cache.rglob("*") if p.is_file())
    shutil.rmtree(own_cache)
    cap = 2.5 * each  # room for two inputs' entry and report
    monkeypatch.setenv(cache_mod.MAX_ENV, str(cap / (1 << 20)))
    for trace in traces:
        for form in (["--json"], []):
            _summary_out(capsys, *form, str(trace))
            assert sum(p.stat().st_size for p in own_cache.rglob("*") if p.is_file()) <= cap
    assert 0 < len(_results(own_cache)) < 8


def test_a_kept_summary_follows_its_input(
    tmp_path: Path,
    own_cache: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A report is used only for the same files, each unchanged, and the same code: a file that
    grows, a new file, another file the report reads (run.json), a damaged entry or other
    code make it again."""
    trace = tmp_path / "trace"
    shutil.copytree(CUT_SOURCE, trace)
    (log,) = trace.iterdir()

    def check() -> dict[str, Any]:
        fresh = _summary_out(capsys, "--json", "--no-cache", str(trace))
        for _ in range(2):  # made and kept, then from what was kept
            assert _summary_out(capsys, "--json", str(trace)) == fresh
        return dict(json.loads(fresh))

    records = check()["records"]
    with log.open("ab") as fh:  # the job goes on: the same records once more
        fh.write(log.read_bytes())
    assert check()["records"] == 2 * records
    shutil.copy(log, trace / "dedicated_log_torch_trace_rank_1_b.log")
    assert check()["files"] == 2
    run_json = trace / "run.json"  # read beside the trace: the job's exit code
    run_json.write_text('{"exit_code": 0}')
    assert check()["errors"] == 0
    run_json.write_text('{"exit_code": 9}')  # the same size
    assert check()["errors"] == 1
    (entry,) = _results(own_cache)
    data = bytearray(entry.read_bytes())
    data[-10] ^= 0xFF
    entry.write_bytes(bytes(data))
    check()
    monkeypatch.setitem(cache_mod._fingerprints, cache_mod.REPORT_LAYERS, "another report")
    check()
    header, _ = cache_mod._result_split(entry.read_bytes()[len(cache_mod.RESULT_MAGIC) :])
    assert header is not None and header["code"] == "another report"  # made again, kept


def test_no_report_is_kept_when_asked_not_to(
    tmp_path: Path, own_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "trace"
    shutil.copytree(CUT_SOURCE, trace)
    _summary_out(capsys, "--no-cache", str(trace))
    _summary_out(capsys, "--verify", str(trace))  # hashes every payload: never from a report
    assert _results(own_cache) == []


# ---------------------------------------------------------------------- findings in a child


def _python(code: str, *args: str) -> str:
    """`code` run in a new interpreter (one thread: a fork is safe there), its output."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "TCVIEW_NO_CACHE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_in_child_runs_elsewhere_and_falls_back_here() -> None:
    """`in_child` runs the function in a forked child; a result that cannot come back (a lock
    cannot be pickled) or an error there is made here instead, so the caller sees what a call
    here gives; so is a result asked for twice (the pipe is read once), and one of a process
    too big to fork."""
    out = _python(
        """
import os, threading
from tcview.ingest import parallel
from tcview.ingest.parallel import in_child
print(in_child(os.getpid)() != os.getpid())
print(type(in_child(threading.Lock)()).__name__)
try:
    in_child(lambda: 1 // 0)()
except ZeroDivisionError:
    print("raised here")
again = in_child(os.getpid)
print(again() != again() == os.getpid())
parallel.IN_CHILD_MAX_RSS = 0
print(in_child(os.getpid)() == os.getpid())
"""
    )
    assert out.split("\n")[:5] == ["True", "lock", "raised here", "True", "True"]


def test_summary_makes_its_recompile_findings_in_a_child_and_the_same_report(
    many_ranks: Path, tmp_path: Path
) -> None:
    """`summary` makes the recompile findings in a forked child while it makes the rest; what
    it prints (JSON and text) is what it prints making them all here, byte for byte, on real
    traces with findings of every kind (crashes, recompiles, breaks, CUDA graphs, cache misses,
    ranks)."""
    # One program's recompiles on two ranks: one finding, the compiles of both ranks in it.
    (two_ranks := tmp_path / "two_ranks").mkdir()
    trace = next((FIXTURES / "recompiles" / "size" / "trace").iterdir()).read_bytes()
    for rank in (0, 1):
        (two_ranks / f"dedicated_log_torch_trace_rank_{rank}_x.log").write_bytes(trace)
    inputs = [
        *sorted(p for p in SAMPLES.iterdir() if p.is_dir()),
        *sorted((FIXTURES / "findings").iterdir()),
        *(FIXTURES / "recompiles" / name for name in ("size", "module_flag", "value_float")),
        many_ranks,
        two_ranks,
    ]
    out = _python(
        """
import contextlib, io, os, sys
from tcview.analysis import findings as module
from tcview.commands.cli import main
from tcview.ingest import parallel

real = module.recompile_findings
forking = True
def recompiles(*args):
    with open(sys.argv[1], "a") as log:  # which process made them, and when
        log.write(f"{forking} {os.getpid()}\\n")
    return real(*args)
module.recompile_findings = recompiles

def printed(*args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main([*args, "--no-cache", "--color", "never"])
    return out.getvalue()

forked = parallel.in_child
for path in sys.argv[2:]:
    for command in (["summary", "--json"], ["summary"]):
        parallel.in_child, forking = forked, True
        there = printed(*command, path)
        parallel.in_child, forking = None, False  # all made here, as without an aside
        print(there == printed(*command, path) and len(there) > 100, *command, path)
        if path.endswith("two_ranks") and "--json" in command:
            print("On ranks 0, 1: Each recompile" in there, "folded")
made = [line.split() for line in open(sys.argv[1])]
children = {pid for forked_run, pid in made if pid != str(os.getpid())}
here = [pid for forked_run, pid in made if forked_run == "True" and pid == str(os.getpid())]
print(len(children), "children,", len(here), "made here instead")
""",
        str(tmp_path / "pids"),
        *map(str, inputs),
    )
    lines = out.strip().split("\n")
    assert [line for line in lines[:-1] if not line.startswith("True ")] == []
    assert len(lines) == 2 * len(inputs) + 2
    assert lines[-1] == f"{2 * len(inputs)} children, 0 made here instead"
