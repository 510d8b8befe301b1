"""Findings of dynamic shapes: graphs of a frame that differ only in sizes or constants (one
dynamic graph would do), sizes the user asked to be dynamic that were specialised to a
constant, and data-dependent symbols.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from tcview.analysis.changes import user_name
from tcview.analysis.compile_config import compile_config
from tcview.analysis.finding import (
    STORM_RECOMPILES,
    Finding,
    compile_ids,
    frame_name,
    frame_subject,
    frame_where,
    plural,
    total_cost,
    where_text,
)
from tcview.analysis.guard_values import family_of
from tcview.analysis.owner import Where, is_user_file, user_line
from tcview.analysis.rules import DOCS, Kind, Severity
from tcview.model.objects import Compile, Model, Record, stack_frames

_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e-?\d+)?")


def graph_shape(payload: str) -> str:
    """A graph's code with its numbers (sizes, constants) blanked out."""
    return _NUMBER.sub("#", payload)


SHAPE_FAMILIES = frozenset({"size", "stride", "symbolic_shape", "dynamic_marking", "not_logged"})


def _recompiled_on_shapes(compiles: Sequence[Compile]) -> bool:
    """Whether these compiles' recompiles came from sizes (what a dynamic graph would cover),
    not from a value, a module flag or an object, whose own fix the recompile finding gives."""
    families = {family_of(c) for c in compiles if c.key.is_recompile}
    return not families or bool(families & SHAPE_FAMILIES)


def _graph_and_shape(rec: Record) -> tuple[str, str]:
    payload = rec.payload()
    return payload, graph_shape(payload)


def same_graph_findings(model: Model) -> list[Finding]:
    out = []
    shapes: dict[tuple[str, int], tuple[str, str]] = {}  # by the payload's md5 and length
    for source in model.files:
        for frame in source.frames.values():
            if len(frame.compiles) < 2:
                continue
            groups: dict[str, list[Compile]] = {}
            texts: dict[str, set[str]] = {}
            for comp in frame.compiles:
                rec = next((r for r in comp.records if r.kind == "dynamo_output_graph"), None)
                if rec is None:
                    continue
                # The same graph again: the same md5 over as many bytes (not a truncated copy).
                same = (rec.md5, rec.end - rec.hdr_end) if rec.md5 else None
                seen = shapes.get(same) if same is not None else None
                payload, shape = seen if seen is not None else _graph_and_shape(rec)
                if same is not None:
                    shapes[same] = (payload, shape)
                groups.setdefault(shape, []).append(comp)
                texts.setdefault(shape, set()).add(payload)
            for shape, compiles in groups.items():
                if len(compiles) < 2 or len(texts[shape]) < 2:
                    continue
                if not _recompiled_on_shapes(compiles):
                    continue  # a value, flag or object changed: its recompile finding says so
                n = len(compiles)
                out.append(
                    Finding(
                        Kind.SAME_GRAPHS,
                        Severity.WARNING if n >= STORM_RECOMPILES else Severity.INFO,
                        f"These {n} graphs of `{frame_name(frame)}` would be one dynamic graph",
                        f"{', '.join(compile_ids(compiles))} captured the same graph except for sizes or "
                        "constants: each value got its own compile.",
                        {"frame": frame.id_label, "compiles": compile_ids(compiles)},
                        frame_where(frame),
                        total_cost(compiles[1:]),  # the first compile was needed anyway
                        "Mark the changing size dynamic (torch._dynamo.mark_dynamic(x, dim), or "
                        "torch.compile(dynamic=True)), or pass a changing number as a tensor.",
                        DOCS["dynamic"],
                        compiles,
                        subject=frame_subject(frame),
                    )
                )
    return out


def _stack_where(source: Any, value: Any) -> Where | None:
    return user_line([(f.filename, f.line) for f in stack_frames(source, value)])


def _innermost_is_user(source: Any, value: Any) -> bool:
    frames = stack_frames(source, value)
    return bool(frames) and is_user_file(frames[-1].filename)


SYMBOL_KINDS = ("symbolic_shape_specialization", "create_unbacked_symbol")


def symbol_findings(model: Model) -> list[Finding]:
    by: dict[int, tuple[Compile, list[Record]]] = {}
    for source in model.files:
        for rec in source.records:
            if rec.kind in SYMBOL_KINDS and rec.compile is not None:
                by.setdefault(id(rec.compile), (rec.compile, []))[1].append(rec)
    out = []
    for comp, records in by.values():
        specs, unbacked = _symbols_of(records)
        specs = [s for s in specs if _asked_dynamic(comp, s)]
        for spec in specs:
            spec.pop("by_user", None)
        if specs:
            out.append(_specialization(comp, specs))
        if unbacked:
            out.append(_unbacked(comp, unbacked))
    return _fold_specializations(out)


def _symbols_of(records: list[Record]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The specialisations and the data-dependent symbols a compile's records log."""
    specs: list[dict[str, Any]] = []
    unbacked: list[dict[str, Any]] = []
    for rec in records:
        body = rec.full_meta()  # the event's value
        if not isinstance(body, dict):
            continue
        where = _stack_where(rec.source, body.get("user_stack")) or _stack_where(
            rec.source, body.get("stack")
        )
        if rec.kind == "symbolic_shape_specialization":
            sources = body.get("sources")
            specs.append(
                {
                    "symbol": str(body.get("symbol", "?")),
                    "sources": [user_name(str(s)) for s in sources]
                    if isinstance(sources, list)
                    else [],
                    "value": str(body.get("value", "?")),
                    "reason": str(body.get("reason", "")),
                    "by_user": _innermost_is_user(rec.source, body.get("user_stack")),
                    "where": where,
                }
            )
        else:
            unbacked.append(
                {
                    "symbol": str(body.get("symbol", "?")),
                    "range": str(body.get("vr", "")),
                    "where": where,
                }
            )
    return specs, unbacked


def _specialization(comp: Compile, specs: list[dict[str, Any]]) -> Finding:
    specs = list({(s["symbol"], s["value"]): s for s in specs}.values())
    names = ", ".join(f"{(s['sources'] or [s['symbol']])[0]} = {s['value']}" for s in specs[:4])
    floats = all(s["symbol"].startswith("zf") for s in specs)
    what = "number" if floats else "size"
    return Finding(
        Kind.SPECIALIZATION,
        Severity.INFO,
        f"`{frame_name(comp.frame)}` ({comp.id_label}): a dynamic {what} was "
        f"specialised to a constant ({names})",
        f"Dynamo had made this {what} dynamic, then fixed it to the value seen: "
        "other values will recompile. "
        + "; ".join(
            f"{s['symbol']} ({', '.join(s['sources'])}) = {s['value']}: {s['reason']}"
            for s in specs
        ),
        {"compile": comp.id_label, "specializations": specs},
        specs[0]["where"] or frame_where(comp.frame),
        None,
        (
            "Pass the number as a tensor (a float learning rate: "
            "`lr=torch.tensor(...)`), so that its value is data, not a constant; "
            "if it never changes, this costs nothing."
            if floats
            else "Avoid comparing the size with a constant inside the compiled code "
            "(at the line named); if the size never changes, this costs nothing."
        ),
        DOCS["dynamic"],
        [comp],
        subject=frame_subject(comp.frame)
        + ":"
        + ",".join(sorted({str((s["sources"] or [s["symbol"]])[0]) for s in specs})),
    )


def _unbacked(comp: Compile, unbacked: list[dict[str, Any]]) -> Finding:
    lines = [
        f"{u['symbol']}"
        + (f" from {where_text(u['where'])}" if u["where"] else "")
        + f" (range {u['range']})"
        for u in unbacked
    ]
    return Finding(
        Kind.UNBACKED,
        Severity.INFO,
        f"`{frame_name(comp.frame)}` ({comp.id_label}): "
        f"{plural(len(unbacked), 'data-dependent symbol')}",
        "Sizes or values that depend on tensor data (.item(), nonzero()): "
        + "; ".join(lines[:8])
        + (f"; … {len(lines) - 8} more" if len(lines) > 8 else "")
        + ".",
        {"compile": comp.id_label, "symbols": unbacked},
        unbacked[0]["where"] or frame_where(comp.frame),
        None,
        "Where code branches on them or uses them as sizes, tell the compiler what "
        "holds with torch._check(...) (e.g. torch._check(n >= 0)); otherwise it "
        "raises a data-dependent error there.",
        DOCS["dynamic"],
        [comp],
        subject=frame_subject(comp.frame),
    )


def _asked_dynamic(comp: Compile, spec: dict[str, Any]) -> bool:
    """A specialisation worth a finding: of a size the user asked to be dynamic (mark_dynamic,
    or dynamic=True), fixed by the user's own code (not by a weight's shape inside torch), in
    a frame that never recompiled (a recompile's finding already names a value that changed;
    a size Dynamo made dynamic on its own and fixed again costs nothing while it stays)."""
    frame = comp.frame
    if frame is None or any(c.key.is_recompile for c in frame.compiles):
        return False
    if not spec.get("by_user"):
        return False
    config = compile_config(comp, False)
    if config.dynamo.get("assume_static_by_default") is False:  # dynamic=True
        return True
    marked = {name for name, _dims in config.marked_dynamic}
    return any(user_name(s).split(".size()", 1)[0] in marked for s in spec["sources"])


def _fold_specializations(found: list[Finding]) -> list[Finding]:
    """One finding for the same value specialised in several compiles of one frame (a float
    that changes every call is specialised again in each recompile)."""
    out: list[Finding] = []
    by: dict[tuple[int, str], Finding] = {}
    for f in found:
        specs = f.evidence.get("specializations") if f.kind == Kind.SPECIALIZATION else None
        frame = f.compiles[0].frame if f.compiles else None
        if not specs or frame is None:
            out.append(f)
            continue
        names = tuple(sorted({(s["sources"] or [s["symbol"]])[0] for s in specs}))
        key = (id(frame), "|".join(names))
        first = by.get(key)
        if first is None:
            by[key] = f
            out.append(f)
            continue
        first.compiles.extend(f.compiles)
        first.evidence["specializations"] = [*first.evidence["specializations"], *specs]
        ids = compile_ids(first.compiles)
        first.evidence["compile"] = ids[0]
        first.evidence["compiles"] = ids
        values = ", ".join(dict.fromkeys(s["value"] for s in first.evidence["specializations"]))
        floats = all(s["symbol"].startswith("zf") for s in first.evidence["specializations"])
        first.title = (
            f"`{frame_name(frame)}` ({len(ids)} compiles): a dynamic "
            f"{'number' if floats else 'size'} was specialised to a constant in each "
            f"({', '.join(names)})"
        )
        first.detail = (
            f"{', '.join(ids)} each fixed {', '.join(names)} to the value seen ({values}): "
            "every other value recompiles."
        )
    return out
