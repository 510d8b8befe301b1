"""When tcview itself goes away, take every job it started down with it.

`RunSession.start` registers each live session here; `kill_all` runs at exit and on SIGTERM
or SIGHUP (`install_cleanup`). The supervisor covers the case where tcview is SIGKILLed.
"""

from __future__ import annotations

import atexit
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol


class Job(Protocol):
    """What the clean-up needs of a running session."""

    @property
    def done(self) -> bool: ...

    def signal_group(self, sig: int) -> bool: ...

    def wait(self, timeout: float | None = None) -> object: ...


_live: set[Job] = set()
_live_lock = threading.RLock()
_atexit_installed = False
_signals_installed = False


@contextmanager
def registering(job: Job) -> Iterator[None]:
    """Around starting a job's process: the start and the registration hold one lock, so
    `kill_all` never takes its list between a job's start and its registration."""
    with _live_lock:
        yield
        _live.add(job)


def forget(job: Job) -> None:
    """The job has ended and was reaped."""
    with _live_lock:
        _live.discard(job)


def signal_group(pid: int, sig: int) -> bool:
    """Send `sig` to the process group `pid` leads; False when it is gone (or not ours)."""
    try:
        os.killpg(pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def kill_all(grace_s: float = 2.0) -> None:
    """SIGTERM every live job group, then SIGKILL what is left after `grace_s`."""
    with _live_lock:
        sessions = list(_live)
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 2.0)):
        alive = [s for s in sessions if s.signal_group(sig)]
        deadline = time.monotonic() + wait
        for s in alive:
            s.wait(max(0.0, deadline - time.monotonic()))
        sessions = [s for s in alive if not s.done]
        if not sessions:
            return


def _on_fatal_signal(signum: int, frame: object) -> None:
    kill_all()
    previous = _previous_handlers.get(signum)
    if callable(previous):
        previous(signum, frame)
        return
    raise SystemExit(128 + signum)


_previous_handlers: dict[int, object] = {}


def install_cleanup() -> None:
    """Install the exit and signal handlers (once; the signal handlers from the main thread).

    On SIGTERM or SIGHUP every live job group is killed, then the previous handler runs;
    where that was the default, SystemExit(128 + signal) is raised in the main thread.
    """
    global _atexit_installed, _signals_installed
    if not _atexit_installed:
        _atexit_installed = True
        atexit.register(kill_all)
    if _signals_installed or threading.current_thread() is not threading.main_thread():
        return
    _signals_installed = True
    for sig in (signal.SIGTERM, signal.SIGHUP):
        previous = signal.getsignal(sig)
        if previous is signal.SIG_IGN:
            continue  # e.g. under nohup: the user asked to survive this one
        _previous_handlers[sig] = previous
        signal.signal(sig, _on_fatal_signal)
