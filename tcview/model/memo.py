"""What readers derived from a file's bytes, kept beside them for the next reader.

A `LogSource` reads its payloads through its file's store, which every version of a model
shares; what a reader computes from those bytes (a compile's phases, its stack, a kernel's
digest) is kept here, keyed by byte offsets, instead of being written into the model's objects,
which readers never change. Any thread may use it; at most `size` entries are kept.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")
MEMO_SIZE = 16384


class Memo:
    """A bounded, thread-safe table of values derived from one file's bytes."""

    def __init__(self, size: int = MEMO_SIZE) -> None:
        self.size = size
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any | None:
        """The value kept for `key`, or None (nothing is computed)."""
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: Hashable, value: T) -> T:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value

    def of(self, key: Hashable, make: Callable[[], T]) -> T:
        """The value for `key`, made (outside the lock) when not kept yet."""
        value = self.get(key)
        if value is None:
            value = self.put(key, make())
        return value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


__all__ = ["MEMO_SIZE", "Memo"]
