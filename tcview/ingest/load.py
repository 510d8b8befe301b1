"""How a long load reads its input: chunk size, progress, and the hooks a UI shares a model by."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tcview.model.objects import Model

# Bytes read and indexed at a time (also follow mode's read size): big enough for speed, small
# enough that a reader waiting on the model's lock never waits long.
CHUNK = 4 << 20

Progress = Callable[[int, int], None]  # (bytes done, bytes in all or 0 when unknown)


@dataclass
class Hooks:
    """How a long load reports to its session (the UI indexes in a worker thread).

    `publish` gets the model as soon as it exists (the session publishes frozen copies of it
    from `progress`, which the loading thread calls between chunks, when the model is whole);
    `stop` ends the load early (the model is then finished as far as it got).
    """

    progress: Progress | None = None
    stop: Callable[[], bool] = lambda: False
    publish: Callable[[Model], None] = lambda model: None


def read_chunks(
    path: Path,
    feed: Callable[[bytes], None],
    hooks: Hooks,
    done: int = 0,
    total: int = 0,
    start: int = 0,
) -> int:
    """Feed a file (from offset `start`) to an index in chunks; returns bytes done."""
    with open(path, "rb") as fh:
        if start:
            fh.seek(start)
        while not hooks.stop():
            chunk = fh.read(CHUNK)
            if not chunk:
                break
            feed(chunk)
            done += len(chunk)
            if hooks.progress is not None:
                hooks.progress(done, total)
    return done


def file_size(path: Path) -> int:
    """Size in bytes, 0 when it cannot be read (progress only)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0
