"""Follow mode: keep a model in step with growing trace files, logs, or a pipe.

A `Follower` owns the model it grows and is its only writer. Watchdog (inotify, or polling
with --poll or when inotify cannot be used) marks paths dirty; one reader thread reads each
dirty file from its last offset and feeds the appended bytes to the index. When the model
moved, that thread publishes a frozen copy of it (`published`, model/freeze.py): readers (the
UI, analyses) take the last one, which never changes, and never wait on the writer. Publishing
costs a copy of the model's objects, so it is spaced to take at most `PUBLISH_SHARE` of the
writer's time.

Files that shrink or are replaced (new inode) make the follower rebuild the whole model from
disk, so the result stays identical to a one-shot read. Deleted files are marked, not dropped.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from tcview.ingest.archives import STDIN, spool_archive
from tcview.ingest.cache import IndexCache, cache_disabled
from tcview.ingest.detect import (
    PipeKind,
    find_text_log,
    is_trace_name,
    plan_input,
    sniff_chunks,
    trace_reason,
)
from tcview.ingest.index import TraceSet
from tcview.ingest.load import CHUNK, Hooks
from tcview.ingest.source import RUN_JSON, load_archive, new_spool, read_job_end
from tcview.ingest.textlog import TextLog
from tcview.ingest.tracefile import TraceFile
from tcview.model.freeze import freeze
from tcview.model.objects import Lock

if TYPE_CHECKING:
    from watchdog.observers.api import BaseObserver

RESCAN_S = 0.5  # safety rescan, also when events are working
ENDED = "input ended"  # a pipe's last notice (what it says of the input may follow)
PUBLISH_SHARE = 0.25  # at most this share of the writer's time goes to publishing versions


class Follower:
    """Grows a TraceSet (or a TextLog) as its files grow."""

    def __init__(
        self,
        path: str,
        poll: bool = False,
        interval: float = 0.25,
        on_update: Callable[[], None] | None = None,
        lock: Lock | None = None,
    ) -> None:
        self.path = path
        self.poll = poll
        self.interval = interval
        self.on_update = on_update
        # Guards what the watcher thread hands to the reader thread (never the model: the
        # reader thread is its only writer, and readers read `published` versions).
        self.lock: Lock = lock if lock is not None else threading.RLock()
        self.notices: list[str] = []
        self.version = 0
        self.rebuilds = 0
        self._dirty: set[str] = set()
        self._job_end_at: float | None = None  # run.json's mtime when last read
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._observer: BaseObserver | None = None
        self._watching: str | None = None
        self._thread: threading.Thread | None = None
        self._stdin_fd: int | None = None
        self._identity: dict[str, tuple[int, int]] = {}
        self._not_traces: dict[str, tuple[int, int, int]] = {}
        self.kind = plan_input(path, follow=True).kind
        self._stream_path: str | None = None
        if self.kind == "stream":  # a FIFO or a <(...) pipe: read it like stdin
            self._stream_path, self.kind = path, "stdin"
        self.model: TraceSet | TextLog = self._empty_model()
        self.cache = IndexCache.default(Path(path)) if self.kind not in ("text", "stdin") else None
        # The last version published to readers, how long its copy took, and when.
        self.published: TraceSet | TextLog = freeze(self.model)
        self.published_count = 0
        self._publish_s = 0.0
        self._published_at = 0.0
        self._unpublished = False

    # ---------------------------------------------------------------- model

    def _empty_model(self) -> TraceSet | TextLog:
        if self.kind in ("text", "stdin"):
            path = None if self.kind == "stdin" else self.path
            return TextLog(path, display=self._display())
        return TraceSet(self.path)

    def _display(self) -> str:
        return STDIN if self.kind == "stdin" else self.path

    @property
    def root(self) -> Path:
        return Path(self.path)

    # ---------------------------------------------------------------- publishing

    def publish(self) -> None:
        """Publish a frozen copy of the model as it is now (call from the writing thread)."""
        start = time.monotonic()
        frozen = freeze(self.model)
        now = time.monotonic()
        self.published = frozen
        self.published_count += 1
        self._publish_s, self._published_at = now - start, now
        self._unpublished = False

    def publish_due(self) -> bool:
        """The model moved: publish it unless the last copy was too recent for its cost.
        True when it published."""
        self._unpublished = True
        if time.monotonic() - self._published_at < self._publish_s / PUBLISH_SHARE:
            return False
        self.publish()
        return True

    def _moved(self) -> None:
        if self.publish_due() and self.on_update is not None:
            self.on_update()

    # ---------------------------------------------------------------- lifecycle

    def start(self, stdin_fd: int | None = None) -> None:
        """Start watching and reading in background threads."""
        self._stdin_fd = stdin_fd
        if self.kind == "stdin":
            self._thread = threading.Thread(
                target=self._read_pipe, name="tcview-stdin", daemon=True
            )
        else:
            self._thread = threading.Thread(target=self._run, name="tcview-follow", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._observer is not None:
            with contextlib.suppress(Exception):  # best effort on shutdown
                self._observer.stop()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2)

    def step(self) -> bool:
        """Read everything new once (used by the thread, and by tests). True if it changed."""
        changed = False
        for path in self._files_to_check():
            changed |= self._read(path)
        changed |= self._read_job_end()
        if changed:
            self.version += 1
        return changed

    def _read_job_end(self) -> bool:
        """A run directory's run.json, written when its job ends: how it ended."""
        path = self.root / RUN_JSON
        try:
            at = path.stat().st_mtime
        except OSError:
            return False
        if at == self._job_end_at:
            return False
        self.model.job_end = read_job_end(self.root)
        self._job_end_at = at
        return True

    def _run(self) -> None:
        self._try_start_observer()
        last_scan = 0.0
        while not self._stop.is_set():
            wait = self.interval if self.poll else RESCAN_S
            if self._unpublished:  # a version held back by its cost is due then
                wait = min(
                    wait,
                    max(
                        0.01,
                        self._published_at + self._publish_s / PUBLISH_SHARE - time.monotonic(),
                    ),
                )
            self._wake.wait(timeout=wait)
            self._wake.clear()
            if self._stop.is_set():
                break
            switched = self._watching != self._watch_target()
            if switched:
                self._try_start_observer()  # the root appeared (or vanished): watch it instead
            now = time.monotonic()
            full = switched or now - last_scan >= (self.interval if self.poll else RESCAN_S)
            try:
                if full:
                    last_scan = now
                    changed = self.step()
                else:
                    changed = self._step_dirty()
            except Exception as exc:  # noqa: BLE001 - the follower must never die
                self.note(f"follow error: {type(exc).__name__}: {exc}")
                changed = True
            if changed or self._unpublished:
                self._moved()

    def _step_dirty(self) -> bool:
        with self.lock:
            dirty, self._dirty = self._dirty, set()
        changed = False
        known = {str(tf.path) for tf in self._trace_files()}
        for path in dirty:
            if path in known or self._is_candidate(Path(path)):
                changed |= self._read(Path(path))
        if any(not os.path.exists(p) for p in dirty):
            changed |= self._mark_deleted()
        if changed:
            self.version += 1
        return changed

    # ---------------------------------------------------------------- watching

    def _watch_target(self) -> str | None:
        p = self.root
        target = p if p.is_dir() else p.parent
        while not target.exists():
            if target.parent == target:
                return None
            target = target.parent
        return str(target)

    def _try_start_observer(self) -> None:
        try:
            self._start_observer()
        except Exception as exc:  # noqa: BLE001 - e.g. the directory vanished meanwhile
            self.note(f"cannot watch {self.path}: {exc}; polling")
            self._watching = None

    def note(self, text: str) -> None:
        """Add a notice once (a repeating error must not grow the list)."""
        if text not in self.notices[-20:]:
            self.notices.append(text)
            del self.notices[:-100]

    def _start_observer(self) -> None:
        target = self._watch_target()
        if target is None or target == self._watching:
            return
        if self._observer is not None:
            with contextlib.suppress(Exception):  # the old watch may be gone already
                self._observer.stop()
        from watchdog.events import FileSystemEvent, FileSystemEventHandler

        follower = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                paths = [event.src_path, event.dest_path]
                with follower.lock:
                    follower._dirty.update(os.fsdecode(p) for p in paths if p)
                follower._wake.set()

        recursive = Path(target) == self.root and self.root.is_dir()
        observer: BaseObserver | None = None
        if not self.poll:
            try:
                from watchdog.observers.inotify import InotifyObserver

                observer = InotifyObserver()
                observer.schedule(Handler(), target, recursive=recursive)
                observer.start()
            except Exception as exc:  # noqa: BLE001 - no inotify: fall back to polling
                self.notices.append(f"inotify unavailable ({exc}); polling every {self.interval}s")
                self.poll = True
                observer = None
        if observer is None:
            from watchdog.observers.polling import PollingObserver

            observer = PollingObserver(timeout=self.interval)
            observer.schedule(Handler(), target, recursive=recursive)
            observer.start()
        self._observer = observer
        self._watching = target

    # ---------------------------------------------------------------- reading

    def _is_candidate(self, p: Path) -> bool:
        if self.kind in ("text", "trace-file"):
            return p == self.root
        if not p.is_file():
            return False
        try:
            p.relative_to(self.root)
        except ValueError:
            return False
        if self.kind == "run-dir" and p == find_text_log(self.root):
            return True
        if is_trace_name(p.name):
            return True
        try:
            st = p.stat()
        except OSError:
            return False
        if st.st_size == 0:
            return False
        # A file that is not a trace is sniffed again only when it changes.
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        if self._not_traces.get(str(p)) == stamp:
            return False
        if trace_reason(p) is None:
            return True
        self._not_traces[str(p)] = stamp
        return False

    def _files_to_check(self) -> list[Path]:
        root = self.root
        if self.kind in ("text", "trace-file"):
            return [root] if root.is_file() else []
        if not root.is_dir():
            return []
        if self.kind == "trace-dir" and find_text_log(root) is not None:
            self.kind = "run-dir"
        known = {tf.path for tf in self._trace_files()}
        found = []
        for dirpath, dirs, files in os.walk(root):
            dirs.sort()
            for name in sorted(files):
                p = Path(dirpath) / name
                if p in known or self._is_candidate(p):
                    found.append(p)
        self._mark_deleted()
        return found

    def _mark_deleted(self) -> bool:
        changed = False
        for tf in self._trace_files():
            gone = not tf.path.exists()
            if gone != tf.deleted:
                tf.deleted = gone
                changed = True
        return changed

    def _trace_files(self) -> list[TraceFile]:
        return list(self.model.files) if isinstance(self.model, TraceSet) else []

    def _read(self, path: Path) -> bool:
        """Feed what was appended to `path`; rebuild on shrink or replacement."""
        try:
            st = path.stat()
        except OSError:
            return False
        ident = (st.st_dev, st.st_ino)
        key = str(path)
        target = self._target_for(path)
        if target is None:
            return False
        old = self._identity.get(key)
        pos = target.pos
        if (old is not None and old != ident) or st.st_size < pos:
            self._identity[key] = ident
            self.rebuild(f"{path.name} was {'replaced' if old != ident else 'truncated'}")
            return True
        self._identity[key] = ident
        if st.st_size == pos:
            return False
        try:
            with open(path, "rb") as fh:
                fh.seek(pos)
                changed = False
                while not self._stop.is_set():
                    data = fh.read(CHUNK)
                    if not data:
                        break
                    target.feed(data)
                    changed = True
                    self._moved()  # a big file shows as it is read, not at its end
        except OSError as exc:
            self.note(f"cannot read {path}: {exc.strerror or exc}")
            return False
        return changed

    def _target_for(self, path: Path) -> TraceFile | TextLog:
        """The object that indexes `path`: a TraceFile, the TextLog, or a run's TextLog."""
        model = self.model
        if isinstance(model, TextLog):
            return model
        if self.kind == "run-dir" and path == find_text_log(self.root):
            if model.text is None:
                model.add_text(TextLog(str(path)))
            assert model.text is not None
            return model.text
        tf = model.file_for(path)
        if tf is None and self.cache is not None:
            # Its first read from the index cache (which follow mode never writes to: its
            # files are being written).
            tf = model.add_cached(path, self.cache)
        if tf is None:
            tf = model.add_file(path)
        return tf

    def rebuild(self, why: str) -> None:
        """Start over from disk: the way to stay exact after truncation or replacement."""
        self.note(f"re-indexed: {why}")
        old, self.model = self.model, self._empty_model()
        self._job_end_at = None  # the fresh model reads it again
        self.rebuilds += 1
        if isinstance(old, TraceSet):
            old.close()  # (a reader of an older version opens a file again when it reads)
        for path in self._files_to_check():
            self._read(path)

    def finish(self) -> None:
        """The inputs are complete: index trailing lines without a newline."""
        for tf in self._trace_files():
            if not tf.finished:
                tf.finish()
        model = self.model
        text = model if isinstance(model, TextLog) else model.text
        if text is not None and self.kind != "stdin":
            text.finish()
        self.publish()

    # ---------------------------------------------------------------- pipes

    def _read_pipe(self) -> None:
        """Read stdin or a stream as it comes, as what its first bytes say it carries; close it
        at its end (what writes to it then stops, rather than waits)."""
        fd = self._stdin_fd
        if self._stream_path is not None:
            try:
                fd = os.open(self._stream_path, os.O_RDONLY)  # waits for a writer: not on the UI
            except OSError as exc:
                self.notices.append(f"cannot read {self._stream_path}: {exc.strerror or exc}")
                return
        ended = ENDED
        try:
            kind, chunks = sniff_chunks(self._pipe_chunks(0 if fd is None else fd))
            if kind is PipeKind.ARCHIVE:
                ended += self._read_piped_archive(chunks)
            elif kind is PipeKind.TRACE:
                self._read_piped_trace(chunks)
            else:
                self._read_piped_text(chunks)
        except Exception as exc:  # noqa: BLE001 - the follower must never die
            ended += f": reading it failed: {type(exc).__name__}: {exc}"
        finally:
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.version += 1
        self.notices.append(ended)  # (the status bar shows the last)
        self.publish()
        if self.on_update is not None:
            self.on_update()

    def _pipe_chunks(self, fd: int) -> Iterator[bytes]:
        """What the pipe gives, until it ends or the follower stops."""
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select([fd], [], [], 0.25)
            except (OSError, ValueError):
                return
            if not ready:
                continue
            try:
                data = os.read(fd, CHUNK)
            except OSError:
                return
            if not data:
                return
            yield data

    def _read_piped_text(self, chunks: Iterable[bytes]) -> None:
        model = self.model
        assert isinstance(model, TextLog)  # what a pipe's follower starts with
        for data in chunks:
            if data:
                model.feed(data)
                self.version += 1
                self._moved()
        model.finish()

    def _read_piped_trace(self, chunks: Iterable[bytes]) -> None:
        """A trace: written to a file of its own as it comes, and followed there as a trace
        file is (its records point into it)."""
        fd, path = new_spool()
        self.path, self.kind, self.cache = str(path), "trace-file", None
        self.model = TraceSet(path, display=STDIN)
        self.rebuilds += 1  # another kind of model: readers start over
        with os.fdopen(fd, "wb") as out:
            for data in chunks:
                out.write(data)
                out.flush()
                if self._read(path):
                    self.version += 1
        for tf in self._trace_files():
            tf.finish()

    def _read_piped_archive(self, chunks: Iterable[bytes]) -> str:
        """An archive: spooled until it has all come, then read once from its unpacked copy,
        as an archive given by name is. What the input's end says of it."""
        self.notices.append("an archive on stdin: read once it has all come")
        self.publish()
        if self.on_update is not None:
            self.on_update()
        stop = self._stop.is_set
        cache = not cache_disabled()
        try:
            packed = spool_archive(chunks, cache, stop=stop)
            model, cut = load_archive(str(packed), Hooks(stop=stop), STDIN, cache)
        except Exception as exc:  # noqa: BLE001 - any input: said, and the follower goes on
            return f": its archive could not be read: {exc}"
        assert isinstance(model, TraceSet | TextLog)
        self.model = model
        self.rebuilds += 1
        return ": its archive was cut short" if cut else ""
