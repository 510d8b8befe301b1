"""The real app in a real terminal (tmux): --goto a Triton kernel, read it, check counts, quit."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from ui_helpers import GPU_SAMPLE, REPO, counts_text, summary_json

from tcview.trace.source import load_source

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def _tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=False).stdout


def _screen(session: str) -> str:
    return _tmux("capture-pane", "-p", "-t", session)


def _wait_for(session: str, want: str, limit: float = 20.0) -> str:
    deadline = time.monotonic() + limit
    text = ""
    while time.monotonic() < deadline:
        text = _screen(session)
        if want in text:
            return text
        time.sleep(0.2)
    return text


def _alive(session: str) -> bool:
    return (
        subprocess.run(["tmux", "has-session", "-t", session], capture_output=True).returncode == 0
    )


def _run_case(trace: Path, kernel: str, size: tuple[int, int] = (120, 40)) -> None:
    session = f"tcview-{uuid.uuid4().hex[:8]}"
    command = (
        f"cd {shlex.quote(str(REPO))} && {shlex.quote(sys.executable)} -m tcview.cli open "
        f"{shlex.quote(str(trace))} --goto {shlex.quote(kernel)}"
    )
    _tmux("new-session", "-d", "-s", session, "-x", str(size[0]), "-y", str(size[1]), command)
    try:
        # the kernel's detail opens on what it is (kind, graph, what it fuses, its launch)
        want = "ATen ops"
        screen = _wait_for(session, want)
        assert want in screen, screen
        assert f"kernel {kernel}"[:30] in screen, screen  # the viewer's title
        expected = counts_text(summary_json(trace))
        screen = _wait_for(session, expected)
        assert expected in screen, screen
        assert "static" in screen
        _tmux("send-keys", "-t", session, "q")
        deadline = time.monotonic() + 10
        while _alive(session) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(session), "q must quit the app (and so end the tmux session)"
    finally:
        _tmux("kill-session", "-t", session)


def _triton_kernel(trace: Path) -> str:
    ts = load_source(str(trace))
    return next(k.name for k in ts.kernels if k.method == "triton")


def test_tmux_goto_kernel_sample() -> None:
    _run_case(GPU_SAMPLE, _triton_kernel(GPU_SAMPLE))


def test_tmux_goto_kernel_80x24_shared(shared_traces: Path) -> None:
    trace = shared_traces / "h200-torch2.11" / "gpt_train" / "trace"
    ts = load_source(str(trace))
    kernel = [k.name for k in ts.kernels if k.method == "triton"][-1]
    _run_case(trace, kernel, size=(80, 24))
