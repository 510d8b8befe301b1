"""A compile's time, its backward included.

A training graph compiles twice: Dynamo and AOTAutograd compile the forward inside the frame
(``compilation_metrics``' ``entire_frame_compile_time_s``), and AOTAutograd compiles the
backward lazily, when ``loss.backward()`` first runs it (``entire_backward_compile``, logged as
``bwd_compilation_metrics`` with the same compile id). torch's own total
(``torch._dynamo.utils.calculate_time_spent``'s ``total_wall_time``) adds the two; so does
every compile time tcview shows.
"""

from __future__ import annotations

from dataclasses import dataclass

from tcview.model.metadata import BACKWARD_METRICS
from tcview.model.objects import Compile

BACKWARD_NOTE = "incl. backward"  # said wherever a time counts a backward compile
BACKWARD_PHASE = "backward compile"  # its row among a compile's phases


@dataclass(frozen=True)
class CompileTime:
    forward_s: float | None  # the frame's compile (Dynamo, AOTAutograd's forward, Inductor)
    backward_s: float | None  # the lazy backward compile; None where none was logged

    @property
    def total_s(self) -> float | None:
        if self.forward_s is None and self.backward_s is None:
            return None
        return (self.forward_s or 0.0) + (self.backward_s or 0.0)


def backward_seconds(comp: Compile) -> float | None:
    """The backward compiles' time: ``backward_cumulative_compile_time_us`` (the
    ``entire_backward_compile`` span), or Inductor's time where a torch logs no such column."""
    total: float | None = None
    for m in comp.metric_values:
        if m.kind != BACKWARD_METRICS:
            continue
        whole = m.backward_cumulative_compile_time_us
        if whole is not None:
            value = whole / 1e6
        elif m.inductor_compile_time_s is not None:
            value = m.inductor_compile_time_s
        else:
            continue
        total = (total or 0.0) + value
    return total


def compile_time(comp: Compile) -> CompileTime:
    return CompileTime(comp.compile_time_s, backward_seconds(comp))


def compile_seconds(comp: Compile) -> float | None:
    """A compile's time, its backward compile included."""
    return compile_time(comp).total_s


def time_note(comps: list[Compile]) -> str:
    """``incl. backward`` when any of these compiles had a backward compile, else ""."""
    return BACKWARD_NOTE if any(backward_seconds(c) is not None for c in comps) else ""
