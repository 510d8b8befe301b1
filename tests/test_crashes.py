"""Crashes and failures in TORCH_LOGS text: the WON'T CONVERT rule, and
uncaught tracebacks and run.json exit codes as errors. On real runs: the repo's fixtures
(tests/fixtures/jobs/*.py made them) and ../shared."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import REPO, TCVIEW_CLI, shared_run_dirs
from textref import count_errors

from tcview.ingest.index import TraceSet
from tcview.ingest.source import load_source
from tcview.ingest.textlog import TextLog
from tcview.model.objects import Failure, LogMeta
from tcview.report.summary import summary_json, summary_text

# ---------------------------------------------------------------------- failures in text

# Runs whose capture shows failures, and how many (the rest show none). Where torch logged a
# failure, the capture has it; the trace's other failures were raised to the program
# (fullgraph=True, suppress_errors off), or logged at INFO while `dynamo` was off.
TEXT_FAILURES = {
    ("compile_failures", "torch_logs.txt"): 1,  # of 2 in the trace
    ("recompiles", "torch_logs.txt"): 1,
    ("c_recompiles", "torch_logs.txt"): 2,
    ("c_recompiles", "torch_logs_recompiles_verbose.txt"): 2,
    ("f_compile_errors", "torch_logs.txt"): 1,  # of 3
}


def _captures() -> list[tuple[Path, Path]]:
    return [
        (run, log)
        for run in shared_run_dirs()
        if (run / "trace").is_dir()
        for log in sorted(run.glob("torch_logs*.txt"))
    ]


def _where(failure: Failure) -> str:
    """The frame a failure is about, as ``file:line`` (a trace's from its compile's frame)."""
    frame = failure.compile.frame if failure.compile is not None else None
    if frame is not None and frame.co_filename:
        return f"{frame.co_filename}:{frame.co_firstlineno}"
    return failure.location


@pytest.mark.parametrize("run,log", _captures(), ids=lambda p: p.name)
def test_text_failures_are_trace_failures(run: Path, log: Path) -> None:
    """Every failure a capture reports is one its trace reports (the same compile, or the
    same frame when the line names no compile); none is counted twice."""
    trace = TraceSet.load(run / "trace")
    text = TextLog.load(str(log))
    assert len(text.failures) == TEXT_FAILURES.get((run.name, log.name), 0)
    trace_ids = [f.compile.id_label for f in trace.failures if f.compile is not None]
    trace_where = [_where(f) for f in trace.failures]
    for failure in text.failures:
        if failure.compile is not None:
            assert failure.compile.id_label in trace_ids
        assert _where(failure) in trace_where
    assert len({id(f) for f in text.failures}) == len(text.failures)


def test_wont_convert_at_info_is_a_failure_when_the_frame_started(fixture_runs: Path) -> None:
    """A graph break in a loop (INFO), a generator (INFO, never compiled), a failing backend
    with suppress_errors (warning): the capture and the trace report the same two failures."""
    run = fixture_runs / "wont_convert"
    trace = TraceSet.load(run / "trace")
    text = TextLog.load(str(run / "torch_logs.txt"))
    wont = text.records_of("wont_convert")
    levels = [r.meta.level for r in wont if isinstance(r.meta, LogMeta)]
    assert len(levels) == len(wont) and levels == ["I", "I", "W"]

    def facts(failures: list[Failure]) -> list[tuple[str, str]]:
        return [(f.compile.id_label if f.compile else "-", f.fail_type) for f in failures]

    assert facts(text.failures) == facts(trace.failures)
    assert facts(text.failures) == [("0/0", "Unsupported"), ("1/0", "BackendCompilerFailed")]
    assert [c.status for c in text.compiles] == ["failed", "failed"]
    assert "graph_break" in text.failures[0].reason


def test_a_skipped_generator_is_not_a_failure(shared_traces: Path) -> None:
    """k_compiled_autograd logs 56 INFO WON'T CONVERTs for frames Dynamo never compiled."""
    log = shared_traces / "cpu-torch2.13" / "k_compiled_autograd" / "torch_logs.txt"
    text = TextLog.load(str(log))
    assert len(text.records_of("wont_convert")) == 56
    assert text.failures == []


def test_a_recompile_limit_is_one_failure_with_its_wont_convert(shared_traces: Path) -> None:
    log = shared_traces / "cpu-torch2.13" / "c_recompiles" / "torch_logs.txt"
    text = TextLog.load(str(log))
    assert len(text.records_of("wont_convert")) == 2
    assert [(f.compile.id_label if f.compile else "-", f.fail_type) for f in text.failures] == [
        ("0/4", "recompile limit"),
        ("1/4", "recompile limit"),
    ]


def test_a_failure_after_a_reset_is_on_its_episode(shared_traces: Path) -> None:
    log = shared_traces / "cpu-torch2.13" / "f_compile_errors" / "torch_logs.txt"
    (failure,) = TextLog.load(str(log)).failures
    assert failure.compile is not None and failure.compile.id_label == "0/0 #2"
    assert failure.compile.frame is not None and failure.compile.frame.co_name == "h"
    assert failure.fail_type == "BackendCompilerFailed"


# ---------------------------------------------------------------------- errors


def test_a_crashed_torchrun_job_has_an_error_per_rank(fixture_runs: Path) -> None:
    run = fixture_runs / "crash_ranks"
    model = load_source(str(run))
    errors = model.run_errors()
    assert [(e.rank, e.error_type) for e in errors] == [
        (0, "AssertionError"),
        (1, "AssertionError"),
        (None, "torch.distributed.elastic.multiprocessing.errors.ChildFailedError"),
    ]
    for rank, error in enumerate(errors[:2]):
        assert error.message == f"rank {rank}: expected 2 gradient buckets, found 3"
        assert error.stack[-1].endswith("script.py:20 in check_buckets")
        assert [s.rsplit(" in ", 1)[1] for s in error.stack] == [
            "<module>",
            "main",
            "check_buckets",
        ]
        assert error.text.startswith("Traceback (most recent call last):")
        assert "[rank" not in error.text
        assert error.origin == "traceback" and error.lineno > 0
    assert "script.py FAILED" in errors[2].message
    assert errors[2].headline.endswith("script.py FAILED")
    s = summary_json(model)
    assert (s["errors"], s["failures"], s["compiles"]) == (3, 0, 4)
    first = summary_text(model).split("\n")
    assert first[0].startswith("Findings (")  # the summary starts with them, the crash first
    assert first[1].startswith("  ERROR   The run crashed on rank 0 at ")
    assert first[1].endswith("/crash_ranks/script.py:20: AssertionError")
    assert first[2] == "          AssertionError: rank 0: expected 2 gradient buckets, found 3"


def _summary(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TCVIEW_CLI, "summary", str(path), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )


@pytest.mark.e2e
def test_fail_on_errors(fixture_runs: Path) -> None:
    run = fixture_runs / "crash_ranks"
    assert _summary(run, "--json", "--fail-on", "failures").returncode == 0
    done = _summary(run, "--json", "--fail-on", "errors")
    assert done.returncode == 1 and "found errors" in done.stderr
    assert json.loads(done.stdout)["errors"] == 3
    healthy = fixture_runs / "resets"
    assert _summary(healthy, "--fail-on", "errors").returncode == 0


def test_caught_and_printed_tracebacks_are_not_errors(shared_traces: Path) -> None:
    """f_compile_errors catches two exceptions and prints their tracebacks, then goes on
    compiling; no shared run crashed."""
    for run in shared_run_dirs():
        for log in sorted(run.glob("torch_logs*.txt")):
            assert TextLog.load(str(log)).errors == [], log
    log = shared_traces / "cpu-torch2.13" / "f_compile_errors" / "torch_logs.txt"
    assert log.read_text().count("\nTraceback (most recent call last):") == 2


LOG = "I1122 17:09:12.983000 {pid} torch/_dynamo/x.py:1]{cid} {text}\n"
CHAINED = """Traceback (most recent call last):
  File "a.py", line 1, in <module>
    f()
KeyError: 'x'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "a.py", line 3, in <module>
    g()
  File "a.py", line 9, in g
    raise ValueError("bad\\nvalue")
ValueError: bad
value
"""


@pytest.mark.parametrize(
    "after,errors",
    [
        ("", 1),
        # Dynamo's exit-time report carries no compile id: the program did not go on.
        (LOG.format(pid=7, cid="", text="TorchDynamo compilation metrics:"), 1),
        # The program went on compiling: it caught the exception and printed it.
        (LOG.format(pid=7, cid=" [1/0]", text="Step 1: torchdynamo start tracing f a.py:1"), 0),
        # Another rank going on says nothing about this one.
        ("[rank1]:" + LOG.format(pid=8, cid=" [1/0]", text="Step 1: start"), 1),
    ],
)
def test_a_traceback_is_an_error_unless_the_program_went_on(
    tmp_path: Path, after: str, errors: int
) -> None:
    path = tmp_path / "log.txt"
    path.write_text(LOG.format(pid=7, cid=" [0/0]", text="Step 1: x") + CHAINED + after)
    text = TextLog.load(str(path))
    assert len(text.errors) == errors
    if errors:
        (error,) = text.errors
        assert (error.rank, error.error_type, error.message) == (None, "ValueError", "bad\nvalue")
        assert error.stack == ["a.py:3 in <module>", "a.py:9 in g"]
        assert (error.lineno, text.summary_counts()["errors"]) == (2, 1)


@pytest.mark.e2e
def test_tcview_run_of_a_job_that_crashes(tmp_path: Path) -> None:
    """run.json's non-zero exit code is an error of the run directory."""
    done = subprocess.run(
        [*TCVIEW_CLI, "run", "--no-tui", "--fail-on", "errors"]
        + ["--dir", "A", "--", "sh", "-c", "echo hi; exit 3"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        env={**__import__("os").environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 3 and "found errors" in done.stderr
    assert "The run crashed: 1 error(s)\n  exit code 3: sh -c 'echo hi; exit 3'" in done.stdout
    model = load_source(str(tmp_path / "A"))
    (error,) = model.run_errors()
    assert (error.error_type, error.origin, error.rank) == ("exit code 3", "run.json", None)
    assert summary_json(model)["errors"] == 1
    (tmp_path / "A" / "run.json").write_text(json.dumps({"exit_code": 0}))
    assert load_source(str(tmp_path / "A")).run_errors() == []


def test_errors_equal_the_independent_counter(fixture_runs: Path, tmp_path: Path) -> None:
    logs = [log for run in shared_run_dirs() for log in sorted(run.glob("torch_logs*.txt"))]
    logs += sorted(fixture_runs.glob("*/torch_logs.txt"))
    chained = tmp_path / "chained.txt"
    chained.write_text(CHAINED)
    counted = {}
    for log in [*logs, chained]:
        counted[log] = count_errors(log.read_bytes())
        assert TextLog.load(str(log)).summary_counts()["errors"] == counted[log], log
    # crash_ranks 3, h100_cudagraph_crash_docs 1, the chained one 1
    assert sum(counted.values()) == 5
