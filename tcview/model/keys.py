"""Which object of one version of a model is which object of another.

Readers hold objects of the version they read (model/freeze.py): a view's rows, the compile
marked for a diff, the tree's nodes. When a newer version is published, the same compile is
another object. `stable_key` names an object by what it is in the input (its file, its compile
id, its byte offset), so that it is found again in any version: `same(a, b)` compares by it.
"""

from __future__ import annotations

from collections.abc import Hashable

from tcview.model.objects import (
    BreakGroup,
    CacheEvent,
    Compile,
    Error,
    Failure,
    Frame,
    GraphBreak,
    HandlerError,
    Kernel,
    LogSource,
    Model,
    Rank,
    Recompile,
    Record,
    Run,
)


def source_key(source: LogSource) -> tuple[str, str]:
    """A file (or one process of a capture) by its path and how it is shown."""
    return (str(source.path), source.display)


def stable_key(obj: object) -> Hashable:
    """A key that is the same for this object in every version of its model (objects of no
    known kind: their identity, which holds within one version only)."""
    if isinstance(obj, Record):
        return ("record", source_key(obj.source), obj.offset)
    if isinstance(obj, Compile):
        return ("compile", source_key(obj.file), obj.key)
    if isinstance(obj, Frame):
        return ("frame", source_key(obj.file), obj.key)
    if isinstance(obj, Kernel):
        return ("kernel", source_key(obj.output.source), obj.output.offset, obj.index)
    if isinstance(obj, LogSource):
        return ("file", *source_key(obj))
    if isinstance(obj, Run):
        first = obj.files[0] if obj.files else None
        return ("run", obj.directory, source_key(first) if first is not None else None)
    if isinstance(obj, Rank):
        return ("rank", obj.rank, tuple(source_key(f) for f in obj.files[:1]))
    if isinstance(obj, Model):
        return ("model", obj.display)
    if isinstance(obj, BreakGroup):
        return ("breaks", obj.first.reason, obj.first.location)
    if isinstance(obj, (GraphBreak, Recompile, Failure, CacheEvent, HandlerError, Error)):
        record = getattr(obj, "record", None)
        if isinstance(record, Record):
            return (type(obj).__name__, stable_key(record))
    return ("object", id(obj))


def same(a: object, b: object) -> bool:
    """`a` and `b` are one object of the input, maybe of two versions of its model."""
    return a is b or (type(a) is type(b) and stable_key(a) == stable_key(b))


def find_in(model: Model, obj: object) -> object | None:
    """`obj` (of any version) as `model` has it: its compile, record, frame or kernel; None
    when this version has no such object."""
    if isinstance(obj, Compile):
        return next((c for c in model.compiles if same(c, obj)), None)
    if isinstance(obj, Kernel):
        return next((k for k in model.kernels if same(k, obj)), None)
    if isinstance(obj, Frame):
        return next((f for src in model.files for f in src.frames.values() if same(f, obj)), None)
    if isinstance(obj, Record):
        src = next((s for s in model.files if same(s, obj.source)), None)
        return next((r for r in src.records if r.offset == obj.offset), None) if src else None
    if isinstance(obj, LogSource):
        return next((s for s in model.files if same(s, obj)), None)
    return None


__all__ = ["find_in", "same", "source_key", "stable_key"]
