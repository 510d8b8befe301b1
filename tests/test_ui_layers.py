"""Attributes down, messages up: no widget, view or dialog reaches the app or the browser."""

from __future__ import annotations

import ast
from pathlib import Path

UI = Path(__file__).resolve().parent.parent / "tcview" / "ui"
# Who may import what above it: the app composes the browser; run mode is the app's keys.
MAY_IMPORT = {
    "app.py": {"tcview.ui.browser"},
    "run_pane.py": {"tcview.ui.app"},
}
OWNERS = {"tcview.ui.app", "tcview.ui.browser", "tcview.ui.run_pane"}


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
