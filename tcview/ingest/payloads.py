"""The bytes of one input file, read from any thread: every version of a model reads through it.

A model's versions (live.py publishes a new one whenever the input grew) are separate objects,
but the file under them is one: its `PayloadStore` is shared by them all. It owns the file
handle, counted by its readers, so that closing it (a rebuild, the end) never pulls a
descriptor from under a read in another thread nor lets a read use a reused number; it keeps
the payloads read last (an LRU by bytes), the line numbers found so far, and the payloads that
needed their blank lines restored. Its lock guards only these tables and the handle's count,
never a read from disk, so no thread waits on another's read.

A capture read from a pipe has no file: what was fed is kept in a spool file (`keep`), read
back the same way.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import sys
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path

from tcview.model.freeze import share
from tcview.model.memo import Memo

CACHE_BYTES = 32 << 20  # payloads kept for the next read, in all
ENTRY_MAX = 4 << 20  # a bigger payload is read each time (kept, it would push out the rest)
SEEN_MAX = 8192  # regions read once, remembered: the second read of one keeps it
LINE_SCAN = 8 << 20  # bytes read at a time when counting lines


class PayloadStore:
    """One file's handle, recent payloads and known line numbers; safe from any thread."""

    def __init__(self, path: Path | None, cache_bytes: int = CACHE_BYTES) -> None:
        self.path = path
        self.cache_bytes = cache_bytes
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._readers = 0
        self._close_pending = False
        self._spool: int | None = None  # the spool's descriptor (a pipe's bytes)
        self._spooled = 0
        self._recent: OrderedDict[tuple[int, int], bytes] = OrderedDict()
        self._recent_bytes = 0
        # A region is kept from its second read on: the index reads each payload once (its
        # handlers), and would fill the table with what no reader asks for again.
        self._seen: OrderedDict[tuple[int, int], None] = OrderedDict()
        self._marks: list[tuple[int, int]] = [(0, 1)]  # known (offset, line number)
        self._blank_restored: set[int] = set()
        self.reads = 0  # reads from disk (a test counts them)
        self.memo = Memo()  # what readers derived from these bytes

    # ---------------------------------------------------------------- reading

    def read(self, start: int, end: int) -> bytes:
        """Bytes [start, end) as they are on disk now (never cached)."""
        if end <= start:
            return b""
        with self._lock:
            fd = self._spool if self._spool is not None else self._open()
            if fd is None:
                return b""
            self._readers += 1
            self.reads += 1
        try:
            return os.pread(fd, end - start, start)
        finally:
            with self._lock:
                self._readers -= 1
                if not self._readers and self._close_pending:
                    self._close_now()

    def read_cached(self, start: int, end: int) -> bytes:
        """Bytes [start, end) of a region that no longer changes (a closed record's payload):
        from the recent payloads when read lately."""
        key = (start, end)
        with self._lock:
            data = self._recent.get(key)
            if data is not None:
                self._recent.move_to_end(key)
                return data
            again = key in self._seen
            if not again:
                self._seen[key] = None
                if len(self._seen) > SEEN_MAX:
                    self._seen.popitem(last=False)
        data = self.read(start, end)
        if again and len(data) == end - start and len(data) <= ENTRY_MAX:
            with self._lock:
                if key not in self._recent:
                    self._recent[key] = data
                    self._recent_bytes += len(data)
                    while self._recent_bytes > self.cache_bytes:
                        _, old = self._recent.popitem(last=False)
                        self._recent_bytes -= len(old)
        return data

    def _open(self) -> int | None:
        """The file's descriptor, opened on first use (the lock held)."""
        if self._fd is None:
            if self.path is None:
                return None
            self._fd = os.open(self.path, os.O_RDONLY)
        return self._fd

    # ---------------------------------------------------------------- what reads found

    def lineno_of(self, offset: int) -> int:
        """1-based line number of the line starting at `offset` (counted once, remembered)."""
        with self._lock:
            i = bisect.bisect_right(self._marks, (offset, sys.maxsize)) - 1
            start, line = self._marks[i]
        pos = start
        while pos < offset:
            block = self.read(pos, min(offset, pos + LINE_SCAN))
            if not block:
                break
            line += block.count(b"\n")
            pos += len(block)
        with self._lock:
            bisect.insort(self._marks, (offset, line))
        return line

    @property
    def marks(self) -> list[tuple[int, int]]:
        with self._lock:
            return list(self._marks)

    @marks.setter
    def marks(self, pairs: list[tuple[int, int]]) -> None:
        with self._lock:
            self._marks = list(pairs)

    def restored(self, offset: int) -> None:
        """The payload of the record at `offset` matched its md5 once blank lines came back."""
        with self._lock:
            self._blank_restored.add(offset)

    def was_restored(self, offset: int) -> bool:
        with self._lock:
            return offset in self._blank_restored

    @property
    def blank_restored(self) -> set[int]:
        with self._lock:
            return set(self._blank_restored)

    @blank_restored.setter
    def blank_restored(self, offsets: set[int]) -> None:
        with self._lock:
            self._blank_restored = set(offsets)

    # ---------------------------------------------------------------- a pipe's bytes

    def keep(self, data: bytes) -> None:
        """Append fed bytes to the spool (made on first use, removed on close)."""
        with self._lock:
            if self._spool is None:
                fd, name = tempfile.mkstemp(prefix="tcview-stdin-")
                os.unlink(name)
                self._spool = fd
            spool, at = self._spool, self._spooled
            self._spooled += len(data)
        os.pwrite(spool, data, at)

    # ---------------------------------------------------------------- the end

    def close(self) -> None:
        """Close the handle now, or when its last reader is done; a later read opens it again
        (a spool is closed for good)."""
        with self._lock:
            self._recent.clear()
            self._seen.clear()
            self._recent_bytes = 0
            self.memo.clear()
            if self._readers:
                self._close_pending = True
            else:
                self._close_now()

    def _close_now(self) -> None:
        self._close_pending = False
        for name in ("_fd", "_spool"):
            fd = getattr(self, name)
            if fd is not None:
                setattr(self, name, None)
                os.close(fd)
        self._spooled = 0

    def __del__(self) -> None:
        # A model dropped without close() (many loads in one process) must not keep its files.
        fd, spool = getattr(self, "_fd", None), getattr(self, "_spool", None)
        for f in (fd, spool):
            if f is not None:
                with contextlib.suppress(OSError):
                    os.close(f)


share(PayloadStore)  # one file under every version of a model

__all__ = ["CACHE_BYTES", "PayloadStore"]
