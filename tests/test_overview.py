"""One overview (tcview.report.overview), rendered three ways: the app's overview pane,
`tcview summary` text and its --json (`summary_document`). Each shows the same rows, cut at the
same length."""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import pytest
from ui_helpers import CPU_SAMPLE, ready, screen_text, sync

from tcview.ingest.source import load_source
from tcview.report import overview, stacks
from tcview.report.markdown import markdown_report
from tcview.report.summary import summary_document, summary_text
from tcview.ui.app import TcviewApp
from tcview.ui.content import model_summary

APP_ROW = re.compile(r"^  +\S+  (\S+) ")  # `  12.3ms  1/0      frame label`
MD_ROW = re.compile(r"^\| [^|]+ \| `([^`]+)` \|")  # | 12.3 ms | `1/0` | frame | ok |
TEXT_ROW = re.compile(r"^  +\S+  (?:rank \d+  |no rank  )?\[([^\]]+)\] ")


def _rows(lines: list[str], heading: str, row: re.Pattern[str]) -> list[str]:
    """The compile ids of the rows under `heading`, up to the first line that is not a row."""
    out = []
    for line in lines[lines.index(heading) + 1 :]:
        m = row.match(line)
        if m is None:
            break
        out.append(m.group(1))
    return out


def test_slowest_compiles_are_one_list_in_app_text_and_json(fixture_runs: Path) -> None:
    model = load_source(str(fixture_runs / "recompile_dim"))
    timed = [c for c in model.compiles if c.compile_time_s is not None]
    assert len(timed) > 10  # more than any cut-off: the lists are cut
    app = _rows(
        [t.plain for t in model_summary(model, "x")], "slowest compiles  (t for all)", APP_ROW
    )
    text = _rows(summary_text(model).split("\n"), "Slowest compiles", TEXT_ROW)
    assert app == text
    data = summary_document(model)["overview"]
    assert [row["compile"] for row in data["slowest_compiles"]] == app
    assert data["timed_compiles"] == len(timed)
    report = markdown_report(model).split("\n")
    table = report[report.index("### Slowest compiles") + 4 :]
    assert [m.group(1) for ln in table[: len(app)] if (m := MD_ROW.match(ln))] == app
    assert not MD_ROW.match(table[len(app)])
    slowest = sorted(timed, key=lambda c: -(c.compile_time_s or 0))
    assert app == [c.id_label for c in slowest[: len(app)]]


def test_crash_is_one_list_in_app_text_and_json(fixture_runs: Path) -> None:
    model = load_source(str(fixture_runs / "crash_ranks"))
    errors = model.run_errors()
    assert errors
    app = [t.plain for t in model_summary(model, "x")]
    text = summary_text(model).split("\n")
    data = summary_document(model)["overview"]
    assert data["errors_total"] == len(errors)
    for row in data["errors"]:
        assert f"  {row['headline']}" in app and f"  {row['headline']}" in text


LR_FLOAT_TREE = [  # h100_lr_float: a training step whose optimizer recompiles 3/1 to 3/8
    "  lr_float.py:30 in <module>",
    "    lr_float.py:22 in train  ✓ 0/0",
    "    lr_float.py:13 in optimizer_step  ∅ 1/0",
    "    lr_float.py:24 in train",
    "      optimizer.py:512 in wrapper  ∅ 2/0",
    "      lr_float.py:15 in optimizer_step",
    "        lr_scheduler.py:166 in wrapper",
    "          adam.py:214 in step  ✓ 3/0 · ✂ 3/1 ↻ · ✓ 3/2–3/7 ↻ · ✗ 3/8 ↻",
    "        optimizer.py:533 in torch_dynamo_resume_in_wrapper_at_533  ∅ 4/0",
]


def _section(lines: list[str], heading: str) -> list[str]:
    """The lines under `heading`, up to the next blank line."""
    rest = lines[lines.index(heading) + 1 :]
    return rest[: rest.index("")] if "" in rest else rest


def test_stack_tree_is_one_tree_in_app_text_and_json(fixture_runs: Path) -> None:
    """tlparse's stack trie on the overview: shared first frames once, each frame's compiles
    beside it, runs of one frame folded (3/2–3/7), with the tree's status marks."""
    model = load_source(str(fixture_runs / "h100_lr_float"))
    app = _section([t.plain for t in model_summary(model, "x")], "stacks that led to 13 compile(s)")
    text = _section(summary_text(model).split("\n"), "Stacks that led to 13 compile(s)")
    assert app == text == LR_FLOAT_TREE
    data = summary_document(model)["overview"]
    assert data["stack_tree_lines"] == len(LR_FLOAT_TREE)
    leaf = data["stack_tree"][7]
    assert (leaf["depth"], leaf["frame"]) == (4, "adam.py:214 in step")
    assert leaf["compiles"][2] == {
        "ids": "3/2–3/7",
        "rank": None,
        "status": "ok",
        "marks": ["recompile"],
    }


def test_a_long_stack_tree_is_cut_and_says_how_to_see_it_all(
    fixture_runs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(overview, "STACK_ROWS", 3)
    model = load_source(str(fixture_runs / "h100_lr_float"))
    more = "  … 6 more line(s) (tcview show PATH stacks prints them all)"
    app = _section([t.plain for t in model_summary(model, "x")], "stacks that led to 13 compile(s)")
    text = _section(summary_text(model).split("\n"), "Stacks that led to 13 compile(s)")
    assert app == text == [*LR_FLOAT_TREE[:3], more]
    data = summary_document(model)["overview"]
    assert len(data["stack_tree"]) == 3 and data["stack_tree_lines"] == 9


def test_stack_tree_of_several_ranks_says_each_compiles_rank(fixture_runs: Path) -> None:
    model = load_source(str(fixture_runs / "ranks_ddp2"))
    text = _section(summary_text(model).split("\n"), "Stacks that led to 9 compile(s)")
    assert text[0] == "  ddp_two_ranks.py:13 in <module>  rank 0 ∅ 0/0 · rank 1 ∅ 0/0–0/1 ↻"
    # `#` picks ranks: the overview's tree then holds only theirs
    picked = overview.build_overview(model, frozenset({1}))
    assert picked.stacked == len([c for c in model.compiles if c.file.rank == 1])
    assert {run.rank for row in picked.stacks for run in row.compiles} == {1}


@pytest.mark.app
@sync
async def test_the_app_opens_on_the_stack_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    """At 120×40 the first screen shows the tree: the frames that led to the compiles, each
    frame's compile ids beside it (sample_traces/cpu_breaks_recompiles: one function compiled
    three times, then resumed after its graph break from two call sites). A recompile's own
    stack (1/1, from line 20) is read from disk in a worker, never on the UI thread."""
    read_on: list[bool] = []
    read = stacks._read_stack

    def recording(comp: Any) -> Any:
        read_on.append(threading.current_thread() is threading.main_thread())
        return read(comp)

    monkeypatch.setattr(stacks, "_read_stack", recording)
    app = TcviewApp(str(CPU_SAMPLE))
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        shown = [line.strip("│ ") for line in screen_text(app).split("\n")]
        tree = shown[shown.index("stacks that led to 5 compile(s)") + 1 :][:5]
        assert tree == [
            "script.py:11 in scale_shift  ✂ 0/0–0/2 ↻",
            "script.py:18 in <module>",
            "script.py:13 in torch_dynamo_resume_in_scale_shift_at_13  ✓ 1/0",
            "script.py:20 in <module>",
            "script.py:13 in torch_dynamo_resume_in_scale_shift_at_13  ✓ 1/1 ↻",
        ]
        assert read_on and not any(read_on), read_on


def test_a_capture_without_stacks_shows_no_tree() -> None:
    """TORCH_LOGS text logs no stacks: a tree of one "(no stack logged)" node says nothing."""
    model = load_source(str(CPU_SAMPLE / "torch_logs.txt"))
    assert len(model.compiles) == 5
    assert not any(t.plain.startswith("stacks that led") for t in model_summary(model, "x"))
    assert "Stacks that led" not in summary_text(model)
    assert summary_document(model)["overview"]["stack_tree"] == []
