"""Why a frame recompiled, in words: each recompile explained, and a plain diagnosis per
frame, with how much of its recompile limit each frame used.

The API the findings build on (the parts live in the modules named):

- ``guard_failures``: ``GuardFamily``, each family a failed guard falls in (``FAMILIES`` says
  what each is about); ``parse_guard_failure(text)`` -> ``GuardFailure``, the failed guard's
  parts (``family``, ``input``, ``index``, ``expected``, ``actual``, ``against``, ``key``,
  ``where``);
- ``guard_values.family_of(compile)``: the family of a recompile, by the guard that failed
  against the newest earlier compile of its frame (a recompile lists one failed guard per
  earlier compile; the first is that one). ``guard_families(compiles)`` here counts them,
  each recompile once;
- ``compile_config``: the Dynamo and Inductor config each compile ran with;
- ``explain_frame(frame, config)`` / ``explain_compile(compile, config)`` / ``explain(compiles)``
  -> ``guard_words.Explanation``: per recompile the family, the failed guard, the values that
  input took over the frame's compiles in order, whether it changed on every call, what
  changed in words, the fix ("" where the trace does not show what would help) and a doc
  link; ``json()`` is the same as plain data.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tcview.analysis.compile_config import CompileConfig, compile_config
from tcview.analysis.guard_failures import CHANGES, GuardFamily
from tcview.analysis.guard_values import family_of, old_and_new, short_value
from tcview.analysis.guard_words import Explanation, explanation_words
from tcview.analysis.recompile_causes import primary_failure
from tcview.model.objects import Compile, Frame, Model

# ---------------------------------------------------------------------- explanations


def explain_frame(frame: Frame, config: CompileConfig | None = None) -> list[Explanation]:
    """An explanation of each recompile of a frame, in compile order (`config`: what its
    compiles ran with, for the fix; read with `compile_config`)."""
    config = config or CompileConfig()
    recompiles = [c for c in frame.compiles if c.key.is_recompile]
    out: list[Explanation] = []
    series: dict[tuple[GuardFamily, str, int | None], list[str]] = {}
    counts: dict[tuple[GuardFamily, str, int | None], int] = {}
    for comp in recompiles:
        failure = primary_failure(comp)
        if failure is None:
            out.append(
                Explanation(
                    comp,
                    GuardFamily.NOT_LOGGED,
                    None,
                    words="no guard failure was logged for it",
                )
            )
            continue
        family = family_of(comp, failure)
        key = (family, failure.input, failure.index)
        values = series.setdefault(key, [])
        counts[key] = counts.get(key, 0) + 1
        nth = counts[key]
        old, new = old_and_new(comp, failure, family)
        if old and (not values or values[-1] != old):
            values.append(old)  # without guards logged, each failed guard names the last value
        if new:
            values.append(new)
        out.append(Explanation(comp, family, failure, values, nth=nth))
    for e in out:
        if e.failure is None:
            continue
        key = (e.family, e.failure.input, e.failure.index)
        n = counts[key]
        e.every_call = n >= 2 and n == len(recompiles) and len(set(e.values)) == len(e.values)
        e.words, e.fix, e.doc = explanation_words(e, frame, config, n)
    return out


def explain_compile(comp: Compile, config: CompileConfig | None = None) -> Explanation | None:
    """The explanation of one recompile (None when `comp` is not one)."""
    if not comp.key.is_recompile or comp.frame is None:
        return None
    return next((e for e in explain_frame(comp.frame, config) if e.compile is comp), None)


def explain(model_compiles: list[Compile]) -> list[Explanation]:
    """Explanations of every recompile among `model_compiles` (a model's compiles), each once,
    each frame with the config its first compile ran with (read from disk)."""
    frames: list[Frame] = []
    for c in model_compiles:
        if c.key.is_recompile and c.frame is not None and c.frame not in frames:
            frames.append(c.frame)
    return [e for f in frames for e in explain_frame(f, compile_config(f.compiles[0], False))]


def guard_families(model_compiles: list[Compile]) -> dict[str, int]:
    """{family: recompiles}: each recompile counted once, by the guard that failed against the
    newest earlier compile of its frame (families with none left out), keyed by the family's
    word as JSON gives it."""
    counts: dict[GuardFamily, int] = {}
    for c in model_compiles:
        if c.key.is_recompile:
            family = family_of(c)
            counts[family] = counts.get(family, 0) + 1
    return {str(f): counts[f] for f in GuardFamily if f in counts}


# ---------------------------------------------------------------------- diagnosis


@dataclass
class Cause:
    """Recompiles that one kind of guard failure caused, with the values seen."""

    input: str
    what: str
    change: GuardFamily
    index: int | None
    compiles: list[Compile] = field(default_factory=list)
    values: list[str] = field(default_factory=list)  # the new values, in order
    guarded: list[str] = field(default_factory=list)  # the values guarded on, when no new one

    @property
    def count(self) -> int:
        return len(self.compiles)


@dataclass
class Diagnosis:
    """Why a frame recompiled: counts, the limit, the causes and a sentence."""

    recompiles: int
    limit: int | None
    limit_name: str
    limit_hit: Compile | None  # the compile that hit the limit
    causes: list[Cause]
    unexplained: int  # recompiles with no guard failure logged
    sentences: list[str]
    explanations: list[Explanation] = field(default_factory=list)  # one a recompile, in order


def diagnose(frame: Frame, config: CompileConfig | None = None) -> Diagnosis:
    """A plain diagnosis of a frame's recompiles (`config`: what its compiles ran with)."""
    recompiles = [c for c in frame.compiles if c.key.is_recompile]
    config = config or CompileConfig()
    limit_hit = next(
        (c for c in frame.compiles if any(f.is_recompile_limit for f in c.failures)), None
    )
    causes: dict[tuple[str, GuardFamily, int | None], Cause] = {}
    unexplained = 0
    for comp in recompiles:
        failure = primary_failure(comp)
        if failure is None:
            unexplained += 1
            continue
        cause = causes.get(failure.key3)
        if cause is None:
            cause = causes[failure.key3] = Cause(
                failure.input, failure.what, failure.change, failure.index
            )
        cause.compiles.append(comp)
        if failure.actual:
            cause.values.append(failure.actual)
        elif failure.expected:
            cause.guarded.append(failure.expected)
    ordered = sorted(causes.values(), key=lambda c: (-c.count, CHANGES.index(c.change)))
    diagnosis = Diagnosis(
        len(recompiles),
        config.limit,
        config.limit_name,
        limit_hit,
        ordered,
        unexplained,
        [],
    )
    diagnosis.explanations = explain_frame(frame, config)
    diagnosis.sentences = _sentences(frame, diagnosis, config)
    return diagnosis


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _cause_text(cause: Cause) -> str:
    who = f"`{cause.input}`" if cause.input else "a guard"
    values = ""
    if cause.change is GuardFamily.IDENTITY:
        pass  # object ids say nothing to a reader
    elif cause.values:
        values = f" (new values {_few(cause.values)})"
    elif cause.guarded:
        values = f" (it was {_few(cause.guarded)})"
    return f"{who} {cause.what}{values}"


def _few(values: list[str]) -> str:
    return ", ".join(short_value(v) for v in values[:6]) + (", …" if len(values) > 6 else "")


def _sentences(frame: Frame, d: Diagnosis, config: CompileConfig) -> list[str]:
    out: list[str] = []
    name = frame.co_name or (frame.user_frame.name if frame.user_frame else frame.id_text)
    if d.limit_hit is not None:
        limit = f" ({d.limit_name} = {d.limit})" if d.limit is not None else ""
        out.append(
            f"The recompile limit was hit{limit} at {d.limit_hit.id_label}: Dynamo stopped "
            f"compiling `{name}` and runs it eagerly from then on."
        )
    if not d.recompiles:
        out.append("No recompiles: the frame compiled once.")
        return out
    if not d.causes:
        head = f"{_plural(d.recompiles, 'recompile')}; no guard failure was logged for them"
    elif len(d.causes) == 1 and not d.unexplained:
        head = f"{_plural(d.recompiles, 'recompile')}, all on {_cause_text(d.causes[0])}"
    else:
        parts = [f"{c.count} on {_cause_text(c)}" for c in d.causes]
        if d.unexplained:
            parts.append(f"{d.unexplained} with no guard failure logged")
        head = f"{_plural(d.recompiles, 'recompile')}: " + "; ".join(parts)
    if d.limit is not None and d.limit_hit is None:
        head += f"; limit {d.limit} not hit"
    out.append(head + ".")
    out.extend(_advice(d, config, d.explanations))
    return out


def _advice(d: Diagnosis, config: CompileConfig, explanations: list[Explanation]) -> list[str]:
    """What would avoid the recompiles, per cause (the most frequent first)."""
    out: list[str] = []
    auto = config.dynamo.get("automatic_dynamic_shapes")
    for cause in d.causes:
        who = f"`{cause.input}`" if cause.input else "the input"
        target = cause.input or "x"
        # The newest explanation of this cause: its words and fix.
        e = next(
            (
                e
                for e in reversed(explanations)
                if e.failure is not None
                and e.failure.key3 == (cause.input, cause.change, cause.index)
            ),
            None,
        )
        plain = e is None or (e.family == cause.change and "0/1 specialization" not in e.words)
        if not plain and e is not None:
            out.append(f"{e.words} Fix: {e.fix}" if e.fix else e.words)
        elif cause.change is GuardFamily.SIZE:
            dim = cause.index if cause.index is not None else 0
            fix = (
                f"`dynamic=True` or `torch._dynamo.mark_dynamic({target}, {dim})` would avoid them"
            )
            if auto is False:
                out.append(f"automatic_dynamic_shapes is off (or `dynamic=False`): {fix}.")
            elif auto is True and cause.count > 1:
                out.append(
                    f"automatic_dynamic_shapes is on, yet {who} recompiled {cause.count} times on "
                    f"{cause.what}: a guard specializes that dimension; {fix}."
                )
            elif auto is True:
                out.append(
                    f"automatic_dynamic_shapes made {who} dimension {dim} dynamic at this "
                    f"recompile; `torch._dynamo.mark_dynamic({target}, {dim})` avoids even this one."
                )
            else:
                out.append(f"{fix[0].upper()}{fix[1:]}.")
        elif cause.change is GuardFamily.STRIDE:
            out.append(f"{who} changed memory layout: `.contiguous()` before the call avoids it.")
        elif cause.change is GuardFamily.DTYPE:
            out.append(
                f"each dtype of {who} needs its own graph: cast to one dtype before the call."
            )
        elif e is not None:
            out.append(f"{e.words} Fix: {e.fix}" if e.fix else e.words)
    return out


# ---------------------------------------------------------------------- budget

DEFAULT_RECOMPILE_LIMIT = 8  # torch._dynamo.config.recompile_limit when a trace does not say


@dataclass(frozen=True)
class Budget:
    """How much of its recompile limit a frame has used: ``step 7/8 recompiles``."""

    frame: Frame
    recompiles: int
    limit: int

    def text(self) -> str:
        name = self.frame.co_name or f"frame {self.frame.id_label}"
        return f"{name} {self.recompiles}/{self.limit} recompiles"


def recompile_budget(model: Model) -> Budget | None:
    """The frame closest to its recompile limit (None when no frame recompiled), from what is
    in memory: the UI's status bar asks it on every redraw."""
    worst: Budget | None = None
    for source in list(model.files):
        for frame in list(source.frames.values()):
            compiles = list(frame.compiles)
            used = sum(1 for c in compiles if c.key.is_recompile)
            if not used:
                continue
            limit = compiles[0].recompile_limit or DEFAULT_RECOMPILE_LIMIT
            budget = Budget(frame, used, limit)
            if worst is None or used / limit > worst.recompiles / worst.limit:
                worst = budget
    return worst
