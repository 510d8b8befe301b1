"""The UI thread never waits more than a frame on a lock a worker holds.

Every lock tcview makes (its modules' `threading.Lock` and `RLock`, and the locks its modules
made at import) is replaced by one that times each wait of the main thread. The app follows a
live trace while it grows, the user goes through every view, and a worker thread runs the
heaviest readers (findings, summaries, diffs of every compile) on the published versions the
whole time. No wait of the UI thread may reach 16 ms.
"""

from __future__ import annotations

import sys
import threading
import time
import types
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLES
from ui_helpers import browse_while_growing, ready, sync

FRAME_S = 0.016


class _Waits:
    def __init__(self) -> None:
        self.main = threading.main_thread()
        self.longest = 0.0
        self.where = ""


WAITS = _Waits()


class TimedLock:
    """A lock (or RLock) that records how long the main thread waited to take it."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if self._inner.acquire(False):
            return True
        if not blocking:
            return False
        start = time.perf_counter()
        got: bool = self._inner.acquire(blocking, timeout)
        waited = time.perf_counter() - start
        if threading.current_thread() is WAITS.main and waited > WAITS.longest:
            WAITS.longest = waited
            WAITS.where = "".join(__import__("traceback").format_stack(limit=8))
        return got

    def release(self) -> None:
        self._inner.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

    def locked(self) -> bool:
        return bool(self._inner.locked())

    def __getattr__(self, name: str) -> Any:  # _is_owned etc. (Condition uses them)
        return getattr(self._inner, name)


LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))


def _timed_threading() -> types.SimpleNamespace:
    """`threading` as tcview's modules see it, with timed locks."""
    names = {name: getattr(threading, name) for name in dir(threading) if not name.startswith("__")}
    names["Lock"] = lambda: TimedLock(threading.Lock())
    names["RLock"] = lambda: TimedLock(threading.RLock())
    return types.SimpleNamespace(**names)


def _instrument(monkeypatch: pytest.MonkeyPatch) -> None:
    timed = _timed_threading()
    for name, module in list(sys.modules.items()):
        if not name.startswith("tcview") or module is None:
            continue
        if getattr(module, "threading", None) is threading:
            monkeypatch.setattr(module, "threading", timed)
        for attr, value in list(vars(module).items()):
            if isinstance(value, LOCK_TYPES):  # a module's lock, made at import
                monkeypatch.setattr(module, attr, TimedLock(value))
            elif hasattr(value, "__dict__") and not isinstance(value, (type, types.ModuleType)):
                for inner, lock in list(vars(value).items()):
                    if isinstance(lock, LOCK_TYPES):  # a module-level object's lock
                        monkeypatch.setattr(value, inner, TimedLock(lock))


@sync
async def test_the_ui_thread_never_waits_a_frame_on_a_workers_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tcview.analysis.findings
    import tcview.report.summary
    import tcview.ui.app
    from tcview.ui.options import OpenOptions

    _instrument(monkeypatch)
    from tcview.analysis.diff import compile_diff, predecessor
    from tcview.analysis.findings import findings
    from tcview.report.summary import summary_json

    source = SAMPLES / "cpu_breaks_recompiles" / "trace"
    live = tmp_path / "live"
    app = tcview.ui.app.TcviewApp(OpenOptions(str(live), follow=True))
    stop = threading.Event()
    worked = [0]

    def heavy_reader() -> None:
        """What a worker does with a version: all of it, again and again."""
        while not stop.is_set():
            model = app.model_session.model
            if model is None:
                time.sleep(0.01)
                continue
            findings(model)
            summary_json(model)
            for comp in model.compiles:
                before = predecessor(comp)
                if before is not None:
                    compile_diff(before, comp)
            worked[0] += 1

    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        reader = threading.Thread(target=heavy_reader, daemon=True)
        reader.start()
        written = await browse_while_growing(pilot, source, live)
        stop.set()
        reader.join(10)
    assert written and worked[0] > 0
    assert WAITS.longest < FRAME_S, f"waited {WAITS.longest * 1000:.1f} ms:\n{WAITS.where}"
