"""The overview of an input, built once as plain data: the crash, the most frequent graph
breaks, the slowest compiles and the skipped files, each cut at one length. The app shows it
when no item is picked (`tcview.ui.content.model_summary`), `tcview summary` prints it among
its sections (`summary.summary_text`) and its ``--json`` holds it under ``overview``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tcview.analysis.compiletime import compile_seconds, time_note
from tcview.model.objects import Model, group_breaks
from tcview.model.ranks import RankSet, rank_of, ranks_of, wanted

ERRORS_SHOWN = 5  # the run's errors (the Errors view and the report's section list them all)
BREAKS_SHOWN = 5  # distinct graph breaks, most frequent first
SLOWEST_SHOWN = 5  # compiles, slowest first
SKIPPED_SHOWN = 20  # files that were not read


@dataclass(frozen=True)
class ErrorRow:
    headline: str  # rank, type and message
    at: str  # the innermost frame of its stack ("" when it has none)


@dataclass(frozen=True)
class BreakRow:
    count: int
    reason: str
    location: str  # where the first of them broke, short ("" when not logged)
    ranks: list[int]  # the ranks that took it


@dataclass(frozen=True)
class SlowRow:
    seconds: float
    compile: str  # its id as the tree shows it
    frame: str  # the frame's label ("" when not known)
    rank: int | None
    status: str  # as the report words it (`Compile.status_text`)


@dataclass
class Overview:
    errors: list[ErrorRow]  # the first ERRORS_SHOWN
    errors_total: int
    breaks: list[BreakRow]  # the first BREAKS_SHOWN groups
    breaks_total: int  # distinct graph breaks
    slowest: list[SlowRow]  # the first SLOWEST_SHOWN
    timed: int  # compiles with a compile time
    time_note: str  # "incl. backward" when the times count a backward compile, else ""
    skipped: list[tuple[str, str]]  # (path, why), the first SKIPPED_SHOWN
    skipped_total: int
    many_ranks: bool  # rows then say their rank

    def json(self) -> dict[str, Any]:
        return {
            "errors": [{"headline": e.headline, "at": e.at} for e in self.errors],
            "errors_total": self.errors_total,
            "top_breaks": [
                {"count": b.count, "reason": b.reason, "location": b.location, "ranks": b.ranks}
                for b in self.breaks
            ],
            "distinct_breaks": self.breaks_total,
            "slowest_compiles": [
                {
                    "compile": s.compile,
                    "seconds": s.seconds,
                    "frame": s.frame,
                    "rank": s.rank,
                    "status": s.status,
                }
                for s in self.slowest
            ],
            "timed_compiles": self.timed,
            "times_include_backward": bool(self.time_note),
        }


def build_overview(model: Model, ranks: RankSet = None) -> Overview:
    """The overview of `model`; `ranks`: only these ranks' breaks and compiles (None: all)."""
    errors = model.run_errors()
    groups = (
        model.grouped_breaks()
        if ranks is None
        else group_breaks([b for b in model.breaks if wanted(ranks, b)])
    )
    timed = [c for c in model.compiles if compile_seconds(c) is not None and wanted(ranks, c)]
    timed.sort(key=lambda c: -(compile_seconds(c) or 0))
    skipped = model.skipped
    return Overview(
        errors=[
            ErrorRow(e.headline, e.stack[-1] if e.stack else "") for e in errors[:ERRORS_SHOWN]
        ],
        errors_total=len(errors),
        breaks=[
            BreakRow(
                g.count,
                g.reason,
                (g.first.short_location or "") if g.location else "",
                sorted({r for r in map(rank_of, g.breaks) if r is not None}),
            )
            for g in groups[:BREAKS_SHOWN]
        ],
        breaks_total=len(groups),
        slowest=[
            SlowRow(
                compile_seconds(c) or 0.0,
                c.id_label,
                c.frame.label if c.frame is not None else "",
                c.file.rank,
                c.status_text,
            )
            for c in timed[:SLOWEST_SHOWN]
        ],
        timed=len(timed),
        time_note=time_note(timed[:SLOWEST_SHOWN]),
        skipped=[(str(p), why) for p, why in skipped[:SKIPPED_SHOWN]],
        skipped_total=len(skipped),
        many_ranks=len(ranks_of(model)) > 1,
    )
