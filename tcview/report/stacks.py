"""The user stacks that led to every compile, as a tree (tlparse's stack trie).

Each compile's frame logs the stack Dynamo was entered from (``dynamo_start``'s ``stack``,
outermost first, ending in the compiled function). Stacks that share their first frames share
those nodes; a node lists the compiles whose stack ends there, with their status and marks.
Dynamo's own frames (``torch/_dynamo/``: the eval_frame wrappers) and ``nn.Module``'s call
machinery are left out: they are on every stack and say nothing about the user's program.

Plain data (`StackNode`, `stack_json`); `stack_lines` renders it as text (a frame a line,
indented under its caller), ``show PATH stacks`` wraps those lines in a `Detail`.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tcview.model.objects import (
    MARKS,
    Compile,
    CompileMark,
    CompileStatus,
    Model,
    StackFrame,
    stack_frames,
)
from tcview.model.ranks import RankSet, ranks_of, wanted
from tcview.report.detail import Detail
from tcview.text.safe import safe_text

STACKS_ITEM = "stacks"  # `tcview show PATH stacks`
NO_STACK = "(no stack logged)"
# Frames on every stack: Dynamo's entry wrappers and nn.Module.__call__'s dispatch.
_MACHINERY = re.compile(
    r"(?:^|/)torch/_dynamo/|(?:^|/)torch/nn/modules/module\.py$|(?:^|/)torch/_compile\.py$"
)
LINES_LIMIT = 2000  # lines of the text rendering (a huge trie is cut, with a note)


@dataclass
class StackNode:
    """One frame of some stacks; `compiles`: those whose stack ends at it."""

    where: str  # ``/path/train.py:40 in step`` (the root of an unlogged stack: `NO_STACK`)
    file: str = ""
    line: Any = None
    name: str = ""
    children: list[StackNode] = field(default_factory=list)
    compiles: list[Compile] = field(default_factory=list)

    def child(self, frame: StackFrame) -> StackNode:
        where = f"{frame.filename}:{frame.line} in {frame.name}"
        for c in self.children:
            if c.where == where:
                return c
        node = StackNode(where, frame.filename, frame.line, frame.name)
        self.children.append(node)
        return node

    @property
    def count(self) -> int:
        """Compiles at this node and under it."""
        return len(self.compiles) + sum(c.count for c in self.children)

    @property
    def short(self) -> str:
        """``train.py:40 in step``: `where` without the file's directories."""
        if not self.file:
            return self.where
        return f"{Path(self.file).name}:{self.line} in {self.name}"


@dataclass(frozen=True)
class CompileRun:
    """Compiles of one frame in a row with one status (`compile_runs`): ``6/0–6/7 ok``."""

    first: str  # the first's id label
    last: str  # the last's ("" when the run is one compile)
    rank: int | None
    status: CompileStatus
    marks: list[CompileMark]  # the `MARKS` any of them has

    @property
    def ids(self) -> str:
        return f"{self.first}–{self.last}" if self.last else self.first

    def json(self) -> dict[str, Any]:
        return {"ids": self.ids, "rank": self.rank, "status": self.status, "marks": self.marks}


def user_frames(stack: list[StackFrame]) -> list[StackFrame]:
    return [f for f in stack if not _is_machinery(f.filename)]


@functools.lru_cache(maxsize=4096)
def _is_machinery(filename: str) -> bool:
    """(Cached: the same few files are on every stack of every rank.)"""
    return _MACHINERY.search(filename) is not None


def compile_stack(comp: Compile, read: bool = True) -> list[StackFrame]:
    """The stack this compile was entered from: its own ``dynamo_start`` record's (read from
    disk; a recompile's call site may differ from its frame's first compile), else its
    frame's, which is its first compile's (no read). `read=False`: a recompile not read yet
    has its frame's (the app's UI thread never reads; `read_stacks` does, in a worker)."""
    frame = comp.frame
    if frame is not None and frame.compiles and frame.compiles[0] is comp:
        return frame.stack
    # Kept in its file's memo: the app's overview builds the trie on each refresh.
    start = next((r for r in comp.records if r.kind == "dynamo_start"), None)
    if start is None:
        return frame.stack if frame is not None else []
    key = ("stack", start.offset)
    if not read:
        kept = comp.file.memo.get(key)
        return kept if kept is not None else (frame.stack if frame is not None else [])
    stack: list[StackFrame] = comp.file.memo.of(key, lambda: _read_stack(comp))
    return stack


def read_stacks(model: Model) -> None:
    """Read every recompile's own stack once (off the UI thread), for `read=False` trees."""
    for comp in model.compiles:
        compile_stack(comp)


def _read_stack(comp: Compile) -> list[StackFrame]:
    for rec in comp.records_of("dynamo_start"):
        try:
            meta = rec.full_meta()
        except (OSError, ValueError):
            break
        if isinstance(meta, dict) and isinstance(meta.get("stack"), list):
            return stack_frames(comp.file, meta["stack"])
        break
    return comp.frame.stack if comp.frame is not None else []


def stack_trie(model: Model, ranks: RankSet = None, read: bool = True) -> list[StackNode]:
    """The roots: one per distinct outermost frame (in the order compiles reached them, file by
    file), and `NO_STACK` for compiles whose frame logged no stack (TORCH_LOGS text, older torch);
    `ranks`: only these ranks' compiles (None: all); `read`: as `compile_stack`'s."""
    root = StackNode("")
    unlogged = StackNode(NO_STACK)
    # By file path, then the file's own order: a followed directory adds files in the order
    # they appeared, a load in path order, and the tree must not depend on which.
    chosen = sorted((c for c in model.compiles if wanted(ranks, c)), key=lambda c: str(c.file.path))
    for comp in chosen:
        frames = user_frames(compile_stack(comp, read))
        if not frames:
            unlogged.compiles.append(comp)
            continue
        node = root
        for frame in frames:
            node = node.child(frame)
        node.compiles.append(comp)
    return root.children + ([unlogged] if unlogged.compiles else [])


def compile_label(comp: Compile, ranks: bool) -> str:
    """``0/1 ok, recompile``; with ``rank 1`` first where the model has several ranks."""
    who = f"rank {comp.file.rank} " if ranks and comp.file.rank is not None else ""
    return f"{who}{comp.id_label} {comp.status_text}"


def _runs(comps: list[Compile]) -> list[list[Compile]]:
    """Runs of one frame's consecutive compiles with the same status and cache use."""
    runs: list[list[Compile]] = []
    for comp in comps:
        last = runs[-1][-1] if runs else None
        if (
            last is not None
            and last.frame is comp.frame
            and last.status == comp.status
            and last.cache_hit == comp.cache_hit
            and isinstance(last.key.frame_compile_id, int)
            and comp.key.frame_compile_id == last.key.frame_compile_id + 1
            and last.episode == comp.episode
        ):
            runs[-1].append(comp)
        else:
            runs.append([comp])
    return runs


def compile_runs(comps: list[Compile]) -> list[CompileRun]:
    """A node's compiles, runs folded (``6/0–6/7``), each with its status and marks."""
    return [
        CompileRun(
            run[0].id_label,
            run[-1].id_label if len(run) > 1 else "",
            run[0].file.rank,
            run[0].status,
            [m for m in MARKS if any(m in c.marks for c in run)],
        )
        for run in _runs(comps)
    ]


def compiles_text(comps: list[Compile], ranks: bool) -> str:
    """The compiles of a node in a line: runs of one frame's compiles with the same status
    and marks folded (``6/0–6/7 ok``)."""
    parts = []
    for run in _runs(comps):
        first, end = run[0], run[-1]
        if len(run) == 1:
            parts.append(compile_label(first, ranks))
            continue
        who = f"rank {first.file.rank} " if ranks and first.file.rank is not None else ""
        status = ", ".join([first.status, *([CompileMark.CACHE_HIT] if first.cache_hit else [])])
        parts.append(f"{who}{first.id_label}–{end.id_label} {status}")
    return " · ".join(parts)


def stack_lines(roots: list[StackNode], ranks: bool = False) -> list[str]:
    """The trie as text, a frame a line, each two columns right of its caller; a node's
    compiles after an arrow under it."""
    out: list[str] = []

    def walk(node: StackNode, depth: int) -> None:
        if len(out) >= LINES_LIMIT:
            return
        pad = "  " * depth
        out.append(f"{pad}{safe_text(node.where)}")
        if node.compiles:
            out.append(f"{pad}  → {compiles_text(node.compiles, ranks)}")
        for child in node.children:
            walk(child, depth + 1)

    for root in roots:
        walk(root, 0)
    if len(out) >= LINES_LIMIT:
        out = out[:LINES_LIMIT] + [f"… cut at {LINES_LIMIT} lines"]
    return out


def stack_json(roots: list[StackNode]) -> list[dict[str, Any]]:
    """The trie as data (`summary --json`'s ``stacks``)."""

    def node_json(node: StackNode) -> dict[str, Any]:
        return {
            "frame": node.where,
            "file": node.file,
            "line": node.line,
            "name": node.name,
            "compiles": [
                {
                    "id": c.id_label,
                    "rank": c.file.rank,
                    "status": c.status,
                    "marks": c.marks,
                }
                for c in node.compiles
            ],
            "children": [node_json(c) for c in node.children],
        }

    return [node_json(r) for r in roots]


def stacks_detail(model: Model) -> Detail:
    """``tcview show PATH stacks``: the trie's text lines as a detail."""
    roots = stack_trie(model)
    total = sum(r.count for r in roots)
    detail = Detail(STACKS_ITEM, f"stacks that led to {total} compile(s)", id=STACKS_ITEM)
    section = detail.section()
    ranks = len(ranks_of(model)) > 1
    for line in stack_lines(roots, ranks):
        depth = (len(line) - len(line.lstrip(" "))) // 2
        text = line.strip()
        section.row("", text, "compiles" if text.startswith("→") else "stack", depth=depth)
    if not roots:
        section.row("", "no compiles", "dim")
    return detail
