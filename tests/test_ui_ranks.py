"""Pilot and snapshot tests of ranks in the app: the rank column of
every view, the rank filter (#) over the tree, the views and the counts, the Ranks view (a) with
the first divergence, and two ranks side by side (c)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Input
from ui_helpers import (
    GPU_SAMPLE,
    SnapCompare,
    counts_text,
    item_of,
    obj_of,
    pane,
    ready,
    shown_as,
    sync,
    viewer_shown,
)

from tcview.ingest.index import TraceSet
from tcview.model.objects import Compile
from tcview.model.ranks import counts_in
from tcview.ui.app import TcviewApp
from tcview.ui.ranks_view import CompareView, RankDialog, RanksView
from tcview.ui.reader import Reader
from tcview.ui.tree import TraceTree
from tcview.ui.views import TableView

SIZE = (130, 40)


def table_rows(app: TcviewApp) -> tuple[list[str], list[list[str]]]:
    """The shown view's columns and rows, as plain text."""
    table = pane(app).query_one(DataTable)
    columns = [str(c.label) for c in table.columns.values()]
    rows = [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]
    return columns, rows


def tree_labels(app: TcviewApp) -> list[str]:
    tree = app.main_tree
    return [str(child.label) for child in tree.root.children]


def detail_text(app: TcviewApp) -> list[str]:
    doc = viewer_shown(app).doc
    return [doc.plain(i) for i in range(doc.count)]


@pytest.fixture
def diverging(fixture_runs: Path) -> str:
    return str(fixture_runs / "ranks_diverge" / "trace")


async def _view(app: TcviewApp, pilot: Pilot[Any], key: str) -> None:
    await pilot.press(key)
    await ready(app, pilot)


@sync
@pytest.mark.parametrize(
    ("key", "ranks"),
    [
        ("b", ["1"]),
        ("r", ["1", "", "", "1", "", "", ""]),
        ("K", {"0", "0, 1", "1"}),  # a kernel both ranks compiled alike is one row
        ("t", {"0", "1"}),
        # Provenance: a user line (the ranks of its kernels), then its kernels.
        ("P", ["0, 1", "0", "1", "1", "0", "0", *["1"] * 10]),
    ],
)
async def test_every_view_has_a_rank_column(
    diverging: str, key: str, ranks: list[str] | set[str]
) -> None:
    app = TcviewApp(diverging)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await _view(app, pilot, key)
        columns, rows = table_rows(app)
        assert columns[0] == "rank"
        assert rows
        if isinstance(ranks, list):
            assert [r[0] for r in rows] == ranks
        else:
            assert {r[0] for r in rows} == ranks


@sync
async def test_the_failures_view_has_a_rank_column(fixture_runs: Path, tmp_path: Path) -> None:
    """The wont_convert run's trace (two failures) copied as ranks 0 and 1."""
    trace = next((fixture_runs / "wont_convert" / "trace").glob("*.log"))
    for rank in (0, 1):
        shutil.copy(trace, tmp_path / f"dedicated_log_torch_trace_rank_{rank}_x.log")
    app = TcviewApp(str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await _view(app, pilot, "f")
        columns, rows = table_rows(app)
        assert columns[:2] == ["rank", "compile"]
        assert [r[0] for r in rows] == ["0", "0", "1", "1"]


@sync
async def test_the_errors_view_keeps_its_one_rank_column(fixture_runs: Path) -> None:
    app = TcviewApp(str(fixture_runs / "crash_ranks"))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await _view(app, pilot, "E")
        columns, rows = table_rows(app)
        assert columns.count("rank") == 1
        assert {r[0] for r in rows} == {"0", "1", "-"}  # "-": the exit code (run.json)


@sync
async def test_one_rank_has_no_rank_column_and_no_rank_keys() -> None:
    app = TcviewApp(str(GPU_SAMPLE))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        assert app.status_left == f"static · {GPU_SAMPLE}"
        assert app.browser.check_action("view", ("ranks",)) is False
        assert app.browser.check_action("filter_ranks", ()) is False
        await _view(app, pilot, "t")
        columns, _ = table_rows(app)
        assert columns[0] != "rank"


@sync
async def test_rank_filter_narrows_tree_views_and_counts(diverging: str) -> None:
    app = TcviewApp(diverging)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        assert "2 ranks" in app.status_left
        assert [label.split("  ")[0] for label in tree_labels(app)] == ["rank 0", "rank 1"]
        everything = app.status_right
        await pilot.press("number_sign")
        await ready(app, pilot)
        assert isinstance(app.screen, RankDialog)
        await pilot.press("1", "enter")
        await ready(app, pilot)
        assert app.browser.controller.rank_filter == frozenset({1})
        assert [label.split("  ")[0] for label in tree_labels(app)] == ["rank 1"]
        assert "rank 1 of 2" in app.status_left
        model = TraceSet.load(diverging)
        assert app.status_right == counts_text(
            {**counts_in(model, frozenset({1})), "graph_breaks": 2}
        )
        assert app.status_right != everything
        await _view(app, pilot, "t")
        _, rows = table_rows(app)
        assert {r[0] for r in rows} == {"1"} and len(rows) == 5
        await pilot.press("escape")
        await _view(app, pilot, "P")  # provenance: rank 1's lines and kernels only
        _, rows = table_rows(app)
        assert {r[0] for r in rows} == {"1"} and len(rows) == 13
        await pilot.press("escape")
        # Cleared again: an empty line is every rank.
        await pilot.press("number_sign")
        await ready(app, pilot)
        assert app.screen.query_one("#rank-input", Input).value == "1"
        await pilot.press("backspace", "enter")
        await ready(app, pilot)
        assert app.browser.controller.rank_filter is None
        assert app.status_right == everything
        assert len(tree_labels(app)) == 2


def _overview(app: TcviewApp) -> list[str]:
    doc = app.screen_stack[0].query_one("#reader", Reader).viewer.doc
    return [t.plain for t in doc.styled or []]


@sync
async def test_the_overview_follows_the_rank_filter(diverging: str) -> None:
    app = TcviewApp(diverging)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        lines = _overview(app)
        assert app.status_right in lines and "ranks           0, 1" in lines
        slowest = lines[lines.index("slowest compiles  (t for all)") + 1 :]
        assert {ln.split()[3] for ln in slowest if "  rank " in ln} == {"0", "1"}
        await pilot.press("number_sign")
        await ready(app, pilot)
        await pilot.press("1", "enter")
        await ready(app, pilot)
        lines = _overview(app)
        assert app.status_right in lines  # the filtered counts, as the status bar has them
        assert "rank 1 only (# to pick ranks); the table counts all" in lines
        slowest = lines[lines.index("slowest compiles  (t for all)") + 1 :]
        assert {ln.split()[3] for ln in slowest if "  rank " in ln} == {"1"}


@sync
async def test_rank_filter_dialog_picks_from_the_list_and_refuses_unknown_ranks(
    diverging: str,
) -> None:
    app = TcviewApp(diverging)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await pilot.press("number_sign")
        await ready(app, pilot)
        await pilot.press("9", "enter")
        await ready(app, pilot)
        assert isinstance(app.screen, RankDialog)  # still open, saying why
        error = str(app.screen.query_one("#rank-error").render())
        assert "no rank 9" in error
        await pilot.press("backspace", "tab", "space")  # tick rank 0 in the list
        await ready(app, pilot)
        assert app.screen.query_one("#rank-input", Input).value == "0"
        await pilot.press("enter")
        await ready(app, pilot)
        assert app.browser.controller.rank_filter == frozenset({0})
        await pilot.press("number_sign")
        await ready(app, pilot)
        await pilot.press("escape")  # cancel: the filter stays
        await ready(app, pilot)
        assert app.browser.controller.rank_filter == frozenset({0})


@sync
async def test_ranks_view_names_the_first_divergence(diverging: str) -> None:
    app = TcviewApp(diverging)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await _view(app, pilot, "a")
        view = shown_as(app, RanksView)
        columns, rows = table_rows(app)
        assert columns[:3] == ["ranks", "compiles", "breaks"]
        assert [r[:4] for r in rows] == [["0", "1", "0", "0"], ["1", "5", "2", "3"]]
        assert rows[0][-1] == "—" and rows[1][-1] == "ids, cache, breaks"
        head = str(view.query_one("#view-head").render())
        assert "first divergence: rank 1 breaks the graph in 0/0 (Unsupported Tensor.item()" in head
        assert "  compile ids                         [0] [1]" in detail_text(app)
        # Enter on a group: only its ranks, back in the tree.
        await pilot.press("j", "enter")
        await ready(app, pilot)
        assert not isinstance(pane(app), TableView) and pane(app).id == "browse"
        assert app.browser.controller.rank_filter == frozenset({1})


@sync
async def test_compare_two_ranks_side_by_side(diverging: str) -> None:
    app = TcviewApp(diverging)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await _view(app, pilot, "a")
        await pilot.press("c")
        await ready(app, pilot)
        assert app.screen.query_one("#rank-input", Input).value == "0, 1"  # the first divergence's
        await pilot.press("enter")
        await ready(app, pilot)
        shown_as(app, CompareView)
        columns, rows = table_rows(app)
        assert columns == ["", "rank 0", "rank 1", "differs in"]
        assert [r[0] for r in rows] == ["≠"] * 5
        assert rows[0][1].startswith("0/0 ✓") and rows[0][2].startswith("0/0 ✂")
        assert rows[0][3] == "breaks, status"
        assert rows[3][1] == "—" and rows[3][2].startswith("0/1 ✂ ↻")
        lines = detail_text(app)
        assert any(ln.startswith("≠ breaks") and "Unsupported Tensor.item()" in ln for ln in lines)
        await pilot.press("enter")  # goes to rank 0's 0/0 in the tree
        await ready(app, pilot)
        node = app.query_one(TraceTree).cursor_node
        assert item_of(node).kind == "compile"
        comp = obj_of(node, Compile)
        assert comp.file.rank == 0 and comp.id_label == "0/0"


@sync
async def test_escape_from_the_comparison_goes_back_to_the_ranks_view(diverging: str) -> None:
    app = TcviewApp(diverging)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await _view(app, pilot, "a")
        ranks = shown_as(app, RanksView)
        await pilot.press("j")  # the second group: where the view was is where it comes back
        await pilot.press("c")
        await ready(app, pilot)
        await pilot.press("enter")
        await ready(app, pilot)
        shown_as(app, CompareView)
        await pilot.press("escape")
        await ready(app, pilot)
        assert pane(app) is ranks and app.focused is ranks.query_one(DataTable)
        assert ranks.query_one(DataTable).cursor_row == 1
        assert table_rows(app)[0][:3] == ["ranks", "compiles", "breaks"]
        await pilot.press("escape")
        await ready(app, pilot)
        assert pane(app).id == "browse" and app.focused is app.main_tree


@pytest.fixture
def diverging_here(fixture_runs: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The fresh two-rank run by a relative path (snapshots hold no temporary directory)."""
    monkeypatch.chdir(fixture_runs / "ranks_diverge")
    return "trace"


@pytest.mark.parametrize("keys", [("a",), ("a", "c", "enter")])
def test_snapshot_ranks_view(
    snap_compare: SnapCompare, diverging_here: str, keys: tuple[str, ...]
) -> None:
    async def before(pilot: Pilot[Any]) -> None:
        await ready(pilot.app, pilot)
        for key in keys:
            await pilot.press(key)
            await ready(pilot.app, pilot)

    assert snap_compare(TcviewApp(diverging_here), terminal_size=(110, 34), run_before=before)


@sync
async def test_compile_time_unknown_in_text_is_not_zero(fixture_runs: Path) -> None:
    app = TcviewApp(str(fixture_runs / "ranks_diverge" / "torch_logs.txt"))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await _view(app, pilot, "a")
        columns, rows = table_rows(app)
        times = [row[columns.index("compile time")] for row in rows]
        assert times and set(times) == {"—"}, times
