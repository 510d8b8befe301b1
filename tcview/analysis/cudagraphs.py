"""CUDA graphs (``mode="reduce-overhead"``): whether a compile ran as CUDA graphs, and if not,
why not.

The trace says it in metrics: ``runtime_cudagraphify_time_us`` (compilation_metrics_runtime:
the compiled graph went through cudagraphify when it first ran) and ``cudagraph_skip_reason``.
Torch 2.11 leaves the skip reason out of the metrics for skips decided at run time (mutated
inputs): a run's TORCH_LOGS text has them (`CudagraphNote`), and says when a graph was recorded
and which ops Inductor left out of the CUDA graph (graph partitions).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from tcview.model.metadata import CompilationMetrics
from tcview.model.objects import RAN_EAGERLY, Compile, CudagraphNote, Model

_GRAPHABLE = re.compile(r"(\d+) cudagraphable")
# A compile whose graph CUDA graph trees ran as plain code (the cudagraphs log's "Running eager
# function"): made for CUDA graphs, not replayed as one.
EAGER_REASON = "ran eagerly at run time, not replayed as a CUDA graph"
_PREFIXES = re.compile(r"^(?:skipping cudagraphs due to\s*)+")
CudagraphState = Literal["used", "partly", "skipped"]
CUDAGRAPH_STATES: tuple[CudagraphState, ...] = ("used", "partly", "skipped")
# What the tree shows after a compile's status for each state.
CUDAGRAPH_MARKS: dict[str, str] = {"used": "cudagraphs", "partly": "cudagraphs (partly)"}
CUDAGRAPH_SKIPPED_MARK = "no cudagraphs"


@dataclass
class CudaGraphs:
    """A compile's CUDA graphs: used (for all of its graph, or `partly`: some ops were left
    out, or one of its graphs was skipped while another was recorded: a training step's
    forward and backward, graph partitions), or skipped, with the reasons."""

    state: CudagraphState
    reasons: list[str] = field(default_factory=list)  # why skipped, or why ops were left out
    cudagraphify_s: float | None = None  # time spent making them (runtime metrics)
    partitions: str = ""  # "2 graph partitions: 1 cudagraphable, 1 non-cudagraphable"
    sources: list[str] = field(default_factory=list)  # where it was read: trace, TORCH_LOGS
    # `partly`: why some of its graphs were skipped while another was recorded
    skips: list[str] = field(default_factory=list)

    @property
    def mark(self) -> str:
        return CUDAGRAPH_SKIPPED_MARK if self.state == "skipped" else CUDAGRAPH_MARKS[self.state]

    @property
    def text(self) -> str:
        """``used``, ``skipped: mutated inputs (1 instances)``, ``partly: cpu ops``."""
        reasons = [*self.skips, *self.reasons]
        if not reasons:
            return self.state
        first = short_reason(reasons[0])
        more = f" (+{len(reasons) - 1} more)" if len(reasons) > 1 else ""
        return f"{self.state}: {first}{more}"


_FOUND_FROM = re.compile(r"\.?\s*Found from\s*:\s*$")
_FILE_LINE = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def short_reason(reason: str) -> str:
    """A reason in one line: ``mutated inputs (1 instances) at cudagraphs.py:19 in mutates``."""
    first = reason.split("\n", 1)[0]
    where = _FILE_LINE.search(reason)
    if _FOUND_FROM.search(first) and where is not None:
        name = where.group(1).rsplit("/", 1)[-1]
        return f"{_FOUND_FROM.sub('', first)} at {name}:{where.group(2)} in {where.group(3)}"
    return first


def fold_reason(text: str) -> str:
    """A skip reason without torch's ``skipping cudagraphs due to`` prefix, which it repeats
    when one skip wraps another (``skipping cudagraphs due to skipping cudagraphs due to x``)."""
    text = _PREFIXES.sub("", text.strip())
    return text.replace("Found from : \n", "Found from:\n").strip() or "(no reason given)"


def _metrics(comp: Compile) -> list[CompilationMetrics]:
    """Its metrics values: the compiles' first, then the runtime's."""
    values = comp.metric_values
    return [m for m in values if not m.runtime] + [m for m in values if m.runtime]


def cudagraphs_of(comp: Compile, notes: Iterable[CudagraphNote] = ()) -> CudaGraphs | None:
    """The compile's CUDA graphs from its metrics and its TORCH_LOGS `notes` (its own and, for
    a run directory's trace compile, those of the same compile in the text; see
    `notes_for`); None when neither says anything about CUDA graphs."""
    reasons: list[str] = []
    sources: list[str] = []
    cudagraphify_us = 0.0
    timed = False
    for m in _metrics(comp):
        skip = m.cudagraph_skip_reason
        if skip is not None and skip.strip():
            reason = fold_reason(skip)
            if reason not in reasons:
                reasons.append(reason)
        if m.runtime_cudagraphify_time_us is not None:
            cudagraphify_us += m.runtime_cudagraphify_time_us
            timed = True
    if reasons or timed:
        sources.append("trace")
    recorded = False  # a graph was recorded (the log says so)
    graphable = False  # Inductor made CUDA-graph partitions (the log of recording may be absent)
    partitions = ""
    left_out: list[str] = []
    eager: list[str] = []  # it ran eagerly at run time instead of replaying: why, when said
    from_text = False
    for note in notes:
        from_text = True
        if note.kind == RAN_EAGERLY:
            eager.append(EAGER_REASON + (f": {note.text}" if note.text else ""))
        elif note.kind == "skipped":
            reason = fold_reason(note.text)
            if reason not in reasons:
                reasons.append(reason)
        elif note.kind == "recorded":
            recorded = True
        elif note.kind == "partitions":
            partitions = note.text.removeprefix("Created ")
            count = _GRAPHABLE.search(partitions)
            graphable = graphable or (count is not None and int(count.group(1)) > 0)
        elif note.kind == "not cudagraphable" and note.text not in left_out:
            left_out.append(note.text)
    if from_text:
        sources.append("TORCH_LOGS")
    cudagraphify_s = cudagraphify_us / 1e6 if timed else None
    if eager and not reasons:  # made for CUDA graphs, but its graph ran as plain code
        if recorded:
            return CudaGraphs("partly", left_out, cudagraphify_s, partitions, sources, eager)
        return CudaGraphs("skipped", eager, cudagraphify_s, partitions, sources)
    if reasons and recorded:  # one graph skipped, another recorded: partly used
        return CudaGraphs("partly", left_out, cudagraphify_s, partitions, sources, reasons)
    if reasons:
        return CudaGraphs("skipped", reasons, cudagraphify_s, partitions, sources)
    if left_out and (recorded or graphable or timed):
        return CudaGraphs("partly", left_out, cudagraphify_s, partitions, sources)
    if recorded or graphable or timed:
        return CudaGraphs("used", [], cudagraphify_s, partitions, sources)
    return None


def notes_for(model: Model | None, comp: Compile) -> list[CudagraphNote]:
    """The TORCH_LOGS notes about `comp`: its own (a capture's compile), or those of the same
    compile (id and process) in a run directory's text."""
    if model is None:
        return list(comp.cudagraph_notes)
    text = model.text if model.text is not None else model
    if not text.cudagraph_notes:
        return list(comp.cudagraph_notes)
    pids = comp.file.pids
    return [
        n
        for n in text.cudagraph_notes
        if n.compile is comp
        or (n.compile.key == comp.key and (not pids or pids & n.compile.file.pids))
    ]


def model_cudagraphs(model: Model, comp: Compile) -> CudaGraphs | None:
    """`cudagraphs_of` with the notes the model's text holds for the compile."""
    return cudagraphs_of(comp, notes_for(model, comp))


def cudagraph_counts(model: Model) -> dict[str, int]:
    """``{used, skipped}``: compiles that ran as CUDA graphs (all or part of their graph), and
    compiles whose CUDA graphs were skipped (`summary --json`'s ``cudagraphs``)."""
    out = {"used": 0, "skipped": 0}
    for comp in model.compiles:
        found = model_cudagraphs(model, comp)
        if found is not None:
            out["skipped" if found.state == "skipped" else "used"] += 1
    return out
