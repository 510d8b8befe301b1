"""Findings of a run's crashes and failed compiles: the uncaught errors (alike ones on
several ranks as one), where in the user's code and in compiled code they were raised, and
torch's own advice from the message.
"""

from __future__ import annotations

import re
from typing import Any

from tcview.analysis.breaks import break_cause, is_generic_hint
from tcview.analysis.finding import (
    STACK_SHOWN,
    TRACEBACK_LINE,
    Finding,
    compile_ids,
    frame_name,
    frame_where,
    plural,
    possessive,
    sentence,
    text_frames,
    total_cost,
    traceback_frames,
    where_subject,
    where_text,
)
from tcview.analysis.owner import Owner, Where, is_user_file, owner_of, user_line
from tcview.analysis.provenance import kernel_provenance
from tcview.analysis.rules import DOCS, Kind, Severity
from tcview.analysis.verdicts import user_stopped
from tcview.model.objects import Compile, Error, Model, Record
from tcview.model.ranks import ranks_label

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


def crash_findings(model: Model, failures: list[Finding]) -> list[Finding]:
    """The run's uncaught errors, alike ones (several ranks) as one; a compile failure that
    is the crash (same exception and message) is folded into it (taken out of `failures`)."""
    groups: dict[tuple[str, str], list[Error]] = {}
    stopped = user_stopped(model)
    for error in model.run_errors():
        if stopped and error.error_type.rsplit(".", 1)[-1] in _STOP_ERRORS:
            continue  # the user's stop, which the job_stopped verdict tells
        groups.setdefault((error.error_type, error.first_line), []).append(error)
    return [
        _crash_finding(model, etype, first, errors, failures)
        for (etype, first), errors in groups.items()
    ]


def _crash_finding(
    model: Model, etype: str, first: str, errors: list[Error], failures: list[Finding]
) -> Finding:
    error = errors[0]
    frames, shown, outer, below = _crash_stack(error)
    where = user_line(frames)
    hint = torch_hint(error.message)
    ranks = sorted({e.rank for e in errors if e.rank is not None})
    who = f" on {ranks_label(ranks)}" if ranks else ""
    at = f" at {where_text(where)}" if where else ""
    lines = _crash_lines(etype, first, error.message, shown, outer, below)
    url = _URL.search(error.message)
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
    compiles, where = _compiled_code(model, frames, lines, evidence, where)
    where = _fold_failures(failures, etype, first, compiles, where)
    if compiles:
        evidence["compiles"] = compile_ids(compiles)
    cause = break_cause(first, error.message, where_text(where), [], [])
    if cause.rule is not None:
        lines.insert(1, f"Cause: {cause.says}.")
    fix = cause.fix or ("" if is_generic_hint(hint) else hint)
    if hint:
        evidence["torch_hint"] = hint  # torch's own words, a fix only where specific
    return Finding(
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
        subject=f"{etype}@{where_subject(where) or 'torch'}",
    )


def _crash_lines(
    etype: str, first: str, message: str, shown: list[str], outer: int, below: int
) -> list[str]:
    """The exception, torch's explanation of it, and the stack from the user's line out."""
    lines = [f"{etype}: {first}" if first else etype]
    explanation = _EXPLANATION.search(message)
    if explanation is not None:
        lines.append(explanation.group(1).strip())
    if shown:
        lines.append("Stack, from the user's line outward:")
        lines += [f"  {t}" for t in shown]
        if outer:
            lines.append(f"  … {outer} outer frames")
        if below:
            lines.append(f"  ({below} frames inside torch and libraries below the first line)")
    return lines


def _compiled_code(
    model: Model,
    frames: list[tuple[str, int]],
    lines: list[str],
    evidence: dict[str, Any],
    where: Where | None,
) -> tuple[list[Compile], Where | None]:
    """The compile whose code the crash was raised in (a sentence on it put in `lines`, its
    id in `evidence`), and the user's line it leads to (else `where`)."""
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
    return compiles, where


def _fold_failures(
    failures: list[Finding], etype: str, first: str, compiles: list[Compile], where: Where | None
) -> Where | None:
    """Takes the compile failures that are this crash (the same exception and message) out of
    `failures`, their compiles into `compiles`; the crash's line, else theirs."""
    for failure in list(failures):
        ftype = failure.evidence.get("fail_type", "")
        if ftype and etype.rsplit(".", 1)[-1] == ftype and failure.evidence.get("reason") == first:
            failures.remove(failure)
            compiles += failure.compiles
            where = where or failure.where
    return where


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


def compile_failure_findings(model: Model) -> list[Finding]:
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
