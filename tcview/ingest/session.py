"""A model session: one input read into one model by one writer, read by all in versions.

The session owns the loader, the model's only writer: a one-shot index (`run` in a worker
thread, chunk by chunk) or follow mode (a `Follower` that keeps growing it in its own
threads). Readers (the UI, its workers, analyses) take `model`, the last published version,
which nothing changes: they never lock against the writer. A one-shot load publishes frozen
copies while it reads (spaced by their cost), then the model itself once nothing writes to it
any more; follow mode publishes a frozen copy whenever the model moved (live.py).
`on_update` is called (from the loading thread) each time a version was published; `versions`
says whether one was since the last look.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from tcview.analysis.profile import RuntimeJoin, join_profile
from tcview.ingest.live import Follower
from tcview.ingest.load import Hooks
from tcview.ingest.profile import Profile, ProfileError, load_profile, profile_path, profile_stamp
from tcview.ingest.source import load_source
from tcview.model.freeze import freeze
from tcview.model.objects import Model

# A one-shot load shows what it has read at first, then at most this often (the app redraws
# its tree while indexing no more often: ui/browser.py TREE_GAP)
PROGRESS_PUBLISH_S = 1.0
# ... and spends at most this share of its time on it (what it reads matters more than the
# views of it on the way)
PROGRESS_SHARE = 0.1


class ModelSession:
    """One input's model, its lock and its loader (one-shot, or follow with `follow`).

    `model`: a model read already (the session adopts it: it takes the session's lock).
    """

    def __init__(
        self,
        path: str,
        *,
        follow: bool = False,
        model: Model | None = None,
        poll: bool = False,
        stdin_fd: int | None = None,
        on_update: Callable[[], None] | None = None,
        profile: str | None = None,
    ) -> None:
        """`profile`: a torch.profiler trace to join (--profile; a run directory brings its
        own once written)."""
        self.path = path
        self.profile_arg = profile
        self._measured: tuple[tuple[Any, ...], RuntimeJoin | None] | None = None
        # Workers only (the counts, a view's rows): one reads and joins, the others wait.
        self._measuring = threading.Lock()
        self._profile: tuple[tuple[Any, ...], Profile | None] | None = None
        self._profile_seen: tuple[Any, ...] = ()  # the profile files last seen
        self.follow = follow
        self.on_update = on_update
        self.stdin_fd = stdin_fd
        self.done = 0  # bytes indexed (one-shot)
        self.total = 0  # bytes to index (one-shot; 0 when unknown)
        self.error: str | None = None
        self.cancelled = False
        self.follower: Follower | None = (
            Follower(path, poll=poll, on_update=self._moved) if follow else None
        )
        self._model: Model | None = None  # the published version (one-shot)
        self._building: Model | None = None  # the model the one-shot load writes
        self._published = 0  # versions published (one-shot)
        self._publish_s = 0.0  # what the last frozen copy cost
        self._published_at = 0.0
        self.finished = False
        if model is not None:
            self._adopt(model)
            self.finished = True

    # ------------------------------------------------------------ the measured profile

    def profile_written(self) -> bool:
        """Whether a profile appeared or changed since the last call (follow mode polls)."""
        path = profile_path(self.path, self.profile_arg)
        stamp = profile_stamp(path) if path is not None else ()
        if stamp == self._profile_seen:
            return False
        self._profile_seen = stamp
        return bool(stamp)

    def measured(self, model: Model) -> RuntimeJoin | None:
        """The profile joined to `model`: read again only when its files change, joined again
        when the model moves. Called off the UI thread (the counts, a view's prepare)."""
        path = profile_path(self.path, self.profile_arg)
        if path is None:
            return None
        stamp = profile_stamp(path)
        # Joined again when what it joins to grew, not at every version: a live trace's new
        # records rarely add a compile or a kernel, and a big profile takes a while to join.
        key = (stamp, len(model.files), len(model.compiles), len(model.kernels))
        with self._measuring:
            if self._measured is None or self._measured[0] != key:
                if self._profile is None or self._profile[0] != stamp:  # read once as written
                    try:
                        self._profile = (stamp, load_profile(path))
                    except (ProfileError, OSError):
                        self._profile = (stamp, None)
                prof = self._profile[1]
                joined = join_profile(model, prof) if prof is not None else None
                self._measured = (key, joined)
            return self._measured[1]

    # ------------------------------------------------------------ what it holds

    @property
    def model(self) -> Model | None:
        """The last version published: nothing changes it (any thread may read it)."""
        if self.follower is not None:
            return self.follower.published
        return self._model

    @property
    def fraction(self) -> float:
        if self.follower is not None:
            return 1.0 if self.finished else 0.0
        return self.done / self.total if self.total else 0.0

    @property
    def notices(self) -> list[str]:
        """What the user must know about the input (follow mode's notes; none one-shot)."""
        return self.follower.notices if self.follower is not None else []

    def versions(self) -> tuple[int, ...]:
        """What changes whenever a new version is published."""
        if self.follower is not None:
            return (self.follower.rebuilds, self.follower.published_count)
        return (self._published,) if self._model is not None else ()

    # ------------------------------------------------------------ loading

    def run(self) -> None:
        """Read the input (call it in a worker thread). One-shot: index it all; follow: read
        what exists now, then keep following in the background."""
        try:
            if self.follower is None:
                hooks = Hooks(self._progress, lambda: self.cancelled, self._build)
                self._adopt(load_source(self.path, hooks=hooks))
            elif self.path != "-":
                self.follower.step()
                self.follower.publish()
        except Exception as exc:  # noqa: BLE001 - shown in the UI instead of a crash
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.finished = True
        if self.follower is not None and not self.cancelled:
            self.follower.start(stdin_fd=self.stdin_fd)

    def stop(self) -> None:
        """Ask the load to end at its next chunk; stop following."""
        self.cancelled = True
        if self.follower is not None:
            self.follower.stop()

    def _adopt(self, model: Model) -> None:
        """Publish `model` itself: the load is over and nothing writes to it any more."""
        self._building = None
        self._model = model
        self._published += 1

    def _build(self, model: Model) -> None:
        """The model the load writes (published in frozen copies while it is read)."""
        self._building = model

    def _progress(self, done: int, total: int) -> None:
        """Called by the loading thread between chunks: the model is whole, so a frozen copy
        of it can be published, when the last one is not too recent for its cost."""
        self.done, self.total = done, total
        building = self._building
        now = time.monotonic()
        if building is not None and now - self._published_at >= max(
            PROGRESS_PUBLISH_S, self._publish_s / PROGRESS_SHARE
        ):
            self._model = freeze(building)
            self._published += 1
            self._published_at = time.monotonic()
            self._publish_s = self._published_at - now
        self._moved()

    def _moved(self) -> None:
        if self.on_update is not None:
            self.on_update()


__all__ = ["ModelSession"]
