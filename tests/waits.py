"""Waits on conditions, never fixed sleeps: poll a predicate until it holds or a deadline
passes, and fail with what was last seen.

`wait_until` polls from a plain thread, `until` from a Pilot (the app keeps running while it
waits). `holds` and `stays` are for claims that something does *not* happen for a while (a job
that stays alive, no redraw while nothing changed): they fail at the first moment it does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

POLL_S = 0.05
TIMEOUT_S = 15.0


def _describe(what: str, last: object, seen: Callable[[], object] | None) -> str:
    shown = seen() if seen is not None else last
    return f"{what or 'condition'}: last saw {shown!r}"


def wait_until(
    predicate: Callable[[], object],
    timeout: float = TIMEOUT_S,
    what: str = "",
    seen: Callable[[], object] | None = None,
) -> object:
    """The predicate's first true value; AssertionError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        last = predicate()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError(f"not within {timeout:g}s: {_describe(what, last, seen)}")
        time.sleep(POLL_S)


async def until(
    pilot: Any,
    predicate: Callable[[], object],
    timeout: float = TIMEOUT_S,
    what: str = "",
    seen: Callable[[], object] | None = None,
) -> object:
    """As `wait_until`, letting the app run between polls."""
    deadline = time.monotonic() + timeout
    while True:
        last = predicate()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError(f"not within {timeout:g}s: {_describe(what, last, seen)}")
        await pilot.pause(POLL_S)


def stays(
    predicate: Callable[[], object],
    duration: float,
    what: str = "",
    seen: Callable[[], object] | None = None,
) -> None:
    """The predicate is true at every poll for `duration` seconds."""
    deadline = time.monotonic() + duration
    while True:
        last = predicate()
        if not last:
            raise AssertionError(f"stopped holding: {_describe(what, last, seen)}")
        if time.monotonic() >= deadline:
            return
        time.sleep(POLL_S)


async def holds(
    pilot: Any,
    predicate: Callable[[], object],
    duration: float,
    what: str = "",
    seen: Callable[[], object] | None = None,
) -> None:
    """As `stays`, letting the app run between polls."""
    deadline = time.monotonic() + duration
    while True:
        last = predicate()
        if not last:
            raise AssertionError(f"stopped holding: {_describe(what, last, seen)}")
        if time.monotonic() >= deadline:
            return
        await pilot.pause(POLL_S)
