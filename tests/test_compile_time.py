"""A compile's time counts its backward compile (tests/fixtures/runs/train_backward: a CPU
training step, torch 2.13; its bwd_compilation_metrics say the lazy backward compile of 0/0
took 3.414115 s, its compilation_metrics that the frame took 5.404623 s)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import TCVIEW_CLI
from ui_helpers import REPO, pane, ready, settle, sync

from tcview.analysis.compiletime import compile_seconds, compile_time
from tcview.analysis.rundiff import run_diff
from tcview.ingest.source import load_source
from tcview.model.objects import Model
from tcview.report.diffreport import compile_diff_lines, run_diff_lines

FORWARD, BACKWARD, OTHER = 5.404623, 3.414115, 1.959939


def cli(*args: str) -> str:
    done = subprocess.run(
        [*TCVIEW_CLI, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


@pytest.fixture(scope="module")
def run(fixture_runs: Path) -> Path:
    return fixture_runs / "train_backward"


@pytest.fixture(scope="module")
def model(run: Path) -> Model:
    return load_source(str(run))


def test_a_compile_time_adds_the_backward_compile(model: Model) -> None:
    first, second = model.compiles
    t = compile_time(first)
    assert t.forward_s == pytest.approx(FORWARD) and t.backward_s == pytest.approx(BACKWARD)
    assert compile_seconds(first) == pytest.approx(FORWARD + BACKWARD)
    # the time tree's entire_backward_compile span is what the metric counts
    spans = dict((name, s) for name, s, _ in first.phases())
    assert spans["entire_backward_compile"] == pytest.approx(BACKWARD, abs=1e-3)
    assert compile_time(second).backward_s is None  # no training graph: no backward
    assert compile_seconds(second) == pytest.approx(OTHER)


def test_show_and_summary_say_incl_backward(run: Path) -> None:
    shown = cli("show", str(run), "0/0")
    assert shown.splitlines()[0] == "compile 0/0  ok  8.82s incl. backward 3.41s"
    rows = json.loads(cli("show", "--json", str(run), "0/0"))["sections"][0]["rows"]
    assert {"label": "time", "value": "8.82s incl. backward 3.41s"}.items() <= next(
        r for r in rows if r["label"] == "time"
    ).items()
    summary = cli("summary", str(run))
    slowest = summary[summary.index("Slowest compiles") :].splitlines()
    assert slowest[0] == "Slowest compiles (incl. backward)"
    assert slowest[1].lstrip().startswith("8.82s  [0/0]")


def test_diff_counts_the_backward_compile(model: Model) -> None:
    d = run_diff(model, model)
    total = FORWARD + BACKWARD + OTHER
    assert d.totals["compile_time_s"] == pytest.approx((total, total))
    text = "\n".join(line for _, line, _ in run_diff_lines(d))
    assert "compile time" in text and "(incl. backward)" in text
    first = model.compiles[0]
    from tcview.analysis.diff import compile_diff

    rows = [line for _, line, _ in compile_diff_lines(compile_diff(first, first))]
    assert any(r.startswith("time      8.82s → 8.82s") and "incl. backward" in r for r in rows)
    assert any(r.startswith("  backward compile") and "3.41s → 3.41s" in r for r in rows)


@sync
async def test_time_view_total_counts_the_backward(run: Path) -> None:
    from textual.widgets import Static

    from tcview.ui.app import TcviewApp
    from tcview.ui.views import TimeView

    app = TcviewApp(str(run))
    async with app.run_test(size=(160, 40)) as pilot:
        await ready(app, pilot)
        await pilot.press("t")
        await settle(app, pilot)
        assert isinstance(pane(app), TimeView)
        head = str(pane(app).query_one("#view-head", Static).content)
        assert "total 10.78s in 2 compiles incl. backward" in head
        assert app.model is not None
        rows = pane(app).rows(app.model)
        assert [c.id_label for _, c in rows] == ["0/0", "1/0"]


def test_markdown_slowest_counts_the_backward(model: Model) -> None:
    from tcview.report.markdown import markdown_report

    text = markdown_report(model)
    assert "### Slowest compiles (incl. backward)" in text
    assert "| 8.82 s | `0/0` |" in text
