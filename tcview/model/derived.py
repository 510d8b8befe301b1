"""What readers derive from a version of a model, kept with the version.

A published version never changes (model/freeze.py), so what is derived from it (findings, the
recompile budget, the counts, a stack tree) holds as long as the version lives: `derived`
computes it once per version and key, in whichever thread asks first (a worker: the UI shows
the last result it got, never computes it), and forgets it with the version.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from tcview.model.objects import Model

T = TypeVar("T")

_BY_VERSION: weakref.WeakKeyDictionary[Model, dict[Hashable, Any]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()  # guards the table only: values are made outside it


def derived(model: Model, key: Hashable, make: Callable[[], T]) -> T:
    """`make()`'s value for this version of the model, made once (two threads asking at once
    may both make it; the first kept wins)."""
    with _LOCK:
        kept = _BY_VERSION.get(model)
        if kept is not None and key in kept:
            value: T = kept[key]
            return value
    value = make()
    with _LOCK:
        return _BY_VERSION.setdefault(model, {}).setdefault(key, value)


def known(model: Model, key: Hashable) -> Any | None:
    """The value derived for this version and key, if any thread made it yet (None if not)."""
    with _LOCK:
        kept = _BY_VERSION.get(model)
        return kept.get(key) if kept is not None else None


__all__ = ["derived", "known"]
