"""Index a source in a worker thread while the UI already shows what is indexed so far.

The model is mutated only under `lock`; the UI takes the same lock to read it. Trace files
are fed in small chunks so the UI never waits long for the lock.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from ..trace.index import TraceSet, discover
from ..trace.source import detect, find_text_log, load_source, run_dir_skipped

CHUNK = 4 << 20


class Loader:
    def __init__(self, path: str, model: Any = None) -> None:
        self.path = path
        self.lock = threading.RLock()
        self.model: Any = model
        self.done = 0
        self.total = 0
        self.finished = model is not None
        self.error: str | None = None
        self.started = time.monotonic()
        self.elapsed = 0.0
        self.cancelled = False

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 0.0

    def _progress(self, done: int, total: int) -> None:
        self.done, self.total = done, total

    def run(self) -> None:
        """Index everything (called in a worker thread)."""
        try:
            self._run()
        except Exception as exc:  # noqa: BLE001 - shown in the UI instead of a crash
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.elapsed = time.monotonic() - self.started
            self.finished = True

    def _run(self) -> None:
        kind = detect(self.path)
        if kind == "missing":
            raise FileNotFoundError(self.path)
        if kind == "text":
            self._read_text(Path(self.path))
            return
        if kind in ("stdin", "stream"):
            model = load_source(self.path, progress=self._progress)
            with self.lock:
                self.model = model
            return
        root = Path(self.path)
        ts = TraceSet(root)
        found, skipped = discover(root)
        ts.skipped = skipped
        self.total = sum(_size(p) for p in found)
        with self.lock:
            self.model = ts
        for p in found:
            if self.cancelled:
                return
            with self.lock:
                tf = ts.add_file(p)
            self._read(ts, tf)
        if kind == "run-dir":
            log = find_text_log(root)
            if log is not None:
                from ..trace.textlog import TextLog

                text = TextLog.load(str(log))
                with self.lock:
                    ts.text = text
                    ts.skipped = run_dir_skipped(root, ts.skipped, log)
                    if not ts.files and text is not None:
                        self.model = text

    def _read_text(self, path: Path) -> None:
        """A TORCH_LOGS capture, in chunks, so that quitting stops it."""
        from ..trace.textlog import TextLog

        log = TextLog(str(path))
        self.total = _size(path)
        with self.lock:
            self.model = log
        with open(path, "rb") as fh:
            while not self.cancelled:
                chunk = fh.read(CHUNK)
                if not chunk:
                    break
                with self.lock:
                    log.feed(chunk, spool=False)
                self.done += len(chunk)
        with self.lock:
            log.finish()

    def _read(self, ts: TraceSet, tf: Any) -> None:
        try:
            with open(tf.path, "rb") as fh:
                while not self.cancelled:
                    chunk = fh.read(CHUNK)
                    if not chunk:
                        break
                    with self.lock:
                        tf.feed(chunk, settle=False)
                    self.done += len(chunk)
        except OSError as exc:
            with self.lock:
                tf.problems.append(f"read error: {exc.strerror or exc}")
        with self.lock:
            tf.finish()
            ts.version += 1


def _size(p: Path) -> int:
    try:
        return p.stat().st_size
    except OSError:
        return 0


class FollowLoader:
    """Follow mode: a `Follower` grows the model; the app reads it under the same lock."""

    def __init__(self, path: str, poll: bool = False, stdin_fd: int | None = None) -> None:
        from ..live import Follower

        self.path = path
        self.follower = Follower(path, poll=poll)
        self.stdin_fd = stdin_fd
        self.done = 0
        self.total = 0
        self.finished = False
        self.error: str | None = None
        self.started = time.monotonic()
        self.elapsed = 0.0
        self.cancelled = False

    @property
    def model(self) -> Any:
        return self.follower.model

    @property
    def lock(self) -> Any:
        return self.follower.lock

    @property
    def fraction(self) -> float:
        return 1.0 if self.finished else 0.0

    @property
    def notices(self) -> list[str]:
        return self.follower.notices

    def run(self) -> None:
        """Read what exists now (in a worker thread), then keep following in the background."""
        try:
            if self.path != "-":
                self.follower.step()
        except Exception as exc:  # noqa: BLE001 - shown in the UI instead of a crash
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.elapsed = time.monotonic() - self.started
            self.finished = True
        if not self.cancelled:
            self.follower.start(stdin_fd=self.stdin_fd)

    def stop(self) -> None:
        self.cancelled = True
        self.follower.stop()
