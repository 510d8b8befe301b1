"""`tcview run` and `tcview doctor` with real torch.compile on CPU (C++ kernels)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TCVIEW_CLI

from tcview.ingest.index import TraceSet
from tcview.report.summary import summary_json

JOB = Path(__file__).resolve().parent / "fixtures" / "jobs" / "breaks_recompile.py"
# slow: real torch.compile; one worker runs the module, so `command_run` runs the job once
pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not importable"),
    pytest.mark.slow,
    pytest.mark.xdist_group("run_torch"),
]
STATUS = re.compile(
    r"^exited (\d+) · [\d.]+s · compiles (\d+) · breaks (\d+) · recompiles (\d+) · "
    r"kernels (\d+)$",
    re.M,
)


def tcview(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TCVIEW_CLI, *args],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )


# The run's directory and the finished command.
CommandRun = tuple[Path, subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def command_run(tmp_path_factory: pytest.TempPathFactory) -> CommandRun:
    """`tcview run --no-tui --dir D --fail-on ... -- python breaks_recompile.py`, once."""
    cwd = tmp_path_factory.mktemp("run")
    done = tcview(
        cwd,
        "run",
        "--no-tui",
        "--dir",
        "D",
        "--fail-on",
        "graph_breaks,recompiles",
        "--",
        sys.executable,
        str(JOB),
    )
    return cwd / "D", done


def test_run_directory(command_run: CommandRun) -> None:
    run_dir, done = command_run
    assert sorted(p.name for p in run_dir.iterdir()) == [
        "run.json",
        "stdout.txt",
        "torch_logs.txt",
        "trace",
    ]
    assert list((run_dir / "trace").glob("dedicated_log_torch_trace*.log"))
    assert "step 2 scale 3" in (run_dir / "stdout.txt").read_text()
    logs = (run_dir / "torch_logs.txt").read_text()
    assert "[__graph_breaks]" in logs and "[__recompiles]" in logs
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["exit_code"] == 0 and meta["status"] == "exited 0"
    assert meta["torch"].startswith("2.") and meta["command"] == [sys.executable, str(JOB)]
    assert meta["env"]["TORCH_LOGS"] == "graph_breaks,recompiles"


def test_output_status_line_matches_trace(command_run: CommandRun) -> None:
    run_dir, done = command_run
    assert "step 0 scale 2" in done.stdout and "done\n" in done.stdout  # the job's own output
    assert "[__graph_breaks]" in done.stderr  # its stderr, streamed to ours
    found = STATUS.search(done.stdout)
    assert found, done.stdout[-2000:]
    shown = dict(
        zip(
            ("compiles", "graph_breaks", "recompiles", "kernels"),
            map(int, found.groups()[1:]),
            strict=True,
        )
    )
    ts = TraceSet.load(run_dir / "trace")
    assert shown == ts.counts()
    assert shown["graph_breaks"] >= 1 and shown["recompiles"] >= 1 and shown["kernels"] >= 1
    assert summary_json(ts)["kernels_by_kind"].get("cpp", 0) >= 1  # C++ kernels on CPU
    assert done.stdout.rstrip().endswith("tcview open D")


def test_fail_on_exit_code(command_run: CommandRun) -> None:
    _, done = command_run
    assert done.returncode == 1, done.stderr[-2000:]
    assert "tcview: found graph_breaks, recompiles" in done.stderr


def test_script_form_exits_with_the_job(tmp_path: Path) -> None:
    done = tcview(tmp_path, "run", "--no-tui", "--dir", "S", "--logs", "recompiles", str(JOB))
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(r"^exited 0 · ", done.stdout, re.M)
    assert "[__graph_breaks]" not in (tmp_path / "S" / "torch_logs.txt").read_text()


def test_doctor(tmp_path: Path) -> None:
    done = tcview(tmp_path, "doctor")
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"^torch\s+2\.", done.stdout, re.M)
    assert "TORCH_TRACE  works: dedicated_log_torch_trace" in done.stdout
    assert re.search(r"^GPU\s+", done.stdout, re.M)
