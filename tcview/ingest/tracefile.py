"""Incremental indexer for one TORCH_TRACE file.

The file is fed in chunks of bytes, in order. Complete lines are indexed at once; a trailing
partial line stays pending until more bytes arrive (or `finish()` says the file is done).
Feeding a file in any split gives the same index as one read of the whole file.

Speed: one pass finds the start of every line that is not a payload line (`find_lines`: the
`LINE` regex, or the same matcher in C where it was built). The common ``chromium_event`` and
``describe_*`` headers (most records) are recognised by that same pass and counted without
building a record; other headers are parsed as JSON, with a cache keyed by the header text
minus its md5. Payload lines are never visited in Python, except in output code, where a
regex over the payload finds the kernel definitions.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any, Literal, NamedTuple, overload

from tcview.ingest.builder import Builder
from tcview.ingest.detect import HEADER, RECORD_PREFIX, begins_in_payload
from tcview.ingest.handlers import CLOSE_HANDLERS, HEADER_HANDLERS, KNOWN_KINDS
from tcview.ingest.linebuffer import MAX_LINE, LineBuffer
from tcview.ingest.load import CHUNK, Hooks, read_chunks
from tcview.ingest.payloads import PayloadStore
from tcview.model.compile_id import PLAIN_TYPES, CompileKey, IdPart, id_part, key_from_header
from tcview.model.objects import (
    AOT_ID_LINE,
    KERNEL_DEF,
    LIMIT_KEY,
    Compile,
    JsonValue,
    LogSource,
    Record,
    config_limit,
    has_bare_lines,
    payload_from_region,
    restored_payloads,
)

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

# Of LAZY_META_KINDS, the ones kept as offsets only (no Record object) when they carry no payload.
MINOR_KINDS = frozenset({"describe_tensor", "describe_storage", "describe_source"})
# Records whose header's handler runs but which are located only, like MINOR_KINDS (a thousand
# ranks log 80,000 string table entries): without a payload or a compile id.
UNKEPT_KINDS = frozenset({"str"})
# What a file holds as offsets, not records: timing events, inputs' metadata, the string table.
LOCATED_KINDS = ("chromium_event", "str", *sorted(MINOR_KINDS))
MINOR_NAMES = {k.encode(): k for k in MINOR_KINDS}  # their names as LINE gives them
_INT = rb"(?:0|[1-9]\d{0,17})"
_ID_KEYS = rb'"(?:frame_id|frame_compile_id|attempt|compiled_autograd_id|rank)"'
# (null: some torch releases write `"compiled_autograd_id": null` in every header.)
_CTX = rb"((?:, " + _ID_KEYS + rb": (?:" + _INT + rb"|null))*)"
# A JSON object of a shape only valid JSON has (keys of word characters; values numbers
# orjson reads as json does, true, false, null, printable ASCII strings without escapes, and
# lists or flat objects of those). describe_* headers' metadata has this shape.
_SCALAR = rb"(?:-?" + _INT + rb'(?:\.\d{1,17})?|true|false|null|"[\x20\x21\x23-\x5b\x5d-\x7e]*")'
_FIELD = rb'"(?!has_payload")\w+": '  # (a has_payload anywhere: `_md5_key` would cut it)
_FLAT = rb"\{(?:" + _FIELD + _SCALAR + rb"(?:, " + _FIELD + _SCALAR + rb")*)?\}"
_VALUE = (
    rb"(?:" + _SCALAR + rb"|\[(?:" + _SCALAR + rb"(?:, " + _SCALAR + rb")*)?\]|" + _FLAT + rb")"
)
_OBJECT = rb"\{(?:" + _FIELD + _VALUE + rb"(?:, " + _FIELD + _VALUE + rb")*)?\}"

HEAD_CUT_READ = 1 << 16  # bytes read to tell payload lines a file begins with (a cut start)


def line_regex(
    minor_kinds: Iterable[str] = MINOR_KINDS, chromium: bool = True
) -> re.Pattern[bytes]:
    """A newline before a non-empty, non-payload line; then, when it has one, the record
    prefix (groups 1-3); then, when the whole line is a well-formed header of the two commonest
    shapes, which are valid JSON by their shape alone and need nothing from their metadata,
    its context keys: a chromium_event (group 4), or a payload-less record of `minor_kinds`
    (group 5, its kind; group 6). These are counted without a JSON parser (with no
    `minor_kinds` and not `chromium`, every header is parsed, as the tests compare)."""
    kinds = b"|".join(re.escape(k.encode()) for k in sorted(minor_kinds)) or b"(?!)"
    return re.compile(
        rb"\n(?=[^\t\n])(?:"
        + RECORD_PREFIX
        + (rb"(?:" if chromium else rb"(?:(?!)")
        + rb'\{"chromium_event": \{\}'
        + _CTX
        + rb'(?:, "has_payload": "[0-9a-f]{32}")?\}(?=\n)'
        + rb'|\{"('
        + kinds
        + rb')": '
        + _OBJECT
        + _CTX
        + rb"\}(?=\n))?)?"
    )


LINE = line_regex()
KERNEL_LINE = re.compile(rb"^\t" + KERNEL_DEF.encode(), re.M)  # in an output code's payload
KERNEL_AT = re.compile(rb"\t" + KERNEL_DEF.encode())
KERNEL_MARK = b" = async_compile."  # in every kernel definition, and rare elsewhere
AOT_ID = re.compile(rb"\t" + AOT_ID_LINE.encode())  # an output code's first payload line
RANK_IN_NAME = re.compile(r"rank_(\d+)")
HAS_PAYLOAD = b'"has_payload": "'
MD5_HEX = re.compile(rb"[0-9a-f]{32}")
PRESCAN_MAX = MAX_LINE // 2  # a longer range is read, not prescanned (no line in it is too long)

_INVALID = object()
# A dynamo_start with these attempts starts a compile (restarts log attempt 1, 2, …).
STARTING_ATTEMPTS = (0, None)


def _loads_json(data: bytes) -> Any:
    try:
        try:
            return json.loads(data)
        except UnicodeDecodeError:
            return json.loads(data.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return _INVALID


# What `fast_loads` returns when only the stdlib parser can read the bytes.
SLOW = object()
# A value nested deeper than this is left to json, which refuses what passes its recursion
# limit (1000, less the caller's frames), where orjson reads up to 1024 levels.
NESTING_MAX = 450
_CONTAINERS = (dict, list)


def nests_deeper(value: Any, limit: int = NESTING_MAX) -> bool:
    """Whether a parsed JSON value holds containers more than `limit` levels deep."""
    level = [value] if type(value) in _CONTAINERS else []
    for _ in range(limit):
        inner: list[Any] = []
        for v in level:
            items = v.values() if type(v) is dict else v
            inner += [x for x in items if type(x) in _CONTAINERS]
        if not inner:
            return False
        level = inner
    return True


# A match of LINE: where its line starts, where the match ends (after the record prefix, where
# a header's JSON starts, unless a fast path took the whole header), then LINE's six groups:
# bytes, or None where a group took no part (typed as `re` types them: which are None together
# is LINE's shape).
FoundLine = tuple[int, int, Any, Any, Any, Any, Any, Any]
LineFinder = Callable[[bytes, int, int], Iterable[FoundLine]]


def regex_lines(line: re.Pattern[bytes] = LINE) -> LineFinder:
    """A finder of `line`'s matches in buf[lo:hi] (a pattern with LINE's groups)."""

    def found(buf: bytes, lo: int, hi: int) -> Iterator[FoundLine]:
        for m in line.finditer(buf, lo, hi):
            rank, ts, pid, seg, minor, minor_seg = m.groups()
            yield m.start() + 1, m.end(), rank, ts, pid, seg, minor, minor_seg

    return found


def _built_lines() -> LineFinder | None:
    """LINE's matcher in C (`_lines.c`, four times as fast as the regex), where the package
    was built with it (a compiler was at hand)."""
    try:
        from tcview.ingest._lines import lines
    except ImportError:  # pragma: no cover - depends on the build
        return None
    return lines


c_lines = _built_lines()
find_lines: LineFinder = c_lines or regex_lines()


try:  # optional speed-up (tcview[fast]); the result is the same as json's
    import orjson

    def fast_loads(data: bytes) -> Any:
        """orjson's value, or SLOW where json must read it (NaN, invalid UTF-8, lone
        surrogates, numbers too big for a double, deep nesting that json refuses). One
        difference stays: orjson reads an integer past 64 bits as a float (a search for such
        digits costs more than the parse); what a view shows is read by json (`full_meta`)."""
        try:
            value = orjson.loads(data)
        except (orjson.JSONDecodeError, RecursionError):
            return SLOW
        # (Nesting n levels takes 2n bytes.)
        return SLOW if len(data) > 2 * NESTING_MAX and nests_deeper(value) else value

except ImportError:  # pragma: no cover - depends on the environment

    def fast_loads(data: bytes) -> Any:
        return SLOW


def loads(data: bytes) -> Any:
    """A JSON value, or _INVALID."""
    value = fast_loads(data)
    return _loads_json(data) if value is SLOW else value


# Inputs' fake-tensor metadata and shape-env chatter: many records, shown only on demand.
LAZY_META_KINDS = frozenset(
    {
        "describe_tensor",
        "describe_storage",
        "describe_source",
        "expression_created",
        "guard_added_fast",
        "create_symbol",
        "propagate_real_tensors_provenance",
    }
)
_CACHE_MAX_KEY = 600  # header JSON longer than this is not cached
_LONG_HEADER = _CACHE_MAX_KEY + 32  # longer even with its md5 blanked
_CACHE_MAX = 4096
_META_KEEP = 2048  # header JSON longer than this keeps only a slim value in memory
_SLIM_STR = 400
# compilation_metrics fields a slim value keeps whole, whatever their length: the facts
# tcview shows (why a compile restarted or failed).
KEEP_WHOLE = frozenset({"restart_reasons", "fail_reason", "fail_type", "cudagraph_skip_reason"})


def kernel_defs(buf: bytes, lo: int, upto: int) -> list[re.Match[bytes]]:
    """KERNEL_LINE's matches in buf[lo:upto], found from the rare KERNEL_MARK: the regex
    with its ^ is tried at every line of a payload, and output code is most of a trace's bytes
    (16 MB of a trace: 176 ms, this way 8 ms)."""
    found = []
    line = -1
    i = buf.find(KERNEL_MARK, lo, upto)
    while i >= 0:
        nl = buf.rfind(b"\n", lo, i)
        if nl >= 0:
            start = nl + 1
        elif lo == 0 or buf[lo - 1] == 10:  # ^ matches there too
            start = lo
        else:
            start = -1
        if start >= 0 and start != line:  # one definition a line at most
            line = start
            m = KERNEL_AT.match(buf, start, upto)
            if m is not None:
                found.append(m)
        i = buf.find(KERNEL_MARK, i + 1, upto)
    return found


# Where a record may start: a line that is neither a payload line (tab) nor empty. A file split
# there splits no record: what comes before it is indexed alone as it is in one read.
BOUNDARY = re.compile(rb"\n[^\t\n]")
# Bytes read at a time when looking for a boundary: few at first (one is seldom far), more
# while none is found.
_BOUNDARY_FIRST = 64 << 10
_BOUNDARY_LOOK = 1 << 20


def boundaries(path: Path, targets: Sequence[int], size: int) -> list[int]:
    """For each target offset, the first record boundary at or after it (before `size`),
    in order and without repeats; a target with no boundary after it gives none."""
    cuts: list[int] = []
    with open(path, "rb") as fh:
        for target in sorted(targets):
            at = max(target, cuts[-1] + 1 if cuts else 1) - 1  # the newline before a line
            look = _BOUNDARY_FIRST
            while at < size:
                fh.seek(at)
                block = fh.read(min(look, size - at))
                look = min(2 * look, _BOUNDARY_LOOK)
                m = BOUNDARY.search(block)
                if m is not None:
                    cuts.append(at + m.start() + 1)
                    break
                if len(block) < 2:
                    at = size
                else:
                    at += len(block) - 1  # the last byte may be the newline of a boundary
            if at >= size:
                break
    return [c for c in cuts if 0 < c < size]


@dataclass
class Lines:
    """What `prescan` found in a range of a file, for `TraceFile.apply_lines`: one tuple per
    line that is not a payload line, in order, and what the lines' prefixes say."""

    start: int
    end: int
    # (offset,): a line that is not a record; (offset, context keys): a fast-path chromium
    # header; (offset, kind, context keys): a fast-path MINOR_KINDS header; else a header:
    # (offset, end, md5, the key `_header` caches it by (None: too long to be cached), the
    # `derive`d header (None: not JSON), whether only json could parse it, for an output code
    # (role from its first payload line, payload end) or False when it has no payload, its
    # kernel definitions).
    lines: list[tuple[Any, ...]]
    first_ts: bytes | None = None
    last_ts: bytes | None = None
    pids: set[bytes] = field(default_factory=set)
    ranks: set[int] = field(default_factory=set)


def prescan(path: Path, start: int, end: int) -> Lines:
    """The half of indexing bytes [start, end) that needs nothing of what came before: find
    the lines, parse the headers, find an output code's kernels. `start` and `end` are record
    boundaries (`boundaries`, or 0), and the range is shorter than MAX_LINE."""
    if not 0 <= start < end or end - start > PRESCAN_MAX:
        raise ValueError("not a range prescan can read")
    # LINE finds a line after a newline: the one before the range is read with it (not put in
    # front of a copy of it: 16 MB copied cost more than reading them); a file's first line
    # has none.
    lead = 1 if start else 0
    with open(path, "rb") as fh:
        fh.seek(start - lead)
        data = fh.read(end - start + lead)
    if len(data) != end - start + lead or not data.endswith(b"\n") or (lead and data[0] != 10):
        raise ValueError("the range changed")
    buf = data if lead else b"\n" + data
    base = start - 1
    out: list[tuple[Any, ...]] = []
    found = Lines(start, end, out)
    pids, ranks = found.pids, found.ranks
    last = None
    output: int | None = None  # index in `out` of an output code whose payload is not read
    segs: dict[bytes, bytes] = {}  # one object per context: pickled once, unpickled once
    for s, pend, rank_b, ts_b, pid_b, seg, minor_b, minor_seg in find_lines(buf, 0, len(buf)):
        if output is not None:
            out[output] = _with_payload(out[output], buf, base, s)
            output = None
        if ts_b is not None:
            if last is None:
                found.first_ts = ts_b
            last = ts_b
            pids.add(pid_b)
            if rank_b is not None:
                ranks.add(int(rank_b))
        if seg is not None:
            out.append((base + s, segs.setdefault(seg, seg)))
            continue
        if minor_b is not None:
            out.append((base + s, MINOR_NAMES[minor_b], segs.setdefault(minor_seg, minor_seg)))
            continue
        e = buf.index(b"\n", s)
        if ts_b is None:
            if buf[s:e].strip():
                out.append((base + s,))
            continue
        js = buf[pend:e]
        md5, data, blank, cached = _md5_split(js)
        info, slow = header_info(data, len(js), blank)
        out.append((base + s, base + e + 1, md5, cached, info, slow, False, ()))
        if info is not None and info.kind == "inductor_output_code":
            output = len(out) - 1
    if output is not None:
        out[output] = _with_payload(out[output], buf, base, len(buf))
    found.last_ts = last
    return found


def _with_payload(line: tuple[Any, ...], buf: bytes, base: int, upto: int) -> tuple[Any, ...]:
    """An output code's line with its payload's role and kernels (buf[.. upto] is its end)."""
    lo = line[1] - base
    if upto <= lo:
        return line
    aot = AOT_ID.match(buf, lo, upto)
    role = aot.group(1).decode("ascii") if aot is not None else None
    kernels = tuple(
        (k.group(1).decode("utf-8", "replace"), k.group(2).decode("ascii", "replace"))
        for k in kernel_defs(buf, lo, upto)
    )
    return (*line[:6], (role, base + upto), kernels)


_MD5_TAIL = len(HAS_PAYLOAD) + 34  # the field as the header's last: `…"}`


def _md5_key(js: bytes) -> tuple[str | None, bytes]:
    """A header's md5 (has_payload) and the header with it blanked (what `_header` caches by)."""
    md5 = _tail_md5(js)
    if md5 is not None:
        return md5, js[: len(js) - 34] + b'"}'
    i = js.rfind(HAS_PAYLOAD)
    if i >= 0:
        j = i + len(HAS_PAYLOAD)
        k = js.find(b'"', j)
        # Blank only a real md5: cutting anything else could make broken JSON parse.
        if k == j + 32 and MD5_HEX.fullmatch(js, j, k):
            return js[j:k].decode("ascii"), js[:j] + js[k:]
    return None, js


def _tail_md5(js: bytes) -> str | None:
    """The md5 where torch writes it, as the header's last field (None: not there)."""
    if js.endswith(b'"}') and js.startswith(HAS_PAYLOAD, len(js) - _MD5_TAIL):
        j = len(js) - 34
        if MD5_HEX.fullmatch(js, j, j + 32):
            return js[j : j + 32].decode("ascii")
    return None


def _md5_split(js: bytes) -> tuple[str | None, bytes, bool, bytes | None]:
    """A header's md5, the JSON to read, whether the md5 is still in it, and the header
    cache's key (None: too long to cache). A header too long to cache is not copied to blank
    its md5 (`header_info` blanks it in the value); any other is read as `_md5_key` gives it."""
    if len(js) > _LONG_HEADER:
        md5 = _tail_md5(js)
        if md5 is not None:
            return md5, js, True, None
    md5, key = _md5_key(js)
    return md5, key, False, key if len(key) <= _CACHE_MAX_KEY else None


def header_info(data: bytes, size: int, blank: bool) -> tuple[Derived | None, bool]:
    """What a header derives (None: it is not JSON), and whether only json could read it.
    `blank`: its md5 ends `data`, blanked in the value as `_md5_key` blanks it in the bytes."""
    header = fast_loads(data)
    slow = header is SLOW
    if slow:
        # json's values may hold what orjson cannot write back (NaN, big ints).
        header = _loads_json(data)
    if header is _INVALID:
        return None, slow
    if blank and type(header) is dict:
        header["has_payload"] = ""
    return derive(header, size), slow


class TraceFile(LogSource):
    """Index of one trace file; also the payload source of its records.

    Facts go through `builder` (the TraceSet's, so that they reach its lists; a file indexed
    on its own gets a builder of its own).
    """

    path: Path
    logs_metrics = True

    def __init__(
        self,
        path: str | os.PathLike[str],
        display: str | None = None,
        builder: Builder | None = None,
    ) -> None:
        LogSource.__init__(self, display or str(path), Path(path))
        self.builder = builder if builder is not None else Builder()
        self.pos = 0  # bytes consumed from the file
        self._line = LineBuffer()  # the last line, until its newline comes
        self._open: Record | None = None
        self._open_scan = 0  # offset up to which the open record's payload was scanned
        self._cache: dict[bytes, Derived] = {}
        self._contexts = self.builder.memo()  # a fast-path header's context keys -> compile
        # The file's bytes, shared by every version of the model (payloads.py).
        self.store = PayloadStore(self.path)
        self.memo = self.store.memo

        # self.records holds every record except chromium events and payload-less MINOR_KINDS
        # Header offsets of the chromium events of no compile (a compile keeps its own:
        # `chromium_offsets` gives them all).
        self.chromium = array("q")
        self.minor = array("q")  # header offsets of MINOR_KINDS and UNKEPT_KINDS records
        self.unparsed: LineRefs = LineRefs()
        self.strings: dict[IdPart, str] = {}  # the string table: id -> file name
        self._pid_b: set[bytes] = set()
        self._last_ts_b: bytes | None = None
        self.md5_mismatches = 0
        self.bad_md5: set[int] = set()  # header offsets whose payload md5 failed (--verify)
        self.slow_json = 0  # headers only the stdlib JSON parser could read
        m = RANK_IN_NAME.search(self.path.name)
        self.name_rank = int(m.group(1)) if m else None
        if self.name_rank is not None:
            self.ranks.add(self.name_rank)

    # ---------------------------------------------------------------- feeding

    def feed(self, data: bytes, settle: bool = True) -> None:
        """Index appended bytes. `settle` closes a last record whose md5 already matches."""
        if not data:
            return
        start = self.pos  # file offset of data[0]
        self.pos += len(data)
        line = self._line
        first = data.find(b"\n")
        if first < 0:
            dropped = line.hold(data, start)
            if dropped is not None:
                self._overlong(dropped)
        else:
            # The line cut at the last feed, completed without copying all of `data`; in
            # front of it, the newline before it (a virtual one before the first line).
            buf = line.complete(data[: first + 1], lead=b"\n")
            if buf is None:  # the rest of an overlong line: not kept
                self._open_scan = max(self._open_scan, start + first)
            elif len(buf) > 2:
                self._scan(buf, start + first - (len(buf) - 1), len(buf) - 1)
            cut = data.rfind(b"\n")
            if cut > first:
                self._scan(data, start, cut, lo=first)
            dropped = line.hold(data[cut + 1 :], start + cut + 1)
            if dropped is not None:
                self._overlong(dropped)
        if settle:
            self._settle_open()
        self.version += 1

    def feed_from(self, hooks: Hooks, start: int = 0, done: int = 0, total: int = 0) -> int:
        """Feed the file from `start` to its end, in chunks under the hooks' lock (not
        finished); a read error is a problem of the file. Returns bytes done (progress)."""
        try:
            return read_chunks(
                self.path, lambda c: self.feed(c, settle=False), hooks, done, total, start
            )
        except OSError as exc:
            self.problems.append(f"read error: {exc.strerror or exc}")
            return done

    def feed_range(self, hooks: Hooks, start: int, end: int) -> None:
        """Feed bytes [start, end) of the file in chunks under the hooks' lock (not finished);
        `start` is where this index stands. A read error is a problem of the file."""
        try:
            with open(self.path, "rb") as fh:
                fh.seek(start)
                while start < end and not hooks.stop():
                    chunk = fh.read(min(CHUNK, end - start))
                    if not chunk:
                        break
                    self.feed(chunk, settle=False)
                    start += len(chunk)
        except OSError as exc:
            self.problems.append(f"read error: {exc.strerror or exc}")

    def apply_lines(self, lines: Lines) -> None:
        """Index the range `prescan` read, as feeding its bytes would: the stateful half of
        `_scan` (compiles, records, handlers, kernels), in the lines' order. This index must
        stand at the range's start with no partial line pending."""
        if self.pos != lines.start or not self._line.at_line_start:
            raise ValueError("the index does not stand at the range's start")
        self.pos = lines.end
        cache = self._contexts
        parsed = self._cache
        offsets = self.chromium
        kinds = self.kinds
        n_chromium = 0
        for line in lines.lines:
            offset = line[0]
            if self._open is not None:
                self._reach(offset)
                self._close_open()
            if len(line) == 2:  # a chromium_event header of the fast path
                seg = line[1]
                if not n_chromium and "chromium_event" not in kinds:
                    kinds["chromium_event"] = 0  # as `_scan` does
                comp = cache.get(seg)
                if comp is None:
                    comp = self._context_compile(seg)
                n_chromium += 1
                if comp is not False:
                    comp.chromium += 1
                    comp.chromium_at.append(offset)
                else:
                    offsets.append(offset)
                continue
            if len(line) == 3:  # a MINOR_KINDS header of the fast path
                kinds[line[1]] += 1
                self.minor.append(offset)
                comp = cache.get(line[2])
                if comp is None:
                    comp = self._context_compile(line[2])
                if comp is not False:
                    comp.minor += 1
                continue
            if len(line) == 1:
                self.unparsed.append((offset, self.lineno_of(offset)))
                continue
            hdr_end, md5, key, info, slow, role, kernels = line[1:]
            known = parsed.get(key) if key is not None else None
            if known is not None:
                info = known  # the same object as serial indexing's cache gives
            else:
                self.slow_json += slow
                if info is None:
                    self.unparsed.append((offset, self.lineno_of(offset)))
                    continue
                if key is not None:
                    if len(parsed) > _CACHE_MAX:
                        parsed.clear()
                    parsed[key] = info
            self._record(info, md5, offset, hdr_end)
            rec = self._open
            if rec is not None and rec.kind == "inductor_output_code" and role is not False:
                self._reach(role[1])
                if role[0] is not None:
                    rec.role = role[0]
                for name, method in kernels:
                    self.builder.kernel(self, rec, name, method)
        if n_chromium:
            self.kinds["chromium_event"] += n_chromium
        if lines.first_ts is not None and self.first_ts is None:
            self.first_ts = lines.first_ts.decode()
        if lines.last_ts is not None:
            self._last_ts_b = lines.last_ts
        for pid_b in lines.pids - self._pid_b:
            self._new_pid(pid_b)
        self.ranks.update(lines.ranks)
        self._reach(lines.end)
        self.version += 1

    def _reach(self, upto: int) -> None:
        """The open record's payload reaches file offset `upto` (scanned already)."""
        rec = self._open
        if rec is None or upto <= self._open_scan:
            return
        rec.end = min(upto, self.pos)
        self._open_scan = upto

    def _overlong(self, first: bytes) -> None:
        """A line past MAX_LINE (`first`: its first byte): counted (as unparsed unless a
        payload line), not kept."""
        start = self._line.start
        if first != b"\t":
            if self._open is not None:
                self._close_open()
            self.unparsed.append((start, self.lineno_of(start)))

    def finish(self) -> None:
        """The file is complete: index a trailing line that has no newline."""
        tail = self._line.take(lead=b"\n")
        last_line = -1  # torch ends every line it writes: a last line without a newline was cut
        if tail is not None and len(tail) > 1:
            base = self.pos - len(tail)
            last_line = base + 1
            self._scan(tail + b"\n", base, len(tail), eof_line=True)
        rec = self._open
        header = self._last_header(last_line) if last_line >= 0 else -1
        if rec is not None and rec.md5 and not rec.closed and rec.md5_ok() is False:
            self.truncated += 1
            self.tail_cut, self.tail_label = rec.offset, rec.label
            self.tail_in_payload = True
        elif header >= 0 and tail is not None and tail[1:2] == b"\t":
            # A payload line cut: the record it belongs to (kept or only located) is the cut.
            self.tail_cut, self.tail_in_payload = header, True
            self.tail_label = rec.label if rec is not None and rec.offset == header else ""
        elif last_line >= 0:
            self.tail_cut, self.tail_label = last_line, ""
        self._close_open()
        self.size = self.pos
        self.head_cut = self._head_cut()
        self.finished = True
        self.version += 1
        # Caches of the indexing only: a finished file of a big directory need not keep them.
        self._cache.clear()
        self._contexts.clear()

    def _last_header(self, before: int) -> int:
        """The offset of the last record header before `before` (-1: none)."""
        heads: list[int] = [*self.chromium[-1:], *self.minor[-1:]]
        if self.records:
            heads.append(self.records[-1].offset)
        return max((h for h in heads if h < before), default=-1)

    def _head_cut(self) -> int:
        """Bytes of payload lines the file begins with (torch starts a file with a header)."""
        firsts = [self.pos, *self.chromium[:1], *self.minor[:1]]
        firsts.extend(c.chromium_at[0] for c in self.compiles.values() if c.chromium_at)
        if self.records:
            firsts.append(self.records[0].offset)
        first = min(firsts)  # the first header (lines before it that are no record: below)
        if first == 0:
            return 0
        try:  # the index skips payload lines and blank ones: only payload lines are a cut
            head = self.read(0, min(first, HEAD_CUT_READ))
        except OSError:
            return 0
        return first if begins_in_payload(head) else 0

    @property
    def pending_bytes(self) -> int:
        return self._line.size

    def _scan(self, buf: bytes, base: int, cut: int, eof_line: bool = False, lo: int = 0) -> None:
        """Index the complete lines of buf[lo:cut + 1]; buf[lo] and buf[cut] are newlines."""
        cache = self._contexts
        offsets = self.chromium
        pids = self._pid_b
        kinds = self.kinds
        n_chromium = 0
        last = None
        minor = self.minor
        for s, pend, rank_b, ts_b, pid_b, seg, minor_b, minor_seg in find_lines(buf, lo, cut + 1):
            if self._open is not None:
                self._extend_open(buf, base, s)
                self._close_open()
            if ts_b is not None:
                last = ts_b
                if self.first_ts is None:
                    self.first_ts = ts_b.decode()
                if pid_b not in pids:
                    self._new_pid(pid_b)
                if rank_b is not None:
                    self.ranks.add(int(rank_b))
            if seg is not None:
                if not n_chromium and "chromium_event" not in kinds:
                    kinds["chromium_event"] = 0  # a key in order of appearance, in any split
                comp = cache.get(seg)
                if comp is None:
                    comp = self._context_compile(seg)
                n_chromium += 1
                if comp is not False:
                    comp.chromium += 1
                    comp.chromium_at.append(base + s)
                else:
                    offsets.append(base + s)
                continue
            if minor_b is not None:
                kinds[MINOR_NAMES[minor_b]] += 1
                minor.append(base + s)
                comp = cache.get(minor_seg)
                if comp is None:
                    comp = self._context_compile(minor_seg)
                if comp is not False:
                    comp.minor += 1
                continue
            e = buf.index(b"\n", s)
            if ts_b is None:
                self._unparsed(buf, base, s, e)
            else:
                self._header(buf[pend:e], base + s, base + e + (0 if eof_line and e == cut else 1))
        if n_chromium:
            self.kinds["chromium_event"] += n_chromium
        if last is not None:
            self._last_ts_b = last
        if self._open is not None:
            self._extend_open(buf, base, cut + 1)

    def _context_compile(self, seg: bytes) -> Compile | Literal[False]:
        """The compile of a fast-path header's context keys (False: none), cached."""
        header = loads(b"{" + seg[2:] + b"}") if seg else {}  # ints and nulls (LINE's _CTX)
        key = key_from_header(header)
        rank = header.get("rank")
        if isinstance(rank, int):
            self.ranks.add(rank)
        comp: Compile | Literal[False] = False
        if key is not None:
            comp = self.builder.compile_for(self, key)
        if len(self._contexts) < _CACHE_MAX:
            self._contexts[seg] = comp
        return comp

    def _new_pid(self, pid_b: bytes) -> None:
        self._pid_b.add(pid_b)
        self.pids.add(int(pid_b))

    def _extend_open(self, buf: bytes, base: int, upto: int) -> None:
        """The open record's payload reaches file offset base + upto."""
        rec = self._open
        lo = self._open_scan - base
        if rec is None or upto <= lo:
            return
        if rec.kind == "inductor_output_code":
            if self._open_scan == rec.hdr_end:  # its first payload line is in this piece
                aot = AOT_ID.match(buf, max(lo, 0), upto)
                if aot is not None:
                    rec.role = aot.group(1).decode("ascii")
            for m in kernel_defs(buf, max(lo, 0), upto):
                name, method = (
                    m.group(1).decode("utf-8", "replace"),
                    m.group(2).decode("ascii", "replace"),
                )
                self.builder.kernel(self, rec, name, method)
        end = min(base + upto, self.pos)
        rec.end = end
        self._open_scan = base + upto

    def _unparsed(self, buf: bytes, base: int, s: int, e: int) -> None:
        if not buf[s:e].strip():
            return
        offset = base + s
        lineno = self.lineno_of(offset)
        self.unparsed.append((offset, lineno))

    def _header(self, js: bytes, offset: int, hdr_end: int) -> None:
        """A header that no fast path took: its JSON `js`, its line from `offset` to
        `hdr_end` (past the newline, if the line has one)."""
        md5, data, blank, key = _md5_split(js)
        info = self._cache.get(key) if key is not None else None
        if info is None:
            info, slow = header_info(data, len(js), blank)
            self.slow_json += slow
            if info is None:
                self.unparsed.append((offset, self.lineno_of(offset)))
                return
            if key is not None:
                if len(self._cache) > _CACHE_MAX:
                    self._cache.clear()
                self._cache[key] = info
        self._record(info, md5, offset, hdr_end)

    def _record(self, info: Derived, md5: str | None, offset: int, hdr_end: int) -> None:
        kind, meta, key, attempt, name, rank, md5_field, typed = info
        if not typed:
            self.bad_headers += 1
        if kind in MINOR_KINDS and md5 is None and md5_field is None:
            # Many small metadata events: counted and located, not kept as objects.
            self.kinds[kind] += 1
            self.minor.append(offset)
            if rank is not None:
                self.ranks.add(rank)
            if key is not None:
                self.builder.compile_for(self, key).minor += 1
            self._open = None
            return
        if md5 is None:
            md5 = md5_field
        if rank is not None:
            self.ranks.add(rank)
        if kind in UNKEPT_KINDS and md5 is None and key is None:
            # The string table: its entries are kept (`strings`), its records located only.
            self.kinds[kind] += 1
            self.minor.append(offset)
            rec = Record(self, offset, -1, hdr_end, kind, meta, None, attempt, None, name)
            errors = len(self.handler_errors)
            self.builder.run(HEADER_HANDLERS[kind], self, rec, "header")
            if len(self.handler_errors) > errors:
                rec.closed = True
                self.records.append(rec)  # kept: the error names it
            self._open = None
            return
        if md5 is not None:
            md5 = sys.intern(md5)  # ranks of one program log the same payloads
        comp = None
        if key is not None:
            starts = kind == "dynamo_start" and attempt in STARTING_ATTEMPTS
            comp = self.builder.compile_for(self, key, starts)
        rec = Record(self, offset, -1, hdr_end, kind, meta, comp, attempt, md5, name)
        self.kinds[kind] += 1
        if name is not None and kind == "artifact":
            self.artifacts[name] += 1
        self._open, self._open_scan = rec, hdr_end
        if kind == "chromium_event":
            # An oddly shaped chromium header: count it like the fast path does.
            if comp is not None:
                comp.chromium += 1
                comp.chromium_at.append(offset)
            else:
                self.chromium.append(offset)
            return
        self.records.append(rec)
        if comp is not None:
            comp.records.append(rec)
        handler = HEADER_HANDLERS.get(kind)
        if handler is not None:
            self.builder.run(handler, self, rec, "header")
        elif kind not in KNOWN_KINDS:
            self.unknown[kind] += 1
        if md5 is None:
            self._close(rec)

    def _close_open(self) -> None:
        rec = self._open
        if rec is None:
            return
        self._open = None
        if not rec.closed:
            self._close(rec)

    def _close(self, rec: Record) -> None:
        """The record's payload is complete (or it has none)."""
        rec.closed = True
        if rec.kind == "inductor_output_code" and rec.role is None and rec.compile is not None:
            rec.role = rec.compile.output_role()
        if rec.kind == "artifact" and rec.name is not None:
            handler = CLOSE_HANDLERS.get(rec.name)
            if handler is not None:
                self.builder.run(handler, self, rec, "close")

    def settle(self) -> None:
        """What a feed with `settle` does at its end (for an index restored from a snapshot,
        which was fed without)."""
        self._settle_open()

    def _settle_open(self) -> None:
        """Close the last record when its payload is complete (its md5 matches)."""
        rec = self._open
        if rec is None or rec.closed or not rec.md5 or self.pending_bytes:
            return
        if hashlib.md5(self.read_payload(rec)).hexdigest() == rec.md5:
            self._close_open()

    # ---------------------------------------------------------------- reading

    def read(self, start: int, end: int) -> bytes:
        return self.store.read(start, end)

    def read_payload(self, record: Record) -> bytes:
        store = self.store
        if record.closed:
            raw = store.read_cached(record.hdr_end, record.end)
        else:
            raw = store.read(record.hdr_end, record.end)
        body = payload_from_region(raw)
        if record.md5 and has_bare_lines(raw) and hashlib.md5(body).hexdigest() != record.md5:
            restored = self._restore(raw, record.md5)
            if restored is not None:
                store.restored(record.offset)
                return restored
        return body

    @staticmethod
    def _restore(raw: bytes, md5: str) -> bytes | None:
        """The payload with its stripped whitespace-only lines back, when one of
        `restored_payloads` matches the md5 (None: a real mismatch)."""
        return next((p for p in restored_payloads(raw) if hashlib.md5(p).hexdigest() == md5), None)

    def blank_lines_restored(self, record: Record) -> bool:
        return self.store.was_restored(record.offset)

    def file_name(self, fid: object) -> str | None:
        if fid is None or isinstance(fid, (int, float, str)):
            return self.strings.get(fid)
        return None  # an unhashable id (a list, say) names nothing

    def file_names(self) -> list[str]:
        return list(self.strings.values())

    def define_string(self, fid: Any, name: str) -> None:
        self.strings[fid] = name  # an unhashable id raises TypeError, which h_str reports

    def header_line(self, record: Record) -> bytes:
        return self.read(record.offset, record.hdr_end).rstrip(b"\n")

    def full_meta(self, record: Record) -> Any:
        line = self.header_line(record)
        m = HEADER.match(line)
        if m is None:
            return record.meta
        try:
            header = json.loads(line[m.end() :].decode("utf-8", "replace"))
        except (ValueError, RecursionError):
            return record.meta
        return header.get(record.kind, record.meta) if isinstance(header, dict) else header

    def chromium_offsets(self) -> array[int]:
        """Every chromium event's header offset, in file order (safe beside a thread that
        indexes more: the compiles are listed at once)."""
        runs = [self.chromium, *(c.chromium_at for c in list(self.compiles.values()))]
        return array("q", sorted(chain.from_iterable(runs)))

    def line_at(self, offset: int, limit: int = 1 << 20) -> bytes:
        data = self.read(offset, offset + limit)
        return data.split(b"\n", 1)[0]

    def lineno_of(self, offset: int) -> int:
        """1-based line number of the line starting at `offset` (counted once, remembered)."""
        return self.store.lineno_of(offset)

    def verify(self) -> int:
        """Hash every payload in the file (chromium events included); returns mismatches.

        A payload that matches once its stripped whitespace-only lines are restored (see
        `restored_payloads`) is not a mismatch: it is counted in `blank_line_records`.
        """
        bad: list[int] = []
        suspects: list[tuple[int, int, int, str]] = []  # (header, payload start, end, md5)
        offset = 0
        want: str | None = None
        start = body_at = 0
        digest = None
        first = True
        bare = False  # an empty line inside the payload region

        def settle(end: int) -> None:
            if digest is None or want is None or digest.hexdigest() == want:
                return
            if bare:
                suspects.append((start, body_at, end, want))
            else:
                bad.append(start)

        with open(self.path, "rb") as fh:
            for line in fh:
                here = offset
                offset += len(line)
                if line.startswith(b"\t"):
                    if digest is not None:
                        if not first:
                            digest.update(b"\n")
                        digest.update(line[1:-1] if line.endswith(b"\n") else line[1:])
                        first = False
                    continue
                if not line.strip():
                    bare = bare or line in (b"\n", b"\r\n")
                    continue
                settle(here)
                digest = None
                m = HEADER.match(line)
                if m is None:
                    continue
                header = loads(line[m.end() :])
                if isinstance(header, dict) and header.get("has_payload"):
                    want, start, body_at = str(header["has_payload"]), here, offset
                    digest, first, bare = hashlib.md5(), True, False
        settle(offset)
        blank = 0
        for header_at, lo, hi, md5 in suspects:
            if self._restore(self.read(lo, hi), md5) is not None:
                blank += 1
            else:
                bad.append(header_at)
        self.bad_md5 = set(bad)
        self.md5_mismatches = len(bad)
        self.blank_line_records = blank
        return len(bad)

    def chromium_payloads(self, offsets: Sequence[int]) -> list[dict[str, Any]]:
        """The Chrome trace events (B/E/i) of the chromium_event records at `offsets`."""
        events = []
        for offset in offsets:
            raw = self.read(offset, offset + (1 << 20))
            first = raw.find(b"\n")
            if first < 0:
                continue
            cut = re.search(rb"\n(?=[^\t])", raw[first:])
            body = payload_from_region(
                raw[first + 1 : first + cut.start() + 1] if cut else raw[first + 1 :]
            )
            value = loads(body)
            if isinstance(value, dict):
                events.append(value)
        return events

    def close(self) -> None:
        self.store.close()

    @property
    def last_ts(self) -> str | None:
        return self._last_ts_b.decode() if self._last_ts_b is not None else None

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


class LineRefs(Sequence[tuple[int, int]]):
    """(offset, line number) pairs in two arrays: millions of junk lines stay small."""

    def __init__(self) -> None:
        self.offsets = array("q")
        self.linenos = array("q")

    def append(self, ref: tuple[int, int]) -> None:
        self.offsets.append(ref[0])
        self.linenos.append(ref[1])

    def __len__(self) -> int:
        return len(self.offsets)

    @overload
    def __getitem__(self, i: int) -> tuple[int, int]: ...

    @overload
    def __getitem__(self, i: slice) -> list[tuple[int, int]]: ...

    def __getitem__(self, i: int | slice) -> tuple[int, int] | list[tuple[int, int]]:
        if isinstance(i, slice):
            return [(o, n) for o, n in zip(self.offsets[i], self.linenos[i], strict=True)]
        return (self.offsets[i], self.linenos[i])

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other) if isinstance(other, (list, LineRefs)) else NotImplemented


class Derived(NamedTuple):
    """What a record needs from its header JSON (cached for headers that repeat)."""

    kind: str
    meta: JsonValue
    key: CompileKey | None
    attempt: IdPart
    name: str | None
    rank: int | None
    md5: str | None  # the has_payload field
    typed: bool  # every context key has its documented type


def derive(header: Any, size: int) -> Derived:
    """What a record needs from its header JSON (cached for headers that repeat)."""
    if type(header) is not dict:
        return Derived("(not an object)", header, None, 0, None, None, None, False)
    kind = ""
    for k in header:
        if k not in CONTEXT_KEYS:
            kind = sys.intern(k)
            break
    get = header.get
    fid, fcid, ca, attempt, rank = (
        get("frame_id"),
        get("frame_compile_id"),
        get("compiled_autograd_id"),
        get("attempt", 0),
        get("rank"),
    )
    md5 = get("has_payload")
    typed = (
        kind != ""
        and type(fid) in PLAIN_TYPES
        and type(fcid) in PLAIN_TYPES
        and type(ca) in PLAIN_TYPES
        and type(attempt) in PLAIN_TYPES
        and type(rank) in PLAIN_TYPES
        and (md5 is None or type(md5) is str)
    )
    if not typed:
        attempt = id_part(attempt)
    if type(rank) is not int:
        rank = None
    md5 = str(md5) if md5 else None
    meta = get(kind) if kind else None
    name = None
    if type(meta) is dict:
        if kind in LAZY_META_KINDS:
            meta = None  # read from disk by full_meta() when shown
        else:
            raw = meta.get("name")
            if type(raw) is str and kind in ("artifact", "graph_dump"):
                name = sys.intern(raw)
            if size > _META_KEEP:
                meta = slim(meta)
    key = (
        CompileKey(ca, fid, fcid)
        if typed and (fid is not None or ca is not None or "frame_id" in header)
        else key_from_header(header)
    )
    return Derived(kind, meta, key, attempt, name, rank, md5, typed)


_SCALAR_TYPES = frozenset({int, float, bool, type(None)})


def slim(meta: dict[str, Any]) -> dict[str, Any]:
    """Keep scalars and short strings of a big header; the full value stays on disk. The
    recompile limit is kept out of the long config text (what the status bar shows)."""
    out: dict[str, Any] = {}
    for k, v in meta.items():
        t = type(v)  # (a parser's values are of these types exactly)
        if t is str:
            if len(v) <= _SLIM_STR or k in KEEP_WHOLE:
                out[k] = v
            elif k == "dynamo_config":
                limit = config_limit(v)
                if limit is not None:
                    out[LIMIT_KEY] = limit
        elif (
            t in _SCALAR_TYPES
            or k in KEEP_WHOLE
            or (
                t is list
                and len(v) <= 20
                and all(isinstance(x, (str, int, float)) and len(str(x)) <= _SLIM_STR for x in v)
            )
        ):
            out[k] = v
    return out
