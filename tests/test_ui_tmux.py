"""The real app in a real terminal (tmux): --goto a Triton kernel, read it, check counts, quit."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
from tmux_helpers import Terminal, need_tmux
from ui_helpers import GPU_SAMPLE, REPO, counts_text, summary_json

from tcview.ingest.source import load_source

pytestmark = [need_tmux, pytest.mark.slow]


def _run_case(trace: Path, kernel: str, size: tuple[int, int] = (120, 40)) -> None:
    command = (
        f"cd {shlex.quote(str(REPO))} && {shlex.quote(sys.executable)} -m tcview.commands.cli open "
        f"{shlex.quote(str(trace))} --goto {shlex.quote(kernel)}"
    )
    expected = counts_text(summary_json(trace))
    # the kernel's detail opens on its source, at its def line (cut to a narrow pane's width)
    want = f"def {kernel}(" if size[0] >= 120 else f"def {kernel}"[:30]
    with Terminal(command, size) as term:
        screen = term.wait_for(want)
        assert f"kernel {kernel}"[:30] in screen, screen  # the viewer's title
        screen = term.wait_for(expected)
        assert "static" in screen, screen
        term.keys("q")
        assert term.wait_ended(what="q to quit the app") == 0


def _triton_kernel(trace: Path) -> str:
    ts = load_source(str(trace))
    return next(k.name for k in ts.kernels if k.method == "triton")


def test_tmux_goto_kernel_sample() -> None:
    _run_case(GPU_SAMPLE, _triton_kernel(GPU_SAMPLE))


def test_tmux_goto_kernel_h100_run(fixture_runs: Path) -> None:
    """A template kernel of a real H100 run: its def is on the first 120x40 screen."""
    _run_case(fixture_runs / "h100_autotune_train", "triton_tem_fused_addmm_gelu_t_0")


def test_tmux_goto_kernel_80x24_shared(shared_traces: Path) -> None:
    trace = shared_traces / "h200-torch2.11" / "gpt_train" / "trace"
    ts = load_source(str(trace))
    kernel = [k.name for k in ts.kernels if k.method == "triton"][-1]
    _run_case(trace, kernel, size=(80, 24))
