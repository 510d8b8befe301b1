"""Search every payload of a model: trace records (header and payload) and TORCH_LOGS text.

The files are read region by region (large preads, never the whole trace) and searched as
bytes with one compiled regex; each matching line is mapped back to the record that holds it
by its byte offset (records are sorted by offset within a file: bisect). Nothing is decoded
except the matching lines, so a search runs at the speed of the regex engine.

Semantics are grep's: a hit is a line with at least one match (a match never spans lines).
Plain text by default, a regex on request; case-smart: a query without capitals ignores case
(ASCII case folding: the text is lowered as bytes, the pattern is not compiled with IGNORECASE,
which is several times slower). Matches inside torch's log prefix (time stamp, pid, source
file) do not count: they match almost every line.

Not searched (bulky, low value, and their hits would drown the rest): chromium timing events,
the string table, and describe_* input metadata (`SKIPPED_KINDS`).
"""

from __future__ import annotations

import bisect
import os
import re
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tcview.ingest.detect import HEADER
from tcview.ingest.load import CHUNK
from tcview.ingest.textlines import PREFIX, clean_line, text_start
from tcview.ingest.textlog import TextLog
from tcview.ingest.textproc import ProcessLog
from tcview.ingest.tracefile import LOCATED_KINDS, TraceFile
from tcview.model.objects import (
    KERNEL_DEF,
    OUTPUT_CODE_KINDS,
    Compile,
    Kernel,
    LogSource,
    Model,
    Record,
)
from tcview.report.detail import record_name

SHOWN = 400  # characters of a long matching line kept around its first match
SKIPPED_KINDS = frozenset(LOCATED_KINDS)
SKIPPED_NOTE = "not searched: chromium timing events, the string table, describe_* input metadata"
_DEF_MARK = b" = async_compile."
_DEF_LINE = re.compile(KERNEL_DEF.encode())
_QUOTES = b"'''"

Case = Literal["smart", "ignore", "match"]
Read = Callable[[int, int], bytes]  # bytes [start, end) of a file


class QueryError(ValueError):
    """A query that cannot be searched (an invalid regex, an empty query)."""


def _has_upper(text: str) -> bool:
    """A capital letter outside a backslash escape (``\\S`` and ``\\W`` are not capitals)."""
    escaped = False
    for ch in text:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch.isupper():
            return True
    return False


def _fold(pattern: str) -> str:
    """Lower a regex's letters, except those of backslash escapes."""
    out = []
    escaped = False
    for ch in pattern:
        out.append(ch if escaped else ch.lower())
        escaped = not escaped and ch == "\\"
    return "".join(out)


@dataclass(frozen=True)
class Query:
    """What to look for: plain text (default) or a regex; case-smart unless told."""

    text: str
    regex: bool = False
    case: Case = "smart"

    @property
    def ignore_case(self) -> bool:
        if self.case == "smart":
            return not _has_upper(self.text)
        return self.case == "ignore"

    def _source(self) -> str:
        text = re.escape(self.text) if not self.regex else self.text
        return _fold(text) if self.ignore_case else text

    def byte_pattern(self) -> re.Pattern[bytes]:
        """The pattern run over (lowered, when ignoring case) bytes; QueryError if invalid."""
        if not self.text:
            raise QueryError("empty query")
        try:
            return re.compile(self._source().encode("utf-8"), re.MULTILINE)
        except (re.error, OverflowError, RecursionError) as exc:
            raise QueryError(f"invalid regex: {exc}") from exc

    def text_pattern(self) -> re.Pattern[str]:
        """The same query for decoded text (highlighting what a viewer shows)."""
        if not self.text:
            raise QueryError("empty query")
        text = re.escape(self.text) if not self.regex else self.text
        try:
            return re.compile(text, re.MULTILINE | (re.IGNORECASE if self.ignore_case else 0))
        except (re.error, OverflowError, RecursionError) as exc:
            raise QueryError(f"invalid regex: {exc}") from exc

    @property
    def label(self) -> str:
        """The query as shown: ``/text/`` for a regex, the text itself otherwise."""
        return f"/{self.text}/" if self.regex else self.text


@dataclass(eq=False)
class Hit:
    """One matching line.

    `line` is the line's number in what the viewer shows for it: the 1-based line of a
    record's payload (0 for its header line), of an output code for a kernel hit (the kernel
    viewer numbers its lines so), or of the file for other output and unparsed lines.
    `text` is the line as decoded (untrusted: the caller makes it safe to show); `spans` are
    its matches, as character offsets into `text`.
    """

    source: LogSource | None  # None: a capture's other output
    record: Record | None
    kernel: Kernel | None
    artifact: str
    line: int
    text: str
    spans: tuple[tuple[int, int], ...]
    offset: int  # byte offset of the line in its file
    path: Path | None

    @property
    def compile(self) -> Compile | None:
        if self.kernel is not None and self.kernel.compile is not None:
            return self.kernel.compile
        return self.record.compile if self.record is not None else None

    def __repr__(self) -> str:  # the model objects' reprs are huge
        return f"<Hit {self.where} line {self.line} @{self.offset}>"

    @property
    def where(self) -> str:
        """``output code › kernel triton_poi_fused_add_0``, ``guards``, ``other output``."""
        if self.kernel is not None:
            return f"{self.artifact} › kernel {self.kernel.name}"
        return self.artifact


def _shown(line: bytes, spans: list[tuple[int, int]]) -> tuple[str, tuple[tuple[int, int], ...]]:
    """Decode a line and its byte spans into text and character spans; a long line is cut to
    SHOWN characters around its first match (with … marks)."""
    if line.isascii():
        text = line.decode("ascii")
        chars = [(s, e) for s, e in spans]
    else:
        text = line.decode("utf-8", "replace")

        def char(i: int) -> int:
            return len(line[:i].decode("utf-8", "replace"))

        chars = [(char(s), char(e)) for s, e in spans]
    if len(text) <= SHOWN:
        return text, tuple(chars)
    first = chars[0][0] if chars else 0
    lo = max(0, first - SHOWN // 4)
    hi = min(len(text), lo + SHOWN)
    head = "…" if lo else ""
    tail = "…" if hi < len(text) else ""
    shift = len(head) - lo
    kept = tuple((max(s, lo) + shift, min(e, hi) + shift) for s, e in chars if s < hi and e > lo)
    return head + text[lo:hi] + tail, kept


class _Bytes:
    """The chunk being searched, and reads of what came before it (by pread)."""

    def __init__(self, read: Callable[[int, int], bytes]) -> None:
        self.read = read
        self.buf = b""
        self.base = 0

    def count(self, sub: bytes, start: int, end: int) -> int:
        n = 0
        base = self.base
        if start < base:  # before the chunk, and what straddles its start
            n += self.read(start, min(end, base + len(sub) - 1)).count(sub)
            start = base
        if end > start:
            n += self.buf.count(sub, start - base, end - base)
        return n

    def rfind(self, sub: bytes, start: int, end: int) -> int:
        """Like bytes.rfind over file offsets [start, end); reads back block by block."""
        base = self.base
        if end > base:
            at = self.buf.rfind(sub, max(start, base) - base, end - base)
            if at >= 0:
                return at + base
            end = min(end, max(start, base) + len(sub) - 1)  # one may straddle the start
        step = 1 << 20
        while end - start >= len(sub):
            lo = max(start, end - step)
            block = self.read(lo, end)
            at = block.rfind(sub)
            if at >= 0:
                return lo + at
            if lo == start:
                break
            end = lo + len(sub) - 1
        return -1

    def line_at(self, start: int) -> bytes:
        """The line starting at `start` (a definition line, short)."""
        if start >= self.base:
            i = start - self.base
            j = self.buf.find(b"\n", i)
            return self.buf[i : j if j >= 0 else len(self.buf)]
        return self.read(start, start + (1 << 16)).split(b"\n", 1)[0]


class _Area:
    """One file to search, and how its lines map to records."""

    def __init__(self, path: Path | None, size: int) -> None:
        self.path = path
        self.size = size
        self.data: _Bytes | None = None
        # The last record whose lines were counted: (record, line start, its line number).
        self._counted: tuple[Record, int, int] | None = None
        # The last kernel lookup: (record, searched up to, definition line start or -1).
        self._defs: tuple[Record, int, int] | None = None

    def open(self) -> tuple[Read, Callable[[], None]]:
        """A reader of the file's bytes (its own file descriptor), and how to close it."""
        if self.path is None:
            raise OSError("no file to read")
        fd = os.open(self.path, os.O_RDONLY)

        def read(start: int, end: int) -> bytes:
            return os.pread(fd, end - start, start) if end > start else b""

        return read, lambda: os.close(fd)

    def hit(self, ls: int, le: int, spans: list[tuple[int, int]]) -> tuple[Hit | None, int]:
        """The hit the matching line [ls, le) makes (None: it does not count), and the offset
        to search on from (past what cannot hold a hit, such as a run of timing events)."""
        raise NotImplementedError

    def _lines(self, rec: Record, first: int, ls: int, sub: bytes = b"\n") -> int:
        """How many times `sub` (a line end) occurs in [first, ls): counted on from the last
        line counted in the same record."""
        assert self.data is not None
        done = self._counted
        if done is not None and done[0] is rec and done[1] <= ls:
            # Those that end after the last line's start were not counted then.
            n = done[2] + self.data.count(sub, max(first, done[1] - len(sub) + 1), ls)
        else:
            n = self.data.count(sub, first, ls)
        self._counted = (rec, ls, n)
        return n

    def _kernel(self, rec: Record, first: int, ls: int, le: int) -> Kernel | None:
        """The kernel whose source holds the line [ls, le) of an output code, if any.

        The nearest definition line (``NAME = async_compile.KIND(``) at or before the line,
        and an odd number of ``'''`` between its start and the line: the source string opened
        on the definition line is not closed yet (the closing line is the kernel's last)."""
        assert self.data is not None
        data = self.data
        prev = self._defs
        if prev is not None and prev[0] is rec and prev[1] <= le:
            at = data.rfind(_DEF_MARK, prev[1], le)
            def_start = prev[2] if at < 0 else self._line_start(first, at)
        else:
            at = data.rfind(_DEF_MARK, first, le)
            def_start = -1 if at < 0 else self._line_start(first, at)
        self._defs = (rec, le, def_start)
        if def_start < 0:
            return None
        if def_start != ls and data.count(_QUOTES, def_start, ls) % 2 == 0:
            return None
        m = _DEF_LINE.search(data.line_at(def_start))
        if m is None:
            return None
        name = m.group(1).decode("utf-8", "replace")
        kernels = rec.compile.kernels if rec.compile is not None else rec.source.kernels
        return next((k for k in kernels if k.output is rec and k.name == name), None)

    def _line_start(self, first: int, at: int) -> int:
        """Start of the line that holds offset `at`, not before `first` (a record's start)."""
        assert self.data is not None
        nl = self.data.rfind(b"\n", first, at)
        return nl + 1 if nl >= 0 else first


def _last_at_or_before(offsets: Sequence[int], pos: int, hi: int) -> int:
    """The last offset <= pos in a sorted sequence of offsets (-1: none)."""
    i = bisect.bisect_right(offsets, pos, 0, hi) - 1
    return int(offsets[i]) if i >= 0 else -1


class _TraceArea(_Area):
    """A trace file: headers (after the log prefix) and payload lines (after their tab)."""

    def __init__(self, tf: TraceFile) -> None:
        _Area.__init__(self, tf.path, tf.pos - tf.pending_bytes)
        self.tf = tf
        self.records = tf.records[:]  # what was indexed when the search started
        self.offsets = array("q", [r.offset for r in self.records])
        # Merged on the first hit, in the search's worker (later events lie past `end`).
        self._chromium: array[int] | None = None
        self.n_minor = len(tf.minor)
        self.n_unparsed = len(tf.unparsed)

    def hit(self, ls: int, le: int, spans: list[tuple[int, int]]) -> tuple[Hit | None, int]:
        assert self.data is not None
        tf = self.tf
        data = self.data
        line = data.buf[ls - data.base : le - data.base]
        i = bisect.bisect_right(self.offsets, ls) - 1
        rec = self.records[i] if i >= 0 else None
        owner = rec.offset if rec is not None else -1
        if self._chromium is None:
            self._chromium = tf.chromium_offsets()
        skipped = max(
            _last_at_or_before(self._chromium, ls, len(self._chromium)),
            _last_at_or_before(tf.minor, ls, self.n_minor),
        )
        unparsed = _last_at_or_before(tf.unparsed.offsets, ls, self.n_unparsed)
        if skipped > owner and skipped >= unparsed:
            return None, self._next_start(i, ls)  # a timing event or an input's metadata
        if rec is None or unparsed > owner or ls >= rec.end:
            refs = tf.unparsed
            j = bisect.bisect_right(refs.offsets, ls, 0, self.n_unparsed) - 1
            number = int(refs.linenos[j]) if j >= 0 and refs.offsets[j] == ls else 0
            return self._make(None, "unparsed line", number, line, spans, 0, ls), le + 1
        if rec.kind in SKIPPED_KINDS:
            return None, self._next_start(i, ls)
        if ls < rec.hdr_end:  # the header: its JSON, after the log prefix
            m = HEADER.match(line)
            hit = self._make(rec, record_name(rec), 0, line, spans, m.end() if m else 0, ls)
            return hit, le + 1
        # Payload lines start with a tab: a blank line between them is not one.
        number = self._lines(rec, rec.hdr_end - 1, ls, b"\n\t") + 1
        kernel = None
        if rec.kind in OUTPUT_CODE_KINDS:
            kernel = self._kernel(rec, rec.hdr_end, ls, le)
        return self._make(rec, record_name(rec), number, line, spans, 1, ls, kernel), le + 1

    def _next_start(self, i: int, ls: int) -> int:
        """Where the next record kept (after record `i`) or unparsed line after `ls` starts."""
        nxt = int(self.offsets[i + 1]) if i + 1 < len(self.offsets) else self.size
        refs = self.tf.unparsed.offsets
        j = bisect.bisect_right(refs, ls, 0, self.n_unparsed)
        if j < self.n_unparsed:
            nxt = min(nxt, int(refs[j]))
        return nxt

    def _make(
        self,
        rec: Record | None,
        artifact: str,
        number: int,
        line: bytes,
        spans: list[tuple[int, int]],
        skip: int,
        ls: int,
        kernel: Kernel | None = None,
    ) -> Hit | None:
        kept = [(max(s, skip) - skip, e - skip) for s, e in spans if e > skip]
        if not kept:
            return None  # only inside the log prefix (or the payload's tab)
        text, chars = _shown(line[skip:], kept)
        return Hit(self.tf, rec, kernel, artifact, number, text, chars, ls, self.path)


class _TextArea(_Area):
    """A TORCH_LOGS capture: message lines (after the prefix) and other output."""

    def __init__(self, log: TextLog, pattern: re.Pattern[bytes], ignore_case: bool) -> None:
        _Area.__init__(self, log.path, log.pos - log.pending_bytes)
        self.log = log
        self.pattern = pattern  # to match a line again once its escape sequences are gone
        self.ignore_case = ignore_case
        self.procs: dict[tuple[int | None, int | None], tuple[ProcessLog, int]] = {
            (p.rank, p.pid): (p, len(p.records)) for p in log.files
        }
        self.n_other = len(log.other)

    def open(self) -> tuple[Read, Callable[[], None]]:
        if self.path is not None:
            return _Area.open(self)
        # stdin: its spool file, which the loader appends to (its store reads it safely)
        return self.log.reader.read, lambda: None

    def hit(self, ls: int, le: int, spans: list[tuple[int, int]]) -> tuple[Hit | None, int]:
        return self._hit(ls, le, spans), le + 1

    def _hit(self, ls: int, le: int, spans: list[tuple[int, int]]) -> Hit | None:
        assert self.data is not None
        data = self.data
        line = data.buf[ls - data.base : le - data.base]
        if line.endswith(b"\r") or b"\x1b" in line:
            # What is shown is the line without its escape sequences: match that.
            line = clean_line(line)
            hay = line.lower() if self.ignore_case else line
            spans = [
                (m.start(), m.end()) for m in self.pattern.finditer(hay) if m.end() > m.start()
            ]
        m = PREFIX.match(line)
        if m is None:
            return self._other(ls, line, spans)
        rank_b, pid_b = m.group(1), m.group(4)
        found = self.procs.get((int(rank_b) if rank_b is not None else None, int(pid_b)))
        if found is None:
            return None  # a process that appeared after the search started
        proc, n = found
        i = bisect.bisect_right(proc.records, ls, 0, n, key=_offset) - 1
        rec = proc.records[i] if i >= 0 else None
        if rec is None or ls > rec.end:
            return None
        skip = text_start(line, m.end())
        kept = [(max(s, skip) - skip, e - skip) for s, e in spans if e > skip]
        if not kept:
            return None  # only inside the log prefix
        # The message's lines are those of its process with the same prefix (other
        # processes' lines may come between them).
        index = (
            0 if ls == rec.offset else 1 + self._lines(rec, rec.offset, ls, b"\n" + line[: m.end()])
        )
        kernel = None
        if rec.kind in OUTPUT_CODE_KINDS:
            kernel = self._kernel(rec, rec.offset, ls, le)
        text, chars = _shown(line[skip:], kept)
        return Hit(proc, rec, kernel, record_name(rec), index + 1, text, chars, ls, self.path)

    def _other(self, ls: int, line: bytes, spans: list[tuple[int, int]]) -> Hit | None:
        if not spans:
            return None
        other = self.log.other
        i = bisect.bisect_right(other.offsets, ls, 0, self.n_other) - 1
        number = int(other.linenos[i]) if i >= 0 and other.offsets[i] == ls else 0
        text, chars = _shown(line, spans)
        return Hit(None, None, None, "other output", number, text, chars, ls, self.path)


def _offset(rec: Record) -> int:
    return rec.offset


class Search:
    """One search over a model. `run()` yields hits in file order, as they are found.

    `done`/`total` (bytes) tell the progress; `stopped` says that `limit` hits were reached
    or `cancel()` was called before the end. Safe to run in a worker thread while the model
    grows: it searches what was indexed when it started.
    """

    def __init__(self, model: Model, query: Query, limit: int = 0) -> None:
        self.query = query
        self.pattern = query.byte_pattern()
        self.ignore_case = query.ignore_case
        self.limit = limit
        self.hits = 0
        self.done = 0
        self.stopped = False
        self.problems: list[str] = []
        self._cancel = False
        self.areas = _areas(model, self.pattern, self.ignore_case)
        self.total = sum(a.size for a in self.areas)

    def cancel(self) -> None:
        self._cancel = True

    def run(self) -> Iterator[Hit]:
        for area in self.areas:
            if self._cancel or self.stopped:
                break
            try:
                read, close = area.open()
            except OSError as exc:
                self.problems.append(f"{area.path}: {exc.strerror or exc}")
                self.done += area.size
                continue
            start = self.done
            try:
                yield from self._scan(area, read, start)
            finally:
                close()
                self.done = start + area.size
        if self._cancel:
            self.stopped = True

    def _scan(self, area: _Area, read: Read, done: int) -> Iterator[Hit]:
        data = area.data = _Bytes(read)
        pattern = self.pattern
        fold = self.ignore_case
        pos = 0
        end = area.size
        carry = b""
        while pos < end and not self._cancel:
            got = read(pos, min(end, pos + CHUNK))
            if not got:
                break
            pos += len(got)
            buf = carry + got if carry else got
            base = pos - len(buf)
            if pos < end:
                cut = buf.rfind(b"\n") + 1
                if cut == 0 and len(buf) < 4 * CHUNK:
                    carry = buf  # one line longer than a chunk: read on
                    continue
                cut = cut or len(buf)
                carry = buf[cut:]
            else:
                cut, carry = len(buf), b""
            data.buf, data.base = buf, base
            hay = buf.lower() if fold else buf
            at = 0
            while at <= cut:
                m = pattern.search(hay, at, cut)
                if m is None:
                    break
                ls = hay.rfind(b"\n", 0, m.start()) + 1
                le = hay.find(b"\n", m.start(), cut)
                if le < 0:
                    le = cut
                at = le + 1
                if m.start() == le:
                    continue  # an empty match at a line end
                spans = [
                    (x.start() - ls, x.end() - ls)
                    for x in pattern.finditer(hay, ls, le)
                    if x.end() > x.start()
                ]
                if not spans:
                    continue  # it matched across lines only
                hit, resume = area.hit(base + ls, base + le, spans)
                at = max(at, resume - base)
                if hit is not None:
                    self.hits += 1
                    yield hit
                    if self.limit and self.hits >= self.limit:
                        self.stopped = True
                        return
                if self._cancel:
                    return
            self.done = done + base + cut
            if base + at > pos:  # skipped past what was read (a run of timing events)
                pos, carry = base + at, b""


def _areas(model: Model, pattern: re.Pattern[bytes], ignore_case: bool) -> list[_Area]:
    areas: list[_Area] = []
    for source in list(model.files):
        if isinstance(source, TraceFile):
            areas.append(_TraceArea(source))
    for log in (model, model.text):
        if isinstance(log, TextLog):
            areas.append(_TextArea(log, pattern, ignore_case))
    return areas


def search(model: Model, query: Query, limit: int = 0) -> Iterator[Hit]:
    """Every hit of `query` in `model`, in file order (at most `limit`, 0: all)."""
    return Search(model, query, limit).run()


def place_of(hit: Hit, model: Model) -> str:
    """Where a hit is, when the input has more than one place: ``rank 1`` (or the file, when
    ranks repeat), ``log`` for a run directory's TORCH_LOGS capture, and the process when a
    capture has several (``rank 0 · pid 12``); '' when there is nothing to tell apart."""
    source = hit.source
    if isinstance(source, TraceFile):
        files = model.files
        if len(files) <= 1:
            return ""
        if source.rank is not None and sum(1 for f in files if f.rank == source.rank) == 1:
            return f"rank {source.rank}"
        return source.display
    parts = [] if isinstance(model, TextLog) else ["log"]
    log = model if isinstance(model, TextLog) else model.text
    if source is not None and log is not None and len(log.files) > 1:
        parts.append(source.display)
    return " ".join(parts)
