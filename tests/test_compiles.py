"""What each compile really was: episodes after `torch._dynamo.reset()`,
status as tlparse defines it with recompile and cache-hit marks, every restart reason, and
the real cause of a graph break. On real traces: the repo's fixtures and ../shared."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, unpack_shared
from refcount import count
from textref import count_text

from tcview.ingest.index import TraceSet
from tcview.ingest.source import load_source
from tcview.ingest.textlog import TextLog
from tcview.ingest.tracefile import TraceFile
from tcview.model.facts import parse_graph_break

TLPARSE = json.loads((FIXTURES / "tlparse_compiles.json").read_text())["traces"]
REF_KEYS = ("compiles", "frames", "recompiles")


@pytest.fixture(scope="module")
def resets(fixture_runs: Path) -> Path:
    return fixture_runs / "resets"


# ---------------------------------------------------------------------- 1. episodes


def test_three_rounds_with_resets_are_six_compiles(resets: Path) -> None:
    """The same frames compiled three times across resets: six compiles, each its own."""
    ts = TraceSet.load(resets / "trace")
    comps = ts.compiles
    assert [c.id_label for c in comps] == ["0/0", "1/0", "0/0 #2", "1/0 #2", "0/0 #3", "1/0 #3"]
    assert [c.id_text for c in comps] == ["0/0", "1/0"] * 3
    assert [c.episode for c in comps] == [1, 1, 2, 2, 3, 3]
    # Frame 1 is `fn` twice, then `fn2`: each episode's frame is its own.
    assert [c.frame.label.split(" ")[0] for c in comps if c.frame] == [
        "g", "fn", "g", "fn", "g", "fn2",
    ]  # fmt: skip
    assert [c.frame.id_label for c in comps if c.frame] == [
        "0",
        "1",
        "0 #2",
        "1 #2",
        "0 #3",
        "1 #3",
    ]
    assert len({id(c.frame) for c in comps}) == 6
    assert all(c.frame is not None and c.frame.stack for c in comps)
    # Each has its own metrics record, compile time and FX graph cache result.
    assert all(len(c.compilation_metrics()) == 1 for c in comps)
    assert [m.co_name for c in comps for m in c.compilation_metrics()] == [
        "g", "fn", "g", "fn", "g", "fn2",
    ]  # fmt: skip
    fx = [[e.result for e in c.cache if e.cache == "fx_graph"] for c in comps]
    assert fx == [["miss"], ["miss"], ["hit"], ["hit"], ["hit"], ["miss"]]
    assert [c.status_text for c in comps] == [
        "ok", "ok", "ok, cache hit", "ok, cache hit", "ok, cache hit", "ok",
    ]  # fmt: skip
    times = [c.compile_time_s for c in comps]
    assert all(t is not None and t > 0 for t in times) and len(set(times)) == 6
    # Dynamo logs a compile's first chromium events before its dynamo_start: they are the new
    # episode's, so every compile's phases start with a timed "dynamo" phase.
    for c in comps:
        name, seconds, depth = c.phases()[0]
        assert (name, depth) == ("dynamo", 0) and seconds > 0, c.id_label
    s = ts.summary_counts()
    assert (s["compiles"], s["frames"], s["recompiles"]) == (6, 6, 0)
    ref = count([f.path for f in ts.files])
    assert {k: s[k] for k in REF_KEYS} == {k: ref[k] for k in REF_KEYS}


def test_string_table_entries_before_a_start_leave_the_episodes_as_they_are(
    resets: Path, tmp_path: Path
) -> None:
    """Torch logs the string table entries a stack needs just before its `dynamo_start`, after
    the new compile's first chromium events: they must not hold those events back in the old
    episode (they did while `str` records were kept: the events after the last record move)."""
    (path,) = sorted((resets / "trace").glob("*.log"))
    lines = path.read_bytes().splitlines(keepends=True)
    out = []
    for n, line in enumerate(lines):
        if b'{"dynamo_start": ' in line:
            prefix = line[: line.index(b"] ") + 2]
            out.append(prefix + b'{"str": ["/tmp/new_%d.py", %d]}\n' % (n, 9000 + n))
        out.append(line)
    (tmp_path / path.name).write_bytes(b"".join(out))

    def episodes(ts: TraceSet) -> list[tuple[str, int, list[str]]]:
        return [(c.id_label, c.chromium, [p[0] for p in c.phases()]) for c in ts.compiles]

    plain, with_strings = TraceSet.load(resets / "trace"), TraceSet.load(tmp_path)
    assert with_strings.files[0].kinds["str"] == plain.files[0].kinds["str"] + 6
    assert episodes(with_strings) == episodes(plain)
    assert all(c.phases()[0][0] == "dynamo" for c in with_strings.compiles)


def test_retried_sees_records_that_come_later(tmp_path: Path) -> None:
    """`Compile.retried` remembers what it has looked at; a record of another attempt that
    arrives later (a growing trace) still makes it true."""
    prefix = b"V1121 05:00:00.000000 1 x.py:1] "
    ids = b'"frame_id": 0, "frame_compile_id": 0'
    path = tmp_path / "dedicated_log_torch_trace_x.log"
    path.write_bytes(prefix + b'{"dynamo_start": {}, ' + ids + b', "attempt": 0}\n')
    tf = TraceFile(path)
    tf.feed(path.read_bytes())
    (comp,) = tf.compiles.values()
    assert not comp.retried
    more = prefix + b'{"dynamo_start": {}, ' + ids + b', "attempt": 1}\n'
    tf.feed(more)
    assert comp.retried and comp.has_break


def test_the_capture_of_the_same_run_sees_the_same_episodes(resets: Path) -> None:
    """Its TORCH_LOGS (with `dynamo`) has a `Step 1` message per compile: the same six."""
    trace = TraceSet.load(resets / "trace")
    text = TextLog.load(str(resets / "torch_logs.txt"))
    assert [c.id_label for c in text.compiles] == [c.id_label for c in trace.compiles]
    assert [c.frame.co_name for c in text.compiles if c.frame] == [
        "g", "fn", "g", "fn", "g", "fn2",
    ]  # fmt: skip
    assert text.counts() == count_text((resets / "torch_logs.txt").read_bytes())
    # In a run directory the trace's compile finds its own episode in the capture.
    run = load_source(str(resets))
    assert run.text is not None
    for comp in run.compiles:
        (same,) = run.text.same_compiles(comp)
        assert same.id_label == comp.id_label


def test_only_a_repeated_start_begins_an_episode(tmp_path: Path) -> None:
    """Restarts (attempt 1) and records without a dynamo_start stay in their episode."""
    prefix = "V1122 17:07:36.000000 1 torch/_dynamo/convert_frame.py:1] "

    def header(value: dict) -> str:
        return prefix + json.dumps(value) + "\n"

    lines = [
        header({"dynamo_start": {"stack": []}, "frame_id": 0, "frame_compile_id": 0}),
        header({"dynamo_start": {"stack": []}, "frame_id": 0, "frame_compile_id": 0, "attempt": 1}),
        header({"compilation_metrics": {"graph_op_count": 1}, "frame_id": 0, "frame_compile_id": 0, "attempt": 1}),
        header({"compilation_metrics": {"graph_op_count": 1}, "frame_id": 1, "frame_compile_id": 0}),
        header({"dynamo_start": {"stack": []}, "frame_id": 0, "frame_compile_id": 1, "attempt": 0}),
        header({"dynamo_start": {"stack": []}, "frame_id": 0, "frame_compile_id": 0}),
        header({"compilation_metrics": {"graph_op_count": 0}, "frame_id": 1, "frame_compile_id": 0}),
    ]  # fmt: skip
    path = tmp_path / "dedicated_log_torch_trace_x.log"
    path.write_text("".join(lines))
    tf = TraceFile(path)
    tf.feed(path.read_bytes())
    tf.finish()
    assert [c.id_label for c in tf.compiles.values()] == ["0/0", "1/0", "0/1", "0/0 #2", "1/0 #2"]
    assert [c.status for c in tf.compiles.values()] == [
        "graph break", "ok", "no metrics", "no metrics", "empty graph",
    ]  # fmt: skip
    assert count([path])["compiles"] == 5


def test_shared_breaks_run_has_eleven_compile_episodes(fixture_runs: Path) -> None:
    ts = TraceSet.load(fixture_runs / "h200_breaks" / "trace")
    assert ts.summary_counts()["compiles"] == 11  # tlparse: 11 dynamo_start links, 8 ids
    labels = [c.id_label for c in ts.compiles]
    assert labels[8:] == ["0/0 #2", "1/0 #2", "0/0 #3"]
    assert [c.frame.co_name for c in ts.compiles[8:] if c.frame] == [
        "model_with_breaks",
        "torch_dynamo_resume_in_model_with_breaks_at_33",
        "broken_function",
    ]
    # tlparse paints all three 0/0 links red; each episode has its own status here.
    assert [c.status for c in ts.compiles if c.id_text == "0/0"] == [
        "graph break",
        "graph break",
        "failed",
    ]


def test_text_without_start_messages_cannot_see_resets(fixture_runs: Path) -> None:
    """The breaks capture has no `dynamo` INFO: its ids stay merged (docs/explanation/status.md says so)."""
    text = TextLog.load(str(fixture_runs / "h200_breaks" / "torch_logs.txt"))
    assert not text.records_of("step")
    assert [c.id_label for c in text.compiles] == [f"{i}/0" for i in range(8)]


# ---------------------------------------------------------------------- 2. status


def test_a_compile_without_metrics_says_so_once_the_trace_is_complete(tmp_path: Path) -> None:
    """tlparse's "Metrics were missing": a complete trace with no compilation_metrics record for
    a compile. While the file grows, its compile is not judged yet; text never has metrics."""
    prefix = "V1122 17:07:36.000000 1 torch/_dynamo/convert_frame.py:1] "
    lines = [
        {"dynamo_start": {"stack": []}, "frame_id": 0, "frame_compile_id": 0},
        {"compilation_metrics": {"graph_op_count": 2}, "frame_id": 0, "frame_compile_id": 0},
        {"dynamo_start": {"stack": []}, "frame_id": 1, "frame_compile_id": 0},
    ]
    path = tmp_path / "dedicated_log_torch_trace_x.log"
    path.write_text("".join(prefix + json.dumps(v) + "\n" for v in lines))
    tf = TraceFile(path)
    tf.feed(path.read_bytes())
    assert [c.status for c in tf.compiles.values()] == ["ok", "ok"]  # still growing
    tf.finish()
    assert [c.status for c in tf.compiles.values()] == ["ok", "no metrics"]
    text = TextLog.load(FIXTURES / "torch_logs_small.txt")
    assert text.compiles and "no metrics" not in {c.status for c in text.compiles}


def _tlparse_cases() -> list[str]:
    root = unpack_shared()
    return sorted(k for k in TLPARSE if root is not None and (root / k).is_file())


@pytest.mark.parametrize("rel", _tlparse_cases())
def test_every_compile_agrees_with_tlparse(rel: str, shared_traces: Path) -> None:
    """Per compilation_metrics record: status, function, restart count and cache results are
    what tlparse 0.4.3 shows for that record (tests/fixtures/tlparse_compiles.json)."""
    path = shared_traces / rel
    tf = TraceFile(path)
    tf.feed(path.read_bytes())
    tf.finish()
    got: list[list[Any]] = [
        [
            c.id_text,
            m.co_name,
            c.status,
            len(c.restart_reasons),
            sorted(f"{e.cache}_cache_{e.result}" for e in c.cache),
        ]
        for c in tf.compiles.values()
        for m in c.compilation_metrics()
    ]
    want = TLPARSE[rel]
    assert sorted(got, key=lambda r: r[0]) == sorted(want, key=lambda r: r[0])
    assert [r[0] for r in got] == [r[0] for r in want]


def test_empty_graphs_count_and_marks(shared_traces: Path) -> None:
    ts = TraceSet.load(shared_traces / "h200-torch2.11" / "breaks" / "trace")
    empty = [c.frame.co_name for c in ts.compiles if c.status == "empty graph" and c.frame]
    assert empty == ["torch_dynamo_resume_in_bad_fn_at_6", "torch_dynamo_resume_in_branchy_at_16"]
    assert ts.summary_counts()["empty_graphs"] == 2
    gpt = TraceSet.load(shared_traces / "h200-torch2.11" / "gpt_train" / "trace")
    (rel,) = [k for k in TLPARSE if k.startswith("h200-torch2.11/gpt_train/")]
    tlparse_empty = [row[0] for row in TLPARSE[rel] if row[2] == "empty graph"]
    assert "7/0" in tlparse_empty and "8/0" in tlparse_empty  # graph_op_count null
    assert [c.id_text for c in gpt.compiles if c.status == "empty graph"] == tlparse_empty
    assert gpt.summary_counts()["empty_graphs"] == len(tlparse_empty)
    recompiles = TraceSet.load(shared_traces / "cpu-torch2.13" / "c_recompiles" / "trace")
    marks = {c.id_text: c.marks for c in recompiles.compiles}
    assert marks["0/0"] == [] and marks["0/1"] == ["recompile"]
    assert {c.status for c in recompiles.compiles if c.key.is_recompile} <= {"ok", "failed"}
    warm = TraceSet.load(shared_traces / "h200-torch2.11" / "cache_warm" / "trace")
    assert [c.marks for c in warm.compiles] == [["cache hit"]]


def test_every_restart_reason_is_kept_whole(fixture_runs: Path) -> None:
    """Big compilation_metrics headers are slimmed in memory, but not restart_reasons."""
    path = fixture_runs / "h200_breaks" / "trace"
    ts = TraceSet.load(path)
    kept = [r for c in ts.compiles for r in c.restart_reasons]
    on_disk = [
        r
        for c in ts.compiles
        for rec in c.metric_records
        if rec.kind == "compilation_metrics"
        for r in rec.full_meta().get("restart_reasons") or []
    ]
    assert len(kept) == 6 and kept == on_disk  # tlparse's failures page: 6 restarts
    assert max(len(r) for r in kept) > 400


# ---------------------------------------------------------------------- 3. break causes


def test_graph_break_cause_behind_the_skip_wrapper(shared_traces: Path) -> None:
    ts = TraceSet.load(shared_traces / "h200-torch2.11" / "gpt_train" / "trace")
    groups = ts.grouped_breaks()
    assert [(g.count, g.reason) for g in groups] == [
        (3, "Skip calling `torch.compiler.disable()`d function"),
        (2, "Call to `torch._dynamo.graph_break()`"),
    ]
    skip = groups[0].breaks
    assert all("Failed to handle" not in gb.reason for gb in skip)
    assert all(gb.explanation.startswith("Skip calling function") for gb in skip)
    text = TextLog.load(str(shared_traces / "h200-torch2.11" / "gpt_train" / "torch_logs.txt"))
    assert [(g.count, g.reason) for g in text.grouped_breaks()] == [
        (g.count, g.reason) for g in groups
    ]


@pytest.mark.parametrize(
    "first,cause",
    [
        (
            "Failed to handle graph break gracefully. Skipping the function and falling back"
            " to eager. Graph break encountered:",
            "Tensor.item()",
        ),
        (
            "Failed to handle graph break gracefully. Graph break encountered: Tensor.item()",
            "Tensor.item()",
        ),
        ("Encountered graph break when attempting to trace CALL: a call", "Tensor.item()"),
    ],
)
def test_wrapper_lines_are_not_the_cause(first: str, cause: str) -> None:
    text = f"Graph break in user code at /a/b.py:3\nGraph Break Reason: {first}\n\n"
    if not first.endswith(cause):
        text += f"{cause}\n"
    text += "  Explanation: why\n"
    assert parse_graph_break(text).reason == cause
