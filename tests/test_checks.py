"""The project's static checks, run with the suite so CI enforces them: mypy with the
project's config, ruff, and no import cycle among tcview's modules (deferred imports count)."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tcview"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=280
    )


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed")
def test_mypy_reports_no_error() -> None:
    done = _run("mypy", "tcview")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.skipif(importlib.util.find_spec("ruff") is None, reason="ruff is not installed")
def test_ruff_reports_nothing() -> None:
    done = _run("ruff", "check", "tcview", "tests")
    assert done.returncode == 0, done.stdout + done.stderr


def _modules() -> dict[str, Path]:
    mods = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = path
    return mods


def import_edges(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Each module's imports of other tcview modules, anywhere but under `if TYPE_CHECKING:`."""

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = {
            id(n)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for part in node.body
            for n in ast.walk(part)
        }
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            targets: list[str | None] = []
            if isinstance(node, ast.Import):
                targets = [resolve(a.name) for a in node.names if a.name.startswith("tcview")]
            elif isinstance(node, ast.ImportFrom):
                stem = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    stem = ".".join(parts + ([node.module] if node.module else []))
                if stem.split(".")[0] == "tcview":
                    targets = [
                        f"{stem}.{a.name}" if f"{stem}.{a.name}" in mods else resolve(stem)
                        for a in node.names
                    ]
            edges[mod].update(t for t in targets if t and t != mod)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected sets of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


@pytest.mark.unit
def test_no_import_cycle_among_tcview_modules() -> None:
    mods = _modules()
    edges = import_edges(mods)
    assert len(mods) > 40 and sum(map(len, edges.values())) > 100  # the scan sees the imports
    assert cycles(edges) == []


@pytest.mark.unit
def test_the_cycle_finder_finds_a_deferred_cycle() -> None:
    edges = {"tcview.a": {"tcview.b"}, "tcview.b": {"tcview.c"}, "tcview.c": {"tcview.a"}}
    edges["tcview.d"] = {"tcview.a"}
    assert cycles(edges) == [["tcview.a", "tcview.b", "tcview.c"]]
