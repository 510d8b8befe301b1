"""Snapshots of the main screens on a shared GPU trace (pytest-textual-snapshot)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input
from ui_helpers import ready

from tcview.ui.app import TcviewApp

SIZE = (110, 34)


@pytest.fixture
def gpu_trace(shared_traces: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The shared breaks trace, opened by a relative path so snapshots do not hold a home dir."""
    run = shared_traces / "h200-torch2.11" / "breaks"
    monkeypatch.chdir(run)
    return "trace"


def _app(path: str, goto: str | None = None) -> TcviewApp:
    return TcviewApp(path, goto=goto)


async def _wait(pilot) -> None:
    await ready(pilot.app, pilot)


def _steady_cursors(app: TcviewApp) -> None:
    """A blinking cursor shows or not by when the shot is taken (a loaded machine): keep it on."""
    for field in app.screen.query(Input):
        field.cursor_blink = False


def test_snapshot_main(snap_compare, gpu_trace: str) -> None:
    assert snap_compare(_app(gpu_trace), terminal_size=SIZE, run_before=_wait)


def test_snapshot_kernel(snap_compare, gpu_trace: str) -> None:
    app = _app(gpu_trace, goto="triton_poi_fused_div_0")
    assert snap_compare(app, terminal_size=SIZE, run_before=_wait)


def test_snapshot_compile(snap_compare, gpu_trace: str) -> None:
    assert snap_compare(_app(gpu_trace, goto="1/0"), terminal_size=SIZE, run_before=_wait)


@pytest.mark.parametrize("key", ["b", "r", "K", "f", "t"])
def test_snapshot_view(snap_compare, gpu_trace: str, key: str) -> None:
    async def before(pilot) -> None:
        await ready(pilot.app, pilot)
        await pilot.press(key)
        await ready(pilot.app, pilot)
        _steady_cursors(pilot.app)

    assert snap_compare(_app(gpu_trace), terminal_size=SIZE, run_before=before)


def test_snapshot_help(snap_compare, gpu_trace: str) -> None:
    async def before(pilot) -> None:
        await ready(pilot.app, pilot)
        await pilot.press("question_mark")

    assert snap_compare(_app(gpu_trace), terminal_size=SIZE, run_before=before)


def test_snapshot_80x24(snap_compare, gpu_trace: str) -> None:
    assert snap_compare(_app(gpu_trace, goto="0/0"), terminal_size=(80, 24), run_before=_wait)
