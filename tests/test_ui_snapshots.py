"""Snapshots of the main screens on real GPU runs of the repository (pytest-textual-snapshot)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from ui_helpers import SnapCompare, ready

from tcview.ui.app import TcviewApp
from tcview.ui.options import OpenOptions

SIZE = (110, 34)


@pytest.fixture
def gpu_trace(fixture_runs: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The H200 breaks run (tests/fixtures/runs/h200_breaks: the shared archive's
    h200-torch2.11/breaks), opened by a relative path so snapshots do not hold a home dir."""
    run = fixture_runs / "h200_breaks"
    monkeypatch.chdir(run)
    return "trace"


def _app(path: str, goto: str | None = None) -> TcviewApp:
    return TcviewApp(OpenOptions(path, goto=goto))


async def _wait(pilot: Pilot[Any]) -> None:
    await ready(pilot.app, pilot)


def test_snapshot_main(snap_compare: SnapCompare, gpu_trace: str) -> None:
    assert snap_compare(_app(gpu_trace), terminal_size=SIZE, run_before=_wait)


def test_snapshot_kernel(snap_compare: SnapCompare, gpu_trace: str) -> None:
    app = _app(gpu_trace, goto="triton_poi_fused_div_0")
    assert snap_compare(app, terminal_size=SIZE, run_before=_wait)


def test_snapshot_compile(snap_compare: SnapCompare, gpu_trace: str) -> None:
    assert snap_compare(_app(gpu_trace, goto="1/0"), terminal_size=SIZE, run_before=_wait)


@pytest.mark.parametrize("key", ["b", "r", "K", "f", "t"])
def test_snapshot_view(snap_compare: SnapCompare, gpu_trace: str, key: str) -> None:
    async def before(pilot: Pilot[Any]) -> None:
        await ready(pilot.app, pilot)
        await pilot.press(key)
        await ready(pilot.app, pilot)

    assert snap_compare(_app(gpu_trace), terminal_size=SIZE, run_before=before)


def test_snapshot_help(snap_compare: SnapCompare, gpu_trace: str) -> None:
    async def before(pilot: Pilot[Any]) -> None:
        await ready(pilot.app, pilot)
        await pilot.press("question_mark")

    assert snap_compare(_app(gpu_trace), terminal_size=SIZE, run_before=before)


def test_snapshot_80x24(snap_compare: SnapCompare, gpu_trace: str) -> None:
    assert snap_compare(_app(gpu_trace, goto="0/0"), terminal_size=(80, 24), run_before=_wait)


@pytest.fixture
def crashed_run(fixture_runs: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The 2-rank job that crashed (tests/fixtures/runs/crash_ranks), by a relative path."""
    monkeypatch.chdir(fixture_runs)
    return "crash_ranks"


@pytest.mark.parametrize("key", [None, "E"])
def test_snapshot_crashed_run(snap_compare: SnapCompare, crashed_run: str, key: str | None) -> None:
    async def before(pilot: Pilot[Any]) -> None:
        await ready(pilot.app, pilot)
        if key is not None:
            await pilot.press(key)
            await ready(pilot.app, pilot)

    assert snap_compare(_app(crashed_run), terminal_size=SIZE, run_before=before)


@pytest.fixture
def recompile_run(fixture_runs: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """13 recompiles on one dimension (tests/fixtures/runs/recompile_dim), by a relative path."""
    monkeypatch.chdir(fixture_runs)
    return "recompile_dim"


def test_snapshot_recompile_diagnosis(snap_compare: SnapCompare, recompile_run: str) -> None:
    """The recompiles view: each frame says why it recompiled; its detail, the limit and
    what would avoid them."""

    async def before(pilot: Pilot[Any]) -> None:
        await ready(pilot.app, pilot)
        await pilot.press("r")
        await ready(pilot.app, pilot)

    assert snap_compare(_app(recompile_run), terminal_size=(130, 40), run_before=before)
