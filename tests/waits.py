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


def _done(
    predicate: Callable[[], object],
    deadline: float,
    timeout: float,
    what: str,
    seen: Callable[[], object] | None,
) -> object:
    """The predicate's value when true; AssertionError once `deadline` has passed."""
    last = predicate()
    if not last and time.monotonic() >= deadline:
        raise AssertionError(f"not within {timeout:g}s: {_describe(what, last, seen)}")
    return last


def _stopped(
    predicate: Callable[[], object],
    deadline: float,
    what: str,
    seen: Callable[[], object] | None,
) -> bool:
    """True once `deadline` has passed with the predicate true; AssertionError when false."""
    last = predicate()
    if not last:
        raise AssertionError(f"stopped holding: {_describe(what, last, seen)}")
    return time.monotonic() >= deadline


def wait_until(
    predicate: Callable[[], object],
    timeout: float = TIMEOUT_S,
    what: str = "",
    seen: Callable[[], object] | None = None,
) -> object:
    """The predicate's first true value; AssertionError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not (last := _done(predicate, deadline, timeout, what, seen)):
        time.sleep(POLL_S)
    return last


async def until(
    pilot: Any,
    predicate: Callable[[], object],
    timeout: float = TIMEOUT_S,
    what: str = "",
    seen: Callable[[], object] | None = None,
) -> object:
    """As `wait_until`, letting the app run between polls."""
    deadline = time.monotonic() + timeout
    while not (last := _done(predicate, deadline, timeout, what, seen)):
        await pilot.pause(POLL_S)
    return last


def stays(
    predicate: Callable[[], object],
    duration: float,
    what: str = "",
    seen: Callable[[], object] | None = None,
) -> None:
    """The predicate is true at every poll for `duration` seconds."""
    deadline = time.monotonic() + duration
    while not _stopped(predicate, deadline, what, seen):
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
    while not _stopped(predicate, deadline, what, seen):
        await pilot.pause(POLL_S)
