"""First contact in a real terminal (tmux, 120x40): a slow pipe, bare `tcview`, and a toast
that leaves the status bar's counts readable. Each step waits for a condition on screen."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import FIXTURES, unpack_shared
from ui_helpers import CPU_SAMPLE, REPO, counts_text, summary_json

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

SOCKET = "tcview-ui-live"  # a private tmux server: no clash with the user's or other tests'
COUNT_KEYS = ("compiles", "graph_breaks", "recompiles", "kernels")


def _tmux(*args: str) -> str:
    return subprocess.run(
        ["tmux", "-L", SOCKET, *args], capture_output=True, text=True, check=False
    ).stdout


def _screen(session: str) -> str:
    return _tmux("capture-pane", "-p", "-t", session)


def _wait(session: str, done: Callable[[str], bool], limit: float = 30.0) -> str:
    deadline = time.monotonic() + limit
    screen = _screen(session)
    while not done(screen) and time.monotonic() < deadline:
        time.sleep(0.1)
        screen = _screen(session)
    return screen


@pytest.fixture
def terminal() -> Iterator[Callable[[str, Path], str]]:
    """Start a command in a 120x40 tmux session; the session is killed afterwards."""
    sessions: list[str] = []

    def start(command: str, cwd: Path) -> str:
        session = f"live-{uuid.uuid4().hex[:8]}"
        env = f"PYTHONPATH={shlex.quote(str(REPO))} TCVIEW_PREVIEW=auto"
        # A tmux server started from an xdist worker hands its COLUMNS=80 LINES=24 to every
        # pane (see conftest.py): they would override the 120x40 that the terminal reports.
        _tmux(
            "new-session", "-d", "-s", session, "-x", "120", "-y", "40",
            f"cd {shlex.quote(str(cwd))} && unset COLUMNS LINES && export {env} && {command}",
        )  # fmt: skip
        sessions.append(session)
        return session

    yield start
    for session in sessions:
        _tmux("kill-session", "-t", session)


def _tcview(*args: str) -> str:
    return " ".join([shlex.quote(sys.executable), "-m", "tcview.cli", *map(shlex.quote, args)])


def _captures() -> list[Path]:
    """A committed capture, and a bigger shared one when ../shared is there."""
    out = [FIXTURES / "torch_logs_small.txt"]
    shared = unpack_shared()
    if shared is not None:
        out.append(shared / "h200-torch2.11" / "gpt_train" / "torch_logs.txt")
    return out


@pytest.mark.parametrize("capture", _captures(), ids=lambda p: p.parent.name)
def test_slow_pipe_waits_then_shows_the_summary_counts(
    terminal: Callable[[str, Path], str], capture: Path
) -> None:
    expected = counts_text(summary_json(capture))
    session = terminal(f"(sleep 4; cat {shlex.quote(str(capture))}) | {_tcview('open', '-')}", REPO)
    screen = _wait(session, lambda s: "waiting for input on stdin" in s)
    assert "waiting for input on stdin" in screen, screen
    # The same counts in the overview and in the status bar.
    screen = _wait(session, lambda s: s.count(expected) >= 2)
    assert screen.count(expected) >= 2, screen
    assert screen.splitlines()[-2].rstrip().endswith(expected), screen


def test_bare_tcview_opens_the_newest_trace_here(
    terminal: Callable[[str, Path], str], tmp_path: Path
) -> None:
    shutil.copytree(CPU_SAMPLE / "trace", tmp_path / "job" / "trace")
    expected = counts_text(summary_json(tmp_path / "job" / "trace"))
    session = terminal(f"env -u TORCH_TRACE {_tcview()}", tmp_path)
    screen = _wait(session, lambda s: expected in s)
    assert expected in screen and "static" in screen, screen


def test_a_toast_leaves_the_status_bar_counts_readable(
    terminal: Callable[[str, Path], str], tmp_path: Path
) -> None:
    job = f"{shlex.quote(sys.executable)} -c {shlex.quote('print(1)')}"
    command = f"{_tcview('run', '--dir', str(tmp_path / 'D'))} -- {job}"
    session = terminal(command, tmp_path)
    screen = _wait(session, lambda s: "r reruns it, q quits" in s)  # the toast
    assert "r reruns it, q quits" in screen, screen
    status = screen.splitlines()[-2]
    assert status.startswith(" exited 0"), screen
    assert status.rstrip().endswith(counts_text(dict.fromkeys(COUNT_KEYS, 0))), screen
