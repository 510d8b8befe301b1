"""The overview of an input, built once as plain data: the crash, the user stacks that led to
the compiles (tlparse's stack trie), the most frequent graph breaks, the slowest compiles and
the skipped files, each cut at one length. The app shows it
when no item is picked (`tcview.ui.content.model_summary`), `tcview summary` prints it among
its sections (`summary.summary_text`) and its ``--json`` holds it under ``overview``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tcview.analysis.compiletime import compile_seconds, time_note
from tcview.ingest.detect import split_profiles
from tcview.model.objects import MARK_TABLE, Model, group_breaks
from tcview.model.ranks import RankSet, rank_of, ranks_of, wanted
from tcview.report.stacks import (
    NO_STACK,
    STACKS_ITEM,
    CompileRun,
    StackNode,
    compile_runs,
    stack_trie,
)

ERRORS_SHOWN = 5  # the run's errors (the Errors view and the report's section list them all)
BREAKS_SHOWN = 5  # distinct graph breaks, most frequent first
SLOWEST_SHOWN = 5  # compiles, slowest first
SKIPPED_SHOWN = 20  # files that were not read
STACK_ROWS = 12  # lines of the stack tree (`tcview show PATH stacks` prints it all)
STACKS_MORE = f"tcview show PATH {STACKS_ITEM} prints them all"


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
class StackRow:
    """A frame of the stack tree, under its caller; `compiles`: those whose stack ends here."""

    depth: int
    where: str  # ``train.py:40 in step``
    compiles: list[CompileRun]


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
    profiles: list[str]  # torch.profiler traces beside the trace (not joined, never skipped)
    many_ranks: bool  # rows then say their rank
    stacks: list[StackRow]  # the first STACK_ROWS
    stack_rows: int  # lines of the whole tree
    stacked: int  # compiles in the tree

    def json(self) -> dict[str, Any]:
        return {
            "errors": [{"headline": e.headline, "at": e.at} for e in self.errors],
            "errors_total": self.errors_total,
            "stack_tree": [
                {"depth": r.depth, "frame": r.where, "compiles": [c.json() for c in r.compiles]}
                for r in self.stacks
            ],
            "stack_tree_lines": self.stack_rows,
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


def build_overview(
    model: Model, ranks: RankSet = None, read: bool = True, roots: list[StackNode] | None = None
) -> Overview:
    """The overview of `model`; `ranks`: only these ranks' breaks and compiles (None: all);
    `read=False`: no payload read from disk (see `compile_stack`); `roots`: its `stack_trie`,
    already made."""
    errors = model.run_errors()
    groups = (
        model.grouped_breaks()
        if ranks is None
        else group_breaks([b for b in model.breaks if wanted(ranks, b)])
    )
    timed = [c for c in model.compiles if compile_seconds(c) is not None and wanted(ranks, c)]
    timed.sort(key=lambda c: -(compile_seconds(c) or 0))
    skipped, profiles = split_profiles(model.skipped)
    roots = roots if roots is not None else stack_trie(model, ranks, read)
    # A capture without stacks (TORCH_LOGS text) would list every compile under NO_STACK.
    rows = stack_rows(roots) if any(r.where != NO_STACK for r in roots) else []
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
        profiles=[str(p) for p in profiles[:SKIPPED_SHOWN]],
        many_ranks=len(ranks_of(model)) > 1,
        stacks=rows[:STACK_ROWS],
        stack_rows=len(rows),
        stacked=sum(r.count for r in roots),
    )


def torch_versions(model: Model) -> list[str]:
    """The torch versions the input's files name in their ``torch_version`` artifact (torch
    2.12+; kept at ingest, so that this reads nothing), in file order, each once."""
    seen = dict.fromkeys(f.torch_version for f in model.files if f.torch_version)
    return [v for v in seen if v is not None]


def torch_line(model: Model) -> str:
    """``torch 2.14.1+cu130`` (the versions, when files differ), or "" when no file says."""
    versions = torch_versions(model)
    return f"torch {', '.join(versions)}" if versions else ""


def stack_rows(roots: list[StackNode]) -> list[StackRow]:
    """The trie a frame a row, callers first (shared first frames once: the trie folds them)."""
    out: list[StackRow] = []

    def walk(node: StackNode, depth: int) -> None:
        out.append(StackRow(depth, node.short, compile_runs(node.compiles)))
        for child in node.children:
            walk(child, depth + 1)

    for root in roots:
        walk(root, 0)
    return out


def stack_row_parts(row: StackRow, many_ranks: bool) -> list[tuple[str, str]]:
    """A row as (text, style) pieces, two columns a level (and two to start with): the frame,
    then its compiles, each ``✓ 6/0–6/7 ↻`` (status, ids, marks: `MARK_TABLE`), ranked when
    there are several ranks. The app styles the pieces; the text summary joins them."""
    parts = [("  " * (row.depth + 1), ""), (row.where, "")]
    for i, run in enumerate(row.compiles):
        parts.append(("  " if i == 0 else " · ", "dim"))
        if many_ranks and run.rank is not None:
            parts.append((f"rank {run.rank} ", "dim"))
        symbol, style = MARK_TABLE.get(run.status, ("?", ""))
        parts.append((f"{symbol} ", style))
        parts.append((run.ids, "bold"))
        for mark in run.marks:
            symbol, style = MARK_TABLE[mark]
            parts.append((f" {symbol}", style))
    return parts


def stacks_title(overview: Overview) -> str:
    return f"stacks that led to {overview.stacked} compile(s)"


def stacks_more(overview: Overview) -> str:
    """``… 23 more lines (…)``, or "" when the tree is shown whole."""
    more = overview.stack_rows - len(overview.stacks)
    return f"… {more} more line(s) ({STACKS_MORE})" if more > 0 else ""
