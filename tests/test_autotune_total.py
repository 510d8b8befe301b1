"""One autotune total (tests/fixtures/runs/autotune_train: a max-autotune-no-cudagraphs
training step on an H100, torch 2.11). The backward compiles lazily in its own metrics context,
so its autotuning is in bwd_compilation_metrics (30.818073 s), not in the frame's
compilation_metrics (10.503666 s); the trace's events and the text's tables cover both."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from conftest import TCVIEW_CLI
from ui_helpers import REPO, pane, ready, settle, sync

from tcview.analysis.autotune import autotune_seconds, autotune_time, autotuned_ops
from tcview.ingest.source import load_source

FORWARD, BACKWARD = 10.503666, 30.818073
# the text's "AUTOTUNE benchmarking takes B seconds and P seconds precompiling" lines
TABLES = [(0.4680, 5.4698), (0.2693, 3.5167), (12.3047, 1.8236), (8.0134, 0.0006), (7.9946, 0.0009)]


@pytest.fixture(scope="module")
def run(fixture_runs: Path) -> Path:
    return fixture_runs / "autotune_train"


def test_the_total_counts_the_backward_and_agrees_with_the_ops(run: Path) -> None:
    model = load_source(str(run))
    (comp,) = model.compiles
    assert autotune_seconds(comp) == pytest.approx(FORWARD + BACKWARD)
    ops, tables = autotuned_ops(comp, model)
    assert tables and len(ops) == 5
    spent = autotune_time(comp, ops)
    assert spent.total_s == pytest.approx(FORWARD + BACKWARD)
    assert spent.ops_s == pytest.approx(sum(b + p for b, p in TABLES), abs=0.02)
    assert spent.fusions_s is not None
    assert spent.ops_s + spent.fusions_s == pytest.approx(spent.total_s, rel=0.01)
    assert spent.backward_s == pytest.approx(BACKWARD)


def test_show_says_the_total_and_its_parts(run: Path) -> None:
    out = subprocess.run(
        [*TCVIEW_CLI, "show", str(run), "0/0"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    lines = out.splitlines()
    at = lines.index("autotuning 41.32s")
    assert re.fullmatch(
        r"time\s+5 op\(s\) 39\.85s \+ benchmarking fused kernels 1\.4\ds", lines[at + 1]
    )
    assert lines[at + 2].strip() == "forward 10.50s · backward 30.82s"


@sync
async def test_time_view_says_the_same_total(run: Path) -> None:
    from textual.widgets import Static

    from tcview.ui.app import TcviewApp
    from tcview.ui.views import TimeView

    app = TcviewApp(str(run))
    async with app.run_test(size=(160, 40)) as pilot:
        await ready(app, pilot)
        await pilot.press("t")
        await settle(app, pilot)
        assert isinstance(pane(app), TimeView)
        head = str(pane(app).query_one("#view-head", Static).content)
        assert "autotune 41.32s in 1 compiles" in head
