"""What the reader shows for a tree item: an item's detail, a record's payload, a file's
summary, a kernel's or compile's provenance, and the overview (no item picked)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.text import Text

from tcview.analysis.findings import Finding
from tcview.analysis.profile import RuntimeJoin
from tcview.analysis.provenance import (
    POST_GRAD_GRAPHS,
    PRE_GRAD_GRAPHS,
    graph_lines_of,
    kernel_provenance,
)
from tcview.ingest.tracefile import LOCATED_KINDS
from tcview.model.objects import Compile, Frame, Kernel, LogSource, Model, Record
from tcview.model.ranks import RankSet
from tcview.report.detail import (
    compile_detail,
    frame_detail,
    kernel_detail,
    provenance_detail,
)
from tcview.report.summary import InputState, counts_line
from tcview.run.bench import KernelTime
from tcview.ui.bench import with_bench
from tcview.ui.content import (
    Document,
    Marked,
    detail_doc,
    lit,
    model_summary,
    record_doc,
    styled_doc,
)
from tcview.ui.hints import KeyNames
from tcview.ui.items import Item


def doc_for(
    item: Item,
    model: Model | None,
    source: str,
    picked: Kernel | None = None,
    bench: Callable[[Kernel], KernelTime | None] = lambda kernel: None,
    found: list[Finding] | None = None,
) -> Document:
    """What the pane shows for a tree item; `picked`: the kernel whose nodes a graph marks;
    `bench` gives a kernel's benchmark, if any; `found`: the findings, for the overview."""
    obj = item.obj
    if isinstance(obj, Compile):
        return detail_doc(compile_detail(obj, model))
    if isinstance(obj, Frame):
        return detail_doc(frame_detail(obj))
    if isinstance(obj, Record):
        return record_doc(obj, marked_nodes(obj, picked))
    if isinstance(obj, Kernel):
        return detail_doc(with_bench(kernel_detail(obj, model), bench(obj)))
    if isinstance(obj, list) or (item.kind == "others" and isinstance(obj, LogSource)):
        records = obj if isinstance(obj, list) else [r for r in obj.records if r.key is None]
        lines = [Text(f"{len(records)} records", style="bold")]
        if not isinstance(obj, list):
            # Located, never listed: said, so that an empty list does not look like a loss.
            unlisted = [f"{k} {obj.kinds[k]:,}" for k in LOCATED_KINDS if obj.kinds.get(k)]
            if unlisted:
                said = "in this file, located, never listed: " + " · ".join(unlisted)
                lines.append(Text(said, style="dim"))
        lines.append(Text(""))
        for rec in records[:2000]:
            lines.append(lit(f"line {rec.line_number():>8}  {rec.label}  {rec.compile_text}"))
        return styled_doc("records", lines)
    if isinstance(obj, LogSource):
        return styled_doc(obj.display, file_summary(obj))
    summary = model.summary_counts() if model is not None else {}
    return overview_doc(model, source, summary, found=found)


def marked_nodes(rec: Record, kernel: Kernel | None) -> Marked | None:
    """The lines of a pre- or post-grad graph that define the picked kernel's nodes."""
    if kernel is None or kernel.compile is None or rec.compile is not kernel.compile:
        return None
    if rec.label not in (*PRE_GRAD_GRAPHS, *POST_GRAD_GRAPHS):
        return None
    unit, kp = kernel_provenance(kernel)
    if unit is None or kp is None:
        return None
    nodes = kp.post_grad if rec is unit.post_graph else kp.pre_grad if rec is unit.pre_graph else []
    lines = graph_lines_of(rec, nodes)
    return Marked(kernel.name, tuple(lines)) if lines else None


def provenance_doc(model: Model | None, obj: object) -> Document:
    """What `i` shows: a kernel's provenance, or a compile's (each kernel's user lines)."""
    if isinstance(obj, Record) and obj.compile is not None:
        obj = obj.compile
    if not isinstance(obj, (Kernel, Compile)):
        return styled_doc("provenance", [lit("pick a kernel or a compile", "dim")])
    return detail_doc(provenance_detail(obj, model))


def overview_doc(
    model: Model | None,
    source: str,
    summary: dict[str, Any],
    state: InputState | None = None,
    error: str = "",
    ranks: RankSet = None,
    found: list[Finding] | None = None,
    keys: KeyNames | None = None,
    measured: RuntimeJoin | None = None,
) -> Document:
    """The right-hand pane when no item is picked (led by the profile `measured`, if joined): the counts of `summary` (the snapshot the
    status bar shows), and what the input holds (waiting, nothing found, could not read)."""
    source = "stdin" if source == "-" else source
    if error:
        lines = [lit(source, "bold"), lit(f"could not read: {error}", "bold red")]
        return styled_doc(source, lines)
    if model is None:
        lines = [lit(source, "bold"), Text("indexing…"), Text(counts_line(summary), style="bold")]
        return styled_doc(source, lines)
    return styled_doc(
        source, model_summary(model, source, summary, state, ranks, found, keys, measured)
    )


def file_summary(tf: LogSource) -> list[Text]:
    out = [lit(tf.display, "bold"), lit(f"path      {tf.path}")]
    out.append(lit(f"records   {len(tf.records)}   compiles {len(tf.compiles)}"))
    out.append(lit(f"unparsed  {len(tf.unparsed)} lines"))
    for problem in tf.problems[:20]:
        out.append(lit(f"problem   {problem}", "red"))
    kinds = tf.kinds
    if kinds:
        out.append(Text(""))
        out.append(Text("record kinds", style="bold underline"))
        for kind, n in kinds.most_common():
            out.append(lit(f"  {n:>8}  {kind}"))
    return out
