"""Deep equality of two models: every attribute of every object reachable from them.

`differences(a, b)` walks both object graphs side by side: objects of tcview's classes are
compared attribute by attribute (whatever attributes they have, so a field added later is
compared too), containers element by element in order, leaves by type and value. Identity is
part of the structure: an object met twice in `a` must be met as the same object in `b` (a
compile's records are the records of its file, a fact's compile is the compile in the file).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable
from enum import Enum
from pathlib import PurePath
from typing import Any

from tcview.ingest.tracefile import LineRefs

# Attributes that are caches, locks or handles, not what an index says.
IGNORED = frozenset(
    {
        "lock",  # a model's lock
        "builder",  # the facts it appends to are the model's lists, compared as such
        "_memos",
        "_cache",  # TraceFile: parsed headers
        "_contexts",  # TraceFile: memo of fast-path headers' compiles
        "store",  # TraceFile: its file handle, recent payloads and line numbers found
        "memo",  # LogSource: what readers derived from its bytes (a cache)
        "_lineno",  # Record: compared through `line_number()`
        "load_stats",  # TraceSet: how the last load went, not what it found
    }
)
_LEAVES = (str, bytes, int, float, bool, type(None), PurePath, Enum)


def differences(a: Any, b: Any, ignore: Iterable[str] = (), limit: int = 20) -> list[str]:
    """Where `a` and `b` differ ([] when they are the same), at most `limit` places."""
    walker = _Walker(IGNORED | frozenset(ignore), limit)
    walker.walk(a, b, "model")
    return walker.found


class _Walker:
    def __init__(self, ignore: frozenset[str], limit: int) -> None:
        self.ignore = ignore
        self.limit = limit
        self.found: list[str] = []
        self.pairs: dict[int, Any] = {}  # id(object of a) -> the object of b it was paired with
        self.keep: list[Any] = []  # keeps ids valid while walking

    def differ(self, where: str, what: str) -> None:
        if len(self.found) < self.limit:
            self.found.append(f"{where}: {what}")

    def walk(self, a: Any, b: Any, where: str) -> None:
        if len(self.found) >= self.limit:
            return
        if type(a) is not type(b):
            self.differ(where, f"type {type(a).__name__} != {type(b).__name__}")
            return
        if isinstance(a, float):
            if not (a == b or (math.isnan(a) and math.isnan(b))):
                self.differ(where, f"{a!r} != {b!r}")
            return
        if isinstance(a, _LEAVES):
            if a != b:
                self.differ(where, f"{_short(a)} != {_short(b)}")
            return
        if isinstance(a, (list, tuple, array, LineRefs)):
            if len(a) != len(b):
                self.differ(where, f"length {len(a)} != {len(b)}")
                return
            if isinstance(a, (array, LineRefs)):
                if list(a) != list(b):
                    self.differ(where, "items differ")
                return
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                self.walk(x, y, f"{where}[{i}]")
            return
        if isinstance(a, dict):
            keys_a, keys_b = list(a), list(b)
            if len(keys_a) != len(keys_b):
                self.differ(where, f"keys {_short(keys_a)} != {_short(keys_b)}")
                return
            for i, (x, y) in enumerate(zip(keys_a, keys_b, strict=True)):
                self.walk(x, y, f"{where}.keys[{i}]")  # objects as keys: paired like values
            for x, y in zip(keys_a, keys_b, strict=True):
                self.walk(a[x], b[y], f"{where}[{_short(x)}]")
            return
        if isinstance(a, (set, frozenset)):
            if a != b:
                self.differ(
                    where, f"{_short(sorted(a, key=repr))} != {_short(sorted(b, key=repr))}"
                )
            return
        self.node(a, b, where)

    def node(self, a: Any, b: Any, where: str) -> None:
        seen = self.pairs.get(id(a))
        if seen is not None:
            if seen is not b:
                self.differ(where, f"{type(a).__name__} met before is not the same object here")
            return
        self.pairs[id(a)] = b
        self.keep.append(a)
        if type(a).__module__.split(".")[0] != "tcview":
            if a != b:
                self.differ(where, f"{_short(a)} != {_short(b)}")
            return
        # An attribute set on one object and read from the class on the other is the same.
        names = _attributes(a) | _attributes(b)
        missing = sorted(n for n in names if not (hasattr(a, n) and hasattr(b, n)))
        if missing:
            self.differ(where, f"attributes {missing} on one side only")
            return
        for name in sorted(names - self.ignore):
            self.walk(getattr(a, name), getattr(b, name), f"{where}.{name}")
        if type(a).__name__ == "Record":
            self.walk(a.line_number(), b.line_number(), f"{where}.line_number()")


def _attributes(obj: Any) -> set[str]:
    names = set(getattr(obj, "__dict__", {}))
    for cls in type(obj).__mro__:
        names.update(s for s in getattr(cls, "__slots__", ()) if hasattr(obj, s))
    return names


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 120 else text[:117] + "..."
