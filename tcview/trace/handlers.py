"""One small handler per event kind, registered in tables.

`on_header` runs when a record's header is indexed; `on_close` runs once its payload is
complete, for the kinds whose facts live in the payload.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .facts import parse_graph_break, parse_recompile_reasons
from .model import CacheEvent, Compile, Failure, GraphBreak, Kernel, Recompile, Record, StackFrame

KNOWN_KINDS = frozenset(
    """str dynamo_start dynamo_output_graph dynamo_guards dynamo_cpp_guards_str
    aot_forward_graph aot_backward_graph aot_joint_graph aot_inference_graph
    inductor_pre_grad_graph inductor_post_grad_graph inductor_output_code graph_dump
    compilation_metrics bwd_compilation_metrics compilation_metrics_runtime
    bwd_compilation_metrics_runtime chromium_event artifact describe_storage describe_tensor
    describe_source create_symbol create_unbacked_symbol symbolic_shape_specialization
    guard_added_fast guard_added propagate_real_tensors_provenance expression_created
    compiled_autograd_graph optimize_ddp_split_graph optimize_ddp_split_child dump_file link
    exported_program missing_fake_kernel""".split()
)

GRAPH_KINDS = frozenset(
    """dynamo_output_graph aot_forward_graph aot_backward_graph aot_joint_graph
    aot_inference_graph inductor_pre_grad_graph inductor_post_grad_graph graph_dump
    compiled_autograd_graph optimize_ddp_split_graph optimize_ddp_split_child
    before_pre_grad_graph after_pre_grad_graph before_joint_graph after_joint_graph
    before_post_grad_graph""".split()
)


class Sink:
    """Receives derived facts as they appear; the TraceSet subclasses it to aggregate."""

    def compile(self, comp: Compile) -> None: ...
    def graph_break(self, gb: GraphBreak) -> None: ...
    def recompile(self, rc: Recompile) -> None: ...
    def failure(self, failure: Failure) -> None: ...
    def cache(self, event: CacheEvent) -> None: ...
    def kernel(self, kernel: Kernel) -> None: ...
    def unparsed(self, file: Any, offset: int, lineno: int) -> None: ...


Handler = Callable[[Any, Record], None]


# ------------------------------------------------------------------ header handlers


def h_str(tf: Any, rec: Record) -> None:
    meta = rec.meta
    if isinstance(meta, list) and len(meta) == 2:
        try:
            tf.strings[meta[1]] = str(meta[0])
        except TypeError:
            tf.problems.append(f"line {rec.lineno}: string table id is not hashable")


def h_dynamo_start(tf: Any, rec: Record) -> None:
    comp = rec.compile
    if comp is None or comp.frame is None or comp.frame.stack:
        return
    stack = rec.meta.get("stack") if isinstance(rec.meta, dict) else None
    if not isinstance(stack, list):
        return
    frames = []
    for item in stack[:256]:
        if not isinstance(item, dict):
            continue
        fid = item.get("filename")
        try:
            filename = tf.strings.get(fid) if not isinstance(fid, str) else fid
        except TypeError:
            filename = None
        if filename is None:
            tf.missing_strings += 1
            filename = f"<missing string {fid!r}>"
        frames.append(StackFrame(filename, item.get("line"), str(item.get("name", "?"))))
    comp.frame.stack = frames


def h_metrics(tf: Any, rec: Record) -> None:
    meta = rec.meta if isinstance(rec.meta, dict) else None
    if meta is None:
        return
    failed = rec.kind == "compilation_metrics" and bool(meta.get("fail_type"))
    if failed:
        tf.failure_count += 1
    comp = rec.compile
    if comp is not None:
        comp.metric_records.append(rec)
        if rec.kind == "compilation_metrics":
            comp.metrics = meta
            frame = comp.frame
            if frame is not None and frame.co_name is None:
                frame.co_name = _str_or_none(meta.get("co_name"))
                frame.co_filename = _str_or_none(meta.get("co_filename"))
                frame.co_firstlineno = meta.get("co_firstlineno")
    if failed:
        fn, ln = meta.get("fail_user_frame_filename"), meta.get("fail_user_frame_lineno")
        where = f"{fn}:{ln}" if fn else ""
        failure = Failure(
            comp, str(meta["fail_type"]), str(meta.get("fail_reason") or ""), where, rec
        )
        if comp is not None:
            comp.failures.append(failure)
        tf.sink.failure(failure)


def h_artifact(tf: Any, rec: Record) -> None:
    name = rec.name or ""
    for prefix in ("fx_graph_cache_", "aotautograd_cache_"):
        if name.startswith(prefix):
            result = name[len(prefix) :]
            comp = rec.compile
            event = CacheEvent(comp, prefix[:-7], result, rec)
            if comp is not None:
                comp.cache.append(event)
            tf.sink.cache(event)
            return


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


HEADER_HANDLERS: dict[str, Handler] = {
    "str": h_str,
    "dynamo_start": h_dynamo_start,
    "compilation_metrics": h_metrics,
    "bwd_compilation_metrics": h_metrics,
    "artifact": h_artifact,
}


def on_header(tf: Any, rec: Record) -> None:
    handler = HEADER_HANDLERS.get(rec.kind)
    if handler is not None:
        handler(tf, rec)
    elif rec.kind not in KNOWN_KINDS:
        tf.unknown[rec.kind] += 1


# ------------------------------------------------------------------ close handlers


def c_graph_break(tf: Any, rec: Record) -> None:
    text = rec.payload()
    parsed = parse_graph_break(text)
    comp = rec.compile
    gb = GraphBreak(
        comp,
        rec,
        parsed.reason,
        parsed.location,
        parsed.explanation,
        parsed.hints,
        parsed.url,
        parsed.user_stack,
    )
    if comp is not None:
        comp.breaks.append(gb)
    tf.sink.graph_break(gb)


def c_recompile(tf: Any, rec: Record) -> None:
    comp = rec.compile
    if comp is None:
        return
    reasons = parse_recompile_reasons(rec.payload())
    if comp.recompile is None:
        comp.recompile = Recompile(comp, reasons, rec)
        tf.sink.recompile(comp.recompile)
    else:
        comp.recompile.reasons = reasons
        comp.recompile.record = rec


CLOSE_ARTIFACTS: dict[str, Handler] = {
    "dynamo_graph_break_reason": c_graph_break,
    "recompile_reasons": c_recompile,
}


def on_close(tf: Any, rec: Record) -> None:
    if rec.kind == "artifact" and rec.name in CLOSE_ARTIFACTS:
        CLOSE_ARTIFACTS[rec.name](tf, rec)
