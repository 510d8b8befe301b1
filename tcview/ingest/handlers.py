"""What each kind of trace record yields: one small handler per kind, in two tables.

A trace file (tracefile.py) runs them; they need only what a `LogSource` declares.

`HEADER_HANDLERS` (by record kind) run when a record's header is indexed; `CLOSE_HANDLERS` (by
artifact name) run once its payload is complete, for the facts that live in the payload.
Handlers make facts through the `Builder`; a handler that raises is recorded, not fatal.

A handler is the one place a kind's JSON is read: it decodes what tcview uses of the header's
value into a typed record of model/metadata.py (`CompilationMetrics` for the four metrics
kinds, `CacheArtifact` for the cache artifacts; dynamo_start's stack into `StackFrame`s) and
keeps it on the compile, for consumers to read typed fields instead of the raw dict. (Raw
values remain for what lists every field, and for what is read from disk on demand: chromium
events, a whole dynamo_config.) To read a new kind of torch event:

1. model/metadata.py: a frozen dataclass of the fields tcview needs (str, int, float, bool,
   None, tuples of str), with a `decode` that never raises (a field of the wrong type is None);
   if a new `Compile` field keeps it, add the class to `METADATA_TYPES` so that the index
   cache writes it, and bump ingest/snapshot.py's FORMAT (a record's own fields may change
   later without a bump: the cache checks the field names it wrote);
2. here: a handler that decodes the record's `meta` and stores the result or makes facts
   through the `Builder`, in `HEADER_HANDLERS` under the kind (`CLOSE_HANDLERS`, by artifact
   name, when the facts are in the payload), and the kind in `KNOWN_KINDS`;
3. a fixture: a real record of the kind in tests/fixtures (or sample_traces), decoded by a test
   (tests/test_metadata.py).
"""

from __future__ import annotations

from tcview.ingest.builder import Builder, Handler
from tcview.model.facts import parse_graph_break, parse_recompile_reasons
from tcview.model.metadata import CacheArtifact, CompilationMetrics, TorchVersion
from tcview.model.objects import STACK_LIMIT, LogSource, Record, stack_frames

KNOWN_KINDS = frozenset(
    [
        "str",
        "dynamo_start",
        "dynamo_output_graph",
        "dynamo_guards",
        "dynamo_cpp_guards_str",
        "aot_forward_graph",
        "aot_backward_graph",
        "aot_joint_graph",
        "aot_inference_graph",
        "inductor_pre_grad_graph",
        "inductor_post_grad_graph",
        "inductor_output_code",
        "graph_dump",
        "compilation_metrics",
        "bwd_compilation_metrics",
        "compilation_metrics_runtime",
        "bwd_compilation_metrics_runtime",
        "chromium_event",
        "artifact",
        "describe_storage",
        "describe_tensor",
        "describe_source",
        "create_symbol",
        "create_unbacked_symbol",
        "symbolic_shape_specialization",
        "guard_added_fast",
        "guard_added",
        "propagate_real_tensors_provenance",
        "expression_created",
        "compiled_autograd_graph",
        "optimize_ddp_split_graph",
        "optimize_ddp_split_child",
        "dump_file",
        "link",
        "exported_program",
        "missing_fake_kernel",
    ]
)


# ------------------------------------------------------------------ header handlers


def h_str(b: Builder, tf: LogSource, rec: Record) -> None:
    meta = rec.meta
    if isinstance(meta, list) and len(meta) == 2:
        try:
            tf.define_string(meta[1], str(meta[0]))
        except TypeError:
            tf.problems.append(f"line {rec.line_number()}: string table id is not hashable")


def h_dynamo_start(b: Builder, tf: LogSource, rec: Record) -> None:
    comp = rec.compile
    if comp is None or comp.frame is None or comp.frame.stack:
        return
    stack = rec.meta.get("stack") if isinstance(rec.meta, dict) else None
    if not isinstance(stack, list):
        return
    comp.frame.stack = stack_frames(tf, stack)
    tf.missing_strings += sum(
        1
        for item in stack[:STACK_LIMIT]
        if isinstance(item, dict)
        and not isinstance(item.get("filename"), str)
        and tf.file_name(item.get("filename")) is None
    )


def h_metrics(b: Builder, tf: LogSource, rec: Record) -> None:
    """compilation_metrics (the frame's compile) and bwd_compilation_metrics (its backward)."""
    meta = rec.meta if isinstance(rec.meta, dict) else None
    if meta is None:
        return
    m = CompilationMetrics.decode(rec.kind, meta)
    comp = rec.compile
    if comp is not None:
        comp.metric_records.append(rec)
        comp.metric_values.append(m)
        if not m.backward:
            comp.metrics = meta
            frame = comp.frame
            if frame is not None and frame.co_name is None:
                frame.co_name = m.co_name
                frame.co_filename = m.co_filename
                frame.co_firstlineno = m.co_firstlineno
    if not m.backward and m.fail_type is not None:
        b.failure(tf, rec, m.fail_type, m.fail_reason, m.fail_location)


def h_runtime_metrics(b: Builder, tf: LogSource, rec: Record) -> None:
    """compilation_metrics_runtime: what the compiled graph cost when it first ran."""
    comp = rec.compile
    if comp is not None and isinstance(rec.meta, dict):
        comp.runtime_records.append(rec)
        comp.metric_values.append(CompilationMetrics.decode(rec.kind, rec.meta))


def h_artifact(b: Builder, tf: LogSource, rec: Record) -> None:
    found = CacheArtifact.decode(rec.name or "")
    if found is not None:
        b.cache_event(rec, found.cache, found.result)


HEADER_HANDLERS: dict[str, Handler[LogSource]] = {
    "str": h_str,
    "dynamo_start": h_dynamo_start,
    "compilation_metrics": h_metrics,
    "bwd_compilation_metrics": h_metrics,
    "compilation_metrics_runtime": h_runtime_metrics,
    "bwd_compilation_metrics_runtime": h_runtime_metrics,
    "artifact": h_artifact,
}


# ------------------------------------------------------------------ close handlers


def c_graph_break(b: Builder, tf: LogSource, rec: Record) -> None:
    b.graph_break(rec, parse_graph_break(rec.payload()))


def c_recompile(b: Builder, tf: LogSource, rec: Record) -> None:
    b.recompile_reasons(rec, parse_recompile_reasons(rec.payload()))


def c_torch_version(b: Builder, tf: LogSource, rec: Record) -> None:
    """torch_version (torch 2.12+, a file's first artifact): which torch wrote the file. Kept
    on the file, as the overview says it without reading the disk. The other artifacts of newer
    torch (bytecode dumps, dynamo_cache_entries) are read when shown: model/metadata.py."""
    version = TorchVersion.decode(rec.payload()).version
    if version is not None:
        tf.torch_version = version


# By artifact name: the facts of these artifacts are in their payload.
CLOSE_HANDLERS: dict[str, Handler[LogSource]] = {
    "dynamo_graph_break_reason": c_graph_break,
    "recompile_reasons": c_recompile,
    "torch_version": c_torch_version,
}
