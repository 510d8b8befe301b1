"""Verdicts on the whole run, which come first when they hold: nothing compiled, a process that
died inside a compile, how the job ended, a trace cut short, CUDA graphs recorded again for
every shape, compiled autograd switched on and never used.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from tcview.analysis.breaks import break_cause
from tcview.analysis.compile_config import compile_config
from tcview.analysis.finding import (
    Finding,
    call_site,
    compile_ids,
    frame_name,
    frame_where,
    plural,
    ranks_of,
    text_frames,
)
from tcview.analysis.owner import Where, user_line
from tcview.analysis.recompile_causes import symbol_values
from tcview.analysis.rules import DOCS, Kind, Severity
from tcview.model.metadata import CompilationMetrics
from tcview.model.objects import Compile, CompileStatus, LogSource, Model, stack_frames

_SIGNAL_WORDS = {
    "SIGSEGV": "a segmentation fault (a crash in native code: a CUDA kernel, a C++ extension)",
    "SIGKILL": "SIGKILL (often the kernel's out-of-memory killer, or a scheduler's limit)",
    "SIGABRT": "an abort (a failed assertion in native code)",
    "SIGBUS": "a bus error (memory that went away, such as a full /dev/shm)",
    "SIGTERM": "SIGTERM (a scheduler or another process asked it to stop)",
    "SIGFPE": "a floating-point exception in native code",
    "SIGILL": "an illegal instruction (a binary built for another CPU)",
}
# The phase a compile was in: the furthest kind of record it wrote, furthest first.
_PHASES = (
    ("inductor_output_code", "after Inductor wrote its output code (loading or running it)"),
    ("inductor_post_grad_graph", "in Inductor, generating code"),
    ("aot_forward_graph", "in AOTAutograd or Inductor's lowering"),
    ("aot_inference_graph", "in AOTAutograd or Inductor's lowering"),
    ("aot_joint_graph", "in AOTAutograd"),
    ("dynamo_output_graph", "after Dynamo's graph, in AOTAutograd or Inductor"),
    ("dynamo_start", "in Dynamo, tracing the frame"),
)
_GLOG_TIME = re.compile(rb"^[IWEVD](\d{4} \d\d:\d\d:\d\d)")


def verdicts(model: Model) -> list[Finding]:
    return [
        *_job_end(model),
        *_died_in_compile(model),
        *_trace_cut(model),
        *_nothing_compiled(model),
        *_cudagraph_rerecords(model),
        *_compiled_autograd_unused(model),
    ]


def user_stopped(model: Model) -> bool:
    """The user stopped the job (its run.json says so): its KeyboardInterrupt is no crash."""
    return model.job_end is not None and model.job_end.stopped_by_user


# ---------------------------------------------------------------------- the job's end


def _job_end(model: Model) -> list[Finding]:
    end = model.job_end
    if end is None:
        return []
    ran = f" after {end.elapsed_s:.1f}s" if end.elapsed_s is not None else ""
    busy = _busy(model)
    if end.stopped_by_user:
        return [
            Finding(
                Kind.JOB_STOPPED,
                Severity.INFO,
                f"You stopped the job{ran}",
                f"The job was stopped on request ({end.status or 'stopped'}); its trace ends "
                f"there. {busy}",
                {"status": end.status, "signal": end.signal, "exit_code": end.exit_code},
                subject="stopped",
            )
        ]
    if end.signal is None:
        return []  # an exit code: the crash finding (its traceback, or run.json's code) says it
    words = _SIGNAL_WORDS.get(end.signal, end.signal)
    return [
        Finding(
            Kind.JOB_KILLED,
            Severity.ERROR,
            f"The job was killed by {end.signal}{ran}",
            f"It ended by {words}, not by a Python error, so there is no traceback. {busy}",
            {"status": end.status, "signal": end.signal},
            fix=(
                "Run it again with `ulimit -c unlimited` or under `python -X faulthandler` to "
                "see where native code crashed."
                if end.signal == "SIGSEGV"
                else ""
            ),
            subject=end.signal,
        )
    ]


def _busy(model: Model) -> str:
    """What the job was doing when it ended: the compile it died in, else its last compile."""
    dying = [c for f in model.files for c in [_unfinished(f)] if c is not None]
    if dying:
        comp = dying[0]
        return f"It was compiling `{frame_name(comp.frame)}` ({comp.id_label}), {_phase(comp)}."
    done = [c for c in model.compiles if c.metrics]
    if done:
        last = max(done, key=lambda c: c.order)
        return (
            f"No compile was under way: the last compile, `{frame_name(last.frame)}` "
            f"({last.id_label}), had finished, so it was running compiled or eager code."
        )
    return "Nothing had compiled yet."


# ---------------------------------------------------------------------- died in a compile


def _unfinished(source: LogSource) -> Compile | None:
    """The compile a complete trace file ends inside: its last compile, with no metrics."""
    if not source.finished or not source.logs_metrics or not source.compiles:
        return None
    if source.tail_cut >= 0:
        return None  # cut mid-record or mid-line: the cut, not a death, may be why it ends there
    last = max(source.compiles.values(), key=lambda c: c.order)
    if last.compilation_metrics() or last.failures or not last.records:
        return None
    # a whole trace: the compile's start is in it, or another compile's metrics are (a snippet
    # of a trace, cut out of one, ends anywhere)
    began = any(r.kind == "dynamo_start" for r in last.records)
    if not began and not any(c.compilation_metrics() for c in source.compiles.values()):
        return None
    return last


def _phase(comp: Compile) -> str:
    kinds = {r.kind for r in comp.records}
    return next((words for kind, words in _PHASES if kind in kinds), "early in the compile")


def _when(comp: Compile) -> str:
    last = comp.records[-1]
    try:
        m = _GLOG_TIME.match(last.source.header_line(last))
    except OSError:
        return ""
    return f" at {m.group(1).decode()[5:]}" if m else ""


# Open spans at a trace's end that mean a compile was under way (torch's chromium events).
_COMPILING = re.compile(r"compile|inductor|dynamo|aot|export|autotune|codegen", re.I)
_TAIL_EVENTS = 400  # chromium events read from a trace's end to find the spans still open


def open_spans(source: LogSource) -> list[str]:
    """The spans a trace file ends inside (outermost first): B events never ended."""
    offsets = source.chromium_offsets()
    if not offsets:
        return []
    try:
        events = source.chromium_payloads(offsets[-_TAIL_EVENTS:])
    except (OSError, ValueError):
        return []
    stack: list[str] = []
    for event in events:
        name = str(event.get("name", ""))
        if event.get("ph") == "B":
            stack.append(name)
        elif event.get("ph") == "E" and name in stack:
            del stack[len(stack) - 1 - stack[::-1].index(name) :]
    return stack


def _last_user_line(source: LogSource) -> Where | None:
    """The user's line of the last record that carries a stack (what was being compiled)."""
    for rec in reversed(source.records[-50:]):
        meta = rec.meta if isinstance(rec.meta, dict) else None
        if meta is not None and "stack" in meta:
            found = user_line([(f.filename, f.line) for f in stack_frames(source, meta["stack"])])
            if found is not None:
                return found
    return None


def _died_in_spans(source: LogSource) -> Finding | None:
    """A trace of a compile with no compile id (torch.export, AOTInductor) that ends inside it."""
    if not source.finished:
        return None
    spans = open_spans(source)
    if not spans or not _COMPILING.search(spans[0]):
        return None
    who = f" on rank {source.rank}" if source.rank is not None else ""
    inner = " › ".join(spans[-4:])
    return Finding(
        Kind.DIED_IN_COMPILE,
        Severity.ERROR,
        f"The process{who} died while compiling, inside `{spans[0]}`",
        f"Its trace ends inside {plural(len(spans), 'open span')}: {inner}. The compile never "
        "finished, so the process died or was killed there (a crash in native code, an "
        "out-of-memory kill, a timeout).",
        {"spans": spans, "file": source.display},
        _last_user_line(source),
        subject=spans[0],
    )


def _died_in_compile(model: Model) -> list[Finding]:
    out = []
    for source in model.files:
        comp = _unfinished(source)
        if comp is None:
            found = _died_in_spans(source) if not source.compiles else None
            if found is not None:
                out.append(found)
            continue
        who = f" on rank {source.rank}" if source.rank is not None else ""
        out.append(
            Finding(
                Kind.DIED_IN_COMPILE,
                Severity.ERROR,
                f"The process{who} died while compiling `{frame_name(comp.frame)}` "
                f"({comp.id_label})",
                f"Its trace ends inside compile {comp.id_label}, {_phase(comp)}{_when(comp)}: "
                "the compile never finished, so the process died or was killed there (a crash "
                "in native code, an out-of-memory kill, a timeout), or the file was cut there: "
                "a copy cut between two records ends the same way, its last record whole.",
                {"compile": comp.id_label, "phase": _phase(comp), "file": source.display},
                call_site(comp.frame),
                None,
                "",
                "",
                [comp],
                subject=f"{frame_name(comp.frame)}",
            )
        )
    return out


# ---------------------------------------------------------------------- cut short


def _trace_cut(model: Model) -> list[Finding]:
    """A trace file cut at its end or its start, or damaged in between: each only where the
    file's bytes show it (a process killed between two records leaves whole records, and
    `_died_in_compile` speaks of it)."""
    return [*_cut_end(model), *_cut_start(model), *_damaged(model)]


PLACES_SHOWN = 3  # files, lines and records named by their place; the rest are counted


def _never_finished(source: LogSource) -> list[Compile]:
    """A file's compiles with records but no compilation metrics (nor a failure), in the
    order they began: torch writes a compile's metrics as it ends."""
    return sorted(
        (
            c
            for c in source.compiles.values()
            if c.records and not c.compilation_metrics() and not c.failures
        ),
        key=lambda c: c.order,
    )


def _compile_words(comp: Compile) -> str:
    return f"{comp.id_label} (`{frame_name(comp.frame)}`)"


def _counted(n: int, noun: str, words: str, forms: tuple[str, str] = ("is", "are")) -> str:
    """``1 line that is no record``, ``3 payloads failing their md5``: `words` gets the form
    of its verb (or pronoun) that agrees with `n`."""
    return f"{plural(n, noun)} {words.format(forms[0] if n == 1 else forms[1])}"


def _first(items: list[str]) -> str:
    """The first PLACES_SHOWN of `items`, and how many more."""
    more = len(items) - PLACES_SHOWN
    return ", ".join(items[:PLACES_SHOWN]) + (f" and {more} more" if more > 0 else "")


def _files(said: list[str]) -> str:
    more = len(said) - PLACES_SHOWN
    return " ".join(said[:PLACES_SHOWN]) + (
        f" ({plural(more, 'more file')} alike.)" if more > 0 else ""
    )


def _where_it_ends(source: LogSource, line: int, owner: str | None) -> str:
    """Where a file cut short ends: inside its last record's payload, or in a line."""
    if not source.tail_in_payload:
        return f"in line {line:,}, which has no newline (torch ends every line it writes)"
    record = f", `{source.tail_label}`" if source.tail_label else ""
    why = (
        "the payload does not match the md5 its header gives"
        if source.truncated
        else "its last line has no newline (torch ends every line it writes)"
    )
    return (
        f"inside the payload of its last record{record}"
        + (f" of compile {owner}" if owner else "")
        + f", whose header is line {line:,}: {why}, so the rest of it is missing"
    )


def _cut_end(model: Model) -> list[Finding]:
    cut = [f for f in model.files if f.tail_cut >= 0]
    if not cut:
        return []
    said = []
    places = []
    inside: list[str] = []  # the compile each file ends inside, in words
    inside_ids: list[str] = []  # … and its id
    for source in cut:
        line = source.lineno_of(source.tail_cut)
        rec = next((r for r in reversed(source.records) if r.offset == source.tail_cut), None)
        owner = rec.compile_text if rec is not None and rec.key is not None else None
        words = f"{source.display} ends at byte {source.size:,} (its size), "
        words += f"{_where_it_ends(source, line, owner)}."
        unfinished = _never_finished(source)
        if len(unfinished) == 1:
            last = unfinished[0]
            words += (
                f" Compile {_compile_words(last)} started but has no compilation metrics: the "
                f"file ends while it was {_phase(last).removeprefix('in ')}."
                if _phase(last).startswith("in ")
                else f" Compile {_compile_words(last)} started but has no compilation metrics: "
                f"the file ends {_phase(last)}."
            )
        elif unfinished:
            words += (
                f" {len(unfinished)} compiles never finished (no compilation metrics): "
                f"{_first([c.id_label for c in unfinished])}."
            )
        else:
            words += " Every compile in it had finished."
        if unfinished:
            inside.append(_compile_words(unfinished[-1]))
            inside_ids.append(unfinished[-1].id_label)
        said.append(words)
        places.append(
            {
                "file": source.display,
                "size": source.size,
                "line": line,
                "record": source.tail_label or None,
                "compile": owner,
                "never_finished": [c.id_label for c in unfinished],
            }
        )
    if len(cut) == 1:
        where = f", inside compile {inside_ids[0]}" if inside_ids else ""
        title = (
            f"Trace file {cut[0].display} is cut short: it ends mid-"
            f"{'record' if cut[0].tail_in_payload else 'line'} at byte {cut[0].size:,}{where}"
        )
    else:
        title = f"{plural(len(cut), 'trace file')} cut short: each ends mid-record or mid-line"
    return [
        Finding(
            Kind.TRACE_CUT,
            Severity.WARNING,
            title,
            _files(said)
            + " The file was cut while it was written or copied (the job killed while writing, "
            "a full disk, a partial copy), and what the run did after that is not in it"
            + (
                ": the job may have died inside that compile, or only the file was cut."
                if inside
                else "."
            ),
            {"files": [f.display for f in cut], "inside_compile": inside, "cuts": places},
            subject="cut",
        )
    ]


def _cut_start(model: Model) -> list[Finding]:
    cut = [f for f in model.files if f.head_cut > 0]
    if not cut:
        return []
    said = []
    places = []
    for source in cut:
        if source.head_cut >= source.size:
            said.append(f"{source.display} holds only payload lines: no record header at all.")
            places.append({"file": source.display, "bytes": source.head_cut, "lines": None})
            continue
        lines = source.lineno_of(source.head_cut) - 1
        said.append(
            f"{source.display} begins with {plural(lines, 'payload line')} "
            f"({source.head_cut:,} bytes) of a record whose header is missing; its first "
            f"record is line {lines + 1:,}."
        )
        places.append({"file": source.display, "bytes": source.head_cut, "lines": lines})
    if len(cut) == 1:
        title = (
            f"Trace file {cut[0].display} is cut at its start: it begins inside a record "
            f"({cut[0].head_cut:,} bytes without their header)"
        )
    else:
        title = f"{plural(len(cut), 'trace file')} cut at their start: each begins inside a record"
    return [
        Finding(
            Kind.TRACE_CUT,
            Severity.WARNING,
            title,
            _files(said)
            + " torch begins every file with a record's header, so the file's beginning is "
            "missing (a copy of its end, a cut file): what was written before, records, "
            "string table entries and timings, is not in it.",
            {"files": [f.display for f in cut], "cuts": places},
            subject="cut_start",
        )
    ]


def _damaged(model: Model) -> list[Finding]:
    said = []
    places = []
    bad_lines = bad_md5 = 0
    for source in model.files:
        # What a cut start or end holds is the cut's (`_cut_start`, `_cut_end`), not damage.
        end = source.tail_cut if source.tail_cut >= 0 else source.size + 1
        lines = [(off, n) for off, n in source.unparsed if source.head_cut <= off < end]
        md5 = sorted(off for off in source.bad_md5 if off < end)
        if not lines and not md5:
            continue
        md5_lines = [source.lineno_of(off) for off in md5[:PLACES_SHOWN]]
        bad_lines += len(lines)
        bad_md5 += len(md5)
        parts = []
        if lines:
            one = len(lines) == 1
            parts.append(
                f"{plural(len(lines), 'line')} that {'is' if one else 'are'} no trace record "
                f"(line{'' if one else 's'} {_first([f'{n:,}' for _o, n in lines])}; the "
                f"first at byte {lines[0][0]:,})"
            )
        if md5:
            one = len(md5) == 1
            shown = [f"{n:,}" for n in md5_lines] + [""] * (len(md5) - len(md5_lines))  # counted
            parts.append(
                f"{plural(len(md5), 'payload')} that {'does' if one else 'do'} not match "
                f"{'its' if one else 'their'} md5 (the record{'' if one else 's'} at "
                f"line{'' if one else 's'} {_first(shown)})"
            )
        said.append(f"{source.display} holds {' and '.join(parts)}.")
        places.append(
            {
                "file": source.display,
                "bad_lines": len(lines),
                "bad_line_numbers": [n for _o, n in lines[:PLACES_SHOWN]],
                "md5_mismatches": len(md5),
                "md5_mismatch_lines": md5_lines,
            }
        )
    if not places:
        return []
    counted = [
        *([_counted(bad_lines, "line", "that {} no record")] if bad_lines else []),
        *([_counted(bad_md5, "payload", "failing {} md5", ("its", "their"))] if bad_md5 else []),
    ]
    name = (
        f"Trace file {places[0]['file']} is"
        if len(places) == 1
        else (f"{plural(len(places), 'trace file')} are")
    )
    return [
        Finding(
            Kind.TRACE_CUT,
            Severity.WARNING,
            f"{name} damaged inside: {' and '.join(counted)}",
            _files(said)
            + " torch writes only records and their payload lines, so the file was edited or "
            "damaged there (bytes lost or mixed in): facts of the records around those places "
            "may be missing or wrong.",
            {"files": [p["file"] for p in places], "damage": places},
            # Without `--verify` no payload is hashed but the last: an edit inside one is unseen.
            fix=""
            if bad_md5
            else "`tcview summary --verify` checks every payload's md5, to find the records "
            "that were changed.",
            subject="damaged",
        )
    ]


# ---------------------------------------------------------------------- nothing compiled


def _nothing_compiled(model: Model) -> list[Finding]:
    compiles = [c for c in model.compiles if c.compilation_metrics()]
    if not compiles or model.kernels or any(c.output_codes for c in model.compiles):
        return []
    if any(c.status not in (CompileStatus.EMPTY_GRAPH, CompileStatus.FAILED) for c in compiles):
        return []
    empty = [c for c in compiles if c.status is CompileStatus.EMPTY_GRAPH]
    if not empty:
        return []  # every compile failed: the failures say why
    empty.sort(key=lambda c: (str(c.file.path), c.order))  # as written, whatever order read
    frames = Counter(frame_name(c.frame) for c in empty)
    names = ", ".join(f"`{n}`" for n in sorted(frames, key=lambda n: (-frames[n], n))[:4])
    lines = [
        f"{plural(len(empty), 'compile')} of {names} captured no operation, and Inductor made "
        "no kernel: the model ran eagerly, with torch.compile's overhead on top."
    ]
    breaks = [b for c in empty for b in c.breaks]
    where = frame_where(empty[0].frame)
    fix = ""
    causes = [
        (b, break_cause(b.reason, b.explanation, b.location, b.user_stack, b.hints)) for b in breaks
    ]
    ddp = [b for b, cause in causes if cause.name == "ddp"]
    mine = [(b, cause) for b, cause in causes if cause.rule is not None and not cause.package]
    if ddp:
        lines.append(
            "torch.compile wrapped DistributedDataParallel: Dynamo compiled DDP's own forward, "
            "which breaks the graph around its logger and reducer, and the module it calls is "
            "torch's own code (such as `nn.Sequential`), where Dynamo starts no frame of its "
            "own."
        )
        fix = (
            "Compile the model inside DDP, `DDP(torch.compile(model))` (or `model.compile()` "
            "before wrapping it), so the compiled frame is the module's forward."
        )
    elif mine:
        b, cause = mine[0]
        lines.append(f"Every graph ended at a break before any operation: {cause.says}.")
        fix = cause.fix
        where = user_line(text_frames(b.user_stack)) or where
    elif breaks:
        reason, n = Counter(b.reason for b in breaks).most_common(1)[0]
        lines.append(f"The compiled frames broke the graph before any operation ({reason}, {n}×).")
    return [
        Finding(
            Kind.NOTHING_COMPILED,
            Severity.ERROR,
            "Nothing was compiled: every graph was empty and no kernel was made",
            "\n".join(lines),
            {"compiles": compile_ids(empty), "ranks": ranks_of(empty)},
            where,
            None,
            fix,
            DOCS["troubleshooting"],
            empty,
            subject="all",
        )
    ]


# ---------------------------------------------------------------------- CUDA graphs per shape

# torch warns from this many CUDA graphs of one compiled graph
# (torch._inductor.config.triton.cudagraph_dynamic_shape_warn_limit); tcview too.
RERECORD_MIN = 8


def _recordings(model: Model) -> dict[str, list[float]]:
    """{compile id: seconds of each CUDA graph recorded} of a trace's CUDAGraphNode.record
    spans, read only where a compile's runtime metrics show several recordings."""
    out: dict[str, list[float]] = {}
    for source in model.files:
        busy = [
            c
            for c in source.compiles.values()
            if sum(1 for m in c.metric_values if _cudagraphified(m)) >= RERECORD_MIN
        ]
        if not busy:
            continue
        begun: dict[str, float] = {}
        for event in source.chromium_payloads(source.chromium_offsets()):
            if event.get("name") != "CUDAGraphNode.record":
                continue
            args = event.get("args")
            cid = str(args.get("compile_id", "")) if isinstance(args, dict) else ""
            ts = event.get("ts")
            if not isinstance(ts, (int, float)):
                continue
            if event.get("ph") == "B":
                begun[cid] = float(ts)
            elif event.get("ph") == "E" and cid in begun:
                out.setdefault(cid, []).append((float(ts) - begun.pop(cid)) / 1e6)
    return out


def _cudagraphified(m: CompilationMetrics) -> bool:
    """A runtime metrics value that timed a cudagraphify (the graph recorded)."""
    value = m.runtime_cudagraphify_time_us
    return m.runtime and value is not None and value > 0


def _cudagraph_rerecords(model: Model) -> list[Finding]:
    recorded = _recordings(model)
    out = []
    for comp in model.compiles:
        times = recorded.get(comp.id_text, [])
        if len(times) < RERECORD_MIN:
            continue
        dynamic = bool(symbol_values(comp))
        out.append(
            Finding(
                Kind.CUDAGRAPH_RERECORD,
                Severity.WARNING,
                f"CUDA graphs recorded {len(times)} times for `{frame_name(comp.frame)}` "
                f"({comp.id_label})",
                f"One compiled graph was recorded as a CUDA graph {len(times)} times, "
                f"{sum(times):.2f}s of recording in all"
                + (
                    ": its shapes are dynamic, and CUDA graphs record a new graph for each "
                    "distinct size (torch warns from "
                    f"{RERECORD_MIN}); each one also keeps its own memory pool."
                    if dynamic
                    else "."
                ),
                {"compile": comp.id_label, "recordings": len(times), "seconds": sum(times)},
                call_site(comp.frame),
                None,
                "Pad the inputs to a few bucket sizes (multiples of 8 or 16) so a handful of "
                "graphs cover every call, or set "
                "`torch._inductor.config.triton.cudagraph_skip_dynamic_graphs = True` to run "
                "dynamic-shape graphs without CUDA graphs."
                if dynamic
                else "",
                DOCS["cudagraphs"],
                [comp],
                subject=frame_name(comp.frame),
            )
        )
    return out


# ---------------------------------------------------------------------- compiled autograd


def _compiled_autograd_unused(model: Model) -> list[Finding]:
    if any(c.key.autograd_id is not None for c in model.compiles):
        return []
    first = {}  # one compile a process: the setting is the process's
    for comp in model.compiles:
        if comp.metrics and id(comp.file) not in first:
            first[id(comp.file)] = comp
    on = [c for c in first.values() if _dynamo_config(c).get("compiled_autograd") is True]
    if not on:
        return []
    backward = any(r.role == "backward" for c in model.compiles for r in c.records)
    return [
        Finding(
            Kind.COMPILED_AUTOGRAD_UNUSED,
            Severity.INFO,
            "Compiled autograd was on, yet no backward ran through it",
            "torch._dynamo.config.compiled_autograd was True when the frames compiled, but no "
            "compiled autograd graph (a `!0/…` compile) was made"
            + (
                ": the backward ran as AOTAutograd's compiled backward instead."
                if backward
                else ": no backward ran while it was on."
            ),
            {"compiles": compile_ids(on[:8])},
            None,
            None,
            "Nothing is lost, but nothing is gained: where no backward should run compiled, "
            "leave `torch._dynamo.config.compiled_autograd` off; otherwise call `.backward()` "
            "while it is on.",
            DOCS["compiled_autograd"],
            subject="config",
        )
    ]


def _dynamo_config(comp: Compile) -> dict[str, Any]:
    return compile_config(comp, False).dynamo
