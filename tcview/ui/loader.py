"""Index a source in a worker thread while the UI already shows what is indexed so far.

The model layer's own load does the work (`load_source` with `Hooks`): it publishes the model
at once and feeds it in chunks, each under `lock`, which the UI takes to read it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from threading import RLock

from tcview.ingest.load import Hooks
from tcview.ingest.source import load_source
from tcview.model.objects import Model


class Loader:
    """A one-shot load. `on_update` is called (in the worker) each time the model moved: each
    chunk indexed, and the end."""

    def __init__(
        self,
        path: str,
        model: Model | None = None,
        on_update: Callable[[], None] | None = None,
    ) -> None:
        self.path = path
        self.on_update = on_update
        self.lock = threading.RLock()
        self.model: Model | None = model
        self.done = 0
        self.total = 0
        self.finished = model is not None
        self.error: str | None = None
        self.cancelled = False

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 0.0

    def _progress(self, done: int, total: int) -> None:
        self.done, self.total = done, total
        if self.on_update is not None:
            self.on_update()

    def run(self) -> None:
        """Index everything (called in a worker thread)."""
        try:
            self._run()
        except Exception as exc:  # noqa: BLE001 - shown in the UI instead of a crash
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.finished = True

    def _run(self) -> None:
        hooks = Hooks(self._progress, self.lock, lambda: self.cancelled, self._publish)
        model = load_source(self.path, hooks=hooks)
        self._publish(model)

    @property
    def notices(self) -> list[str]:
        """What the user must know about the input (none for a one-shot load)."""
        return []

    def _publish(self, model: Model) -> None:
        with self.lock:
            self.model = model

    def stop(self) -> None:
        """Ask the load to end at its next chunk."""
        self.cancelled = True


class FollowLoader:
    """Follow mode: a `Follower` grows the model; the app reads it under the same lock.

    `on_update` is called (in the follower's thread) each time the model moved.
    """

    def __init__(
        self,
        path: str,
        poll: bool = False,
        stdin_fd: int | None = None,
        on_update: Callable[[], None] | None = None,
    ) -> None:
        from tcview.ingest.live import Follower

        self.path = path
        self.follower = Follower(path, poll=poll, on_update=on_update)
        self.stdin_fd = stdin_fd
        self.done = 0
        self.total = 0
        self.finished = False
        self.error: str | None = None
        self.cancelled = False

    @property
    def model(self) -> Model:
        return self.follower.model

    @property
    def lock(self) -> RLock:
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
            self.finished = True
        if not self.cancelled:
            self.follower.start(stdin_fd=self.stdin_fd)

    def stop(self) -> None:
        self.cancelled = True
        self.follower.stop()
