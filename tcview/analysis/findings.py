"""Findings: one list of what went wrong in a run, most important first, each in words a user
understands, with its evidence, the user's line, what it cost and what to do.

`findings(model)` builds the list once as plain data; ``tcview summary`` (text and JSON),
``tcview show PATH findings``, ``--fail-on errors,warnings`` and ``tcview diff`` print it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cache, partial
from typing import Any, TypeAlias

from tcview.analysis.autotune import autotune_seconds
from tcview.analysis.breaks import break_cause, break_findings, is_generic_hint
from tcview.analysis.changes import user_name
from tcview.analysis.checks import SEVERITIES
from tcview.analysis.cudagraphs import EAGER_REASON, model_cudagraphs, short_reason
from tcview.analysis.divergence import Divergence, analyze, describe_groups
from tcview.analysis.finding import (
    DOMINANT_MIN_S,
    DOMINANT_SHARE,
    STACK_SHOWN,
    STORM_RECOMPILES,
    TRACEBACK_LINE,
    Finding,
    compile_cost_s,
    compile_ids,
    frame_name,
    frame_where,
    plural,
    possessive,
    ranks_of,
    sentence,
    text_frames,
    total_cost,
    traceback_frames,
    where_text,
)
from tcview.analysis.owner import Owner, Where, is_user_file, owner_of, package_of, user_line
from tcview.analysis.provenance import kernel_provenance
from tcview.analysis.recompile_findings import recompile_findings
from tcview.analysis.recompiles import compile_config, family_of
from tcview.analysis.rules import DOCS, KINDS, VERDICTS, Kind, Severity
from tcview.analysis.verdicts import user_stopped, verdicts
from tcview.model.objects import (
    Compile,
    Error,
    Frame,
    Model,
    Record,
    stack_frames,
)
from tcview.model.ranks import ranks_label

__all__ = [
    "Finding",
    "compile_cost_s",
    "is_user_file",
    "text_frames",
    "user_line",
    "where_text",
]


# ---------------------------------------------------------------------- crashes

# Torch's own advice inside an error message: a "Hint:" line, or the sentence that says what
# to do or names a torch call.
_ADVICE = re.compile(r"^(?:To prevent|To avoid|Consider|Try|You can|Use |Call |Please)")
_TORCH_CALL = re.compile(r"\btorch\.[\w.]+\(")
_EXPLANATION = re.compile(r"^\s*Explanation:(.*)$", re.M)
_URL = re.compile(r"https://\S+")
_SENTENCE_END = re.compile(r"(?<=\.)\s+")


def torch_hint(message: str) -> str:
    """The advice torch put in an exception's message (``To prevent overwriting, … call
    torch.compiler.cudagraph_mark_step_begin() before each model invocation.``), or ""."""
    lines = [ln.strip() for ln in message.split("\n")]
    for line in lines:
        if line.startswith("Hint:") and "TORCH_LOGS" not in line:
            return line.removeprefix("Hint:").strip()
    sentences = [
        said
        for line in lines
        for said in _SENTENCE_END.split(line)
        if "TORCH_LOGS" not in said and "TORCHDYNAMO_VERBOSE" not in said
    ]
    for said in sentences:  # advice first: a torch call may also be quoted user code
        if _ADVICE.match(said):
            return said
    for said in sentences:
        if _TORCH_CALL.search(said) and not said.startswith("return "):
            return said
    return ""


def _crash_stack(error: Error) -> tuple[list[tuple[str, int]], list[str], int, int]:
    """All frames (outermost first, the compiled code's "from user code:" frames innermost);
    the lines to show, from the user's line outward, with each run of torch and library frames
    between user frames counted in one line; the frames left out beyond `STACK_SHOWN` lines;
    and the frames inside torch and libraries below the user's line."""
    frames = text_frames(error.stack)
    texts = list(error.stack)
    block = error.message.partition("from user code:")[2]
    for m in TRACEBACK_LINE.finditer(block):
        frames.append((m.group("file"), int(m.group("line"))))
        texts.append(f"{m.group('file')}:{m.group('line')} in {m.group('name') or '?'}")
    user = next((i for i in range(len(frames) - 1, -1, -1) if is_user_file(frames[i][0])), None)
    if user is None:
        return frames, texts[::-1][:STACK_SHOWN], max(0, len(texts) - STACK_SHOWN), 0
    below = len(texts) - 1 - user
    lines: list[str] = []
    library = 0
    i = user
    while i >= 0 and len(lines) < STACK_SHOWN:
        if is_user_file(frames[i][0]):
            if library:
                lines.append(f"… {library} frames in torch and libraries")
                library = 0
            lines.append(texts[i])
        else:
            library += 1
        i -= 1
    outer = i + 1 + library
    return frames, lines, outer, below


# What a Python job raises when it is asked to stop.
_STOP_ERRORS = ("KeyboardInterrupt", "SystemExit")


def _crashes(model: Model, failures: list[Finding]) -> list[Finding]:
    """The run's uncaught errors, alike ones (several ranks) as one; a compile failure that
    is the crash (same exception and message) is folded into it."""
    groups: dict[tuple[str, str], list[Error]] = {}
    stopped = user_stopped(model)
    for error in model.run_errors():
        if stopped and error.error_type.rsplit(".", 1)[-1] in _STOP_ERRORS:
            continue  # the user's stop, which the job_stopped verdict tells
        groups.setdefault((error.error_type, error.first_line), []).append(error)
    out = []
    for (etype, first), errors in groups.items():
        error = errors[0]
        frames, shown, outer, below = _crash_stack(error)
        where = user_line(frames)
        hint = torch_hint(error.message)
        ranks = sorted({e.rank for e in errors if e.rank is not None})
        who = f" on {ranks_label(ranks)}" if ranks else ""
        at = f" at {where_text(where)}" if where else ""
        lines = [f"{etype}: {first}" if first else etype]
        explanation = _EXPLANATION.search(error.message)
        if explanation is not None:
            lines.append(explanation.group(1).strip())
        url = _URL.search(error.message)
        if shown:
            lines.append("Stack, from the user's line outward:")
            lines += [f"  {t}" for t in shown]
            if outer:
                lines.append(f"  … {outer} outer frames")
            if below:
                lines.append(f"  ({below} frames inside torch and libraries below the first line)")
        # a CUDA graph's overwritten output: torch names where the tensor was made
        created = traceback_frames(error.message.partition("Stack trace:")[2].split(". To ")[0])
        evidence: dict[str, Any] = {
            "exception": etype,
            "message": first,
            "ranks": ranks,
            "errors": len(errors),
            "stack": shown,
            "outer_frames": outer,
            "frames_below": below,
        }
        made = user_line(created)
        if made is not None:
            evidence["tensor_created_at"] = made
            lines.insert(1, f"The tensor read was made at {where_text(made)}.")
        compiles: list[Compile] = []
        ran = _in_output_code(model, frames)
        if ran is not None:
            comp, text, user = ran
            lines.insert(1, text)
            compiles.append(comp)
            evidence["output_code_of"] = comp.id_label
            where = user or where
        elif _in_generated(frames) and _compiled_frame_innermost(frames):
            # compiled code whose compile the input does not show (TORCH_LOGS without
            # output_code): the innermost user frame is the compiled function's first line
            callers = _user_frames(frames)[1:]
            if callers:
                where = {"file": callers[0][0], "line": callers[0][1]}
                lines.insert(
                    1,
                    "It was raised inside compiled code (Inductor's output code), "
                    f"called from your line {where_text(where)}.",
                )
        for failure in list(failures):
            ftype = failure.evidence.get("fail_type", "")
            if (
                ftype
                and etype.rsplit(".", 1)[-1] == ftype
                and failure.evidence.get("reason") == first
            ):
                failures.remove(failure)
                compiles += failure.compiles
                where = where or failure.where
        if compiles:
            evidence["compiles"] = compile_ids(compiles)
        cause = break_cause(first, error.message, where_text(where), [], [])
        if cause.rule is not None:
            lines.insert(1, f"Cause: {cause.says}.")
        fix = cause.fix or ("" if is_generic_hint(hint) else hint)
        if hint:
            evidence["torch_hint"] = hint  # torch's own words, a fix only where specific
        out.append(
            Finding(
                Kind.CRASH,
                Severity.ERROR,
                f"The run crashed{who}{at}: {etype}",
                "\n".join(lines),
                evidence,
                where,
                None,
                fix,
                DOCS["mark_step"]
                if "cudagraph_mark_step_begin" in hint
                else (url.group(0).rstrip(".") if url is not None else ""),
                compiles,
            )
        )
    return out


def _in_output_code(
    model: Model, frames: list[tuple[str, int]]
) -> tuple[Compile, str, Where | None] | None:
    """The compile whose output code (Inductor's generated module) a stack ran in, with a
    sentence naming it, the line, the kernel on that line and the user's line it compiles."""
    generated = [(f, n) for f, n in frames if owner_of(f) is Owner.GENERATED]
    if not generated:
        return None
    by_file: dict[str, tuple[Compile, Record]] = {}
    for comp in model.compiles:
        for rec in comp.output_codes:
            meta = rec.meta if isinstance(rec.meta, dict) else {}
            name = meta.get("filename") or meta.get("file_path")
            if isinstance(name, str):
                by_file.setdefault(name, (comp, rec))
    for filename, line in reversed(generated):
        found = by_file.get(filename)
        if found is None:
            continue
        comp, rec = found
        kernel = ""
        try:
            code = rec.payload().split("\n")
        except OSError:
            code = []
        user = None
        if 0 < line <= len(code):
            kernels = [k for k in comp.kernels if k.name in code[line - 1]]
            if kernels:
                kernel = f", in kernel `{kernels[0].name}`"
                _unit, prov = kernel_provenance(kernels[0])
                lines = prov.user_lines if prov is not None else []
                user = next(
                    (Where(file=ln.file, line=ln.line) for ln in lines if is_user_file(ln.file)),
                    None,
                )
            elif "extern_kernels." in code[line - 1]:
                kernel = ", in a library kernel (extern_kernels)"
        of = f", which computes your line {where_text(user)}" if user else ""
        if user is None:  # the user's call of the compiled function, not its def line
            user = _caller_of(comp, frames)
            of = f", called from your line {where_text(user)}" if user else ""
        return (
            comp,
            (
                f"It was raised while running compile {comp.id_label} (`{frame_name(comp.frame)}`): "
                f"line {line} of its output code{kernel}{of}."
            ),
            user,
        )
    return None


def _in_generated(frames: list[tuple[str, int]]) -> bool:
    """Whether the stack ran inside generated code, past its innermost user frame."""
    users = [i for i, (f, _n) in enumerate(frames) if is_user_file(f)]
    return bool(users) and any(owner_of(f) is Owner.GENERATED for f, _n in frames[users[-1] + 1 :])


def _compiled_frame_innermost(frames: list[tuple[str, int]]) -> bool:
    """The innermost user frame is a compiled function running (Dynamo's wrapper called it),
    placed at its first line rather than at a line of the user's."""
    users = [i for i, (f, _n) in enumerate(frames) if is_user_file(f)]
    if not users or users[-1] == 0:
        return False
    caller = frames[users[-1] - 1][0].replace("\\", "/")
    return caller.endswith("_dynamo/eval_frame.py")


def _user_frames(frames: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """The user's frames of a stack, innermost first."""
    return [(f, n) for f, n in reversed(frames) if is_user_file(f)]


def _caller_of(comp: Compile, frames: list[tuple[str, int]]) -> Where | None:
    """The user's line that called a compiled function: the innermost user frame of a stack
    that is not the function's own first line (where its compiled code is placed)."""
    frame = comp.frame
    own = (frame.co_filename, frame.co_firstlineno) if frame is not None else None
    for filename, line in reversed(frames):
        if is_user_file(filename) and (filename, line) != own:
            return {"file": filename, "line": line}
    return None


def _first_line(text: str) -> str:
    """A message's first line that says something, with the next one when it ends in a colon
    (``backend='x' raised:`` and then the exception)."""
    lines = [ln.strip() for ln in text.split("\n") if ln.strip()]
    if not lines:
        return ""
    if lines[0].endswith(":") and len(lines) > 1:
        return f"{lines[0]} {lines[1]}"
    return lines[0]


def _doc_in(message: str) -> str:
    """The docs page a torch message links to (a graph break's gbNNNN page), or ""."""
    url = _URL.search(message)
    return url.group(0).rstrip(".") if url is not None else ""


def _compile_failures(model: Model) -> list[Finding]:
    out = []
    by: dict[tuple[str, str], list[Compile]] = {}
    reasons: dict[tuple[str, str], str] = {}
    locations: dict[tuple[str, str], str] = {}
    for failure in model.failures:
        if failure.is_recompile_limit or failure.compile is None:
            continue
        first = _first_line(failure.reason)
        key = (failure.fail_type, first)
        by.setdefault(key, [])
        if failure.compile not in by[key]:
            by[key].append(failure.compile)
        reasons.setdefault(key, failure.reason)
        locations.setdefault(key, failure.location)
    for (ftype, first), compiles in by.items():
        frame = compiles[0].frame
        reason = reasons[(ftype, first)]
        where = user_line(traceback_frames(reason)) or frame_where(frame)
        hint = torch_hint(reason)
        code = frame.co_filename if frame is not None and frame.co_filename else ""
        cause = break_cause(first, reason, locations[(ftype, first)] or code, [], [])
        lines = [
            f"{ftype}: {first} ({plural(len(compiles), 'compile')}: "
            f"{', '.join(compile_ids(compiles))}). The frame runs eagerly."
        ]
        severity = Severity.ERROR
        if cause.package:
            lines.append(
                f"The compiled frame is {possessive(cause.package)} code, not yours"
                + (f": your call at {where_text(where)} leads there." if where else ".")
            )
            if cause.rule is not None and cause.rule.by_design:
                lines.append(f"{sentence(cause.says)}. Nothing to change.")
                severity = Severity.INFO
        fix = cause.fix or ("" if is_generic_hint(hint) or cause.package else hint)
        out.append(
            Finding(
                Kind.COMPILE_FAILED,
                severity,
                f"Compiling `{frame_name(frame)}` failed: {ftype}",
                "\n".join(lines),
                {"compiles": compile_ids(compiles), "fail_type": ftype, "reason": first},
                where,
                total_cost(compiles),
                fix,
                _doc_in(reason),
                compiles,
                subject=f"{frame_name(frame)}:{ftype}",
            )
        )
    return out


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


# ---------------------------------------------------------------------- cache misses

_COMPONENT = re.compile(r"^\[(?P<hash>[^\]]*)\] (?P<name>[^:]+):")


def cache_components(rec: Record, memo: dict[str, dict[str, str]] | None = None) -> dict[str, str]:
    """{component: hash} of a ``fx_graph_cache_*`` / ``aotautograd_cache_*`` artifact's cache
    key (its ``components`` list: ``[hash] name: value``). `memo`: keys already parsed, by the
    payload's md5 (a warm cache's hits log the same key again and again)."""
    if memo is not None and rec.md5:
        known = memo.get(rec.md5)
        if known is not None:
            return known
    try:
        value = json.loads(rec.payload())
    except ValueError:
        return {}
    if not isinstance(value, dict):
        return {}
    comps = value.get("components")
    out: dict[str, str] = {}
    if isinstance(comps, list):
        for item in comps:
            m = _COMPONENT.match(str(item))
            if m is not None:
                out[m.group("name").strip()] = m.group("hash")
    if memo is not None and rec.md5:
        memo[rec.md5] = out
    return out


def changed_components(a: dict[str, str], b: dict[str, str]) -> list[str]:
    """The cache key components whose value differs between two keys (or that only one has)."""
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def _nearest(miss: dict[str, str], others: list[dict[str, str]]) -> dict[str, str] | None:
    """The key among `others` (distinct keys) that shares the most components with `miss`."""
    if not others:
        return None
    best, best_n = None, -1
    mine = set(miss.items())
    for other in others:
        same = len(mine.intersection(other.items()))
        if same > best_n:
            best, best_n = other, same
            if same == len(mine):
                break
    return best


def _cache_misses(model: Model) -> list[Finding]:
    """Compiles whose graph missed a cache that held the same graph (its ``gm`` component)
    from another compile of the same process, one finding each, with the key components that
    differ from that entry's key. A miss that differs only in its inputs (a new shape) needs
    an entry of its own and is none; so is a graph the cache never saw (a cold cache)."""
    results: dict[tuple[int, str], set[str]] = {}
    for event in model.cache_events:
        if event.compile is not None:
            results.setdefault((id(event.compile.file), event.cache), set()).add(event.result)
    warm = {k for k, seen in results.items() if {"hit", "miss"} <= seen}
    events = [  # only caches that both hit and missed in one process: their keys are read
        e
        for e in model.cache_events
        if e.compile is not None and (id(e.compile.file), e.cache) in warm
    ]
    memo: dict[str, dict[str, str]] = {}
    hits: dict[tuple[int, str, str], list[dict[str, str]]] = {}
    hit_ids: dict[int, str] = {}  # id of a hit's key -> its (first) compile
    for event in events:
        if event.result == "hit" and event.compile is not None:
            key = cache_components(event.record, memo)
            if GRAPH_COMPONENT in key and id(key) not in hit_ids:  # each distinct key once
                where = (id(event.compile.file), event.cache, key[GRAPH_COMPONENT])
                hits.setdefault(where, []).append(key)
                hit_ids[id(key)] = event.compile.id_label
    missed: dict[int, tuple[Compile, list[str], list[str]]] = {}
    against: dict[int, str] = {}  # a missed compile -> the compile whose entry it missed
    # A key and its hits -> the nearest hit and what differs (a key read again is the same
    # object: `memo`).
    compared: dict[tuple[int, int], tuple[dict[str, str] | None, list[str]]] = {}
    for event in events:
        comp = event.compile
        if event.result != "miss" or comp is None:
            continue
        entry = missed.setdefault(id(comp), (comp, [], []))
        if event.cache not in entry[1]:
            entry[1].append(event.cache)
        key = cache_components(event.record, memo)
        same = hits.get((id(comp.file), event.cache, key.get(GRAPH_COMPONENT, "")), [])
        known = compared.get((id(key), id(same)))
        if known is None:
            near = _nearest(key, same)
            known = compared[id(key), id(same)] = (
                near,
                changed_components(near, key) if near is not None else [],
            )
        near, changed = known
        if near is not None:
            entry[2].extend(c for c in changed if c not in entry[2])
            against.setdefault(id(comp), hit_ids[id(near)])
    out = []
    for comp, caches, changed in missed.values():
        if not any(_avoidable(c) for c in changed):
            continue  # another graph or other inputs: an entry of its own, by design
        what = ", ".join(changed[:6]) + (" …" if len(changed) > 6 else "")
        caches = sorted(caches)
        hit = against[id(comp)]
        out.append(
            Finding(
                Kind.CACHE_MISS,
                Severity.WARNING,
                f"Cache miss on a warm cache at {comp.id_label} ({', '.join(caches)}): "
                f"{what} changed",
                f"The cache held this graph: {hit} hit it, yet {comp.id_label} missed "
                f"({' and '.join(caches)}) and compiled from scratch; its cache key differs "
                f"from {hit}'s in {what}.",
                {
                    "caches": caches,
                    "compile": comp.id_label,
                    "hit": hit,
                    "changed_components": changed,
                },
                frame_where(comp.frame),
                compile_cost_s(comp),
                cache_fix(changed),
                DOCS["cache"],
                [comp],
            )
        )
    return out


def _avoidable(component: str) -> bool:
    """A key component that differs by a choice (config, versions), not by what is compiled
    (the graph, its inputs' shapes and dtypes)."""
    return component != GRAPH_COMPONENT and not component.startswith("example_inputs")


def cache_fix(changed: Sequence[str]) -> str:
    """What to do about a cache key whose `changed` components differ."""
    configs = [c for c in changed if c.startswith(("inductor_config[", "fx_kwargs["))]
    if configs:
        return (
            f"Set {', '.join(configs[:3])} the same way wherever this graph compiles (a config "
            "patched for one call gets its own cache entry)."
        )
    if any(c.startswith("example_inputs") for c in changed):
        return (
            "The inputs' shapes, strides or dtypes differ: feed the same ones to share the entry."
        )
    if any(
        c in ("torch_version", "system_info[hash]") or c.startswith("system_info") for c in changed
    ):
        return "Entries from another torch version or machine are not reused: warm the cache again."
    return (
        "Keep what changed the same between compiles (config, inputs, torch version) so the "
        "cached entry is reused."
    )


GRAPH_COMPONENT = "gm"  # the component that holds the graph's code


@dataclass
class CacheKeyChange:
    """A graph that run A had a cache entry for and run B missed: the key components that
    differ (`tcview diff`)."""

    cache: str
    a_compile: str
    b_compile: str
    frame: str
    changed: list[str]

    def to_json(self) -> dict[str, Any]:
        return {
            "cache": self.cache,
            "a_compile": self.a_compile,
            "b_compile": self.b_compile,
            "frame": self.frame,
            "changed_components": self.changed,
        }


def cache_key_changes(a: Model, b: Model) -> list[CacheKeyChange]:
    """Each miss of run B whose graph (the ``gm`` component) run A also cached under another
    key, with the key components that differ: against A's compile of the same id when it has
    one, else against A's nearest key. A miss whose key A had as it is says nothing here (B's
    cache was cold)."""
    seen: dict[tuple[str, str], list[tuple[str, dict[str, str]]]] = {}
    for event in a.cache_events:
        key = cache_components(event.record)
        if GRAPH_COMPONENT in key and event.compile is not None:
            seen.setdefault((event.cache, key[GRAPH_COMPONENT]), []).append(
                (event.compile.id_label, key)
            )
    out = []
    for event in b.cache_events:
        comp = event.compile
        if event.result != "miss" or comp is None:
            continue
        key = cache_components(event.record)
        entries = seen.get((event.cache, key.get(GRAPH_COMPONENT, "")), [])
        if not entries or any(k == key for _id, k in entries):
            continue
        same_id = [e for e in entries if e[0] == comp.id_label]
        if same_id:
            a_id, a_key = same_id[0]
        else:
            a_key = _nearest(key, [k for _id, k in entries]) or entries[0][1]
            a_id = next(i for i, k in entries if k is a_key)
        out.append(
            CacheKeyChange(
                event.cache,
                a_id,
                comp.id_label,
                frame_name(comp.frame),
                changed_components(a_key, key),
            )
        )
    return out


# ---------------------------------------------------------------------- same graphs

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


def _same_graphs(model: Model) -> list[Finding]:
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
                    )
                )
    return out


# ---------------------------------------------------------------------- dynamic shapes


def _stack_where(source: Any, value: Any) -> Where | None:
    return user_line([(f.filename, f.line) for f in stack_frames(source, value)])


def _innermost_is_user(source: Any, value: Any) -> bool:
    frames = stack_frames(source, value)
    return bool(frames) and is_user_file(frames[-1].filename)


SYMBOL_KINDS = ("symbolic_shape_specialization", "create_unbacked_symbol")


def _symbols(model: Model) -> list[Finding]:
    by: dict[int, tuple[Compile, list[Record]]] = {}
    for source in model.files:
        for rec in source.records:
            if rec.kind in SYMBOL_KINDS and rec.compile is not None:
                by.setdefault(id(rec.compile), (rec.compile, []))[1].append(rec)
    out = []
    for comp, records in by.values():
        specs: list[dict[str, Any]] = []
        unbacked: list[dict[str, Any]] = []
        for rec in records:
            body = rec.full_meta()  # the event's value
            if not isinstance(body, dict):
                continue
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
                        "where": _stack_where(rec.source, body.get("user_stack"))
                        or _stack_where(rec.source, body.get("stack")),
                    }
                )
            else:
                unbacked.append(
                    {
                        "symbol": str(body.get("symbol", "?")),
                        "range": str(body.get("vr", "")),
                        "where": _stack_where(rec.source, body.get("user_stack"))
                        or _stack_where(rec.source, body.get("stack")),
                    }
                )
        specs = [s for s in specs if _asked_dynamic(comp, s)]
        for spec in specs:
            spec.pop("by_user", None)
        if specs:
            specs = list({(s["symbol"], s["value"]): s for s in specs}.values())
            names = ", ".join(
                f"{(s['sources'] or [s['symbol']])[0]} = {s['value']}" for s in specs[:4]
            )
            floats = all(s["symbol"].startswith("zf") for s in specs)
            what = "number" if floats else "size"
            out.append(
                Finding(
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
                )
            )
        if unbacked:
            lines = [
                f"{u['symbol']}"
                + (f" from {where_text(u['where'])}" if u["where"] else "")
                + f" (range {u['range']})"
                for u in unbacked
            ]
            out.append(
                Finding(
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
                )
            )
    return _fold_specializations(out)


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
            )
        )
    return out


def _seconds(metrics: dict[str, Any] | None, key: str) -> float:
    value = (metrics or {}).get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return 0.0


def _top_phase(compiles: Sequence[Compile]) -> str:
    """``; most of it in Inductor (6.1s)``: which of Dynamo's tracing, AOTAutograd and
    Inductor took most of the compiles' time (their metrics nest: each is the rest of the
    one above it)."""
    phases = {"Dynamo tracing": 0.0, "AOTAutograd": 0.0, "Inductor": 0.0}
    for comp in compiles:
        m = comp.metrics
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
        failures = _compile_failures(model)
        found = [*verdicts(model), *_crashes(model, failures), *failures]
        later = [
            *break_findings(model),
            *_cudagraphs(model),
            *_cache_misses(model),
            *_same_graphs(model),
            *_symbols(model),
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
