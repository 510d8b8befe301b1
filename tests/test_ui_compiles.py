"""Pilot tests of compiles in the browser: episodes and marks in the tree, the Errors view,
and "the run crashed" at the top of the overview. On the repo's fixture runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from ui_helpers import pane, ready, settle, shown_as, sync, viewer_shown

from tcview.ui.app import TcviewApp
from tcview.ui.options import OpenOptions
from tcview.ui.tree import TraceTree
from tcview.ui.views import ErrorsView

SIZE = (120, 40)


def shown(app: TcviewApp) -> list[str]:
    doc = viewer_shown(app).doc
    return [doc.plain(i) for i in range(doc.count)]


def tree_labels(app: TcviewApp) -> list[str]:
    return [str(n.label) for n in app.query_one(TraceTree)._by_key.values()]


@pytest.fixture
def crash(fixture_runs: Path) -> str:
    return str(fixture_runs / "crash_ranks")


@pytest.fixture
def resets(fixture_runs: Path) -> str:
    return str(fixture_runs / "resets")


@sync
async def test_the_overview_says_the_run_crashed_first(crash: str) -> None:
    app = TcviewApp(crash)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        lines = shown(app)
        # the findings lead, the worst first: the crash, at the user's line
        assert lines[1] == "findings (6), worst first  (w: each with its evidence)"
        assert lines[2].startswith("  error   The run crashed on rank 0 at ")
        at = lines.index("The run crashed: 3 error(s)  (E for all)")
        assert lines[at + 1] == (
            "  rank 0: AssertionError: rank 0: expected 2 gradient buckets, found 3"
        )
        assert app.browser.check_action("view", ("errors",)) is True


@sync
async def test_the_errors_view(crash: str) -> None:
    app = TcviewApp(crash)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await pilot.press("E")
        await settle(app, pilot)
        view = shown_as(app, ErrorsView)
        assert [(e.rank, e.error_type.rsplit(".", 1)[-1]) for e in view.objects] == [
            (0, "AssertionError"),
            (1, "AssertionError"),
            (None, "ChildFailedError"),
        ]
        lines = shown(app)
        assert lines[0] == "AssertionError"
        assert lines[1] == "rank 0: expected 2 gradient buckets, found 3"
        assert any(line.endswith("script.py:20 in check_buckets") for line in lines)
        assert "Traceback (most recent call last):" in lines
        await pilot.press("escape")
        assert len(app.screen_stack) == 1 and pane(app).id == "browse"


@sync
async def test_episodes_and_marks_in_the_tree(resets: str) -> None:
    app = TcviewApp(resets)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        labels = tree_labels(app)
        compiles = [label for label in labels if label[:1].isdigit()]
        assert [c.split("  ")[0] for c in compiles] == [
            "0/0", "1/0", "0/0 #2", "1/0 #2", "0/0 #3", "1/0 #3",
        ]  # fmt: skip
        assert ["● cache hit" in c for c in compiles] == [False, False, True, True, True, False]
        frames = [label for label in labels if "(script.py:" in label]
        assert frames[-1].startswith("✓ fn2 (script.py:21) #3")
        assert frames[2].startswith("✓ g (script.py:13) #2 ●")
        # No errors: the Errors key is out of the footer and does nothing.
        assert app.browser.check_action("view", ("errors",)) is False
        await pilot.press("E")
        await settle(app, pilot)
        assert len(app.screen_stack) == 1 and pane(app).id == "browse"


@sync
async def test_goto_an_episode(resets: str) -> None:
    app = TcviewApp(OpenOptions(resets, goto="1/0 #3"))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        lines = shown(app)
        assert lines[0].startswith("compile 1/0 #3  ok")
        assert lines[1].startswith("episode   3: torch._dynamo.reset()")
