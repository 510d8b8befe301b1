"""Why a graph broke, in tcview's words: one rule per cause, each with what the user can do.

A break's innermost frame tells whose code broke: the user's (a rule says what to change at
their line), or torch's or a library's (the user's call led there: by design, or nothing in
the trace says what would help). torch's own hint is kept as evidence; it becomes the fix
only where it is specific and the break is in the user's code.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tcview.analysis.finding import (
    Finding,
    compile_ids,
    frame_where,
    plural,
    possessive,
    ranks_of,
    sentence,
    text_frames,
    total_cost,
    where_subject,
    where_text,
)
from tcview.analysis.owner import (
    RESUME_PREFIX,
    Owner,
    Where,
    owner_of,
    package_of,
    resume_function,
    user_line,
)
from tcview.analysis.rules import DOCS, Kind, Severity
from tcview.model.objects import Compile, Frame, GraphBreak, Model, short_location


@dataclass(frozen=True)
class BreakRule:
    """A cause of graph breaks: where it applies, how to recognise it, and what it says."""

    name: str  # the cause's name in a finding's id
    owners: tuple[Owner, ...]  # whose code the break's innermost frame must be
    pattern: re.Pattern[str]  # searched in the reason, the explanation and the location
    says: str  # the cause, in words ({package} and {op} filled in)
    fix: str  # what the user can do at their own line; "" where nothing is to be done
    by_design: bool = False


_USER = (Owner.USER,)
_TORCH = (Owner.TORCH, Owner.LIBRARY)

RULES: tuple[BreakRule, ...] = (
    BreakRule(
        "explicit",
        _USER,
        re.compile(r"Call to `torch\._dynamo\.graph_break\(\)`"),
        "an explicit `torch._dynamo.graph_break()` in your code",
        "Remove the `torch._dynamo.graph_break()` call at this line if the split is not "
        "wanted: the code after it then compiles into the same graph.",
    ),
    BreakRule(
        "print",
        _USER,
        re.compile(r"builtin operator `print`"),
        "`print()` inside the compiled code: Dynamo cannot put output into a graph",
        "Move the print out of the compiled function (print what it returns), or let Dynamo "
        "defer it to after the graph: `torch._dynamo.config.reorderable_logging_functions"
        ".add(print)`.",
    ),
    BreakRule(
        "item",
        _USER,
        re.compile(r"Tensor\.item\(\)|capture_scalar_outputs"),
        "`.item()` reads a tensor's value into Python, which the graph cannot hold by default",
        "Keep the value a tensor (compare and compute with tensor ops), or set "
        "`torch._dynamo.config.capture_scalar_outputs = True` so the graph holds it.",
    ),
    BreakRule(
        "tolist",
        _USER,
        re.compile(r"tolist"),
        "`.tolist()` turns a tensor into Python numbers the graph cannot hold",
        "Keep the values a tensor and index or compute with tensor ops instead of a list.",
    ),
    BreakRule(
        "tensor_branch",
        _USER,
        re.compile(r"[Dd]ata-dependent (?:branching|jump)|generic_jump|jump.{0,20}tensor"),
        "an `if` on a tensor's value: which branch runs depends on the data",
        "Compute both sides and choose with `torch.where(cond, a, b)`, or branch inside the "
        "graph with `torch.cond(pred, true_fn, false_fn, operands)`.",
    ),
    BreakRule(
        "deepcopy",
        _USER,
        re.compile(r"deepcopy"),
        "`copy.deepcopy` inside the compiled code, which Dynamo does not trace",
        "Copy before calling the compiled function, or copy tensors with `.clone()`.",
    ),
    BreakRule(
        "no_fake",
        _USER,
        re.compile(r"register_fake|fake (?:impl|kernel)|FakeTensor.*custom op|no fake", re.I),
        "a custom op with no fake (meta) kernel: the compiler cannot tell its output's shape",
        "Register a fake kernel for the op: `@{op}.register_fake` on a function that returns "
        "an empty tensor of the output's shape and dtype.",
    ),
    BreakRule(
        "c_function",
        _USER,
        re.compile(r"does not know how to trace the builtin"),
        "a call to {fn}, a builtin or C-extension function Dynamo cannot trace",
        "Call {fn} outside the compiled function and pass its result in as an argument.",
    ),
    BreakRule(
        "disabled",
        _USER,
        re.compile(r"disable\(\)`d function"),
        "your code calls {fn}, which is wrapped in `torch.compiler.disable`: it runs eagerly, "
        "outside the graph",
        "If {fn} should be compiled, remove `torch.compiler.disable` from it; if it must run "
        "eagerly, this split is the one you asked for.",
    ),
    BreakRule(
        "mark_dynamic_fixed",
        _USER,
        re.compile(r"ConstraintViolation|Constraints violated|marked as dynamic but"),
        "a dimension marked dynamic (`mark_dynamic`) that the code fixes to a constant",
        "Drop the `mark_dynamic` on that dimension (the code needs it constant), or use "
        "`torch._dynamo.maybe_mark_dynamic`, which lets it be specialised.",
    ),
    BreakRule(
        "optimizer_step",
        _TORCH,
        re.compile(
            r"Call to `torch\._dynamo\.graph_break\(\)`[\s\S]*torch[/\\]optim[/\\]optimizer\.py"
        ),
        "torch.optim breaks the graph around every `step()` on purpose, so that the update "
        "compiles as an inference graph (its `_use_grad` wrapper)",
        "",
        by_design=True,
    ),
    BreakRule(
        "fused_optimizer",
        _TORCH,
        re.compile(r"fused optim|_fused_\w+"),
        "torch.optim runs its fused implementation outside the graph, on purpose: it is one "
        "fused kernel already",
        "",
        by_design=True,
    ),
    BreakRule(
        "ddp",
        _TORCH,
        re.compile(r"torch[/\\]nn[/\\]parallel[/\\]distributed\.py|_inside_ddp_forward"),
        "DistributedDataParallel's own forward (its logger and reducer hooks) runs outside "
        "the graph, on purpose; your module's forward is what compiles",
        "",
        by_design=True,
    ),
    BreakRule(
        "fsdp",
        _TORCH,
        re.compile(r"torch[/\\]distributed[/\\]fsdp"),
        "FSDP's own hooks (all-gathers, resharding) run outside the graph, on purpose",
        "",
        by_design=True,
    ),
)

# torch's hints that say nothing specific: never a fix.
_GENERIC_HINT = re.compile(
    r"report an issue|file an issue|may result in an error when running in eager"
    r"|graph break is fundamental|may have been caused by an earlier graph break"
    r"|^Avoid calling|equivalent alternative|dont_skip_tracing|Remove the `torch\.compiler\."
    r"disable` call",
    re.I,
)


@dataclass(frozen=True)
class BreakCause:
    """What a graph break is, by the rule that matched (or none)."""

    rule: BreakRule | None
    owner: Owner  # whose code the innermost frame is
    package: str  # torch.optim, transformers … (the innermost frame's, when not the user's)
    says: str
    fix: str
    code: str = ""  # where in that package: ``optimizer.py:80``, ``lr_scheduler.py``

    @property
    def name(self) -> str:
        return self.rule.name if self.rule is not None else "other"


_SKIPPED_IN = re.compile(r"marked that the function `[^`]+` in file `(?P<file>[^`]+)`")
_OP = re.compile(r"`(?P<op>\w+)\.register_fake`|CustomOpDef\(\w+::(?P<op2>\w+)\)")
_FN = re.compile(r"(?:builtin|the function) `(?P<fn>[\w.]+)`|<function (?P<fn2>[\w.<>]+) at 0x")


def break_cause(
    reason: str, explanation: str, location: str, stack: Sequence[str], hints: Sequence[str]
) -> BreakCause:
    """The cause of a break: its `location` is the innermost frame (``file:line``), `stack`
    its frames as ``file:line in name`` texts, outermost first."""
    inner = location.rsplit(":", 1)[0] if location else ""
    if not inner and stack:
        inner = stack[-1].split(" in ", 1)[0].rsplit(":", 1)[0]
    owner = owner_of(inner) if inner else Owner.USER
    if owner is Owner.LIBRARY and _called_by_user(inner, stack):
        owner = Owner.USER  # the user's own call of the standard library (copy.deepcopy)
    package = _package(inner, stack) if owner in _TORCH else ""
    code = short_location(location)
    skipped = _SKIPPED_IN.search(explanation)
    if owner is Owner.USER and skipped and owner_of(skipped.group("file")) in _TORCH:
        # the user's line calls a function of torch's that Dynamo is told not to trace
        owner, package = owner_of(skipped.group("file")), package_of(skipped.group("file"))
        code = skipped.group("file").replace("\\", "/").rsplit("/", 1)[-1]
    text = "\n".join([reason, explanation, location])
    for rule in RULES:
        if owner in rule.owners and rule.pattern.search(text):
            op = _OP.search(text)
            fn = _FN.search(text)
            fill = {
                "package": package,
                "op": (op.group("op") or op.group("op2")) if op else "the op",
                "fn": f"`{(fn.group('fn') or fn.group('fn2')).rstrip('.')}`" if fn else "it",
            }
            says, fix = rule.says.format(**fill), rule.fix.format(**fill)
            return BreakCause(rule, owner, package, says, fix, code)
    if owner in _TORCH:
        return BreakCause(None, owner, package, "", "", code)
    specific = [h for h in hints if not _GENERIC_HINT.search(h)]
    return BreakCause(None, owner, package, "", specific[0] if specific else "", code)


def _called_by_user(inner: str, stack: Sequence[str]) -> bool:
    """The innermost frames are the standard library's, and the user's code called them."""
    if "-packages" in inner:
        return False
    for text in reversed(stack):
        filename = text.split(" in ", 1)[0].rsplit(":", 1)[0]
        owner = owner_of(filename)
        if owner is Owner.USER:
            return True
        if owner is not Owner.LIBRARY or "-packages" in filename:
            return False
    return False


def _package(inner: str, stack: Sequence[str]) -> str:
    """The package whose code broke: the innermost frame's, passing over the standard
    library (a context manager's ``__init__``) to the torch or library frame that called it."""
    files = [inner, *(t.split(" in ", 1)[0].rsplit(":", 1)[0] for t in reversed(stack))]
    for filename in files:
        owner = owner_of(filename)
        if owner is Owner.USER:
            break
        if owner is Owner.TORCH or (owner is Owner.LIBRARY and "-packages" in filename):
            return package_of(filename)
    return package_of(inner)


def is_generic_hint(hint: str) -> bool:
    return bool(_GENERIC_HINT.search(hint))


def _break_where(location: str, user_stack: Sequence[str], frame: Frame | None) -> Where | None:
    """The user's nearest frame to a break: in its stack, else its location, else the user's
    call that led to the compiled frame (a break deep inside torch's wrapper of a module)."""
    found = user_line(text_frames(user_stack)) if user_stack else None
    if found is None and location:
        found = user_line(text_frames([location]))
    return found or frame_where(frame)


def break_findings(model: Model) -> list[Finding]:
    out = []
    for group in model.grouped_breaks():
        first = group.first
        compiles: list[Compile] = []
        for b in group.breaks:
            if b.compile is not None and b.compile not in compiles:
                compiles.append(b.compile)
        frame = compiles[0].frame if compiles else None
        where = _break_where(group.location, first.user_stack, frame)
        cause = break_cause(
            group.reason, first.explanation, group.location, first.user_stack, first.hints
        )
        at = f" at {where_text(where)}" if where else ""
        count = f"{plural(group.count, 'break')} in {plural(len(compiles), 'compile')}"
        inside = cause.owner in (Owner.TORCH, Owner.LIBRARY)
        lines: list[str] = []
        if inside:
            title = (
                f"Graph break inside {cause.package}, from your call{at}: {group.reason} "
                f"({group.count}×)"
            )
            lines.append(
                f"The break is in {possessive(cause.package)} code ({cause.code}), "
                "not in yours: your call"
                + (f" at {where_text(where)}" if where else "")
                + " leads there."
            )
            if cause.rule is not None and cause.rule.by_design:
                lines.append(f"{sentence(cause.says)}. Nothing to change.")
        else:
            title = f"Graph break{at}: {group.reason} ({group.count}×)"
            if cause.rule is not None:
                lines.append(f"Cause: {cause.says}.")
        if first.explanation:
            lines.append(f"torch says: {first.explanation}")
        lines.append(
            f"{count[0].upper()}{count[1:]}: each break ends a graph, and the code "
            "after it compiles as another."
        )
        evidence: dict[str, Any] = {
            "count": group.count,
            "reason": group.reason,
            "location": group.location,
            "cause": cause.name,
            "owner": cause.owner.value,
            "compiles": compile_ids(compiles),
            "ranks": ranks_of(compiles),
        }
        if first.hints:
            evidence["torch_hints"] = list(first.hints)
        fix = cause.fix
        if inside and not fix and cause.rule is None:
            lines.append("The trace does not show a change in your code that would avoid it.")
        out.append(
            Finding(
                Kind.GRAPH_BREAK,
                Severity.INFO
                if cause.rule is not None and cause.rule.by_design
                else Severity.WARNING,
                title,
                "\n".join(lines),
                evidence,
                where,
                _break_cost(group.breaks),
                fix,
                first.url or DOCS["graph_breaks"],
                compiles,
                subject=f"{cause.name}@{where_subject(where) or short_location(group.location)}",
            )
        )
    return out


def _break_cost(breaks: Sequence[GraphBreak]) -> float | None:
    """What the breaks added: the compiles of the code after them (the resume functions
    Dynamo made at the compiled frame's line), not the compile of the graph they sit in,
    which was needed anyway."""
    resumed: dict[int, Compile] = {}
    for b in breaks:
        comp = b.compile
        if comp is None or comp.frame is None or not comp.frame.co_name:
            continue
        fn = comp.frame.co_name
        base = resume_function(fn)
        fn = base[0] if base else fn
        lines = {
            m.group(1)
            for t in b.user_stack
            for m in [re.match(r".*:(\d+) in (\S+)", t.split("  |  ", 1)[0])]
            if m is not None and m.group(2) == comp.frame.co_name
        }
        names = {f"{RESUME_PREFIX}{fn}_at_{line}" for line in lines}
        for frame in comp.file.frames.values():
            if frame.co_name in names and frame.co_filename == comp.frame.co_filename:
                resumed.update((id(c), c) for c in frame.compiles)
    return total_cost(resumed.values()) if resumed else None
