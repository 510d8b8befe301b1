"""The screen gives its room to the answer (Pilot, 120×40, real traces): the views' tables as
tall as their rows with the detail under them, columns that fit the screen, tree rows that keep
their time and marks, the help's legend and wrapping, one labelling of search groups, the rank
keys on one rank, the export view's rank column, and y/Y/e reading off the UI thread."""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import pytest
import rankdir
from textual.widgets import DataTable
from ui_helpers import CPU_SAMPLE, pane, ready, screen_text, settle, shown_as, sync
from waits import until

from tcview.ui.app import TcviewApp
from tcview.ui.finder import ResultsTree, SearchView
from tcview.ui.help import HelpScreen, help_text
from tcview.ui.reader import Reader
from tcview.ui.tree import TraceTree
from tcview.ui.views import ExportView, RecompilesView, TableView, TimeView

SIZE = (120, 40)
DRAFT = Path(__file__).parent / "fixtures" / "export_draft" / "trace"


async def _view(app: TcviewApp, pilot: Any, key: str) -> TableView[Any]:
    await pilot.press(key)
    await until(pilot, lambda: isinstance(pane(app), TableView), seen=lambda: pane(app))
    await settle(app, pilot)
    return shown_as(app, TableView)


def _notices(app: TcviewApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


@pytest.mark.parametrize("key", ["b", "r", "t"])
@sync
async def test_a_short_table_leaves_the_room_to_the_detail(key: str) -> None:
    app = TcviewApp(str(CPU_SAMPLE))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        view = await _view(app, pilot, key)
        table = view.query_one(DataTable)
        assert 0 < table.row_count < 10
        assert table.size.height == table.row_count + 1  # its header and its rows, no more
        detail = view.query_one(Reader)
        # The rest goes to the detail: the screen less the head, table, status and footer.
        head = view.query_one("#view-head").size.height
        assert detail.size.height == 40 - head - table.size.height - 2


@sync
async def test_a_long_table_takes_half_the_body() -> None:
    app = TcviewApp(str(CPU_SAMPLE))
    async with app.run_test(size=(120, 16)) as pilot:
        await ready(app, pilot)
        view = await _view(app, pilot, "r")
        table = view.query_one(DataTable)
        body = view.query_one("#view-body").size.height
        assert table.row_count + 1 > body // 2
        assert table.size.height == body // 2


@sync
async def test_recompiles_columns_fit_and_the_reason_gets_the_room() -> None:
    app = TcviewApp(str(CPU_SAMPLE))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        view = await _view(app, pilot, "r")
        assert isinstance(view, RecompilesView)
        table = view.query_one(DataTable)
        assert table.virtual_size.width <= table.size.width, "no sideways scroll"
        lines = screen_text(app).splitlines()
        header = lines[1]
        why_at = header.index("why")
        assert header.index("status") <= 40, "the frame column is not the widest"
        # The long frame name keeps both ends; the reasons get the rest of the line.
        assert any(ln.startswith(" torch_dynamo_res…") and "(script.py:13)" in ln for ln in lines)
        reason = next(ln for ln in lines if "`scale` was a Python float" in ln)
        assert len(reason[why_at:]) > 40 and reason.endswith("…")


@sync
async def test_time_view_marks_are_the_tree_s(fixture_runs: Path) -> None:
    app = TcviewApp(str(fixture_runs / "h100_lr_float"))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        view = await _view(app, pilot, "t")
        assert isinstance(view, TimeView)
        lines = screen_text(app).splitlines()
        assert any(re.match(r" 3/8 ✗ ", ln) for ln in lines), lines[:12]
        assert any(re.match(r" 1/0 ∅ ", ln) for ln in lines)
        assert not any(re.match(r" \d+/\d+ [A-Z] ", ln) for ln in lines)


def _drawn_marks(text: str) -> set[str]:
    """The symbols in `text` that are not letters, digits, punctuation or box drawing."""
    return {
        ch
        for ch in text
        if ord(ch) > 127 and not ("\u2500" <= ch <= "\u259f") and ch not in "…·→×▶▼"
    }


@sync
async def test_every_mark_the_tree_and_time_view_draw_is_in_the_help(fixture_runs: Path) -> None:
    seen: set[str] = set()
    for run in ("h100_lr_float", "cudagraphs", "cudagraphs_partial", "crash_ranks"):
        app = TcviewApp(str(fixture_runs / run))
        async with app.run_test(size=SIZE) as pilot:
            await ready(app, pilot)
            tree = app.main_tree
            labels = [str(n.label) for n in tree._by_key.values()]
            seen |= _drawn_marks("\n".join(labels))
            table = (await _view(app, pilot, "t")).query_one(DataTable)
            marks = [table.get_row_at(i)[0].plain for i in range(table.row_count)]
            seen |= _drawn_marks("\n".join(marks))
            legend = help_text(app.help_places(), app.get_key_display).plain
    assert {"✗", "∅", "✓", "↻", "◆", "◇"} <= seen, seen
    assert "?" in legend and "× " not in legend
    missing = {mark for mark in seen if f"{mark} " not in legend.split("Status", 1)[1]}
    assert not missing, missing


@sync
async def test_help_wraps_under_the_description_and_names_keys_one_way() -> None:
    app = TcviewApp(str(CPU_SAMPLE))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), seen=lambda: app.screen)
        await settle(app, pilot)
        lines = screen_text(app).splitlines()
        at = next(i for i, ln in enumerate(lines) if "   w  " in ln and "findings:" in ln)
        column = lines[at].index("findings:")
        # The wrapped rest of the line starts under the description, not under the key.
        assert lines[at + 1][column:].strip() and not lines[at + 1][:column].strip("│ ")
        text = help_text(app.help_places(), app.get_key_display).plain
        assert "^" not in text
        assert "ctrl+p" in text and "ctrl+q" in text and "shift+tab" in text
        assert "ctrl+p palette" in screen_text(app).splitlines()[-1]


@sync
async def test_tree_rows_keep_their_time_and_marks(fixture_runs: Path) -> None:
    app = TcviewApp(str(fixture_runs / "h100_lr_float"))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        tree = app.main_tree
        assert isinstance(tree, TraceTree)
        assert tree.size.width <= 48
        rows = screen_text(app).splitlines()[1:-3]
        pane = [ln.split("│")[1] for ln in rows]
        assert app.model is not None
        for comp in app.model.compiles:
            row = next(ln for ln in pane if f"▶ {comp.id_label}  " in ln)
            assert re.search(r"\d(\.\d+)?(s|ms)\s*$", row.rstrip()), row  # the time shows
            for mark in comp.marks:
                assert {"recompile": "↻", "cache hit": "●"}[mark] in row, row
        frame = next(ln for ln in pane if "optimizer_step" in ln and "…" in ln)
        assert re.search(r"\d+ compiles?\s*$", frame.rstrip()), frame
        assert tree.virtual_size.width <= tree.scrollable_content_region.width
        # → and l expand, then move down (as the help says): never sideways.
        tree.focus()
        await pilot.press("right", "right", "l", "l")
        await settle(app, pilot)
        assert tree.scroll_x == 0 and tree.virtual_size.width <= tree.size.width
        assert "expand (or move down)" in help_text(app.help_places(), app.get_key_display).plain


@sync
async def test_search_groups_say_the_frame_id_and_name_alike() -> None:
    app = TcviewApp(str(CPU_SAMPLE))  # the run directory: its trace and its TORCH_LOGS text
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await pilot.press("S")
        await until(pilot, lambda: isinstance(pane(app), SearchView), seen=lambda: pane(app))
        screen = shown_as(app, SearchView)
        await pilot.press(*"scale_shift", "enter")
        await until(pilot, lambda: screen.finished, what="the search to finish")
        labels = [str(g.label) for g in screen.query_one(ResultsTree).root.children]
        compiles = [lb for lb in labels if re.match(r"(log )?\d+/\d+", lb)]
        assert any(lb.startswith("log ") for lb in compiles), labels
        assert any(not lb.startswith("log ") for lb in compiles), labels
        for label in compiles:
            assert re.match(r"(log )?(\d+)/\d+  frame \2( · .+)?  \d+$", label), label
        assert any(" · scale_shift (script.py:11)" in lb for lb in compiles)


@pytest.mark.parametrize("key", ["a", "number_sign"])
@sync
async def test_rank_keys_on_one_rank_say_why_they_do_nothing(key: str) -> None:
    app = TcviewApp(str(CPU_SAMPLE))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await pilot.press(key)
        await until(
            pilot,
            lambda: any("one rank in this trace" in n for n in _notices(app)),
            seen=lambda: _notices(app),
        )
        assert app.screen is app.browser and pane(app).id == "browse"


@sync
async def test_export_view_has_a_rank_column_with_several_ranks(tmp_path: Path) -> None:
    one = TcviewApp(str(DRAFT))
    async with one.run_test(size=SIZE) as pilot:
        await ready(one, pilot)
        view = await _view(one, pilot, "X")
        assert isinstance(view, ExportView) and "rank" not in view.shown_columns
    rankdir.build(tmp_path / "trace", 2, 0, sorted(DRAFT.glob("*.log")))
    app = TcviewApp(str(tmp_path / "trace"))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        view = await _view(app, pilot, "X")
        assert isinstance(view, ExportView)
        assert view.shown_columns[0] == "rank"
        table = view.query_one(DataTable)
        ranks = [table.get_row_at(i)[0].plain for i in range(table.row_count)]
        assert ranks == ["0"] * 4 + ["1"] * 4
        app.browser.set_rank_filter(frozenset({1}))
        await settle(app, pilot)
        assert [table.get_row_at(i)[0].plain for i in range(table.row_count)] == ["1"] * 4
        assert [table.get_row_at(i)[1].plain for i in range(table.row_count)] == [
            "5", "6", "7", "8"
        ]  # fmt: skip


@pytest.mark.parametrize("key", ["y", "Y", "e"])
@sync
async def test_take_keys_read_off_the_ui_thread(key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import tcview.ui.taking as taking

    release = threading.Event()
    readers: list[threading.Thread] = []
    real = taking.copy_text if key != "e" else taking.locations_of

    def blocking(*args: Any) -> Any:
        readers.append(threading.current_thread())
        assert release.wait(20)
        return real(*args)

    monkeypatch.setattr(taking, "copy_text" if key != "e" else "locations_of", blocking)
    app = TcviewApp(str(CPU_SAMPLE))
    opened: list[Any] = []
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        monkeypatch.setattr(app.browser.taker, "open_location", opened.append)  # no editor here
        tree = app.main_tree
        tree.focus()
        assert app.model is not None
        node = app.browser.reveal("compile", app.model.compiles[0])
        assert node is not None
        await pilot.press(key)
        await until(pilot, lambda: readers, what="the read to start")
        # The UI goes on while the read waits: the cursor moves, a view opens and closes.
        line = tree.cursor_line
        await pilot.press("j")
        await until(pilot, lambda: tree.cursor_line == line + 1, what="the tree to move")
        await pilot.press("b")
        await until(pilot, lambda: isinstance(pane(app), TableView), seen=lambda: pane(app))
        await pilot.press("escape")
        await until(pilot, lambda: pane(app).id == "browse", seen=lambda: pane(app))
        assert readers[0] is not threading.main_thread()
        release.set()
        if key == "y":
            await until(
                pilot,
                lambda: any("copied" in n for n in _notices(app)),
                seen=lambda: _notices(app),
            )
        elif key == "Y":
            await until(
                pilot, lambda: type(app.screen).__name__ == "SaveScreen", seen=lambda: app.screen
            )
        else:
            await until(pilot, lambda: opened, what="the editor to be called")
            assert opened[0].line == 13  # the graph break of compile 0/0 (script.py:13)


@sync
async def test_a_tree_taller_than_its_pane_needs_no_sideways_scroll(fixture_runs: Path) -> None:
    app = TcviewApp(str(fixture_runs / "h100_lr_float"))
    async with app.run_test(size=(80, 16)) as pilot:
        await ready(app, pilot)
        tree = app.main_tree
        assert tree.show_vertical_scrollbar  # it narrows the pane after the rows were measured
        assert not tree.show_horizontal_scrollbar
        assert tree.virtual_size.width <= tree.scrollable_content_region.width
