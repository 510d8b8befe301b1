"""Why one recompile happened: the earlier compile of its frame it differs least from, every
value that differs from it (from both compiles' guards, `changes`), and the guard failure that
made it.

A recompile lists one failed guard per earlier compile; calls that vary one thing and go back
fail the newest compile on the previous change being undone, so the first failure logged is
not always the cause.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from tcview.analysis.changes import COMPARED, Aspect, Change, Facts, diff, guard_facts, user_name
from tcview.analysis.guard_failures import GuardFailure, GuardFamily, parse_guard_failure
from tcview.model.objects import Compile


def primary_failure(comp: Compile) -> GuardFailure | None:
    """The guard failure that made a recompile: the one logged against the earlier compile
    it is closest to (`recompile_cause`), else the first one logged."""
    rc = comp.recompile
    if rc is None or not rc.reasons:
        return None
    failures = [parse_guard_failure(r) for r in rc.reasons]
    if len({(f.input, f.change, f.text) for f in failures}) == 1:
        return failures[0]  # one guard failed against every compile: no comparing needed
    closest = recompile_cause(comp).closest
    if closest is not None:
        for f in failures:
            if f.against == closest.id_text:
                return f
    return failures[0]


@dataclass
class RecompileCause:
    """Why one recompile happened: the earlier compile of its frame it is closest to, and
    every value that differs from it (`changes`, from both compiles' guards)."""

    compile: Compile
    closest: Compile | None
    changes: list[Change]
    guarded: bool  # both compiles' guards were logged (else: the recompile log alone)


def recompile_cause(comp: Compile) -> RecompileCause:
    """The earlier compile of `comp`'s frame with the fewest differences from it (the newest
    of equals), and those differences. Without guards, from the recompile log alone: the
    entry whose failed guard names what differs from the most entries (the oldest of
    equals), since calls that vary one thing and go back fail the newest entry on the
    previous change being undone."""
    return _recompile_cause(comp, len(comp.records))


@lru_cache(maxsize=1024)
def _recompile_cause(comp: Compile, _records: int) -> RecompileCause:
    frame = comp.frame
    earlier = [] if frame is None else [c for c in frame.compiles if c.key < comp.key]
    earlier = earlier[-COMPARED:]
    mine = guard_facts(comp)
    best: tuple[Compile, list[Change]] | None = None
    if mine:
        for other in reversed(earlier):  # newest first: it wins a tie
            theirs = guard_facts(other)
            if not theirs:
                continue
            changes = diff(theirs, mine)
            # none found: what differs is in no guard tcview reads; the logged failure says
            if best is None or len(changes) < len(best[1]):
                best = (other, changes)
    if best is not None:
        closest, changes = best
        logged = _logged_change(comp, closest, guard_facts(closest), mine)
        if logged is not None and all(c.source != logged.source for c in changes):
            changes = [*changes, logged]  # torch's own word on what failed, when it adds one
        return RecompileCause(comp, closest, _with_values(comp, changes), True)
    found, logged_changes = _closest_by_log(comp, earlier)
    return RecompileCause(comp, found, logged_changes, False)


def symbol_values(comp: Compile) -> dict[str, str]:
    """{source: value} of the symbols a compile made: what the call passed for each number
    or size it made dynamic (``L['x'].size()[0]`` -> ``512``)."""
    values: dict[str, str] = {}
    for rec in comp.records:
        if rec.kind != "create_symbol":
            continue
        body = rec.full_meta()
        if isinstance(body, dict) and isinstance(body.get("source"), str):
            values.setdefault(body["source"], str(body.get("val", "")))
    return values


def _with_values(comp: Compile, changes: list[Change]) -> list[Change]:
    """A number or size the compile made dynamic, with the value the call passed."""
    if not any(c.new == "dynamic" or "None" in c.new for c in changes):
        return changes
    values = symbol_values(comp)
    out = []
    for c in changes:
        if c.new == "dynamic" and values.get(c.source):
            c = replace(c, new=f"{values[c.source]} (dynamic from now on)")
        elif c.aspect is Aspect.SIZE and "None" in c.new:
            dims = c.new.strip("[]").split(", ")
            shown = [
                values.get(f"{c.source}.size()[{i}]", "dynamic") if d == "None" else d
                for i, d in enumerate(dims)
            ]
            free = [str(i) for i, d in enumerate(dims) if d == "None"]
            c = replace(c, new=f"[{', '.join(shown)}] (dim {', '.join(free)} dynamic from now on)")
        out.append(c)
    return out


# The aspect of a fact a failed guard is about, by what the guard's form names.
_ASPECTS = {
    GuardFamily.SIZE: Aspect.SIZE,
    GuardFamily.STRIDE: Aspect.STRIDE,
    GuardFamily.RANK: Aspect.DIMS,
    GuardFamily.DTYPE: Aspect.DTYPE,
    GuardFamily.DEVICE: Aspect.DEVICE,
    GuardFamily.DISPATCH_KEYS: Aspect.DEVICE,
    GuardFamily.REQUIRES_GRAD: Aspect.REQUIRES_GRAD,
    GuardFamily.VALUE: Aspect.VALUE,
    GuardFamily.LENGTH: Aspect.LENGTH,
    GuardFamily.KEYS: Aspect.KEYS,
    GuardFamily.TYPE: Aspect.TYPE,
    GuardFamily.IDENTITY: Aspect.IDENTITY,
    GuardFamily.GLOBAL_STATE: Aspect.GLOBAL,
    GuardFamily.DYNAMIC_MARKING: Aspect.MARKING,
}


def _fact_of(facts: Facts, failure: GuardFailure) -> tuple[str, Aspect] | None:
    """The fact of a compile's guards that a failed guard is about."""
    aspect = _ASPECTS.get(failure.change)
    return next((k for k in facts if k[1] is aspect and user_name(k[0]) == failure.input), None)


def _closest_by_log(comp: Compile, earlier: list[Compile]) -> tuple[Compile | None, list[Change]]:
    """Without the call's own guards (a call that was not compiled: the one that hit the
    limit), from the failure it logged against each earlier compile. A failed guard on a
    value every earlier compile holds alike is a value the call changed for sure (it differs
    from all of them): the newest compile failing on such a value is the closest. Otherwise
    the failure logged against the most compiles, the oldest of equals (calls that vary one
    thing and go back fail the newest compile on the previous change being undone)."""
    if comp.recompile is None or not comp.recompile.reasons:
        return None, []
    by_id = {c.id_text: c for c in earlier}
    logged = [
        (entry, f)
        for f in map(parse_guard_failure, comp.recompile.reasons)
        for entry in [by_id.get(f.against)]
        if entry is not None
    ]
    if not logged:
        return None, []
    facts = {id(e): guard_facts(e) for e, _f in logged}
    sure: list[tuple[Compile, Change]] = []
    for entry, failure in logged:
        key = _fact_of(facts[id(entry)], failure)
        if key is None:
            continue
        value = facts[id(entry)][key]
        if all(facts[id(e)].get(key, value) == value for e, _f in logged):
            sure.append((entry, Change(key[0], key[1], value, _new_value(value, failure))))
    if sure:
        entry = max((e for e, _c in sure), key=lambda e: e.key)
        changes = list({(c.source, c.aspect): c for _e, c in sure}.values())
        return entry, changes
    counts: dict[tuple[str, GuardFamily], int] = {}
    for _e, f in logged:
        counts[(f.input, f.change)] = counts.get((f.input, f.change), 0) + 1
    top = max(counts.values())
    if top > 1:  # one input failed against several compiles: the newest of them is closest
        entry, failure = max(
            (ef for ef in logged if counts[(ef[1].input, ef[1].change)] == top),
            key=lambda ef: ef[0].key,
        )
    else:  # each failed on another input: the oldest compile (the calls' common base)
        entry, failure = min(
            logged, key=lambda ef: (-counts[(ef[1].input, ef[1].change)], ef[0].key)
        )
    key = _fact_of(facts[id(entry)], failure)
    if key is None:
        return entry, []
    old = facts[id(entry)][key]
    return entry, [Change(key[0], key[1], old, _new_value(old, failure))]


def _logged_change(comp: Compile, against: Compile, theirs: Facts, mine: Facts) -> Change | None:
    """The failure torch logged against `against`, as a change of one of its facts."""
    if comp.recompile is None:
        return None
    for failure in map(parse_guard_failure, comp.recompile.reasons):
        if failure.against != against.id_text:
            continue
        key = _fact_of(theirs, failure)
        if key is None:
            return None
        old = theirs[key]
        new = mine.get(key) or _new_value(old, failure)
        return Change(key[0], key[1], old, new) if new != old else None
    return None


def _new_value(old: str, failure: GuardFailure) -> str:
    """The call's value, where the failed guard logged it: a size's new dimension in place,
    the other bool."""
    if old in ("True", "False") and failure.change is GuardFamily.VALUE:
        return "False" if old == "True" else "True"
    if not failure.actual:
        return "another value"
    if failure.index is not None and old.startswith("["):
        dims = old.strip("[]").split(", ")
        if failure.index < len(dims):
            dims[failure.index] = failure.actual
            return f"[{', '.join(dims)}]"
    return failure.actual
