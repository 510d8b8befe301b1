"""Import contracts: the layers of `tcview.LAYERS` import only downwards, no widget imports the
app, and no import cycle. Every import counts: at module level, inside a function, and under
``if TYPE_CHECKING:`` (a type-only import is still a dependency of the design)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from tcview import LAYERS

PACKAGE = Path(__file__).resolve().parent.parent / "tcview"


def modules(root: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        name = ".".join(path.relative_to(root.parent).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def imports(mods: dict[str, Path], runtime_only: bool = False) -> dict[str, set[str]]:
    """The modules of the package each module imports (the edges of the import graph);
    `runtime_only` leaves out the imports under ``if TYPE_CHECKING:``."""

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {}
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        targets: set[str | None] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = {
            id(n)
            for node in ast.walk(tree)
            if runtime_only
            and isinstance(node, ast.If)
            and "TYPE_CHECKING" in ast.unparse(node.test)
            for part in node.body
            for n in ast.walk(part)
        }
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Import):
                targets.update(resolve(a.name) for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - (node.level - 1)]
                    stem = ".".join(parts + ([node.module] if node.module else []))
                else:
                    stem = node.module or ""
                # a name that is a submodule is an edge to it; any other, to its module
                for alias in node.names:
                    full = f"{stem}.{alias.name}"
                    targets.add(full if full in mods else resolve(stem))
        edges[mod] = {t for t in targets if t and t != mod}
    return edges


def layer(mod: str) -> str | None:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def upward_imports(edges: dict[str, set[str]]) -> list[str]:
    bad = []
    for mod, targets in sorted(edges.items()):
        own = layer(mod)
        for target in sorted(targets):
            other = layer(target)
            if own and other and LAYERS.index(other) > LAYERS.index(own):
                bad.append(f"{mod} ({own}) imports {target} ({other})")
    return bad


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected sets of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10000))
    try:
        for v in sorted(edges):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


EDGES = imports(modules())


def test_every_module_is_in_a_layer() -> None:
    loose = [m for m in EDGES if layer(m) is None and m not in ("tcview", "tcview.__main__")]
    assert loose == [], f"add these to a layer of tcview.LAYERS: {loose}"
    assert {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()} == set(LAYERS)


def test_no_layer_imports_a_higher_one() -> None:
    assert upward_imports(EDGES) == []


def test_layer_docstrings_say_what_they_may_import() -> None:
    for name in LAYERS:
        doc = ast.get_docstring(ast.parse((PACKAGE / name / "__init__.py").read_text()))
        assert doc and "import" in doc.lower(), f"tcview/{name}/__init__.py: say what it may import"


def test_a_planted_upward_import_is_caught(tmp_path: Path) -> None:
    """The check sees a type-only import inside a function (what a plain grep misses)."""
    for name in ("model", "ui"):
        (tmp_path / "tcview" / name).mkdir(parents=True)
        (tmp_path / "tcview" / name / "__init__.py").write_text("")
    (tmp_path / "tcview" / "__init__.py").write_text("")
    (tmp_path / "tcview" / "ui" / "app.py").write_text("")
    (tmp_path / "tcview" / "model" / "objects.py").write_text(
        "def f():\n    from typing import TYPE_CHECKING\n"
        "    if TYPE_CHECKING:\n        from ..ui import app\n"
    )
    edges = imports(modules(tmp_path / "tcview"))
    assert upward_imports(edges) == ["tcview.model.objects (model) imports tcview.ui.app (ui)"]


def test_no_import_cycle_below_the_ui() -> None:
    assert [c for c in cycles(EDGES) if not all(layer(m) == "ui" for m in c)] == []


def test_no_import_cycle() -> None:
    assert cycles(EDGES) == []


APPS = {"tcview.ui.app", "tcview.ui.run_app"}  # the App classes; run mode's is the app's keys


def test_no_widget_imports_the_app() -> None:
    """Widgets post messages up; they never name the App they live in."""
    widgets = [m for m in EDGES if layer(m) == "ui" and m not in APPS]
    users = [m for m in widgets if "tcview.ui.app" in EDGES[m]]
    assert users == []


def test_run_mode_composes_the_browser_and_subclasses_no_tcview_app() -> None:
    """Run mode is composition: `RunApp` builds its own browser screen with the
    job's pane in it, over the keys every app shares (app.BrowserApp), not `TcviewApp`."""
    import inspect

    from tcview.ui import run_app
    from tcview.ui.app import BrowserApp, TcviewApp

    classes = [c for _, c in inspect.getmembers(run_app, inspect.isclass)]
    own = [c for c in classes if c.__module__ == run_app.__name__]
    assert run_app.RunApp in own and issubclass(run_app.RunApp, BrowserApp)
    assert [c.__name__ for c in own if issubclass(c, TcviewApp)] == []
