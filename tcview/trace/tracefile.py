"""Incremental indexer for one TORCH_TRACE file.

The file is fed in chunks of bytes, in order. Complete lines are indexed at once; a trailing
partial line stays pending until more bytes arrive (or `finish()` says the file is done).
Feeding a file in any split gives the same index as one read of the whole file.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from .compile_id import CompileKey, key_from_header
from .handlers import Sink, on_close, on_header
from .model import Compile, Frame, Kernel, Recompile, Record, payload_from_region

CONTEXT_KEYS = frozenset(
    {
        "frame_id",
        "frame_compile_id",
        "attempt",
        "compiled_autograd_id",
        "rank",
        "has_payload",
        "stack",
        "subgraph_name",
    }
)

HEADER = re.compile(
    rb"(?:\[rank(\d+)\]:)?[A-Z](\d{4} \d\d:\d\d:\d\d\.\d+) +(\d+) ([^\]\n]*?):(\d+)\] "
)
# Start of a line that is neither a payload line (TAB) nor empty.
LINE_START = re.compile(rb"\n(?=[^\t\n])")
KERNEL_DEF = re.compile(rb"^\t([A-Za-z_]\w*) = async_compile\.([A-Za-z_]\w*)\(", re.M)
RANK_IN_NAME = re.compile(r"rank_(\d+)")
HAS_PAYLOAD = b'"has_payload": "'

# Header JSON is cached by its text with the md5 blanked: most headers repeat verbatim.
_CACHE_MAX_KEY = 400
_CACHE_MAX = 20000


class TraceFile:
    """Index of one trace file; also the payload source of its records."""

    def __init__(self, path: str | os.PathLike, display: str | None = None) -> None:
        self.path = Path(path)
        self.display = display or str(path)
        self.pos = 0  # bytes consumed from the file
        self._pending = b""
        self._lines = 0  # complete lines seen
        self._open: Record | None = None
        self._open_scan = 0  # absolute offset up to which the open record's payload was scanned
        self._cache: dict[bytes, Any] = {}
        self._fd: int | None = None
        self.finished = False

        self.records: list[Record] = []
        self.unparsed: list[tuple[int, int]] = []  # (offset, lineno)
        self.strings: dict[Any, str] = {}
        self.kinds: Counter = Counter()
        self.artifacts: Counter = Counter()
        self.compiles: dict[CompileKey, Compile] = {}
        self.frames: dict[tuple, Frame] = {}
        self.kernels: list[Kernel] = []
        self.unknown: Counter = Counter()
        self.ranks: set[int] = set()
        self.pids: set[int] = set()
        self.first_ts: str | None = None
        self.last_ts: str | None = None
        self.md5_mismatches = 0
        self.failure_count = 0  # compilation_metrics records with a non-empty fail_type
        self.problems: list[str] = []
        self.version = 0  # bumped whenever the index changes
        m = RANK_IN_NAME.search(self.path.name)
        self.name_rank = int(m.group(1)) if m else None
        if self.name_rank is not None:
            self.ranks.add(self.name_rank)
        self._kernel_count = 0  # kernels found in the open record
        # Replaced by the owner (TraceSet) so that derived facts reach the aggregate.
        self.sink: Sink = Sink()

    # ---------------------------------------------------------------- feeding

    def feed(self, data: bytes, settle: bool = True) -> None:
        """Index appended bytes. `settle` closes a last record whose md5 already matches."""
        if not data:
            return
        buf = self._pending + data if self._pending else data
        base = self.pos - len(self._pending)
        self.pos += len(data)
        cut = buf.rfind(b"\n") + 1
        if cut == 0:
            self._pending = buf
            return
        self._scan(buf, base, cut)
        self._pending = buf[cut:]
        if settle:
            self._settle_open()
        self.version += 1

    def finish(self) -> None:
        """The file is complete: index a trailing line that has no newline."""
        if self._pending:
            tail = self._pending
            base = self.pos - len(tail)
            self._pending = b""
            self._scan(tail + b"\n", base, len(tail) + 1, virtual_newline=True)
        self._close_open()
        self.finished = True
        self.version += 1

    @property
    def pending_bytes(self) -> int:
        return len(self._pending)

    def _scan(self, buf: bytes, base: int, limit: int, virtual_newline: bool = False) -> None:
        starts = [m.start() + 1 for m in LINE_START.finditer(buf, 0, limit - 1)]
        if buf[:1] not in (b"\t", b"\n", b""):
            starts.insert(0, 0)
        prev = 0
        lines = self._lines
        for s in starts:
            lines += buf.count(b"\n", prev, s)
            prev = s
            self._extend_open(buf, base, s)
            e = buf.index(b"\n", s)
            self._line(buf, base, s, e, lines + 1, virtual_newline and e == limit - 1)
        self._extend_open(buf, base, limit)
        self._lines = lines + buf.count(b"\n", prev, limit)

    def _extend_open(self, buf: bytes, base: int, upto: int) -> None:
        rec = self._open
        if rec is None:
            return
        lo = max(self._open_scan - base, 0)
        if upto <= lo:
            return
        if rec.kind == "inductor_output_code":
            for m in KERNEL_DEF.finditer(buf, lo, upto):
                self._kernel(rec, m.group(1), m.group(2))
        end = base + upto
        rec.end = end - 1 if end > self.pos else end  # a virtual newline is not in the file
        self._open_scan = base + upto

    def _kernel(self, rec: Record, name_b: bytes, method_b: bytes) -> None:
        method = method_b.decode("ascii", "replace")
        if method == "wait":
            return
        comp = self.compiles.get(rec.key) if rec.key else None
        kernel = Kernel(name_b.decode("utf-8", "replace"), method, rec, self._kernel_count, comp)
        self._kernel_count += 1
        self.kernels.append(kernel)
        if comp is not None:
            comp.kernels.append(kernel)
        self.sink.kernel(kernel)

    def _line(self, buf: bytes, base: int, s: int, e: int, lineno: int, at_eof: bool) -> None:
        line = buf[s:e]
        m = HEADER.match(line)
        header = None
        md5 = None
        if m is not None:
            js = line[m.end() :]
            header, md5 = self._parse(js)
        if header is None:
            if line.strip():
                self._close_open()
                self.unparsed.append((base + s, lineno))
                self.sink.unparsed(self, base + s, lineno)
            return
        self._close_open()
        rank_b, ts_b, pid_b = m.group(1), m.group(2), m.group(3)
        ts = ts_b.decode()
        if self.first_ts is None:
            self.first_ts = ts
        self.last_ts = ts
        pid = int(pid_b)
        if pid not in self.pids:
            self.pids.add(pid)
        if rank_b is not None:
            self.ranks.add(int(rank_b))
        self._record(header, md5, base + s, lineno, base + e + (0 if at_eof else 1))

    def _parse(self, js: bytes) -> tuple[Any, str | None]:
        md5 = None
        key = js
        i = js.rfind(HAS_PAYLOAD)
        if i >= 0:
            j = i + len(HAS_PAYLOAD)
            k = js.find(b'"', j)
            if k > j:
                md5 = js[j:k].decode("ascii", "replace")
                key = js[:j] + js[k:]
        cacheable = len(key) <= _CACHE_MAX_KEY
        if cacheable:
            hit = self._cache.get(key)
            if hit is not None:
                return hit, md5
        try:
            try:
                header = json.loads(key)
            except UnicodeDecodeError:
                header = json.loads(key.decode("utf-8", "replace"))
        except (ValueError, RecursionError):
            return None, None
        if cacheable:
            if len(self._cache) > _CACHE_MAX:
                self._cache.clear()
            self._cache[key] = header
        return header, md5

    def _record(self, header: Any, md5: str | None, offset: int, lineno: int, hdr_end: int) -> None:
        if isinstance(header, dict):
            kind = next((k for k in header if k not in CONTEXT_KEYS), "")
            meta = header.get(kind) if kind else None
            key = key_from_header(header)
            attempt = header.get("attempt", 0)
            rank = header.get("rank")
            if isinstance(rank, int) and not isinstance(rank, bool):
                self.ranks.add(rank)
            if md5 is None and "has_payload" in header:
                md5 = str(header.get("has_payload"))
        else:
            kind, meta, key, attempt = "(not an object)", header, None, 0
        kind = sys.intern(kind)
        name = None
        if kind == "artifact" and isinstance(meta, dict):
            raw = meta.get("name")
            name = sys.intern(raw) if isinstance(raw, str) else None
        elif kind == "graph_dump" and isinstance(meta, dict) and isinstance(meta.get("name"), str):
            name = meta["name"]
        rec = Record(self, offset, lineno, hdr_end, kind, meta, key, attempt, md5, name)
        self.records.append(rec)
        self.kinds[kind] += 1
        if name is not None and kind == "artifact":
            self.artifacts[name] += 1
        if key is not None:
            comp = self.compiles.get(key)
            if comp is None:
                comp = self._new_compile(key)
            if kind != "chromium_event":
                comp.records.append(rec)
            comp.attempts[attempt if _hashable(attempt) else repr(attempt)] += 1
        on_header(self, rec)
        self._kernel_count = 0
        if md5 is None:
            rec.closed = True
            on_close(self, rec)
            self._open = rec  # stray payload lines still extend it
            self._open_scan = hdr_end
        else:
            self._open = rec
            self._open_scan = hdr_end

    def _new_compile(self, key: CompileKey) -> Compile:
        comp = Compile(self, key, order=len(self.compiles))
        self.compiles[key] = comp
        fkey = key.frame
        if key.frame_id is not None:
            frame = self.frames.get(fkey)
            if frame is None:
                frame = Frame(self, fkey)
                self.frames[fkey] = frame
            frame.compiles.append(comp)
            comp.frame = frame
        self.sink.compile(comp)
        if key.is_recompile:
            comp.recompile = Recompile(comp)
            self.sink.recompile(comp.recompile)
        return comp

    def _close_open(self) -> None:
        rec = self._open
        if rec is None:
            return
        self._open = None
        if not rec.closed:
            rec.closed = True
            on_close(self, rec)

    def _settle_open(self) -> None:
        """Close the last record when its payload is complete (its md5 matches)."""
        rec = self._open
        if rec is None or rec.closed or not rec.md5 or self._pending:
            return
        if hashlib.md5(self.read_payload(rec)).hexdigest() == rec.md5:
            self._close_open()

    # ---------------------------------------------------------------- reading

    def read(self, start: int, end: int) -> bytes:
        if end <= start:
            return b""
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY)
        return os.pread(self._fd, end - start, start)

    def read_payload(self, record: Record) -> bytes:
        return payload_from_region(self.read(record.hdr_end, record.end))

    def header_line(self, record: Record) -> bytes:
        return self.read(record.offset, record.hdr_end).rstrip(b"\n")

    def line_at(self, offset: int, limit: int = 1 << 20) -> bytes:
        data = self.read(offset, offset + limit)
        return data.split(b"\n", 1)[0]

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    @property
    def rank(self) -> int | None:
        if self.name_rank is not None:
            return self.name_rank
        return min(self.ranks) if self.ranks else None

    @property
    def pid(self) -> int | None:
        return min(self.pids) if self.pids else None

    def __repr__(self) -> str:
        return f"<TraceFile {self.display}>"


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True
