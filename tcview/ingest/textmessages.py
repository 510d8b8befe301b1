"""What each kind of TORCH_LOGS message yields: its kind, where it splits, and its handlers.

A message's kind is its artifact tag (``[__graph_breaks]``), or for untagged messages a name
told from how its first line starts (``Step 1: ...`` is "step"). The handlers of a kind apply to
a message whose first line starts with one of that kind's `HANDLED_MARKS`: `HEADER_HANDLERS` run
when it starts (the facts appear at once), `CLOSE_HANDLERS` when it is complete (the details
that need the whole text). They have the trace handlers' shape: (builder, process, record).
"""

from __future__ import annotations

import re

from tcview.ingest.builder import Builder, Handler
from tcview.ingest.textlines import ts_seconds
from tcview.ingest.textproc import ProcessLog, log_meta
from tcview.model.compile_id import parse_compile_id
from tcview.model.facts import BreakText, parse_graph_break
from tcview.model.metadata import CompilationMetrics
from tcview.model.objects import (
    RAN_EAGERLY,
    Compile,
    CudagraphNote,
    Failure,
    FusionDecision,
    GraphBreak,
    Record,
)

BREAK_MARKS = (
    b"Graph break in user code at",
    b"Graph break (user stack suppressed due to duplicate graph break) in user code at",
)
RECOMPILE_MARK = b"Recompiling function"
OUTPUT_CODE_MARK = b"Output code:"
# Dynamo's INFO message that a compile starts (again with ``_N`` for each restart).
START_MARK = b"Step 1: torchdynamo start tracing"

# Kinds of untagged messages, told apart by how their first line starts.
UNTAGGED_KINDS: tuple[tuple[bytes, str], ...] = (
    (b"Step ", "step"),
    (b"torch._dynamo hit config.", "recompile_limit"),
    (b"WON'T CONVERT", "wont_convert"),
    (b"fx graph cache ", "cache"),
    (b"AOTAutograd cache ", "cache"),
)
UNTAGGED_MARKS = tuple(mark for mark, _ in UNTAGGED_KINDS)
DYNAMIC_SOURCES = (b"symbolic_shapes.py", b"_dynamo/variables/builder.py")

# Artifact tags PyTorch registers (torch/_logging/_registrations.py); others count as unknown.
KNOWN_TAGS = frozenset(
    [
        "graph_breaks",
        "recompiles",
        "recompiles_verbose",
        "guards",
        "verbose_guards",
        "graph_code",
        "graph_code_verbose",
        "graph",
        "graph_sizes",
        "aot_graphs",
        "aot_joint_graph",
        "aot_graphs_effects",
        "post_grad_graphs",
        "pre_grad_graphs",
        "ir_pre_fusion",
        "ir_post_fusion",
        "output_code",
        "kernel_code",
        "schedule",
        "fusion",
        "overlap",
        "loop_ordering",
        "loop_tiling",
        "perf_hints",
        "onnx_diagnostics",
        "compiled_autograd",
        "compiled_autograd_verbose",
        "ddp_graphs",
        "trace_source",
        "trace_call",
        "trace_bytecode",
        "bytecode",
        "custom_format_test_artifact",
        "side_effects",
        "dynamic",
        "cudagraphs",
        "autotuning",
        "benchmarking",
        "graph_region_expansion",
        "inductor_metrics",
        "hierarchical_compile",
        "cudagraph_static_inputs",
        "annotation",
        "node_runtime_estimation",
        "caching",
    ]
)

# Record kinds (tags or untagged kinds) that are a split point when their first line starts so.
SPLIT_MARKS: dict[str, tuple[bytes, ...]] = {
    "graph_breaks": BREAK_MARKS,
    "recompiles": (RECOMPILE_MARK,),
    "recompiles_verbose": (RECOMPILE_MARK,),
    "output_code": (OUTPUT_CODE_MARK, b"Output code written to"),
    "graph_code": (b"TRACED GRAPH",),
    "aot_graphs": (b"TRACED GRAPH",),
    "aot_joint_graph": (b"TRACED GRAPH",),
}


def untagged_kind(text: bytes, source: bytes) -> str:
    """The kind of a message without a tag, from its first line's text and source file."""
    if text.startswith(UNTAGGED_MARKS):
        for mark, kind in UNTAGGED_KINDS:
            if text.startswith(mark):
                return kind
    if source.endswith(DYNAMIC_SOURCES):
        return "dynamic"
    return "log"


# ---------------------------------------------------------------------- handlers


def h_break(b: Builder, proc: ProcessLog, rec: Record) -> None:
    where = proc.open_text.split(b" in user code at ", 1)[-1].split(b" ", 1)[0]
    proc.open_fact = b.graph_break(rec, BreakText(location=where.decode("utf-8", "replace")))


def c_break(b: Builder, proc: ProcessLog, rec: Record) -> None:
    gb = proc.open_fact
    if isinstance(gb, GraphBreak):
        gb.fill(parse_graph_break(rec.payload()))


_RECOMPILING = re.compile(r"Recompiling function (\S+) in (.+):(\d+)\s*$")


def h_recompile(b: Builder, proc: ProcessLog, rec: Record) -> None:
    """``Recompiling function f in FILE:LINE``: names the frame of compile 0/N."""
    comp = rec.compile
    m = _RECOMPILING.match(proc.open_text.decode("utf-8", "replace"))
    if m and comp is not None and comp.frame is not None and comp.frame.co_name is None:
        comp.frame.co_name, comp.frame.co_filename = m.group(1), m.group(2)
        comp.frame.co_firstlineno = int(m.group(3))


def c_recompile(b: Builder, proc: ProcessLog, rec: Record) -> None:
    """The guard failures that made the compile (a recompile counts without them)."""
    b.recompile_reasons(rec, parse_guard_failures(rec.payload()))


_GUARD_FAILURE = re.compile(r"^\s*- (!?\d+(?:/\d+)*(?:_\d+)?): (.*)$")
_GUARD_MORE = re.compile(r"^\s*- (.*)$")


def parse_guard_failures(text: str) -> list[str]:
    """``- 0/0: guard`` lines of a recompile message; ``-   more`` lines extend the last one."""
    reasons: list[str] = []
    for line in text.split("\n")[1:]:
        m = _GUARD_FAILURE.match(line)
        if m:
            reasons.append(f"{m.group(1)}: {m.group(2).rstrip()}")
            continue
        more = _GUARD_MORE.match(line)
        if more and reasons:
            reasons[-1] += "\n" + more.group(1).rstrip()
    return reasons


def h_output_code(b: Builder, proc: ProcessLog, rec: Record) -> None:
    proc.output_codes += 1  # its kernels are found line by line by the indexer


_STEP = re.compile(r"Step (\d): torchdynamo start tracing (\S+) (.+):(\d+)\s*$")


def h_step(b: Builder, proc: ProcessLog, rec: Record) -> None:
    """``Step 1/2/3`` of a compile: names its frame, and their times estimate its duration."""
    comp = rec.compile
    if comp is None:
        return
    m = _STEP.match(proc.open_text.decode("utf-8", "replace"))
    frame = comp.frame
    if m:
        proc.started_frames[(m.group(2), m.group(3), int(m.group(4)))] = comp
    if m and frame is not None and frame.co_name is None:
        frame.co_name, frame.co_filename = m.group(2), m.group(3)
        frame.co_firstlineno = int(m.group(4))
    seconds = ts_seconds(log_meta(rec).ts)
    if seconds is None:
        return
    span = proc.step_span.setdefault(comp, [seconds, seconds, 0])
    span[0] = min(span[0], seconds)
    span[1] = max(span[1], seconds)
    span[2] += 1
    if span[2] >= 2:
        seconds = round(span[1] - span[0], 6)
        metrics = comp.metrics if comp.metrics is not None else {}
        metrics.update(
            entire_frame_compile_time_s=seconds,
            estimated=True,
            source="TORCH_LOGS Step 1/2/3 timestamps",
        )
        comp.metrics = metrics
        # A capture logs no metrics records: its estimate is the compile's only metrics value.
        comp.metric_values[:] = [CompilationMetrics.estimate(seconds)]


def h_recompile_limit(b: Builder, proc: ProcessLog, rec: Record) -> None:
    text = proc.open_text.decode("utf-8", "replace")
    proc.open_fact = proc.limit_failure = b.failure(
        proc, rec, "recompile limit", text, "", "torch_logs"
    )


_LIMIT_FUNCTION = re.compile(r"function: '([^']*)' \((.*)\)")


def c_recompile_limit(b: Builder, proc: ProcessLog, rec: Record) -> None:
    failure = proc.open_fact
    if not isinstance(failure, Failure):
        return
    payload = rec.payload()
    failure.reason = payload.strip()
    m = _LIMIT_FUNCTION.search(payload)
    if m:
        failure.location = m.group(2)


_WONT = re.compile(r"WON'T CONVERT (\S+) (.+) line (\d+)")
_EXC_LINE = re.compile(
    r"^([A-Za-z_][\w.]*(?:Error|Exception|Unsupported|Failed|Exit|Interrupt)\w*): ?(.*)$"
)


SOFT_LEVELS = ("I", "V", "D")  # Dynamo logs a soft failure (Unsupported) at INFO


def h_wont_convert(b: Builder, proc: ProcessLog, rec: Record) -> None:
    """``WON'T CONVERT fn file line N``: Dynamo gave up on a frame and runs it eagerly.

    A compile failure (the trace has a compilation_metrics fail_type for it) when
    - it is a warning: an exception escaped the compile and was suppressed; or
    - it is at INFO (Unsupported, a "soft" failure) and this process started tracing that
      frame (``Step 1: torchdynamo start tracing fn file:N``): frames Dynamo skips before
      compiling (generators) are not failures;
    - and it is not the recompile limit just reported by its ``hit config.recompile_limit``
      warning (that failure is this one).
    The failure belongs to the last compile that started tracing the frame, if one did.
    """
    m = _WONT.match(proc.open_text.decode("utf-8", "replace"))
    if m is None:
        return
    name, filename, line = m.group(1), m.group(2), int(m.group(3))
    where = f"{filename}:{line}"
    limit = proc.limit_failure
    if limit is not None and limit.location == where:
        proc.limit_failure = None
        return
    comp = proc.started_frames.get((name, filename, line))
    if log_meta(rec).level in SOFT_LEVELS and comp is None:
        return
    failure = b.failure(proc, rec, "WON'T CONVERT", "", where, "torch_logs", comp)
    proc.open_fact = failure


def c_wont_convert(b: Builder, proc: ProcessLog, rec: Record) -> None:
    failure = proc.open_fact
    if not isinstance(failure, Failure):  # an INFO message: no failure
        return
    lines = rec.payload().split("\n")
    for i, line in enumerate(lines):
        em = _EXC_LINE.match(line)
        if em:
            failure.fail_type = em.group(1).rsplit(".", 1)[-1]
            failure.reason = "\n".join([em.group(2), *lines[i + 1 :]]).strip()
            return
    failure.reason = "\n".join(lines[1:]).strip()


_CACHE = re.compile(rb"(fx graph|AOTAutograd) cache (hit|miss|bypass)")


def h_cache(b: Builder, proc: ProcessLog, rec: Record) -> None:
    m = _CACHE.match(proc.open_text)
    if m is not None:
        cache = "fx_graph" if m.group(1) == b"fx graph" else "aotautograd"
        b.cache_event(rec, cache, m.group(2).decode())


# torch's CUDA-graph messages (the `cudagraphs` log; `perf_hints` on older torch).
CUDAGRAPH_SKIP_MARK = b"skipping cudagraphs due to"
_RECORDING = re.compile(rb"^\[(!?\d+(?:/\d+)*(?:_\d+)?)\] Recording function=")
_PARTITIONS = re.compile(
    rb"^Created \d+ graph partitions?: \d+ cudagraphable, \d+ non-cudagraphable"
)
_OP_REASON = re.compile(rb"^\s+op\d+: reason=(.*?)(?:, ir=.*)?$")
# CUDA graph trees ran a compile's graph as plain code instead of replaying its CUDA graph.
_EAGER = re.compile(rb"^\[(!?\d+(?:/\d+)*(?:_\d+)?)\] Running eager function=")


def h_cudagraphs(b: Builder, proc: ProcessLog, rec: Record) -> None:
    """A CUDA-graph message: a skip (its compile: the message's, else the process's last
    one, see `CudagraphNote`), a recorded graph, the partitions and why ops are left out."""
    text = proc.open_text
    if text.startswith(CUDAGRAPH_SKIP_MARK):
        comp = rec.compile or proc.last_compile
        if comp is not None:
            proc.open_fact = b.cudagraph_note(comp, rec, "skipped", text.decode("utf-8", "replace"))
        return
    eager = _EAGER.match(text)
    if eager is not None:
        parsed = parse_compile_id(eager.group(1).decode("ascii"))
        comp = proc.current.get(parsed[0]) if parsed is not None else None
        if comp is not None and not any(n.kind == RAN_EAGERLY for n in comp.cudagraph_notes):
            b.cudagraph_note(comp, rec, RAN_EAGERLY, "")  # why: torch's warning, if it comes
        return
    recording = _RECORDING.match(text)
    if recording is not None:
        parsed = parse_compile_id(recording.group(1).decode("ascii"))
        comp = proc.current.get(parsed[0]) if parsed is not None else None
        if comp is not None and not any(n.kind == "recorded" for n in comp.cudagraph_notes):
            b.cudagraph_note(comp, rec, "recorded", text.decode("utf-8", "replace"))
        return
    comp = rec.compile
    if comp is None:
        return
    if _PARTITIONS.match(text):
        b.cudagraph_note(comp, rec, "partitions", text.decode("utf-8", "replace"))
        return
    reason = _OP_REASON.match(text)
    if reason is not None:
        b.cudagraph_note(comp, rec, "not cudagraphable", reason.group(1).decode("utf-8", "replace"))


def c_cudagraphs(b: Builder, proc: ProcessLog, rec: Record) -> None:
    """A skip's whole message (``… Found from : File "x.py", line 19, in f``)."""
    note = proc.open_fact
    if isinstance(note, CudagraphNote):
        note.text = rec.payload().strip()


# Kind -> how the first line of a message of that kind starts when its handlers apply.
HANDLED_MARKS: dict[str, tuple[bytes, ...]] = {
    "graph_breaks": BREAK_MARKS,
    "recompiles": (RECOMPILE_MARK,),
    "recompiles_verbose": (RECOMPILE_MARK,),
    "output_code": (OUTPUT_CODE_MARK,),
    "step": (b"Step ",),
    "recompile_limit": (b"torch._dynamo hit config.recompile_limit",),
    "wont_convert": (b"WON'T CONVERT",),
    "cache": (b"fx graph cache ", b"AOTAutograd cache "),
    "cudagraphs": (CUDAGRAPH_SKIP_MARK, b"[", b"Created ", b"    op"),
    "perf_hints": (CUDAGRAPH_SKIP_MARK,),
}

HEADER_HANDLERS: dict[str, Handler[ProcessLog]] = {
    "graph_breaks": h_break,
    "recompiles": h_recompile,
    "recompiles_verbose": h_recompile,
    "output_code": h_output_code,
    "step": h_step,
    "recompile_limit": h_recompile_limit,
    "wont_convert": h_wont_convert,
    "cache": h_cache,
    "cudagraphs": h_cudagraphs,
    "perf_hints": h_cudagraphs,
}

CLOSE_HANDLERS: dict[str, Handler[ProcessLog]] = {
    "graph_breaks": c_break,
    "recompiles": c_recompile,
    "recompiles_verbose": c_recompile,
    "recompile_limit": c_recompile_limit,
    "wont_convert": c_wont_convert,
    "cudagraphs": c_cudagraphs,
    "perf_hints": c_cudagraphs,
}


# ---------------------------------------------------------------------- facts read on demand

_FUSION = re.compile(r"^(fusing|cannot fuse) (\S+) with (\S+?)(?::\s*(.*))?$")


def fusion_decisions(rec: Record) -> list[FusionDecision]:
    """The decisions of one `fusion` message (read from disk)."""
    comp: Compile | None = rec.compile
    out = []
    for line in rec.payload().split("\n"):
        m = _FUSION.match(line.strip())
        if m:
            fused = m.group(1) == "fusing"
            out.append(FusionDecision(comp, rec, m.group(2), m.group(3), fused, m.group(4) or ""))
    return out
