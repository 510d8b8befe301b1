"""The project's static checks, run with the suite so CI enforces them: mypy with the
project's config, ruff, and no import cycle among tcview's modules at run time (deferred
imports count; the import graph and the cycle finder are tests/test_layers.py's)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from test_layers import cycles, imports, modules

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=280
    )


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed")
def test_mypy_reports_no_error() -> None:
    """Over tcview and the tests with the project's config (CONTRIBUTING.md's `mypy tcview tests`):
    every module but the fixtures and the GPU runs' job scripts (and the C module's stub)."""
    done = _run("mypy", "tcview", "tests")
    assert done.returncode == 0, done.stdout + done.stderr
    skipped = ("tests/fixtures/", "tests/benchmarks/gpu_runs/")
    sources = [*ROOT.glob("tcview/**/*.py"), *ROOT.glob("tcview/**/*.pyi")]
    sources += ROOT.glob("tests/**/*.py")
    checked = [p for p in sources if not p.relative_to(ROOT).as_posix().startswith(skipped)]
    assert f"no issues found in {len(checked)} source files" in done.stdout, done.stdout


@pytest.mark.skipif(importlib.util.find_spec("ruff") is None, reason="ruff is not installed")
def test_ruff_reports_nothing() -> None:
    done = _run("ruff", "check", "tcview", "tests")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.unit
def test_no_import_cycle_among_tcview_modules() -> None:
    """At run time (tests/test_layers.py also counts the type-only imports)."""
    mods = modules()
    edges = imports(mods, runtime_only=True)
    assert len(mods) > 40 and sum(map(len, edges.values())) > 100  # the scan sees the imports
    assert cycles(edges) == []


@pytest.mark.unit
def test_the_cycle_finder_finds_a_deferred_cycle() -> None:
    edges = {"tcview.a": {"tcview.b"}, "tcview.b": {"tcview.c"}, "tcview.c": {"tcview.a"}}
    edges["tcview.d"] = {"tcview.a"}
    assert cycles(edges) == [["tcview.a", "tcview.b", "tcview.c"]]
