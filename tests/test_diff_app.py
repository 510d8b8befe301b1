"""`tcview diff`'s app on real runs (CPU, torch 2.13): guards_one_batch (A) calls a module on
one batch size; guards_renumbered (B) is the same script calling it on a second batch size, so
B's `forward` recompiles (0/1) and the builtins dict its guards read is renumbered there;
guards_warm is A's script run again on A's inductor cache (its compiles are cache hits).

The app lists the frames of both runs side by side; enter on a frame lists its compiles side
by side with the highlighted pair's compile diff below; `?` is its help."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable
from ui_helpers import screen_text, settle, sync
from waits import until

from tcview.analysis.rundiff import RunDiff, run_diff
from tcview.ingest.source import load_source
from tcview.ui.diffview import DiffApp, FrameScreen, PairDiffView
from tcview.ui.help import HelpScreen
from tcview.ui.reader import Reader

SIZE = (120, 40)


def _diff(runs: Path, a: str, b: str) -> RunDiff:
    return run_diff(load_source(str(runs / a)), load_source(str(runs / b)), a, b)


def _cells(table: DataTable) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def _pane(app: DiffApp) -> tuple[str, list[str]]:
    doc = app.screen.query_one(Reader).viewer.doc
    return doc.title, [doc.plain(i) for i in range(doc.count)]


@pytest.fixture(scope="module")
def recompiled(fixture_runs: Path) -> RunDiff:
    return _diff(fixture_runs, "guards_one_batch", "guards_renumbered")


@sync
async def test_question_mark_opens_the_help_of_the_diff_apps_keys(recompiled: RunDiff) -> None:
    app = DiffApp(recompiled)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help")
        text = screen_text(app)
        assert "Run diff: the frames of A and B" in text
        assert "the frame's compiles in A and B side by side, with their diffs" in text
        assert "A frame's compiles (enter on a frame)" in text
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, HelpScreen), what="help closed")


@sync
async def test_the_users_keymap_moves_the_diff_apps_keys(recompiled: RunDiff) -> None:
    """The keymap `tcview diff` reads from the user's config (tcview.commands.config): the
    help moved to `h`, `?` no longer opens it."""
    app = DiffApp(recompiled, {"diff.help": "h"})
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("question_mark")
        await settle(app, pilot)
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("h")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help on h")


@sync
async def test_frames_side_by_side_lead_to_their_compiles(recompiled: RunDiff) -> None:
    app = DiffApp(recompiled)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        rows = _cells(app.query_one("#diff-frames", DataTable))
        # status, frame, compiles in A and B, time in A and B, its change, recompiles, breaks
        assert [r[:4] + r[7:] for r in rows] == [
            ["changed", "forward (script.py:17)", "1", "2", "0 → 1", "0"],
            ["same", "other (script.py:28)", "1", "1", "0", "0"],
        ]
        assert all(r[4].endswith("s") and r[5].endswith("s") for r in rows)  # both times
        # The rest of the report below, without its own list of the frames.
        _, report = _pane(app)
        assert "recompile reasons (the guard that failed, per frame)" in report
        assert not any(t.startswith("frames (matched") for t in report)

        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, FrameScreen), what="the frame")
        await settle(app, pilot)
        pairs = _cells(app.screen.query_one("#diff-pairs", DataTable))
        assert [[r[0], r[1], r[4], r[7]] for r in pairs] == [
            ["1", "0/0", "0/0", "A 0/0 → B 0/0"],
            ["2", "-", "0/1", "B 0/0 → B 0/1"],
        ]
        title, text = _pane(app)
        # A's and B's first compiles: two processes, so the objects' ids differ; the same guards.
        assert title == "A 0/0 → B 0/0"
        at = text.index("guards: 0 changed, 0 added, 0 removed, 67 same")
        assert text[at + 1].endswith(
            "hidden: they differ only in object ids, addresses or renumbered globals"
        )
        assert not any("___check_" in t for t in text)

        # B's recompile (A has none): against the compile it replaced, the failed guard first.
        await pilot.press("down")
        await until(pilot, lambda: _pane(app)[0] == "B 0/0 → B 0/1", what="the recompile's diff")
        _, text = _pane(app)
        _assert_failed_guard_first(text)

        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, PairDiffView), what="the compile diff")
        await until(pilot, lambda: any(t.startswith("guards:") for t in _pane(app)[1]))
        title, text = _pane(app)
        assert title == "B 0/0 → B 0/1"
        _assert_failed_guard_first(text)
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, FrameScreen), what="back")
        await pilot.press("escape")
        await until(pilot, lambda: app.screen.query("#diff-frames"), what="back to the frames")


def _assert_failed_guard_first(text: list[str]) -> None:
    assert not any("__builtins_dict___" in t for t in text), "renumbered globals listed"
    at = next(i for i, t in enumerate(text) if t.startswith("guards:"))
    assert text[at] == "guards: 1 changed, 1 added, 0 removed, 66 same"
    assert text[at + 1].startswith("  3 of the same hidden: they differ only in")
    assert text[at + 2] == "  on the input whose guard failed:"
    assert text[at + 3].startswith("  - L['x']: TENSOR_MATCH:") and "size=[4, 16]" in text[at + 3]
    assert text[at + 4].startswith("  + L['x']: TENSOR_MATCH:")
    assert "size=[None, 16]" in text[at + 4]


@sync
async def test_cache_hits_are_marked(fixture_runs: Path) -> None:
    app = DiffApp(_diff(fixture_runs, "guards_one_batch", "guards_warm"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        rows = _cells(app.query_one("#diff-frames", DataTable))
        assert [r[:4] for r in rows] == [
            ["changed", "forward (script.py:17)", "1", "1●1"],
            ["changed", "other (script.py:28)", "1", "1●1"],
        ]
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, FrameScreen), what="the frame")
        pairs = _cells(app.screen.query_one("#diff-pairs", DataTable))
        assert [(r[2], r[5]) for r in pairs] == [("✓ ok", "✓ ok ●")]


@sync
async def test_the_compile_diff_leads_with_the_setting_that_changed(fixture_runs: Path) -> None:
    """cache_config: one nn.Module compiled in two processes, B with Inductor's
    ``fallback_random`` set; their guards differ only in object ids."""
    runs = fixture_runs / "cache_config"
    app = DiffApp(_diff(runs, "a", "b"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        _, report = _pane(app)
        assert (
            "  fx_graph     forward 0/0 → 0/0: inductor_config[fallback_random] False → True"
            in report
        )
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, FrameScreen), what="the frame")
        await until(pilot, lambda: _pane(app)[0] == "A 0/0 → B 0/0", what="the compile diff")
        _, text = _pane(app)
        first = [t for t in text[1:] if t and not t.startswith(("frame ", "status ", "time "))]
        assert first[:2] == [
            "cache key: 1 component(s) differ (fx_graph)",
            "  inductor_config[fallback_random]  False → True",
        ]
        assert not any("___check_" in t for t in text)  # ids only: counted, not listed
        assert any(
            t.endswith("hidden: they differ only in object ids, addresses or renumbered globals")
            for t in text
        )
        # On its own screen too, on its first screenful.
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, PairDiffView), what="the compile diff")
        await until(pilot, lambda: any(t.startswith("cache key:") for t in _pane(app)[1]))
        assert "inductor_config[fallback_random]  False → True" in screen_text(app)
