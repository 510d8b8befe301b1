"""Paths a trace names and paths tcview writes: source locations, mapped to this machine
(`--map-path`), and the trace's own directories, which tcview never writes into."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from tcview.analysis.provenance import (
    KernelProvenance,
    ProvenanceRow,
    SourceLine,
    kernel_provenance,
)
from tcview.model.objects import (
    BreakGroup,
    Compile,
    Error,
    Failure,
    Frame,
    GraphBreak,
    Kernel,
    Model,
    Recompile,
    Record,
    StackFrame,
)

# ``/a/b.py:12``, ``/a/b.py:12 in forward``, ``b.py:12  |  code`` (a user stack entry).
_LOCATION = re.compile(r"^(?P<path>.+?):(?P<line>\d+)(?:\s+in\s+.*|\s+\|.*)?$", re.S)


@dataclass(frozen=True)
class Location:
    """A line of a source file that a trace names (a stack frame, a break, a failure)."""

    path: str  # as the trace has it: perhaps a path on another machine
    line: int
    label: str  # what it is: "graph break", "user stack: forward", …

    @property
    def text(self) -> str:
        return f"{self.path}:{self.line}"


def parse_location(text: str, label: str = "") -> Location | None:
    """``/a/b.py:12`` (optionally followed by `` in f``) as a Location; None if it is none."""
    m = _LOCATION.match(text.strip())
    if m is None:
        return None
    return Location(m.group("path"), int(m.group("line")), label)


def source_location(line: SourceLine) -> Location:
    """A line a kernel implements (its provenance): the user's, or torch's."""
    what = "user line" if line.user else "torch line"
    return Location(line.file, line.line, f"{what}: {line.function}" if line.function else what)


def frame_location(frame: StackFrame, label: str) -> Location | None:
    line = frame.line
    if not frame.filename or isinstance(line, bool) or not isinstance(line, int):
        return None
    return Location(frame.filename, line, label)


def locations_of(obj: object) -> list[Location]:
    """The source locations an item names, the one it is about first (a break's location, a
    failure's, a frame's user line, a kernel's user lines), then its stack, innermost first.
    Any object a view or the tree shows may be passed: those without a location give []."""
    out: list[Location | None] = []
    if isinstance(obj, BreakGroup):
        obj = obj.first
    if isinstance(obj, Record) and obj.compile is not None:
        comp = obj.compile
        rec = obj
        brk = next((b for b in comp.breaks if b.record is rec), None)
        if brk is not None:
            obj = brk
        elif comp.recompile is not None and comp.recompile.record is rec:
            obj = comp.recompile
        else:
            failure = next((f for f in comp.failures if f.record is rec), None)
            obj = failure if failure is not None else comp
    if isinstance(obj, ProvenanceRow):  # the row's user line, then its kernel's lines
        if obj.line is not None:
            out.append(source_location(obj.line))
        obj = obj.kernel
    if isinstance(obj, Kernel):  # the lines of its provenance first (reads payloads)
        obj = kernel_provenance(obj)[1] or obj.compile
    if isinstance(obj, KernelProvenance):
        out.extend(source_location(ln) for ln in (*obj.user_lines, *obj.lines))
        obj = obj.kernel.compile if obj.kernel is not None else None
    if isinstance(obj, SourceLine):
        out.append(source_location(obj))
    if isinstance(obj, Recompile):
        obj = obj.compile
    if isinstance(obj, GraphBreak):
        out.append(parse_location(obj.location, "graph break"))
        out.extend(parse_location(e, "user stack") for e in reversed(obj.user_stack))
        if obj.compile is not None:
            out.extend(_compile_locations(obj.compile))
    elif isinstance(obj, Failure):
        out.append(parse_location(obj.location, f"failure: {obj.fail_type}"))
        if obj.compile is not None:
            out.extend(_compile_locations(obj.compile))
    elif isinstance(obj, Error):
        out.extend(parse_location(e, f"{obj.error_type} stack") for e in reversed(obj.stack))
    elif isinstance(obj, Compile):
        out.extend(_compile_locations(obj))
    elif isinstance(obj, Frame):
        out.extend(_frame_locations(obj))
    elif isinstance(obj, StackFrame):
        out.append(frame_location(obj, f"stack: {obj.name}"))
    elif isinstance(obj, Location):
        out.append(obj)
    seen: set[tuple[str, int]] = set()
    unique: list[Location] = []
    for loc in out:
        if loc is not None and (loc.path, loc.line) not in seen:
            seen.add((loc.path, loc.line))
            unique.append(loc)
    return unique


def _compile_locations(comp: Compile) -> list[Location | None]:
    out: list[Location | None] = []
    for f in comp.failures:
        out.append(parse_location(f.location, f"failure: {f.fail_type}"))
    for b in comp.breaks:
        out.append(parse_location(b.location, "graph break"))
    if comp.frame is not None:
        out.extend(_frame_locations(comp.frame))
    return out


def _frame_locations(frame: Frame) -> list[Location | None]:
    """The frame's user line (a recompile's user line is its frame's), then its stack."""
    out: list[Location | None] = []
    user = frame.user_frame
    if user is not None:
        out.append(frame_location(user, f"user code: {user.name}"))
    elif frame.co_filename and isinstance(frame.co_firstlineno, int):
        out.append(Location(frame.co_filename, frame.co_firstlineno, f"code: {frame.co_name}"))
    out.extend(frame_location(sf, f"stack: {sf.name}") for sf in reversed(frame.stack))
    return out


class PathMap:
    """Trace paths to local ones (``--map-path /workspace=~/src``): the longest prefix that
    matches at a path boundary wins; a path no prefix matches stays as it is."""

    def __init__(self, pairs: list[tuple[str, str]] | None = None) -> None:
        self.pairs = sorted(pairs or [], key=lambda p: -len(p[0]))

    @classmethod
    def parse(cls, specs: list[str] | None) -> PathMap:
        """From ``FROM=TO`` items; ValueError names a malformed one."""
        pairs = []
        for spec in specs or []:
            src, sep, dst = spec.partition("=")
            if not sep or not src or not dst:
                raise ValueError(f"--map-path wants FROM=TO, got {spec!r}")
            pairs.append((src.rstrip("/") or "/", os.path.expanduser(dst)))
        return cls(pairs)

    def local(self, path: str) -> str:
        for src, dst in self.pairs:
            if path == src or path.startswith(src.rstrip("/") + "/"):
                rest = path[len(src) :].lstrip("/")
                return os.path.join(dst, rest) if rest else dst
        return path

    def __bool__(self) -> bool:
        return bool(self.pairs)


def trace_dirs(model: Model) -> list[Path]:
    """The directories the trace's files live in (resolved): never written into."""
    dirs: set[Path] = set()
    root = model.root
    if root is not None:
        dirs.add((root if root.is_dir() else root.parent).resolve())
    for log in (model, model.text):
        if log is None:
            continue
        for source in log.files:
            if source.path is not None:
                dirs.add(source.path.parent.resolve())
    return sorted(dirs)


def inside_trace(path: str | os.PathLike[str], model: Model) -> Path | None:
    """The trace directory that `path` (a file to write) would be in, or None."""
    target = Path(path).expanduser()
    target = (target.parent.resolve() / target.name) if target.name else target.resolve()
    for d in trace_dirs(model):
        if target == d or d in target.parents:
            return d
    return None
