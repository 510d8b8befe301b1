"""Keys (issue 40): the help lists tcview's keys in tcview's words, never the toolkit's stock
labels; a key means one thing in `open`, `run` and `diff`, and the hints on screen come from
the bindings; j and k move in every list (the diff app's too); every view is usable at
80×24, its reason (or other long text) column getting the room."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from textual.binding import Binding
from textual.widgets import DataTable
from ui_helpers import CPU_SAMPLE, pane, ready, screen_text, settle, sync
from waits import until

from tcview.analysis.rundiff import run_diff
from tcview.ingest.source import load_source
from tcview.run.session import Launcher
from tcview.run.spec import PythonInfo, RunOptions, build_spec
from tcview.ui.app import BrowserApp, TcviewApp
from tcview.ui.browser import BrowserScreen
from tcview.ui.diffview import DiffApp, FramesTable
from tcview.ui.help import HelpScreen, help_rows
from tcview.ui.hints import DEFAULT_KEYS, key_names, overview_hint
from tcview.ui.keys import APP_BINDINGS
from tcview.ui.run_app import RunApp
from tcview.ui.table_view import TableView

# Labels Textual's own bindings carry: none may reach the help.
STOCK_LABELS = ("Focus Next", "Focus Previous", "Scroll Up", "Toggle", "Copy selected text")


@pytest.mark.parametrize("app", [TcviewApp, RunApp, DiffApp], ids=lambda a: a.__name__)
def test_help_rows_are_in_tcview_s_words(app: type[Any]) -> None:
    """A row's text is a tcview binding's, or tcview's name for a Textual binding: never the
    description Textual gave it."""
    for place, rows in help_rows(app.help_places(), lambda b: b.key_display or b.key):
        for row in rows:
            stock = {b.description for b in row.bindings if not b.id}
            assert row.text not in stock, (place.title, row.keys, row.text)


@sync
async def test_the_help_shows_no_stock_label() -> None:
    app = TcviewApp(str(CPU_SAMPLE))
    async with app.run_test(size=(120, 200)) as pilot:
        await ready(app, pilot)
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help")
        text = screen_text(app)
        assert "next pane" in text and "copy the text selected with the mouse" in text
        assert not [label for label in STOCK_LABELS if label in text]
        assert "super+cCopy" not in text.replace(" ", "")  # a long key keeps a gap


def test_the_hints_name_the_keys_the_browser_binds() -> None:
    """`tcview open`'s keys, by id, are the hints' defaults; another keymap's keys reach the
    overview's line of keys."""
    bound = key_names(
        [b for b in [*BrowserScreen.BINDINGS, *APP_BINDINGS] if isinstance(b, Binding)],
        lambda b: b.key_display or b.key,
    )
    assert {i: bound[i] for i in DEFAULT_KEYS} == DEFAULT_KEYS
    assert "r recompiles" in overview_hint(None)
    assert "c recompiles" in overview_hint({"view.recompiles": "c"})


def _launcher(tmp_path: Path) -> Launcher:
    job = tmp_path / "job.py"
    job.write_text("print('done')\n")
    spec = build_spec(["--", sys.executable, str(job)])
    launcher = Launcher(spec, RunOptions(run_dir=tmp_path / "D", grace_s=1.0))
    launcher.python_info = PythonInfo(spec.python)  # no torch needed
    return launcher


@sync
async def test_r_is_recompiles_in_run_mode_and_its_hint_says_so(tmp_path: Path) -> None:
    launcher = _launcher(tmp_path)
    app = RunApp(launcher, launcher.start())
    async with app.run_test(size=(120, 40)) as pilot:
        assert await until(pilot, lambda: "exited 0" in app.status_left)
        await settle(app, pilot)
        text = screen_text(app)
        assert "r recompiles" in text, "the overview's hint"
        assert "u Rerun" in text and "r Recompiles" in text, "the footer"
        assert any("u reruns it" in str(n.message) for n in app._notifications)
        await pilot.press("r")
        await until(pilot, lambda: type(pane(app)).__name__ == "RecompilesView")
        assert len(launcher.sessions) == 1  # r did not rerun
        await pilot.press("q")


def _one_key_one_action(app: type[BrowserApp]) -> dict[str, set[str]]:
    actions: dict[str, set[str]] = {}
    for binding in [*app.BINDINGS, *app.SCREEN.BINDINGS]:
        assert isinstance(binding, Binding)
        for key in binding.key.split(","):
            actions.setdefault(key.strip(), set()).add(binding.action.removesuffix("_busy"))
    return {key: acts for key, acts in actions.items() if len(acts) == 1}


def test_a_key_means_the_same_in_open_and_run() -> None:
    opened, run = _one_key_one_action(TcviewApp), _one_key_one_action(RunApp)
    assert {k: a for k, a in run.items() if k in opened and opened[k] != a} == {}


@sync
async def test_j_and_k_move_in_the_diff_app(fixture_runs: Path) -> None:
    a, b = "guards_one_batch", "guards_warm"
    diff = run_diff(load_source(str(fixture_runs / a)), load_source(str(fixture_runs / b)), a, b)
    assert len(diff.frames) > 1
    app = DiffApp(diff)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        table = app.query_one(FramesTable)
        assert app.focused is table and table.cursor_row == 0
        await pilot.press("j")
        assert table.cursor_row == 1
        await pilot.press("k")
        assert table.cursor_row == 0


FLEXED = ["w", "b", "r", "t", "P"]  # the views with rows in the sample; t has no FLEX


@pytest.mark.parametrize("key", FLEXED)
@sync
async def test_every_view_fits_80_by_24_and_its_long_column_gets_the_room(key: str) -> None:
    app = TcviewApp(str(CPU_SAMPLE))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press(key)
        await until(pilot, lambda: isinstance(pane(app), TableView), seen=lambda: pane(app))
        await settle(app, pilot)
        view = pane(app)
        table = view.query_one(DataTable)
        assert table.row_count and table.virtual_size.width <= table.size.width, "no sideways"
        widths = {str(c.label): c.get_render_width(table) for c in table.columns.values()}
        if not view.FLEX:
            return
        at = list(widths).index(view.FLEX)
        whole = not any(str(table.get_row_at(i)[at]).endswith("…") for i in range(table.row_count))
        flex = widths.pop(view.FLEX)
        # Cut, the long column is the widest; else it is shown whole.
        assert whole or all(flex >= w for w in widths.values()), (view.FLEX, flex, widths)
        if key == "r":
            assert not whole and flex > 40, widths  # the reason: most of the line (was 15)
