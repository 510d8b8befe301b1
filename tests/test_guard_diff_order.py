"""The compile diff's guards (tests/fixtures/runs/guards_renumbered, CPU, torch 2.13): Dynamo
numbers the builtins dict it guards on anew in each compile (``G['__builtins_dict___0']`` in
0/0, ``___4`` in 0/1); those guards are the same guards. The guards on the input whose guard
failed come first, the failed one (a changed TENSOR_MATCH) at their head."""

from __future__ import annotations

from pathlib import Path

from conftest import find_as

from tcview.analysis.diff import ADDED, CHANGED, SAME, compile_diff, predecessor, stable
from tcview.ingest.source import load_source
from tcview.model.objects import Compile
from tcview.report.diffreport import compile_diff_lines


def test_renumbered_globals_are_the_same_guard() -> None:
    assert stable("G['__builtins_dict___24']['iter']") == "G['__builtins_dict___#']['iter']"
    assert stable("G['__import_torch_dot_nn']") == "G['__import_torch_dot_nn']"
    assert stable("G['__obj_140123_c3']") == stable("G['__obj_99_c4']")
    assert stable("L['x_1']") == "L['x_1']"


def test_the_diff_leads_with_the_guard_that_failed(fixture_runs: Path) -> None:
    model = load_source(str(fixture_runs / "guards_renumbered"))
    b = find_as(model, "0/1", Compile)
    a = predecessor(b)
    assert a is not None and a.id_label == "0/0"
    d = compile_diff(a, b)
    assert d.guards is not None
    changed = [c for c in d.guards if c.status != SAME]
    assert [(c.status, c.guard.kind, c.decides) for c in changed] == [
        (CHANGED, "TENSOR_MATCH", True),
        (ADDED, "LAMBDA_GUARD", True),
    ]
    assert sum(c.renumbered for c in d.guards) == 3
    lines = [text for _, text, _ in compile_diff_lines(d)]
    at = next(i for i, t in enumerate(lines) if t.startswith("guards:"))
    assert lines[at] == "guards: 1 changed, 1 added, 0 removed, 66 same (3 on renumbered globals)"
    assert lines[at + 1] == "  on the input whose guard failed:"
    assert lines[at + 2].startswith("  - L['x']: TENSOR_MATCH:") and "size=[4, 16]" in lines[at + 2]
    assert (
        lines[at + 3].startswith("  + L['x']: TENSOR_MATCH:") and "size=[None, 16]" in lines[at + 3]
    )
    assert not any("__builtins_dict__" in t for t in lines)


def test_two_processes_guards_differ_not_in_object_ids(fixture_runs: Path) -> None:
    """guards_one_batch is the same script in another process: its first compile has the same
    guards as guards_renumbered's, under other object and type ids (addresses)."""
    a = find_as(load_source(str(fixture_runs / "guards_one_batch")), "0/0", Compile)
    b = find_as(load_source(str(fixture_runs / "guards_renumbered")), "0/0", Compile)
    d = compile_diff(a, b)
    assert d.other_process and d.guards is not None
    assert [c for c in d.guards if c.status != SAME] == []
    ids = [c for c in d.guards if c.renumbered]
    assert ids and all("___check_" in c.guard.expr for c in ids)
    lines = [text for _, text, _ in compile_diff_lines(d, ("A 0/0", "B 0/0"))]
    assert lines[0] == "compile A 0/0 → B 0/0"
    assert (
        f"guards: 0 changed, 0 added, 0 removed, 67 same ({len(ids)} only other object ids"
        " or renumbered globals)" in lines
    )
    # One process: an object's other id is another object, a changed guard.
    assert stable("___check_obj_id(G['torch'], 1403)") != stable("___check_obj_id(G['torch'], 9)")
    assert stable("___check_obj_id(G['torch'], 1403)", ids=True) == stable(
        "___check_obj_id(G['torch'], 9)", ids=True
    )
