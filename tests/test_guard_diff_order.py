"""The compile diff's order and its guards (tests/fixtures/runs/guards_renumbered, CPU, torch
2.13): Dynamo numbers the builtins dict it guards on anew in each compile
(``G['__builtins_dict___0']`` in 0/0, ``___4`` in 0/1); those guards are the same guards, and
so are guards that differ only in object ids. The guards on the input whose guard failed come
first, the failed one (a changed TENSOR_MATCH) at their head. Before the guards: the cache key
components that differ (tests/fixtures/runs/cache_config: an Inductor setting changed)."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import find_as

from tcview.analysis.diff import (
    ADDED,
    CHANGED,
    SAME,
    KeyChange,
    compile_diff,
    decisive_first,
    guard_diff,
    parse_guards,
    predecessor,
    stable,
)
from tcview.analysis.rundiff import RunDiff, compile_pairs, run_diff
from tcview.ingest.source import load_source
from tcview.model.objects import Compile
from tcview.report.diffreport import compile_diff_lines, run_diff_lines

# The line that says how many guards the list leaves out, and why.
HIDDEN = "  {} of the same hidden: they differ only in object ids, addresses or renumbered globals"


def test_renumbered_globals_are_the_same_guard() -> None:
    assert stable("G['__builtins_dict___24']['iter']") == "G['__builtins_dict___#']['iter']"
    assert stable("G['__import_torch_dot_nn']") == "G['__import_torch_dot_nn']"
    assert stable("G['__obj_140123_c3']") == stable("G['__obj_99_c4']")
    assert stable("L['x_1']") == "L['x_1']"
    # Names Dynamo numbers outside G[...]: stack slots, lifted constants, compiled functions.
    assert stable("L['___stack0'] + self._tensor_constant3") == stable(
        "L['___stack2'] + self._tensor_constant0"
    )
    assert stable("G['__compiled_fn_3']") == stable("G['__compiled_fn_5']")
    assert stable("___compiled_fn_3(x)") == stable("___compiled_fn_5(x)")
    assert stable("__resume_at_30_1") == stable("__resume_at_30_4") != stable("__resume_at_8_1")
    assert stable("L['x'][0x10]") == "L['x'][0x10]"  # a short hex number is no address


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
    assert lines[at] == "guards: 1 changed, 1 added, 0 removed, 66 same"
    assert lines[at + 1] == HIDDEN.format(3)
    assert lines[at + 2] == "  on the input whose guard failed:"
    assert lines[at + 3].startswith("  - L['x']: TENSOR_MATCH:") and "size=[4, 16]" in lines[at + 3]
    assert (
        lines[at + 4].startswith("  + L['x']: TENSOR_MATCH:") and "size=[None, 16]" in lines[at + 4]
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
    at = lines.index("guards: 0 changed, 0 added, 0 removed, 67 same")
    assert lines[at + 1 : at + 3] == [HIDDEN.format(len(ids)), "  (the same guards)"]
    assert not any("___check_" in t for t in lines)
    # Ids and addresses: compared without them (`ids`), whether one process or two.
    assert stable("___check_obj_id(G['torch'], 1403)") != stable("___check_obj_id(G['torch'], 9)")
    for one, other in [
        ("___check_obj_id(G['torch'], 1403)", "___check_obj_id(G['torch'], 9)"),
        ("___check_type_id(L['self'], 94838514168704)", "___check_type_id(L['self'], 945)"),
        ("id(type(L['self'])) == 140234", "id(type(L['self'])) == 77"),
        ("L['f'] is <function f at 0x7f65c4aaade0>", "L['f'] is <function f at 0x7f00aa0bcd10>"),
    ]:
        assert stable(one, ids=True) == stable(other, ids=True), one
    assert stable("id(L['a']) == 1", ids=True) != stable("id(L['b']) == 1", ids=True)


# ---------------------------------------------------------------------- the cause first


def _cache_config(fixture_runs: Path) -> RunDiff:
    """tests/fixtures/runs/cache_config: one nn.Module compiled in two processes, run B with
    ``torch._inductor.config.fallback_random = True``; each run's cache starts empty."""
    runs = fixture_runs / "cache_config"
    return run_diff(load_source(str(runs / "a")), load_source(str(runs / "b")), "a", "b")


def _raw_guards(comp: Compile) -> list[str]:
    """The guard lines of a compile's guard tree, as logged (no tcview parsing)."""
    (rec,) = comp.records_of("dynamo_cpp_guards_str")
    return [line.split("+- ", 1)[1] for line in rec.payload().split("\n") if "+- " in line]


def test_the_drill_down_leads_with_the_cache_key_that_changed(fixture_runs: Path) -> None:
    diff = _cache_config(fixture_runs)
    # The run diff names the setting (and its head says something changed)...
    assert [c.changed for c in diff.cache_keys] == [["inductor_config[fallback_random]"]]
    assert run_diff_lines(diff)[1][1] == "changed: 1 cache key(s)"
    (frame,) = diff.frames
    (pair,) = compile_pairs(frame)
    sides = pair.sides()
    assert sides is not None
    d = compile_diff(sides[0], sides[1])
    # ...and so does the compile diff, first, with its value in A and in B.
    assert d.cache_keys == [
        KeyChange("inductor_config[fallback_random]", "False", "True", ("fx_graph",))
    ]
    lines = [text for _, text, _ in compile_diff_lines(d, sides[2:])]
    sections = [t for t in lines[1:] if t and not t.startswith((" ", "frame", "status", "time"))]
    assert sections[0] == "cache key: 1 component(s) differ (fx_graph)"
    at = lines.index(sections[0])
    assert lines[at + 1].split() == ["inductor_config[fallback_random]", "False", "→", "True"]
    assert "\n".join(lines).count("fallback_random") == 1


def test_guards_that_differ_only_in_ids_are_counted_not_listed(fixture_runs: Path) -> None:
    diff = _cache_config(fixture_runs)
    (pair,) = compile_pairs(diff.frames[0])
    assert pair.a is not None and pair.b is not None
    # Counted from the logged text: the lines that differ once every run of 5 or more digits
    # (ids) and every hex address is blanked, and those that differ only in such numbers.
    blank = re.compile(r"0x[0-9a-f]+|\d{5,}")
    raw_a, raw_b = _raw_guards(pair.a), _raw_guards(pair.b)
    assert [blank.sub("#", t) for t in raw_a] == [blank.sub("#", t) for t in raw_b]
    id_only = sum(x != y for x, y in zip(raw_a, raw_b, strict=True))
    assert id_only > 10  # the module's guards: type ids of its submodules, ids of globals
    d = compile_diff(pair.a, pair.b)
    lines = [text for _, text, _ in compile_diff_lines(d, ("A 0/0", "B 0/0"))]
    at = next(i for i, t in enumerate(lines) if t.startswith("guards:"))
    assert lines[at] == f"guards: 0 changed, 0 added, 0 removed, {len(d.guards or [])} same"
    assert lines[at + 1] == HIDDEN.format(id_only)
    assert lines[at + 2] == "  (the same guards)"
    assert not any(re.search(r"___check_|\d{5,}|0x[0-9a-f]{6,}", t) for t in lines)


def test_one_process_ids_are_hidden_unless_on_the_input_whose_guard_failed() -> None:
    tree = (
        "+- RootGuardManager\n"
        "| +- GuardManager: source=L['self'], accessed_by=X\n"
        "| | +- TYPE_MATCH: ___check_type_id(L['self'], 9400)\n"
        "| +- GuardManager: source=L['fn'], accessed_by=X\n"
        "| | +- ID_MATCH: ___check_obj_id(L['fn'], 1400)\n"
        "| +- GuardManager: source=G['___stack0'], accessed_by=X\n"
        "| | +- TENSOR_MATCH: check_tensor(G['___stack0'], size=[8])\n"
    )
    other = (
        tree.replace("9400", "9555")
        .replace("1400", "1666")
        .replace("___stack0", "___stack3")
        .replace("size=[8]", "size=[9]")
    )
    a, b = parse_guards(tree), parse_guards(other)
    changes = guard_diff(a, b)
    assert [(c.status, c.renumbered) for c in changes] == [
        (SAME, True),
        (SAME, True),
        (CHANGED, False),  # another size, under another stack slot number
    ]
    # One process: `fn`'s guard failed, so its other id is another function (the cause).
    reason = "0/0: ___check_obj_id(L['fn'], 1400)"
    ordered = decisive_first(guard_diff(a, b), [reason], one_process=True)
    assert [(c.status, c.guard.source, c.decides) for c in ordered][:1] == [
        (CHANGED, "L['fn']", True)
    ]
    assert sum(c.renumbered for c in ordered) == 1  # self's type id: hidden
    # Two processes: every id differs, none says anything.
    ordered = decisive_first(guard_diff(a, b), [reason], one_process=False)
    assert [c.status for c in ordered].count(SAME) == 2
