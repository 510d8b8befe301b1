"""A copy of a model that nothing changes afterwards: what a loader publishes to its readers.

A loader (one thread) is the only writer of its model. When the model moved, it publishes a
`freeze`d copy: every object reachable from the model is copied once, with the same structure
(an object met twice is one copy, met twice), so that readers in any thread (the UI, analyses,
reports) read a version that stays as it was, and never take a lock against the writer.

Not copied, but shared with the writer:
- immutable values (strings, numbers, paths, enums, compile ids, NamedTuples of them);
- a record's header value (`Record.meta`: JSON values are never changed once indexed);
- the objects `share` registers: a file's store of bytes and memo, which are safe from any
  thread and are the same file for every version;
- what only the writer uses (`WRITER_ONLY` attributes: the index's builder, its caches of
  parsed headers, the line it holds until its newline comes); readers never touch them.

Identity across versions is not kept: use `stable_key` (model/keys.py) to find an object of one
version in another.
"""

from __future__ import annotations

import gc
import threading
from array import array
from collections import Counter, OrderedDict, deque
from collections.abc import Callable
from enum import Enum
from pathlib import PurePath
from types import BuiltinFunctionType, FunctionType, MethodType, ModuleType
from typing import Any, TypeVar

from tcview.model.memo import Memo
from tcview.model.metadata import CacheArtifact, CompilationMetrics
from tcview.model.objects import JobEnd, Record

T = TypeVar("T")

_LEAVES: set[type] = {str, int, float, bool, type(None), bytes, complex, range}
_SHARED: set[type] = {
    Memo,
    CompilationMetrics,  # frozen records: immutable, as are the rest below
    CacheArtifact,
    JobEnd,
    FunctionType,
    BuiltinFunctionType,
    MethodType,
    ModuleType,
    type(threading.Lock()),
    type(threading.RLock()),
    threading.Event,
    type,
}
# Attributes only the writer reads (a builder, caches of the indexing): shared, not copied.
WRITER_ONLY = frozenset({"builder", "_cache", "_contexts", "_line", "_memos", "_open"})
# The slots `_Copier._record` sets, one by one (for speed): a new slot must be added there.
_RECORD_SLOTS = frozenset(
    {"source", "offset", "_lineno", "hdr_end", "end", "kind", "name", "meta", "compile"}
    | {"attempt", "md5", "closed", "role"}
)
if set(Record.__slots__) != _RECORD_SLOTS:
    raise TypeError("Record's slots changed: copy them in freeze._Copier._record")


def share(*types: type) -> None:
    """Objects of these types are the same object in every version (safe from any thread)."""
    _SHARED.update(types)


def freeze(model: T) -> T:
    """A copy of `model` and of everything it reaches, for readers only."""
    # The collector would walk the young copies again and again while they are made (1,024
    # ranks: a third of the time), and nothing made here is garbage.
    enabled = gc.isenabled()
    gc.disable()
    try:
        copied: T = _Copier().copy(model)
    finally:
        if enabled:
            gc.enable()
    return copied


class _Copier:
    def __init__(self) -> None:
        self.memo: dict[int, Any] = {}
        self.copiers: dict[type, Callable[[Any], Any]] = {
            list: self._list,
            dict: self._dict,
            Counter: self._dict,
            OrderedDict: self._dict,
            set: self._set,
            frozenset: self._frozenset,
            tuple: self._tuple,
            array: self._array,
            deque: self._deque,
            Record: self._record,
        }

    def copy(self, value: Any) -> Any:
        kind = type(value)
        if kind in _LEAVES or kind in _SHARED:
            return value
        done = self.memo.get(id(value))
        if done is not None:
            return done
        copier = self.copiers.get(kind)
        if copier is not None:
            return copier(value)
        if isinstance(value, (Enum, PurePath)):
            return value
        if isinstance(value, tuple):  # a NamedTuple (compile ids, placed lines)
            return self._named_tuple(value)
        return self._object(value)

    # ------------------------------------------------------------ containers

    def _list(self, value: list[Any]) -> list[Any]:
        out: list[Any] = []
        self.memo[id(value)] = out
        copy = self.copy
        out.extend([copy(x) for x in value])
        return out

    def _dict(self, value: dict[Any, Any]) -> dict[Any, Any]:
        out = type(value)()
        self.memo[id(value)] = out
        copy = self.copy
        for k, v in value.items():
            out[copy(k)] = copy(v)
        return out

    def _set(self, value: set[Any]) -> set[Any]:
        out: set[Any] = set()
        self.memo[id(value)] = out
        out.update(self.copy(x) for x in value)
        return out

    def _frozenset(self, value: frozenset[Any]) -> frozenset[Any]:
        out = frozenset(self.copy(x) for x in value)
        self.memo[id(value)] = out
        return out

    def _tuple(self, value: tuple[Any, ...]) -> tuple[Any, ...]:
        items = [self.copy(x) for x in value]
        out = value if all(a is b for a, b in zip(items, value, strict=True)) else tuple(items)
        self.memo[id(value)] = out
        return out

    def _named_tuple(self, value: tuple[Any, ...]) -> tuple[Any, ...]:
        items = [self.copy(x) for x in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            out = value
        else:
            out = type(value)(*items)
        self.memo[id(value)] = out
        return out

    def _array(self, value: array[Any]) -> array[Any]:
        out = value[:]
        self.memo[id(value)] = out
        return out

    def _deque(self, value: deque[Any]) -> deque[Any]:
        out: deque[Any] = deque(maxlen=value.maxlen)
        self.memo[id(value)] = out
        out.extend(self.copy(x) for x in value)
        return out

    # ------------------------------------------------------------ objects

    def _record(self, rec: Record) -> Record:
        # The hot path (a record an event): every slot but its source, compile and id part
        # is a scalar, set as it is.
        out = Record.__new__(Record)
        self.memo[id(rec)] = out
        out.offset, out._lineno, out.hdr_end, out.end = (
            rec.offset,
            rec._lineno,
            rec.hdr_end,
            rec.end,
        )
        out.kind, out.name, out.md5, out.closed, out.role = (
            rec.kind,
            rec.name,
            rec.md5,
            rec.closed,
            rec.role,
        )
        out.meta = rec.meta
        attempt = rec.attempt
        out.attempt = attempt if type(attempt) in _LEAVES else self.copy(attempt)
        out.source = self.copy(rec.source)
        compile = rec.compile
        out.compile = None if compile is None else self.copy(compile)
        return out

    def _object(self, value: Any) -> Any:
        kind = type(value)
        out = object.__new__(kind)
        self.memo[id(value)] = out
        copy = self.copy
        for name in _slots_of(kind):
            try:
                attr = getattr(value, name)
            except AttributeError:
                continue
            object.__setattr__(out, name, attr if name in WRITER_ONLY else copy(attr))
        state = getattr(value, "__dict__", None)
        if state is not None:
            out.__dict__.update(
                (name, attr if name in WRITER_ONLY else copy(attr)) for name, attr in state.items()
            )
        return out


_SLOTS: dict[type, tuple[str, ...]] = {}


def _slots_of(kind: type) -> tuple[str, ...]:
    names = _SLOTS.get(kind)
    if names is None:
        found: list[str] = []
        for klass in kind.__mro__:
            slots = klass.__dict__.get("__slots__", ())
            for name in (slots,) if isinstance(slots, str) else slots:
                if name not in ("__dict__", "__weakref__") and name not in found:
                    found.append(name)
        names = _SLOTS[kind] = tuple(found)
    return names


__all__ = ["WRITER_ONLY", "freeze", "share"]
