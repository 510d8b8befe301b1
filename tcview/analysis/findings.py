"""Findings: one list of what went wrong in a run, most important first, each in words a user
understands, with its evidence, the user's line, what it cost and what to do.

`findings(model)` builds the list once as plain data; ``tcview summary`` (text and JSON),
``tcview show PATH findings``, ``--fail-on errors,warnings`` and ``tcview diff`` print it.
The findings of each kind are made in their own modules (`crashes`, `cache_misses`,
`dynamic_shapes`, `recompile_findings`, `breaks`, `verdicts`); CUDA graphs' and compile
time's are made here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import cache, partial
from typing import Any, TypeAlias

from tcview.analysis.autotune import autotune_seconds
from tcview.analysis.breaks import break_findings
from tcview.analysis.cache_misses import cache_miss_findings
from tcview.analysis.checks import SEVERITIES
from tcview.analysis.crashes import compile_failure_findings, crash_findings, torch_hint
from tcview.analysis.cudagraphs import EAGER_REASON, model_cudagraphs, short_reason
from tcview.analysis.divergence import Divergence, analyze, describe_groups
from tcview.analysis.dynamic_shapes import same_graph_findings, symbol_findings
from tcview.analysis.finding import (
    DOMINANT_MIN_S,
    DOMINANT_SHARE,
    Finding,
    compile_cost_s,
    compile_ids,
    frame_name,
    frame_subject,
    frame_where,
    plural,
    possessive,
    ranks_of,
    text_frames,
    traceback_frames,
    unnumbered,
    where_subject,
    where_text,
)
from tcview.analysis.owner import is_user_file, package_of, user_line
from tcview.analysis.recompile_findings import recompile_findings
from tcview.analysis.rules import DOCS, KINDS, VERDICTS, Kind, Severity
from tcview.analysis.verdicts import verdicts
from tcview.model.metadata import CompilationMetrics
from tcview.model.objects import Compile, Frame, Model
from tcview.model.ranks import ranks_label

__all__ = [
    "Finding",
    "compile_cost_s",
    "is_user_file",
    "text_frames",
    "user_line",
    "where_text",
]


# ---------------------------------------------------------------------- CUDA graphs


def _cudagraphs(model: Model) -> list[Finding]:
    used: list[Compile] = []
    by: dict[tuple[str, str], list[Compile]] = {}
    raw: dict[tuple[str, str], str] = {}
    for comp in model.compiles:
        found = model_cudagraphs(model, comp)
        if found is None:
            continue
        if found.state != "skipped":
            used.append(comp)
        if found.state != "used" and found.reasons:
            key = (found.state, short_reason(found.reasons[0]))
            by.setdefault(key, []).append(comp)
            raw.setdefault(key, found.reasons[0])
    total = len(used) + sum(len(v) for (state, _), v in by.items() if state == "skipped")
    out = []
    for (state, reason), compiles in by.items():
        where = user_line(traceback_frames(raw[(state, reason)])) or frame_where(compiles[0].frame)
        share = f"{len(used)} of {total} CUDA-graph compiles ran as CUDA graphs"
        if reason.startswith(EAGER_REASON):
            said = raw[(state, reason)].removeprefix(EAGER_REASON).lstrip(": ")
            title = "CUDA graphs not replayed: the graph ran eagerly at run time"
            detail = (
                f"{plural(len(compiles), 'compile')} ({', '.join(compile_ids(compiles))}) made for CUDA "
                "graphs ran as plain code at run time: each call pays the kernel launches "
                "again. " + (f"torch said: {said}. " if said else "") + f"{share}."
            )
            fix = _cudagraph_fix(reason, raw[(state, reason)])
        elif state == "skipped":
            title = f"CUDA graphs skipped: {reason}"
            detail = (
                f"{plural(len(compiles), 'compile')} ({', '.join(compile_ids(compiles))}) ran without "
                f"CUDA graphs because of {reason}: each call pays the kernel launches again. "
                f"{share}."
            )
            fix = _cudagraph_fix(reason, raw[(state, reason)])
        else:
            title = f"CUDA graphs partial: {reason} left out"
            detail = (
                f"{plural(len(compiles), 'compile')} ({', '.join(compile_ids(compiles))}) ran as CUDA "
                f"graphs except for {reason}, which run outside them. {share}."
            )
            fix = _cudagraph_fix(reason, raw[(state, reason)])
        found_in = traceback_frames(raw[(state, reason)])
        if found_in and not any(is_user_file(f) for f, _n in found_in):
            # what torch found is in a library's or torch's own code, not the user's
            package = next(
                (package_of(f) for f, _n in reversed(found_in) if "-packages" in f),
                package_of(found_in[-1][0]),
            )
            detail += (
                f" What causes it is in {possessive(package)} code, not yours: the trace does not show a "
                "change in your code that avoids it."
            )
            fix = ""
        out.append(
            Finding(
                Kind.CUDAGRAPHS,
                Severity.WARNING if state == "skipped" else Severity.INFO,
                title,
                detail,
                {
                    "state": state,
                    "reason": reason,
                    "compiles": compile_ids(compiles),
                    "used": len(used),
                    "total": total,
                },
                where,
                None,
                fix,
                DOCS["cudagraphs"],
                compiles,
                subject=f"{state}:{unnumbered(reason)}@{where_subject(where)}",
            )
        )
    return out


def _cudagraph_fix(reason: str, raw: str = "") -> str:
    hint = torch_hint(raw) if raw.startswith(EAGER_REASON) else ""
    if hint:
        return hint  # torch's own advice, from its warning
    if reason.startswith(EAGER_REASON):
        return (
            "The trace does not say why; torch warns why on stderr when CUDA graph trees fall "
            "back (run with TORCH_LOGS=cudagraphs and keep the job's stderr)."
        )
    low = reason.lower()
    if "mutated inputs" in low or "mutation" in low:
        return (
            "The compiled code writes into an input in place (at the line named): return the "
            "new value instead, or make that tensor a module buffer or parameter (CUDA graphs "
            "allow mutating those)."
        )
    if "cpu" in low:
        return "Keep the tensors on the GPU inside the compiled region (no .cpu() / CPU tensors)."
    if "dynamic shape" in low:
        return "Make the shapes static (pad to a few sizes) so each size gets its own graph."
    return "Remove what the reason names from the compiled region."


# ---------------------------------------------------------------------- compile time


def _compile_time(model: Model) -> list[Finding]:
    timed = [(c, compile_cost_s(c)) for c in model.compiles]
    total = sum(t for _c, t in timed if t is not None)
    if total < DOMINANT_MIN_S:
        return []
    out = []
    # a frame of several ranks or episodes is one: its function, file and first line
    by_frame: dict[tuple[str, str, object], tuple[Frame, float, list[Compile]]] = {}
    for comp, t in timed:
        if comp.frame is None or t is None:
            continue
        code = comp.frame.code_frame
        key = (frame_name(comp.frame), code.filename if code else "", comp.frame.co_firstlineno)
        frame, seconds, compiles = by_frame.get(key, (comp.frame, 0.0, []))
        by_frame[key] = (frame, seconds + t, [*compiles, comp])
    if len(by_frame) > 1:
        frame, seconds, compiles = max(by_frame.values(), key=lambda v: v[1])
        if seconds >= DOMINANT_SHARE * total:
            out.append(
                Finding(
                    Kind.COMPILE_TIME,
                    Severity.INFO,
                    f"`{frame_name(frame)}` took {seconds / total:.0%} of the compile time",
                    f"{seconds:.1f}s of {total:.1f}s compiling went to `{frame_name(frame)}` "
                    f"({plural(len(compiles), 'compile')}){_top_phase(compiles)}.",
                    {
                        "frame": frame.id_label,
                        "seconds": round(seconds, 3),
                        "total_s": round(total, 3),
                    },
                    frame_where(frame),
                    seconds,
                    "Start with this frame: its recompiles and graph breaks (above) add compiles; "
                    "a FX graph cache kept warm between runs (the same TORCHINDUCTOR_CACHE_DIR) "
                    "saves most of the Inductor time of the next run.",
                    DOCS["cache"],
                    compiles,
                    subject=f"frame:{frame_subject(frame)}",
                )
            )
    tuned = [(c, autotune_seconds(c)) for c in model.compiles]
    tuning = sum(t for _c, t in tuned if t)
    if tuning >= DOMINANT_SHARE * total:
        compiles = [c for c, t in tuned if t]
        out.append(
            Finding(
                Kind.COMPILE_TIME,
                Severity.INFO,
                f"Autotuning took {tuning / total:.0%} of the compile time",
                f"{tuning:.1f}s of {total:.1f}s compiling went to autotuning (max-autotune) in "
                f"{plural(len(compiles), 'compile')}.",
                {"autotune_s": round(tuning, 3), "total_s": round(total, 3)},
                frame_where(compiles[0].frame) if compiles else None,
                tuning,
                "Autotuning results are cached under TORCHINDUCTOR_CACHE_DIR: later runs on this "
                "machine skip most of it when the cache is kept; compile the parts that do not "
                "need tuning with the default mode.",
                DOCS["cache"],
                compiles,
                subject="autotune",
            )
        )
    return out


def _seconds(metrics: CompilationMetrics | None, key: str) -> float:
    value: float | None = getattr(metrics, key) if metrics is not None else None
    return 0.0 if value is None else value


def _top_phase(compiles: Sequence[Compile]) -> str:
    """``; most of it in Inductor (6.1s)``: which of Dynamo's tracing, AOTAutograd and
    Inductor took most of the compiles' time (their metrics nest: each is the rest of the
    one above it)."""
    phases = {"Dynamo tracing": 0.0, "AOTAutograd": 0.0, "Inductor": 0.0}
    for comp in compiles:
        m = comp.own_metrics
        frame = _seconds(m, "entire_frame_compile_time_s")
        backend = _seconds(m, "backend_compile_time_s")
        inductor = _seconds(m, "inductor_compile_time_s")
        phases["Dynamo tracing"] += max(0.0, frame - backend)
        phases["AOTAutograd"] += max(0.0, backend - inductor)
        phases["Inductor"] += inductor
    label, seconds = max(phases.items(), key=lambda kv: kv[1])
    return f"; most of it in {label} ({seconds:.1f}s)" if seconds > 0 else ""


# ---------------------------------------------------------------------- ranks


def _divergence(div: Divergence) -> list[Finding]:
    if not div.diverges:
        return []
    return [
        Finding(
            Kind.DIVERGENCE,
            Severity.WARNING,
            f"Ranks compiled differently: {len(div.groups)} groups ({describe_groups(div.groups)})",
            div.first or "The ranks' compiles differ (tcview summary lists each check).",
            {"groups": div.groups, "first": div.first},
            None,
            None,
            "Make every rank see the same inputs, shapes and control flow; a rank that compiles "
            "differently can hang the collectives.",
            "",
            subject="ranks",
        )
    ]


# ---------------------------------------------------------------------- all


def rank_key(f: Finding) -> tuple[bool, int, float, int]:
    """Most important first: verdicts on the whole run, then severity, compile seconds and
    kind."""
    return (
        f.kind not in VERDICTS,
        SEVERITIES.index(f.severity),
        -(f.cost_s or 0.0),
        KINDS.index(f.kind),
    )


# Runs a function elsewhere (another process) while the caller goes on; the function it
# returns gives the result, waiting for it.
Aside: TypeAlias = Callable[[Callable[[], Any]], Callable[[], Any]]


def findings(model: Model, divergence: Divergence | None = None) -> list[Finding]:
    """Every finding of the model, most important first (`divergence`: an `analyze` of the
    model already made)."""
    return findings_later(model, divergence)()


def findings_later(
    model: Model, divergence: Divergence | None = None, aside: Aside | None = None
) -> Callable[[], list[Finding]]:
    """`findings`, made when the function this returns is first called. `aside`: the
    recompile findings, the slowest to make, are made there from now on (their compiles
    sent back as their places in `model.compiles`)."""
    recompiles = partial(recompile_findings, model)
    if aside is not None:
        recompiles = partial(_linked, model, aside(partial(_portable, model)))

    @cache
    def made() -> list[Finding]:
        failures = compile_failure_findings(model)
        found = [*verdicts(model), *crash_findings(model, failures), *failures]
        later = [
            *break_findings(model),
            *_cudagraphs(model),
            *cache_miss_findings(model),
            *same_graph_findings(model),
            *symbol_findings(model),
            *_compile_time(model),
            *_divergence(divergence if divergence is not None else analyze(model)),
        ]
        return sorted(_fold_ranks([*found, *recompiles(), *later]), key=rank_key)

    return made


Portable: TypeAlias = list[tuple[Finding, list[int]]]


def _portable(model: Model) -> Portable:
    """The recompile findings without their compiles, given as their places in
    `model.compiles` (what another process can send back)."""
    place = {id(c): i for i, c in enumerate(model.compiles)}
    return [
        (replace(f, compiles=[]), [place[id(c)] for c in f.compiles])
        for f in recompile_findings(model)
    ]


def _linked(model: Model, sent: Callable[[], Portable]) -> list[Finding]:
    """What `_portable` sent, with its compiles."""
    compiles = model.compiles
    return [replace(f, compiles=[compiles[i] for i in places]) for f, places in sent()]


def _fold_ranks(found: list[Finding]) -> list[Finding]:
    """Findings alike on several ranks (the same kind, title and user's line) as one, with
    their ranks, compiles and cost together."""
    by: dict[tuple[str, str, str], Finding] = {}
    out: list[Finding] = []
    for finding in found:
        key = (finding.kind, finding.title, where_text(finding.where))
        first = by.get(key)
        if first is None or not finding.compiles:
            by[key] = finding
            out.append(finding)
            continue
        first.compiles += [c for c in finding.compiles if c not in first.compiles]
        if finding.cost_s is not None:
            first.cost_s = (first.cost_s or 0.0) + finding.cost_s
    for finding in out:
        ranks = ranks_of(finding.compiles)
        if len(ranks) > 1:
            finding.evidence["ranks"] = ranks
            finding.evidence.pop("rank", None)
            finding.detail = f"On {ranks_label(ranks)}: {finding.detail}"
    return out


def new_and_gone(a: Sequence[Finding], b: Sequence[Finding]) -> tuple[list[Finding], list[Finding]]:
    """The findings of run B that run A does not have, and those of A that B no longer has
    (matched by `Finding.key`)."""
    keys_a = {f.key for f in a}
    keys_b = {f.key for f in b}
    return [f for f in b if f.key not in keys_a], [f for f in a if f.key not in keys_b]


def findings_json(found: Sequence[Finding]) -> list[dict[str, Any]]:
    return [f.to_json() for f in found]


def finding_lines(found: Sequence[Finding], limit: int = 30) -> list[str]:
    """The findings as text: a head line each, then what, where, cost and fix, indented."""
    if not found:
        return ["Findings: none"]
    lines = [f"Findings ({len(found)})"]
    for f in found[:limit]:
        lines.append(f"  {f.severity.upper():7} {f.title}")
        for text in f.detail.split("\n"):
            lines.append(f"          {text}")
        if f.where:
            lines.append(f"          where: {where_text(f.where)}")
        if f.cost_s:
            lines.append(f"          cost: {f.cost_s:.2f}s of compile time")
        if f.fix:
            lines.append(f"          fix: {f.fix}")
        if f.doc:
            lines.append(f"          doc: {f.doc}")
    if len(found) > limit:
        lines.append(f"  … {len(found) - limit} more findings")
    return lines
