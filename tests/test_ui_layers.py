"""Attributes down, messages up: no widget, view or dialog reaches the app or the browser;
what they ask for comes up as a message."""

from __future__ import annotations

import ast
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.command import CommandList, CommandPalette
from ui_helpers import GPU_SAMPLE, ready, sync

from tcview.ui.app import TcviewApp
from tcview.ui.messages import ShowSource

UI = Path(__file__).resolve().parent.parent / "tcview" / "ui"
# Who may import what above it: the app composes the browser; run mode's app composes a
# browser with the job's pane in it, under the keys of every app (app.BrowserApp) and its own.
MAY_IMPORT = {
    "app.py": {"tcview.ui.browser"},
    "run_app.py": {"tcview.ui.app", "tcview.ui.browser"},
}
OWNERS = {"tcview.ui.app", "tcview.ui.browser", "tcview.ui.run_app"}


def _imports(path: Path) -> set[str]:
    """Every module `path` imports, type-only imports (under TYPE_CHECKING) included."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return out


def test_no_ui_module_imports_the_app_or_the_browser_but_their_owners() -> None:
    reached = {
        path.name: sorted((_imports(path) & OWNERS) - MAY_IMPORT.get(path.name, set()))
        for path in sorted(UI.glob("*.py"))
    }
    assert {name: mods for name, mods in reached.items() if mods} == {}


def test_no_ui_module_casts_the_app() -> None:
    casts = [p.name for p in UI.glob("*.py") if 'cast("TcviewApp"' in p.read_text()]
    assert casts == []


@sync
async def test_a_palette_pick_reaches_the_browser_as_a_message() -> None:
    """The palette posts `ShowSource` up; the browser selects the file's node and shows it."""
    app = TcviewApp(str(GPU_SAMPLE))
    shown: list[ShowSource] = []

    def hook(message: object) -> None:
        if isinstance(message, ShowSource):
            shown.append(message)

    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        await ready(app, pilot)
        assert app.model is not None
        source = app.model.files[0]
        await pilot.press("ctrl+p")
        await pilot.press(*f"file {source.display}")
        assert await until(pilot, lambda: isinstance(app.screen, CommandPalette) and _hits(app))
        await pilot.press("enter")
        assert await until(pilot, lambda: _cursor_obj(app) is source)
        assert [m.source for m in shown] == [source]


def _hits(app: TcviewApp) -> int:
    return app.screen.query_one(CommandList).option_count


def _cursor_obj(app: TcviewApp) -> object:
    node = app.main_tree.cursor_node
    return node.data.obj if node is not None and node.data is not None else None


async def until(pilot: Any, predicate: Callable[[], object], timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await pilot.pause(0.05)
    return bool(predicate())
