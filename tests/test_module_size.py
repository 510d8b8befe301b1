"""Size limits: no module of the packages listed is longer than `MODULE_LINES` lines, and no
function or method in them longer than `FUNCTION_LINES` (from its ``def`` line, decorators
left out, to its last line). A module or function past its limit is split by what it does."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# The packages held to the limits, as folders of the repository.
PACKAGES = ["tcview/analysis", "tcview/ui"]
MODULE_LINES = 800
FUNCTION_LINES = 80


def _modules(package: str) -> list[Path]:
    return sorted((REPO / package).rglob("*.py"))


def long_functions(source: str) -> list[tuple[str, int]]:
    """(name, lines) of each function or method of `source` longer than `FUNCTION_LINES`."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            end = node.end_lineno if node.end_lineno is not None else node.lineno
            lines = end - node.lineno + 1
            if lines > FUNCTION_LINES:
                out.append((f"{node.name} (line {node.lineno})", lines))
    return out


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_is_too_long(package: str) -> None:
    modules = _modules(package)
    assert modules, f"{package}: no modules"
    long = {
        str(p.relative_to(REPO)): n
        for p in modules
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MODULE_LINES
    }
    assert not long, f"modules over {MODULE_LINES} lines: {long}"


@pytest.mark.parametrize("package", PACKAGES)
def test_no_function_is_too_long(package: str) -> None:
    long = {
        f"{p.relative_to(REPO)}: {name}": n
        for p in _modules(package)
        for name, n in long_functions(p.read_text(encoding="utf-8"))
    }
    assert not long, f"functions over {FUNCTION_LINES} lines: {long}"


def test_a_long_function_is_found() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(FUNCTION_LINES))
    assert long_functions(f"def f() -> None:\n{body}\n") == [("f (line 1)", FUNCTION_LINES + 1)]
    assert long_functions(f"def f() -> None:\n{body}\n".replace("    x0 = 0\n", "")) == []
