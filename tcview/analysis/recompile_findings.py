"""Findings about recompiles: each recompile against the earlier compile of its frame it
differs least from (`recompiles.recompile_cause`), every value that changed, the frame's
limit, and what to do.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from tcview.analysis.changes import Aspect, Change, show, user_name
from tcview.analysis.compile_config import compile_config
from tcview.analysis.finding import (
    STORM_RECOMPILES,
    Finding,
    call_site,
    compile_ids,
    frame_name,
    frame_where,
    possessive,
    total_cost,
    traceback_frames,
)
from tcview.analysis.guard_failures import GuardFailure, GuardFamily
from tcview.analysis.guard_words import Explanation
from tcview.analysis.owner import Owner, Where, is_user_file, owner_of, package_of, user_line
from tcview.analysis.recompile_causes import RecompileCause, primary_failure, recompile_cause
from tcview.analysis.recompiles import diagnose
from tcview.analysis.rules import DOCS, Kind, Severity
from tcview.model.objects import Compile, Frame, Model, is_torch_internal

# Families whose words say more than the values do: what the change means.
_TELLING = (
    GuardFamily.MODULE_FLAG,
    GuardFamily.IDENTITY,
    GuardFamily.SYMBOLIC_SHAPE,
    GuardFamily.KEYS,
    GuardFamily.GLOBAL_STATE,
    GuardFamily.LAYOUT,
)


def _meanings(explanations: Sequence[Explanation]) -> list[str]:
    said: dict[tuple[str, GuardFamily], str] = {}
    for e in explanations:
        if e.failure is not None and e.family in _TELLING and e.words:
            said[(e.failure.input, e.family)] = e.words
    return [f"Why: {w}" for w in said.values()]


# The families a fix names beside the input (`x` dtype); the others are its value.
_ASPECT_WORDS = {
    GuardFamily.SIZE: "size",
    GuardFamily.STRIDE: "strides",
    GuardFamily.LAYOUT: "layout",
    GuardFamily.RANK: "number of dimensions",
    GuardFamily.DTYPE: "dtype",
    GuardFamily.DEVICE: "device",
    GuardFamily.REQUIRES_GRAD: "requires_grad",
    GuardFamily.DISPATCH_KEYS: "dispatch keys",
    GuardFamily.LENGTH: "length",
    GuardFamily.SYMBOLIC_SHAPE: "size",
}


def _fixes(explanations: Sequence[Explanation], limit: bool, frame: Frame) -> list[str]:
    """What to do, once per input and what changed (the newest recompile's words): ``For `x`
    dtype: cast it to one dtype before the call.`` Under the limit, nothing is "none needed":
    only the part that applies when values keep coming."""
    out: dict[tuple[str, GuardFamily], str] = {}
    for e in explanations:
        if e.failure is None or not e.fix:
            continue
        fix = e.fix
        if limit and fix.startswith("none needed"):  # the limit was hit: more is needed
            _head, _sep, fix = fix.partition("; ")
            if not fix or fix.startswith("none needed"):
                continue
        name = _input_name(user_name(e.failure.input), frame)
        who = f"`{name}`" if e.failure.input else "this frame"
        if e.family in _ASPECT_WORDS:
            who += f" {_ASPECT_WORDS[e.family]}"
        out[(e.failure.input, e.family)] = f"For {who}: {fix}"
    return [f if f.endswith(".") else f + "." for f in out.values()]


def _guard_where(failures: Sequence[GuardFailure | None]) -> Where | None:
    """The user's line a failed guard came from (its ``User stack trace:``), when logged."""
    for failure in failures:
        if failure is not None:
            found = user_line(traceback_frames(failure.logged))
            if found is not None:
                return found
    return None


_CODE_FILE = re.compile(
    r'<code object \S+ at 0x[0-9a-f]+, file "(?P<file>[^"]+)", line (?P<line>\d+)>'
)


def _object_where(recompiled: Sequence[Compile]) -> Where | None:
    """Where the object an identity guard names was defined (``<code object causal ..., file
    "train.py", line 11>``), when that is the user's file: the frame itself may be torch's."""
    for comp in recompiled:
        if comp.recompile is not None and comp.recompile.reasons:
            m = _CODE_FILE.search(comp.recompile.reasons[0])
            if m is not None and is_user_file(m.group("file")):
                return {"file": m.group("file"), "line": int(m.group("line"))}
    return None


def _step_text(comp: Compile, failure: GuardFailure | None) -> tuple[str, list[str]]:
    """One recompile in words (``0/2, against 0/0: x dtype float32 → float64``) and the
    names of what changed."""
    cause = recompile_cause(comp)
    frame = comp.frame
    against = f", against {cause.closest.id_label}" if cause.closest is not None else ""
    if cause.changes:
        names = [_change_label(c, frame) for c in cause.changes]
        said = "; ".join(_change_text(c, frame) for c in cause.changes)
        return f"{comp.id_label}{against}: {said}", names
    if failure is not None and failure.family is not GuardFamily.OTHER:
        name = (
            user_name(failure.input, frame)
            if failure.input.startswith(("L[", "G["))
            else failure.input
        )
        label = f"`{name}` {failure.what}" if name else failure.what
        return f"{comp.id_label}{against}: {label} (guard `{failure.text}` failed)", [label]
    if failure is not None:
        return f"{comp.id_label}{against}: guard `{failure.text}` failed", []
    return f"{comp.id_label}: no guard failure was logged", []


_ARG = re.compile(r"^(args|kwargs)\[([^\]]+)\]")


def _input_name(name: str, frame: Frame | None) -> str:
    """An input as the user knows it: the `args[0]` of torch's wrapper around a compiled
    module is the first argument of the user's call."""
    m = _ARG.match(name)
    code = frame.code_frame if frame is not None else None
    if m is None or code is None or not is_torch_internal(code.filename):
        return name
    where = frame.user_frame if frame is not None else None
    call = f" of the call at {where.where}" if where is not None else ""
    if m.group(1) == "args" and m.group(2).isdigit():
        nth = int(m.group(2)) + 1
        suffix = {1: "st", 2: "nd", 3: "rd"}.get(nth, "th")
        return f"the {nth}{suffix} argument{call} ({name})"
    return f"the keyword argument {m.group(2)}{call} ({name})"


def _change_label(change: Change, frame: Frame | None) -> str:
    name = f"`{_input_name(user_name(change.source, frame), frame)}`"
    if change.count > 1:
        name += f" (and {change.count - 1} submodules')"
    if change.aspect in (Aspect.VALUE, Aspect.GLOBAL):
        return name
    return f"{name} {change.aspect.value}"


def _change_text(change: Change, frame: Frame | None) -> str:
    if change.aspect is Aspect.IDENTITY:  # object ids say nothing to a reader
        return f"{_change_label(change, frame)}: another object than before"
    return f"{_change_label(change, frame)} {show(change.old)} → {show(change.new)}"


def recompile_findings(model: Model) -> list[Finding]:
    out = []
    for source in model.files:
        for frame in source.frames.values():
            found = _frame_finding(frame, source.rank)
            if found is not None:
                out.append(found)
    return out


# What a call can switch back and forth between, each setting getting one graph that later
# calls in that setting reuse: grad mode, autocast, train/eval, a dtype, a device,
# requires_grad.
_MODES = (Aspect.GLOBAL, Aspect.DTYPE, Aspect.DEVICE, Aspect.REQUIRES_GRAD)


def _by_mode(causes: Sequence[RecompileCause]) -> bool:
    """Every recompile came from switching a mode (train/eval, no_grad, a dtype, a bool)."""
    changes = [c for cause in causes for c in cause.changes]
    return bool(changes) and all(
        c.aspect in _MODES
        or c.source.endswith(".training")
        or (c.aspect is Aspect.VALUE and {c.old, c.new} <= {"True", "False"})
        for c in changes
    )


def _frame_finding(frame: Frame, rank: int | None) -> Finding | None:
    recompiled = [c for c in frame.compiles if c.key.is_recompile]
    limit = next((c for c in frame.compiles if any(f.is_recompile_limit for f in c.failures)), None)
    if not recompiled and limit is None:
        return None
    d = diagnose(frame, compile_config(frame.compiles[-1], False))
    name = frame_name(frame)
    code = frame.co_filename or ""
    title_name = f"`{name}`"
    library = package_of(code) if code and owner_of(code) is Owner.LIBRARY else ""
    if library:  # a library's function: say whose
        title_name += f" (in {library})"
    made = [c for c in recompiled if c is not limit]
    causes = [recompile_cause(c) for c in made]
    failures = [primary_failure(c) for c in made]
    lines, labels = _step_lines(made, failures)
    n = len(made)
    evidence = _evidence(frame, made, causes)
    if rank is not None:
        evidence["rank"] = rank
    listed = ", ".join(labels[:5]) + (f" and {len(labels) - 5} more" if len(labels) > 5 else "")
    because = f" on {listed}" if listed else ""
    advice = _fixes(d.explanations, limit is not None, frame)
    lines += _meanings(d.explanations)
    if limit is not None:
        kind, severity = Kind.RECOMPILE_LIMIT, Severity.ERROR
        cap = f" ({d.limit_name} = {d.limit})" if d.limit is not None else ""
        title = (
            f"{title_name} hit the recompile limit{cap} after recompiling{because}: "
            "it runs eagerly from then on"
        )
        lines.append(_limit_hit(limit, title_name, evidence, advice))
    elif n >= STORM_RECOMPILES:
        kind, severity = Kind.RECOMPILE_STORM, Severity.WARNING
        title = f"{title_name} recompiled {n} times{because}"
    else:
        kind, severity = Kind.RECOMPILES, Severity.INFO
        title = f"{title_name} recompiled {'once' if n == 1 else f'{n} times'}{because}"
        if _by_mode(causes):
            lines.append(
                "Expected: one graph for each setting the calls switch between (train or eval, "
                "grad mode, dtype, device, requires_grad); a call with a setting already seen "
                "reuses its graph (no further recompile was logged). Nothing to change."
            )
            advice = []
    if library:  # its callers are the library's own code: nothing to tell the user to change
        lines.append(
            f"The function is {possessive(library)}, called by {library} itself: the trace does "
            "not show a change in your code that avoids these recompiles."
        )
        advice = [a for a in advice if "recompile_limit" in a]
    return Finding(
        kind,
        severity,
        title,
        "\n".join(lines),
        evidence,
        _recompile_where(frame, failures, made),
        total_cost(made),
        " ".join(advice),
        DOCS["recompiles"],
        made or ([limit] if limit is not None else []),
        subject=_frame_subject(frame),
    )


def _step_lines(
    made: Sequence[Compile], failures: Sequence[GuardFailure | None]
) -> tuple[list[str], list[str]]:
    """Each recompile in words (the first 12), and the names of what changed, each once."""
    steps: list[str] = []
    labels: list[str] = []
    for comp, failure in zip(made, failures, strict=True):
        text, names = _step_text(comp, failure)
        steps.append(text)
        labels += [n for n in names if n not in labels]
    lines = ["Each recompile, against the earlier compile it differs least from:"]
    lines += [f"  {t}" for t in steps[:12]]
    if len(steps) > 12:
        lines.append(f"  … {len(steps) - 12} more")
    return lines, labels


def _limit_hit(limit: Compile, title_name: str, evidence: dict[str, Any], advice: list[str]) -> str:
    """What the call that hit the recompile limit changed, in a sentence; put in `evidence`
    too, and `advice` warns against only raising the limit."""
    step, last = _step_text(limit, primary_failure(limit))
    evidence["limit_compile"] = limit.id_label
    evidence["limit_change"] = last
    if not any("recompile_limit" in a for a in advice):
        advice.append("Raising torch._dynamo.config.recompile_limit only hides the cause.")
    return (
        f"The call that hit the limit ({step.split(':', 1)[0]}) differed again"
        + (f": {step.split(': ', 1)[1]}" if ": " in step else "")
        + f". From then on {title_name} runs eagerly; calls that match an earlier compile "
        "still run compiled."
    )


def _recompile_where(
    frame: Frame, failures: Sequence[GuardFailure | None], made: Sequence[Compile]
) -> Where | None:
    """The line of the guard that failed, when every recompile's was the same line; else
    the frame's own line (its function, or the user's call of it)."""
    code = frame.co_filename or (frame.code_frame.filename if frame.code_frame else "")
    if code and not is_user_file(code):  # torch's or a library's function: the user's call
        found = call_site(frame)
        if found is not None:
            return found
    lines = [w for f in failures if f is not None for w in [_guard_where([f])] if w is not None]
    if len({(w["file"], w["line"]) for w in lines}) == 1:
        return lines[0]
    return frame_where(frame) or _guard_where(failures) or _object_where(made)


def _evidence(
    frame: Frame, made: Sequence[Compile], causes: Sequence[RecompileCause]
) -> dict[str, Any]:
    return {
        "frame": frame.id_label,
        "recompiles": len(made),
        "compiles": compile_ids(made),
        "changes": [
            {
                "compile": c.id_label,
                "against": cause.closest.id_label if cause.closest else None,
                "changed": [
                    {
                        "name": user_name(ch.source, frame),
                        "what": ch.aspect.value,
                        "old": ch.old,
                        "new": ch.new,
                    }
                    for ch in cause.changes
                ],
            }
            for c, cause in zip(made, causes, strict=True)
        ],
    }


def _frame_subject(frame: Frame) -> str:
    """A frame as the same across runs: its function and its file's name."""
    code = frame.code_frame
    file = (frame.co_filename or (code.filename if code else "")).rsplit("/", 1)[-1]
    return f"{frame_name(frame)}@{file}" if file else frame_name(frame)
