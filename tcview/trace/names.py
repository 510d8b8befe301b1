"""What a record is called where tcview shows it (the tree, the viewer, search results, grep)."""

from __future__ import annotations

from .model import Record

# Record kinds and artifact names -> the name shown; others are shown as they are.
RECORD_NAMES = {
    "dynamo_output_graph": "Dynamo graph",
    "dynamo_cpp_guards_str": "guards",
    "dynamo_guards": "guards (json)",
    "recompile_reasons": "recompile reason",
    "dynamo_graph_break_reason": "graph break",
    "aot_forward_graph": "AOT forward graph",
    "aot_backward_graph": "AOT backward graph",
    "aot_joint_graph": "AOT joint graph",
    "aot_inference_graph": "AOT inference graph",
    "inductor_pre_grad_graph": "Inductor pre-grad graph",
    "inductor_post_grad_graph": "Inductor post-grad graph",
    "inductor_output_code": "output code",
    "compilation_metrics": "metrics",
    "bwd_compilation_metrics": "metrics (backward)",
    "compilation_metrics_runtime": "runtime metrics",
    "bwd_compilation_metrics_runtime": "runtime metrics (backward)",
    "dynamo_error": "dynamo error",
}


def record_name(rec: Record) -> str:
    label = rec.label
    return RECORD_NAMES.get(label, label)
