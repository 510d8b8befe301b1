"""The findings of fresh H100 runs (tests/fixtures/runs/h100_*, made by
tests/benchmarks/gpu_runs): each names what changed, the user's line and the fix."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from ui_helpers import pane, ready, sync, viewer_shown

from tcview.analysis.findings import (
    Finding,
    findings,
)
from tcview.analysis.recompiles import guard_families
from tcview.analysis.rules import Kind
from tcview.ingest.source import load_source

if TYPE_CHECKING:
    from textual.app import App


def _found(fixture_runs: Path, name: str) -> list[Finding]:
    return findings(load_source(str(fixture_runs / name)))


def test_a_float_learning_rate_changed_every_step(fixture_runs: Path) -> None:
    found = _found(fixture_runs, "h100_lr_float")
    worst = found[0]
    assert worst.kind == Kind.RECOMPILE_LIMIT and worst.severity == "error"
    assert "self.param_groups[0]['lr']" in worst.title
    assert "0.001 → 0.00095" in worst.detail and "0.00095 → 0.0009025" in worst.detail  # in order
    assert "fill_" in worst.fix  # a tensor lr changed in place, or it recompiles as before
    assert worst.where == {"file": "/workspace/examples/lr_float.py", "line": 15}
    assert "lr=torch.tensor(" in worst.fix
    # the recompiles are the float's, not sizes: no "mark it dynamic" advice
    assert Kind.SAME_GRAPHS not in {f.kind for f in found}
    # the float's specialisation in each compile is the recompile finding's, said once there
    assert Kind.SPECIALIZATION not in {f.kind for f in found}


def test_a_per_layer_index_drives_the_frame_into_the_recompile_limit(fixture_runs: Path) -> None:
    found = _found(fixture_runs, "h100_module_flag")
    worst = found[0]
    assert worst.kind == Kind.RECOMPILE_LIMIT
    assert "self.layer_idx" in worst.title
    assert worst.where == {"file": "/workspace/examples/module_flag.py", "line": 17}
    assert "instances of `Block`" in worst.detail  # why: the code of 8 instances
    assert "compile the parent module once" in worst.fix
    assert Kind.SAME_GRAPHS not in {f.kind for f in found}


def test_a_mask_function_swapped_on_purpose(fixture_runs: Path) -> None:
    (finding,) = _found(fixture_runs, "h100_mask_swap")
    assert finding.kind == Kind.RECOMPILES and finding.severity == "info"
    assert "block_mask.mask_mod" in finding.title
    why = finding.detail
    assert "`causal`" in why and "each distinct function gets its own graph" in why
    assert "new object" not in why  # the ids alternate, they do not keep changing
    assert "none needed for a few" in finding.fix
    # the frame is torch's: the user's line is where the swapped function was defined
    assert finding.where == {"file": "/workspace/examples/mask_swap.py", "line": 9}


def test_a_crash_inside_cuda_graph_replay(fixture_runs: Path) -> None:
    worst = _found(fixture_runs, "h100_cudagraph_crash_docs")[0]
    assert worst.kind == Kind.CRASH and worst.severity == "error"
    assert worst.where == {"file": "/workspace/examples/cudagraph_crash_docs.py", "line": 14}
    assert "torch.compiler.cudagraph_mark_step_begin()" in worst.fix
    assert "frames inside torch and libraries" in worst.detail  # counted, never dropped


@pytest.mark.parametrize(
    "name", ["h100_lr_float", "h100_module_flag", "h100_mask_swap", "h100_cudagraph_crash"]
)
def test_no_recompile_of_the_fresh_runs_is_other(fixture_runs: Path, name: str) -> None:
    families = guard_families(load_source(str(fixture_runs / name)).compiles)
    assert families and "other" not in families, families
    capture = guard_families(load_source(str(fixture_runs / name / "torch_logs.txt")).compiles)
    assert "other" not in capture, capture


@sync
async def test_a_live_run_shows_the_recompile_budget_of_the_worst_frame(
    fixture_runs: Path, tmp_path: Path
) -> None:
    """`tcview run` and follow mode: the status bar says how close a frame is to its limit."""
    from tcview.ingest.replay import replay
    from tcview.ui.app import TcviewApp
    from tcview.ui.options import OpenOptions

    live = tmp_path / "live"
    app = TcviewApp(OpenOptions(str(live), follow=True))
    async with app.run_test(size=(160, 40)) as pilot:
        await ready(app, pilot)
        assert "recompiles" not in app.status_left
        replay(fixture_runs / "h100_module_flag" / "trace", live / "run", speed_mb_s=0, seed=1)
        for _ in range(400):
            await pilot.pause(0.05)
            if "forward 8/8 recompiles" in app.status_left:
                break
        assert "forward 8/8 recompiles" in app.status_left, app.status_left


def test_cuda_graphs_that_ran_eagerly_at_run_time(fixture_runs: Path) -> None:
    """Outputs kept across steps with a backward pending: CUDA graph trees ran the graph as
    plain code (the cudagraphs log), and torch's warning says why."""
    for path in (
        fixture_runs / "h100_cudagraph_crash",
        fixture_runs / "h100_cudagraph_crash" / "torch_logs.txt",
    ):
        (finding,) = [
            f
            for f in _found(fixture_runs, str(path.relative_to(fixture_runs)))
            if f.kind == Kind.CUDAGRAPHS
        ]
        assert finding.title == "CUDA graphs not replayed: the graph ran eagerly at run time"
        assert "pending, uninvoked backwards" in finding.detail
        assert "torch.compiler.cudagraph_mark_step_begin()" in finding.fix


@sync
async def test_the_first_screen_leads_with_the_worst_finding_and_w_goes_to_its_evidence(
    fixture_runs: Path,
) -> None:
    from textual.widgets import DataTable

    from tcview.ui.app import TcviewApp
    from tcview.ui.findings_view import FindingsView

    app = TcviewApp(str(fixture_runs / "h100_module_flag"))
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        for _ in range(200):  # the findings are made in a worker once the trace is read
            if app.browser._findings:
                break
            await pilot.pause(0.05)
        lines = _shown(app)
        assert lines[1].startswith("findings (1), worst first"), lines[:3]
        assert lines[2].startswith(
            "  error   `forward` hit the recompile limit (recompile_limit = 8) after recompiling on"
        )
        await pilot.press("w")
        assert await _until(pilot, lambda: isinstance(pane(app), FindingsView))
        table = pane(app).query_one(DataTable)
        assert await _until(pilot, lambda: table.row_count == 1)
        await pilot.press("enter")
        assert await _until(pilot, lambda: not isinstance(pane(app), FindingsView))
        node = app.browser.main_tree.cursor_node
        assert node is not None and node.data is not None
        assert getattr(node.data.obj, "id_label", "") == "0/1"  # the first recompile


def _shown(app: App[Any]) -> list[str]:

    doc = viewer_shown(app).doc
    return [doc.plain(i) for i in range(doc.count)]


async def _until(pilot: Any, predicate: Callable[[], object], timeout: float = 15.0) -> bool:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await pilot.pause(0.05)
    return bool(predicate())
