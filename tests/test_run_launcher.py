"""`tcview run` without torch: the launcher, its files, stopping, and no process left behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import TCVIEW_CLI
from run_helpers import alive, assert_group_gone, job_pids
from waits import stays

from tcview.run._supervisor import group_members
from tcview.run.report import status_line
from tcview.run.session import Launcher, OutputLine, RunSession, RunStatus
from tcview.run.spec import LaunchError, PythonInfo, RunOptions, RunSpec, build_spec

REPO = Path(__file__).resolve().parent.parent
LONG_JOB = REPO / "tests" / "fixtures" / "jobs" / "long_job.py"
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def py_spec(*args: str, name: str = "job") -> RunSpec:
    argv = (sys.executable, *args)
    return RunSpec("command", argv, name, sys.executable, needs_torch=False)


def start(tmp_path: Path, spec: RunSpec, **options: Any) -> RunSession:
    launcher = Launcher(spec, RunOptions(run_dir=tmp_path / "run", **options))
    launcher.python_info = launcher.python_info or _no_probe(spec)
    return launcher.start()


def _no_probe(spec: RunSpec) -> PythonInfo:
    return PythonInfo(spec.python)


# -- the command line -----------------------------------------------------------------


def test_build_spec_forms(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("print(1)\n")
    spec = build_spec([str(script), "--lr", "1"], python="/opt/py")
    assert spec.kind == "script" and spec.argv == ("/opt/py", str(script), "--lr", "1")
    assert spec.name == "train" and spec.needs_torch

    spec = build_spec([], module=["pkg.train", "--x"], python="/opt/py")
    assert spec.argv == ("/opt/py", "-m", "pkg.train", "--x") and spec.name == "pkg.train"

    spec = build_spec(["--", sys.executable, str(script)])
    assert spec.kind == "command" and spec.argv == (sys.executable, str(script))
    assert spec.needs_torch and spec.name == "train"

    spec = build_spec(["--", "sh", "-c", "echo hi"])
    assert spec.kind == "command" and not spec.needs_torch and spec.name == "sh"

    with pytest.raises(LaunchError, match="no such script"):
        build_spec(["missing.py"])
    with pytest.raises(LaunchError, match="command not found"):
        build_spec(["--", "no-such-command-tcview"])
    with pytest.raises(LaunchError, match="nothing to run"):
        build_spec(["--"])


def test_env_and_run_dirs(tmp_path: Path) -> None:
    spec = py_spec("-c", "pass")
    launcher = Launcher(spec, RunOptions(run_dir=tmp_path / "D", env={"A": "1"}, logs=""))
    env = launcher.child_env(tmp_path / "D")
    assert env["TORCH_TRACE"] == str((tmp_path / "D" / "trace").resolve())
    assert "TORCH_LOGS" not in env and env["A"] == "1"
    assert env.get("PATH") == os.environ.get("PATH")

    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    refused = Launcher(spec, RunOptions(run_dir=tmp_path / "full"))
    refused.python_info = _no_probe(spec)
    with pytest.raises(LaunchError, match="not empty"):
        refused.start()

    first = start(tmp_path, spec)
    assert first.wait(20) is not None and first.run_dir == tmp_path / "run"
    second = first.rerun()
    assert second.wait(20) is not None and second.run_dir == tmp_path / "run-2"

    default = Launcher(spec, RunOptions(runs_root=tmp_path / "runs"))
    default.python_info = _no_probe(spec)
    session = default.start()
    assert session.wait(20) is not None
    assert session.run_dir.parent == tmp_path / "runs" and session.run_dir.name.endswith("-job")


# -- output and status ----------------------------------------------------------------


def test_output_files_lines_and_run_json(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "print('hello')\n"
        "sys.stderr.write('\\x1b]0;pwned\\x07 warning [bold]x[/bold]\\n')\n"
        "print('50%\\r100%')\n"
        "sys.stdout.write('no newline at the end')\n"
        "sys.exit(3)\n"
    )
    seen: list[OutputLine] = []
    exits: list[RunSession] = []
    launcher = Launcher(
        py_spec("-c", code),
        RunOptions(run_dir=tmp_path / "run"),
        on_line=seen.append,
        on_exit=exits.append,
    )
    launcher.python_info = _no_probe(launcher.spec)
    session = launcher.start()
    status = session.wait(20)
    assert status is not None and status.text == "exited 3" and status.exit_code == 3
    assert exits == [session]

    run = tmp_path / "run"
    assert (run / "trace").is_dir()
    assert (run / "stdout.txt").read_bytes() == b"hello\n50%\r100%\nno newline at the end"
    assert b"\x1b]0;pwned\x07" in (run / "torch_logs.txt").read_bytes()  # files keep raw bytes

    texts = {(line.stream, line.text) for line in seen}
    assert ("stdout", "hello") in texts and ("stdout", "100%") in texts
    assert ("stdout", "no newline at the end") in texts
    err = [line.text for line in seen if line.stream == "stderr"]
    assert len(err) == 1 and "\x1b" not in err[0] and "\x07" not in err[0]
    assert "[bold]x[/bold]" in err[0]
    lines, next_seq = session.lines_since(0)
    assert len(lines) == len(seen) == next_seq
    assert session.lines_since(next_seq) == ([], next_seq)

    meta = json.loads((run / "run.json").read_text())
    assert meta["command"] == list(launcher.spec.argv)
    assert meta["exit_code"] == 3 and meta["status"] == "exited 3" and meta["signal"] is None
    assert meta["start"] and meta["end"] and meta["cwd"] == os.getcwd()
    assert meta["env"]["TORCH_TRACE"] == str((run / "trace").resolve())


def test_full_pipes_never_block(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "for i in range(2000):\n"
        "    sys.stdout.write('o' * 2000 + '\\n'); sys.stderr.write('e' * 2000 + '\\n')\n"
    )
    session = start(tmp_path, py_spec("-c", code))
    status = session.wait(60)
    assert status is not None and status.text == "exited 0"
    assert (tmp_path / "run" / "stdout.txt").stat().st_size == 2000 * 2001
    assert (tmp_path / "run" / "torch_logs.txt").stat().st_size == 2000 * 2001


@pytest.mark.unit
def test_status_line() -> None:
    st = RunStatus("exited", 12, 3.25, returncode=0)
    counts = {"compiles": 4, "graph_breaks": 3, "recompiles": 1, "kernels": 2}
    assert status_line(st, counts) == (
        "exited 0 · 3.2s · compiles 4 · breaks 3 · recompiles 1 · kernels 2"
    )
    assert RunStatus("running", 12, 75.0).text == "running pid 12 · 1:15"
    killed = RunStatus("killed", 12, 1.0, signal="SIGTERM")
    assert killed.text == "killed (SIGTERM)" and killed.exit_code == 143


# -- stopping: nothing left behind ----------------------------------------------------


def test_stop_takes_the_group_down(tmp_path: Path) -> None:
    session = start(tmp_path, py_spec(str(LONG_JOB)))
    pids = job_pids(session.run_dir)
    assert session.status.state == "running" and session.status.text.startswith("running pid")
    assert session.pid is not None
    assert set(pids) <= set(group_members(session.pid))
    session.stop(grace_s=5.0)
    status = session.wait(20)
    assert status is not None and status.text == "killed (SIGINT)"
    assert_group_gone(session.pid, pids)
    meta = json.loads((session.run_dir / "run.json").read_text())
    assert meta["signal"] == "SIGINT" and meta["status"] == "killed (SIGINT)"


def test_stop_escalates_to_sigkill(tmp_path: Path) -> None:
    session = start(tmp_path, py_spec(str(LONG_JOB), "--ignore-int", "--ignore-term"))
    pids = job_pids(session.run_dir)
    began = time.monotonic()
    session.stop(grace_s=0.5)
    status = session.wait(20)
    assert status is not None and status.text == "killed (SIGKILL)"
    assert time.monotonic() - began < 5
    assert_group_gone(session.pid, pids)


def test_leftover_processes_go_when_the_job_exits(tmp_path: Path) -> None:
    session = start(tmp_path, py_spec(str(LONG_JOB), "--orphan"))
    status = session.wait(20)
    assert status is not None and status.text == "exited 0"
    assert_group_gone(session.pid, job_pids(session.run_dir))


@pytest.fixture
def long_command(tmp_path: Path) -> Path:
    """long_job.py as an executable: a `--` command that is not python, so no torch needed."""
    exe = tmp_path / "long_job"
    exe.write_text(f"#!{sys.executable}\n" + LONG_JOB.read_text())
    exe.chmod(0o755)
    return exe


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL])
def test_tcview_dying_takes_the_job_down(
    tmp_path: Path, long_command: Path, sig: signal.Signals
) -> None:
    run_dir = tmp_path / "D"
    cmd = [*TCVIEW_CLI, "run", "--no-tui", "--dir", str(run_dir)]
    tcview = subprocess.Popen(
        [*cmd, "--", str(long_command)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # keep the test's own group out of it
        cwd=tmp_path,
    )
    try:
        pids = job_pids(run_dir)
        pgid = json.loads((run_dir / "run.json").read_text())["pid"]
        assert set(pids) <= set(group_members(pgid))
        tcview.send_signal(sig)
        out, _ = tcview.communicate(timeout=20)
        assert_group_gone(pgid, pids)
        assert tcview.returncode == (128 + sig if sig != signal.SIGKILL else -sig)
        if sig != signal.SIGKILL:
            assert f"tcview open {run_dir}" in out.decode()
            meta = json.loads((run_dir / "run.json").read_text())
            assert meta["status"].startswith("killed")
    finally:
        if tcview.poll() is None:
            tcview.kill()
            tcview.wait()


# -- headless mode --------------------------------------------------------------------


def tcview_run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TCVIEW_CLI, "run", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
    )


def test_headless_exit_codes(tmp_path: Path) -> None:
    done = tcview_run(tmp_path, "--no-tui", "--dir", "A", "--", "sh", "-c", "echo out; exit 7")
    assert done.returncode == 7
    assert "out\n" in done.stdout and "exited 7 · " in done.stdout
    assert done.stdout.rstrip().endswith("tcview open A")

    done = tcview_run(tmp_path, "--no-tui", "--dir", "B", "--", "sh", "-c", "kill -TERM $$")
    assert done.returncode == 128 + signal.SIGTERM and "killed (SIGTERM)" in done.stdout

    done = tcview_run(tmp_path, "--no-tui", "--dir", "A", "--", "true")
    assert done.returncode == 2 and "not empty" in done.stderr

    done = tcview_run(tmp_path, "--no-tui", "--fail-on", "typos", "--", "true")
    assert done.returncode == 2 and "unknown typos" in done.stderr

    done = tcview_run(tmp_path, "--no-tui", "--env", "NOEQUALS", "--", "true")
    assert done.returncode == 2 and "K=V" in done.stderr

    done = tcview_run(
        tmp_path, "--no-tui", "--dir", "C", "--env", "X=42", "--", "sh", "-c", "echo $X"
    )
    assert done.returncode == 0 and "42\n" in done.stdout


def test_python_without_torch_is_refused(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    bare = str(venv / "bin" / "python")
    job = tmp_path / "job.py"
    job.write_text("print('never')\n")

    done = tcview_run(tmp_path, "--no-tui", "--python", bare, "--dir", "R", str(job))
    assert done.returncode == 2 and "cannot import torch" in done.stderr
    assert not (tmp_path / "R").exists() and "never" not in done.stdout

    done = tcview_run(tmp_path, "--no-tui", "--dir", "S", "--", bare, str(job))
    assert done.returncode == 2 and "cannot import torch" in done.stderr

    # Not python itself: runs, with a note.
    done = tcview_run(tmp_path, "--no-tui", "--python", bare, "--dir", "T", "--", "echo", "hi")
    assert done.returncode == 0 and "has no torch" in done.stderr and "hi\n" in done.stdout


def test_started_from_a_thread_that_ends(tmp_path: Path) -> None:
    """The parent-death signal fires when the forking *thread* exits: that is no death."""
    import threading

    box: list[RunSession] = []
    worker = threading.Thread(target=lambda: box.append(start(tmp_path, py_spec(str(LONG_JOB)))))
    worker.start()
    worker.join()
    session = box[0]
    pids = job_pids(session.run_dir)
    stays(
        lambda: session.status.state == "running" and all(alive(p) for p in pids),
        0.5,
        "the job runs on after its starting thread exits",
        seen=lambda: (session.status.state, [alive(p) for p in pids]),
    )
    session.stop(grace_s=2.0)
    assert session.wait(20) is not None
    assert_group_gone(session.pid, pids)


# -- how the job ended, as the findings say it ---------------------------------------


def _findings_of(run_dir: Path) -> list[Any]:
    from tcview.analysis.findings import findings
    from tcview.ingest.source import load_source

    return findings(load_source(str(run_dir), cache=False))


def test_a_stop_the_user_asked_for_is_no_crash(tmp_path: Path) -> None:
    """`x` (stop) sends SIGINT: the job's KeyboardInterrupt and its signal are the user's."""
    session = start(tmp_path, py_spec(str(LONG_JOB)))
    job_pids(session.run_dir)  # running
    session.stop(grace_s=5.0)
    assert session.wait(20) is not None
    meta = json.loads((session.run_dir / "run.json").read_text())
    assert meta["stopped_by_user"] is True
    found = _findings_of(session.run_dir)
    assert [f.kind.value for f in found] == ["job_stopped"]
    assert found[0].severity == "info" and found[0].title.startswith("You stopped the job")


def test_a_job_killed_by_a_signal_is_said_first(tmp_path: Path) -> None:
    """A segfault gives no traceback: the signal is the finding, an error."""
    job = tmp_path / "segv.py"
    job.write_text(
        "import os, signal\nprint('start', flush=True)\nos.kill(os.getpid(), signal.SIGSEGV)\n"
    )
    session = start(tmp_path, py_spec(str(job)))
    status = session.wait(20)
    assert status is not None and status.text == "killed (SIGSEGV)"
    meta = json.loads((session.run_dir / "run.json").read_text())
    assert meta["stopped_by_user"] is False
    found = _findings_of(session.run_dir)
    assert found[0].kind.value == "job_killed" and found[0].severity == "error"
    assert "SIGSEGV" in found[0].title and "segmentation fault" in found[0].detail
    assert "faulthandler" in found[0].fix
