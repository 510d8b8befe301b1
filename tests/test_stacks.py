"""The tree of user stacks that led to every compile (tlparse's stack trie), as data and text.
tests/fixtures/runs/guards_renumbered (CPU, torch 2.13): forward compiled from script.py:34 and
recompiled from script.py:36 (each compile's own dynamo_start stack, not its frame's first),
and other() called at module level; ranks_ddp2 (two ranks, H100) puts both ranks' compiles
on the stacks they share."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import TCVIEW_CLI
from ui_helpers import REPO

from tcview.ingest.source import load_source
from tcview.report.stacks import NO_STACK, stack_json, stack_lines, stack_trie

SCRIPT = "/tmp/runs/guards_renumbered/script.py"  # where the run was made


def cli(*args: str) -> str:
    return subprocess.run(
        [*TCVIEW_CLI, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_each_compile_hangs_under_its_own_call_site(fixture_runs: Path) -> None:
    model = load_source(str(fixture_runs / "guards_renumbered"))
    assert stack_lines(stack_trie(model)) == [
        f"{SCRIPT}:34 in <module>",
        f"  {SCRIPT}:17 in forward",
        "    → 0/0 ok",
        f"{SCRIPT}:28 in other",
        "  → 1/0 ok",
        f"{SCRIPT}:36 in <module>",
        f"  {SCRIPT}:17 in forward",
        "    → 0/1 ok, recompile",
    ]


def test_show_stacks_and_summary_json(fixture_runs: Path) -> None:
    run = str(fixture_runs / "guards_renumbered")
    shown = cli("show", run, "stacks").splitlines()
    assert shown[0] == "stacks that led to 3 compile(s)"
    assert shown[1:4] == [
        f"  {SCRIPT}:34 in <module>",
        f"    {SCRIPT}:17 in forward",
        "      → 0/0 ok",
    ]
    stacks = json.loads(cli("summary", "--json", run))["stacks"]
    assert [r["frame"] for r in stacks] == [
        f"{SCRIPT}:34 in <module>",
        f"{SCRIPT}:28 in other",
        f"{SCRIPT}:36 in <module>",
    ]
    leaf = stacks[2]["children"][0]
    assert (leaf["name"], leaf["line"]) == ("forward", 17)
    assert leaf["compiles"] == [{"id": "0/1", "rank": None, "status": "ok", "marks": ["recompile"]}]


def test_shared_prefixes_fold_across_ranks(fixture_runs: Path) -> None:
    model = load_source(str(fixture_runs / "ranks_ddp2"))
    roots = stack_trie(model)
    assert len(roots) == 1 and sum(r.count for r in roots) == len(model.compiles)
    lines = stack_lines(roots, ranks=True)
    assert lines[1] == "  → rank 0 0/0 empty graph · rank 1 0/0–0/1 empty graph"
    data = stack_json(roots)
    assert {c["rank"] for c in data[0]["compiles"]} == {0, 1}


def test_a_capture_without_stacks_says_so(fixture_runs: Path) -> None:
    model = load_source(str(fixture_runs / "guards_renumbered" / "torch_logs.txt"))
    assert stack_lines(stack_trie(model)) == [NO_STACK, "  → 0/0 ok · 1/0 ok · 0/1 ok, recompile"]
