"""A trace file's index as bytes: what index workers send back, and what the cache stores.

A snapshot holds a `TraceFile` as it is after its last `feed` and before `finish()`, so that a
file that grew can be fed on from where it was, plus the facts the file made, in the order they
were made. `restore` fills a new TraceFile with it and returns those facts; the caller finishes
the file. Feeding the rest of a file to a restored index gives what one read of the whole file
gives, as any split of a file does.

The bytes are data only, read defensively (they may come from a cache directory): a fixed
header, one JSON document, one array of int64 and one blob of raw bytes. Nothing is executed,
every value is type-checked, every reference and byte offset is bounded, and anything wrong
raises `Invalid`.

Nothing the model holds can be dropped in silence: the objects of the model (the dataclasses of
model.py) are written field by field from their declared types, so a new field is written too,
and a field of a type this module does not know, an attribute of a TraceFile that is not listed
below, or a fact list it does not know makes `encode` raise `CodecError` (the load then indexes
the file itself: slower, never wrong). tests/test_scale.py checks that none does.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import struct
import sys
import types
import typing
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from itertools import repeat
from operator import attrgetter
from typing import Any, Literal, Union

from tcview.ingest.linebuffer import LineBuffer
from tcview.ingest.tracefile import LineRefs, TraceFile
from tcview.model.compile_id import CompileKey, FrameKey, IdPart
from tcview.model.metadata import METADATA_TYPES, CompilationMetrics
from tcview.model.objects import (
    GRAPH_ROLES,
    CacheEvent,
    Compile,
    CudagraphNote,
    Error,
    Facts,
    Failure,
    Frame,
    GraphBreak,
    HandlerError,
    JsonValue,
    Kernel,
    LogSource,
    PlacedLine,
    Recompile,
    Record,
    StackFrame,
)

try:
    import orjson

    HAVE_ORJSON = True
except ImportError:  # pragma: no cover - depends on the environment
    HAVE_ORJSON = False

MAGIC = b"TCVSNAP\n"
FORMAT = 7  # bump when the layout or the meaning of a snapshot changes
_HEAD = struct.Struct("<8sIII")  # magic, format, flags, number of sections
_LENGTH = struct.Struct("<Q")
SECTIONS = 3  # JSON document, int64 array, raw bytes
STDLIB_JSON = 1  # flag: the document was written by json (values orjson cannot write)
MAX_DEPTH = 2  # the document's own nesting that is checked; JSON values inside are free


class Invalid(ValueError):
    """The bytes are not a snapshot this version can read."""


class CodecError(TypeError):
    """The model holds something a snapshot cannot carry (the file is indexed instead)."""


# ---------------------------------------------------------------------- what is written

# TraceFile attributes that are not written: given again on restore, or caches of the indexing.
NOT_SAVED = frozenset(
    {
        "display",  # given by the TraceSet
        "path",  # given
        "name_rank",  # from the path
        "builder",  # the model's, given
        "_cache",  # parsed headers (a cache)
        "_contexts",  # the builder's memo of fast-path headers' compiles (a cache)
        "store",  # the file's handle and what reads found: written from it below
        "memo",  # what readers derived from the bytes (the store's)
        "signatures",  # of the finished file, carried beside the snapshot (signatures.py)
    }
)
# Plain attributes of a TraceFile, by the check their value must pass.
_INT, _BOOL, _OPT_STR, _STRS = "int", "bool", "str|None", "list[str]"
FILE_SCALARS: dict[str, str] = {
    "pos": _INT,
    "_open_scan": _INT,
    "first_ts": _OPT_STR,
    "torch_version": _OPT_STR,
    "failure_count": _INT,
    "problems": _STRS,
    "version": _INT,
    "episode": _INT,
    "bad_headers": _INT,
    "truncated": _INT,
    "missing_strings": _INT,
    "deleted": _BOOL,
    "finished": _BOOL,
    "md5_mismatches": _INT,
    "slow_json": _INT,
}
# Attributes written by code of their own below.
FILE_STRUCTURED = frozenset(
    {
        "records",
        "compiles",
        "frames",
        "kernels",
        "handler_errors",
        "kinds",
        "artifacts",
        "unknown",
        "ranks",
        "pids",
        "current",
        "started",
        "strings",
        "chromium",
        "minor",
        "unparsed",
        "_open",
        "_line",
        "_pid_b",
        "_last_ts_b",
        "bad_md5",
    }
)
# The lists of `Facts`, and what they hold.
FACT_LISTS: dict[str, type] = {
    "compiles": Compile,
    "breaks": GraphBreak,
    "recompiles": Recompile,
    "failures": Failure,
    "errors": Error,
    "cache_events": CacheEvent,
    "kernels": Kernel,
}
# Facts only a TORCH_LOGS capture makes (never a trace file): their lists, and fields of these
# types, must be empty (else `encode` raises CodecError) and are read back empty.
TEXT_ONLY_LISTS: dict[str, type] = {
    "cudagraph_notes": CudagraphNote,
    "autotune_lines": PlacedLine,
}
# Objects written once each and referred to by their position: per class, its table.
TABLES: dict[type, str] = {
    Compile: "compiles",
    Frame: "frames",
    GraphBreak: "breaks",
    Recompile: "recompiles",
    Failure: "failures",
    Error: "errors",
    CacheEvent: "cache_events",
    Kernel: "kernels",
    HandlerError: "handler_errors",
}
# Record's slots, in the order the columns below are written (a test compares them).
RECORD_SLOTS = (
    "source",
    "offset",
    "_lineno",
    "hdr_end",
    "end",
    "kind",
    "name",
    "meta",
    "compile",
    "attempt",
    "md5",
    "closed",
    "role",
)
# StackFrame's fields, in the order a stack row holds them (_stacks; checked on encode).
STACK_FIELDS = ("filename", "line", "name", "loc")
# Dataclass fields that are caches, not written (their default is kept).
SKIPPED_FIELDS: dict[type, frozenset[str]] = {}

_SCALARS = (str, int, float, bool, type(None))
_ROLES = {*GRAPH_ROLES, None}


# ---------------------------------------------------------------------- encoding context


class _Out:
    """What encoding collects besides the document: int columns, shared JSON values."""

    def __init__(
        self, tables: dict[str, Sequence[Any]], records: Sequence[Record], exact: bool
    ) -> None:
        self.ints = array("q")
        self.values: list[JsonValue] = []
        self._value_at: dict[int, int] = {}  # by identity
        self._text_at: dict[bytes, int] = {}  # by value
        self._keep: list[Any] = []  # the values whose ids are in _value_at
        self._text = _text_of if exact else _text_of_stdlib
        self.index: dict[str, dict[int, int]] = {
            name: {id(obj): i for i, obj in enumerate(objs)} for name, objs in tables.items()
        }
        self.index["records"] = {id(r): i for i, r in enumerate(records)}

    def column(self, values: Iterable[int]) -> list[int]:
        """Append int64 values; returns [start, length] of them."""
        start = len(self.ints)
        try:
            self.ints.extend(array("q", values))
        except (OverflowError, TypeError) as exc:
            raise CodecError(f"not an int64 column: {exc}") from None
        return [start, len(self.ints) - start]

    def value(self, value: Any) -> int:
        """A JSON value's position in the shared table: each value once (equal values too:
        read back, they are one object, as the records of identical headers are)."""
        at = self._value_at.get(id(value))
        if at is None:
            if type(value) not in (dict, list) and type(value) not in _SCALARS:
                raise CodecError(f"not a JSON value: {type(value).__name__}")
            text = self._text(value)
            at = self._text_at.get(text)
            if at is None:
                at = self._text_at[text] = len(self.values)
                self.values.append(value)
            self._value_at[id(value)] = at
            self._keep.append(value)
        return at

    def ref(self, table: str, obj: Any) -> int:
        try:
            return self.index[table][id(obj)]
        except KeyError:
            raise CodecError(f"a reference to a {type(obj).__name__} outside {table}") from None


class Shared:
    """Values the snapshots of one load share: equal JSON values and stack frames become one
    object (a thousand ranks of one program log the same ones), as the records of one file
    with equal headers share theirs. Kept for one load only."""

    def __init__(self) -> None:
        self.values: dict[bytes, Any] = {}
        self.stack_frames: dict[Any, StackFrame] = {}

    def signatures(self, sigs: dict[str, JsonValue]) -> dict[str, JsonValue]:
        """`sigs` with each value that an earlier file had too made that file's object."""
        out: dict[str, JsonValue] = {}
        for name, value in sigs.items():
            key = _share_key(value, stdlib=True)  # made here: may hold NaN
            out[name] = value if key is None else self.values.setdefault(key, value)
        return out

    def share(self, tf: TraceFile) -> None:
        """Make the values of a file indexed here (its records', compiles' and signatures') the
        shared ones, as a restore does."""
        tf.signatures = self.signatures(tf.signatures)
        seen = self.values
        by_id: dict[int, Any] = {}
        stdlib = tf.slow_json > 0
        for rec in tf.records:
            value = rec.meta
            if type(value) in (dict, list):
                got = by_id.get(id(value))
                if got is None:
                    key = _share_key(value, stdlib)
                    got = value if key is None else seen.setdefault(key, value)
                    by_id[id(value)] = got
                rec.meta = got
        for comp in tf.compiles.values():
            if comp.metrics is not None:
                comp.metrics = by_id.get(id(comp.metrics), comp.metrics)
        frames = self.stack_frames
        for frame in tf.frames.values():
            frame.stack = [
                frames.setdefault(_stack_key(f.filename, f.line, f.name, f.loc), f)
                if type(f.line) in _SCALARS
                else f
                for f in frame.stack
            ]

    def intern(self, values: list[Any], stdlib: bool) -> None:
        """Replace each dict and list of `values` (read by the stdlib's json: `stdlib`) by the
        equal one met first."""
        seen = self.values
        for i, value in enumerate(values):
            if type(value) in (dict, list):
                key = _share_key(value, stdlib)
                if key is not None:
                    values[i] = seen.setdefault(key, value)


def _share_key(value: Any, stdlib: bool) -> bytes | None:
    """A JSON value's text, by which equal values are made one (None: not to be shared). A
    value the stdlib read (`stdlib`) may hold NaN, which orjson writes as null: the stdlib
    writes its text, refusing NaN. Either text reads back as one value only, so equal texts
    are equal values; without orjson sharing still keeps a thousand ranks in memory."""
    if HAVE_ORJSON and not stdlib:
        try:
            return orjson.dumps(value)
        except (TypeError, orjson.JSONEncodeError):
            return None
    try:
        # surrogatepass: lone surrogates (a non-UTF-8 path) must keep their own bytes.
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        return text.encode("utf-8", "surrogatepass")
    except (TypeError, ValueError, RecursionError):
        return None


class _In:
    """What decoding reads references from."""

    def __init__(
        self,
        source: TraceFile,
        ints: array[int],
        values: list[Any],
        tables: dict[str, list[Any]],
        shared: Shared,
    ) -> None:
        self.shared = shared
        self.source = source
        self.ints = ints
        self.values = values
        self.tables = tables  # by name, "records" too

    def column(self, ref: Any, length: int | None = None) -> array[int]:
        if not (type(ref) is list and len(ref) == 2 and _all_ints(ref)):
            raise Invalid("bad column reference")
        start, n = ref
        if start < 0 or n < 0 or start + n > len(self.ints):
            raise Invalid("column out of range")
        if length is not None and n != length:
            raise Invalid("column of the wrong length")
        return self.ints[start : start + n]

    def value(self, at: Any) -> Any:
        if type(at) is not int or not 0 <= at < len(self.values):
            raise Invalid("bad value reference")
        return self.values[at]


def _text_of(value: Any) -> bytes:
    if not HAVE_ORJSON:
        return _text_of_stdlib(value)
    try:
        return orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise CodecError(f"orjson cannot write a value: {exc}") from None


def _text_of_stdlib(value: Any) -> bytes:
    try:
        return json.dumps(value, ensure_ascii=True, allow_nan=True).encode("ascii")
    except (TypeError, ValueError, RecursionError) as exc:
        raise CodecError(f"json cannot write a value: {exc}") from None


def _all_ints(values: Iterable[Any]) -> bool:
    return all(type(v) is int for v in values)


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise Invalid(what)


# ---------------------------------------------------------------------- column codecs

# A table of objects is written as one column per field; a column codec writes and reads a
# field's values for all the objects at once (per-value work is what makes restores slow).
EncodeColumn = Callable[[list[Any], _Out], Any]
DecodeColumn = Callable[[Any, _In, int], list[Any]]
ColumnCodec = tuple[EncodeColumn, DecodeColumn]
_NONE = type(None)


class _IntArray:
    """Stands for ``array[int]`` when model annotations are evaluated (3.10 and 3.11 cannot
    subscript array at run time)."""

    def __class_getitem__(cls, item: Any) -> type:
        return _IntArray


def _is_idpart(v: Any) -> bool:
    return type(v) in _SCALARS


def _compile_key(v: Any) -> CompileKey:
    _check(type(v) is list and len(v) == 4, "bad compile key")
    a, f, c, e = v
    _check(_is_idpart(a) and _is_idpart(f) and _is_idpart(c), "bad compile id part")
    _check(type(e) is int and e >= 1, "bad episode")
    return CompileKey(a, f, c, e)


def _frame_key(v: Any) -> FrameKey:
    _check(type(v) is list and len(v) == 3, "bad frame key")
    a, f, e = v
    _check(_is_idpart(a) and _is_idpart(f), "bad frame id part")
    _check(type(e) is int and e >= 1, "bad episode")
    return FrameKey(a, f, e)


def _column(col: Any, n: int) -> list[Any]:
    if type(col) is not list or len(col) != n:
        raise Invalid("a column of the wrong length")
    return col


def _types_in(col: list[Any], allowed: set[type]) -> None:
    if not set(map(type, col)) <= allowed:
        raise Invalid("a value of the wrong type")


def _ints_in(col: list[int], lo: int, hi: int) -> None:
    """Every value an int in [lo, hi)."""
    _types_in(col, {int})
    if col and (min(col) < lo or max(col) >= hi):
        raise Invalid("a reference out of range")


def _scalar(kinds: set[type]) -> ColumnCodec:
    def enc(vals: list[Any], out: _Out) -> Any:
        return vals

    def dec(col: Any, ctx: _In, n: int) -> list[Any]:
        _types_in(_column(col, n), kinds)
        return col

    return enc, dec


def _json_value(only: set[type] | None) -> ColumnCodec:
    """JSON values, by their position in the shared table of values."""

    def enc(vals: list[Any], out: _Out) -> Any:
        return out.column(map(out.value, vals))

    def dec(col: Any, ctx: _In, n: int) -> list[Any]:
        at = ctx.column(col, n)
        values = ctx.values
        if at and (min(at) < 0 or max(at) >= len(values)):
            raise Invalid("a value reference out of range")
        got = [values[i] for i in at]
        if only is not None:
            _types_in(got, only)
        return got

    return enc, dec


def _ref(cls: type, optional: bool) -> ColumnCodec:
    table = "records" if cls is Record else TABLES[cls]

    def enc(vals: list[Any], out: _Out) -> Any:
        index = out.index[table]
        try:
            return out.column(-1 if v is None else index[id(v)] for v in vals)
        except KeyError:
            raise CodecError(f"a reference outside {table}") from None

    def dec(col: Any, ctx: _In, n: int) -> list[Any]:
        at = ctx.column(col, n)
        objs: list[Any] = ctx.tables[table]
        if optional:
            objs = [*objs, None]  # -1 is None
        if at and (min(at) < (-1 if optional else 0) or max(at) >= len(objs)):
            raise Invalid(f"a reference out of {table}")
        return [objs[i] for i in at]

    return enc, dec


def _ref_list(cls: type) -> ColumnCodec:
    table = "records" if cls is Record else TABLES[cls]

    def enc(vals: list[Any], out: _Out) -> Any:
        index = out.index[table]
        try:
            return [[index[id(x)] for x in v] for v in vals]
        except KeyError:
            raise CodecError(f"a reference outside {table}") from None

    def dec(col: Any, ctx: _In, n: int) -> list[Any]:
        _types_in(_column(col, n), {list})
        objs: list[Any] = ctx.tables[table]
        flat = [i for refs in col for i in refs]
        _ints_in(flat, 0, len(objs))
        return [[objs[i] for i in refs] if refs else [] for refs in col]

    return enc, dec


def _str_list() -> ColumnCodec:
    def enc(vals: list[Any], out: _Out) -> Any:
        return vals

    def dec(col: Any, ctx: _In, n: int) -> list[Any]:
        _types_in(_column(col, n), {list})
        _types_in([x for v in col for x in v], {str})
        return col

    return enc, dec


def _counter_idpart() -> ColumnCodec:
    def enc(vals: list[Any], out: _Out) -> Any:
        return [[[k, n] for k, n in v.items()] for v in vals]

    def dec(col: Any, ctx: _In, n: int) -> list[Any]:
        _types_in(_column(col, n), {list})
        out: list[Counter[IdPart]] = []
        for pairs in col:
            counter: Counter[IdPart] = Counter()
            for pair in pairs:
                _check(type(pair) is list and len(pair) == 2, "bad counter item")
                k, count = pair
                _check(_is_idpart(k) and type(count) is int and count >= 0, "bad counter item")
                counter[k] = count
            out.append(counter)
        return out

    return enc, dec


def _int_array() -> ColumnCodec:
    """Arrays of int64, in the snapshot's int section: a column of their lengths."""

    def enc(vals: list[Any], out: _Out) -> Any:
        start = len(out.ints)
        for v in vals:
            out.column(v)
        return [start, [len(v) for v in vals]]

    def dec(col: Any, ctx: _In, n: int) -> list[Any]:
        _check(type(col) is list and len(col) == 2, "bad arrays")
        start, lengths = col
        _ints_in(_column(lengths, n), 0, 1 << 62)
        _check(type(start) is int, "bad arrays")
        whole = ctx.column([start, sum(lengths)])
        out = []
        at = 0
        for length in lengths:
            out.append(whole[at : at + length])
            at += length
        return out

    return enc, dec


def _keys(make: Callable[[Any], Any]) -> ColumnCodec:
    def enc(vals: list[Any], out: _Out) -> Any:
        return [list(v) for v in vals]

    def dec(col: Any, ctx: _In, n: int) -> list[Any]:
        return [make(v) for v in _column(col, n)]

    return enc, dec


def _literal(choices: tuple[Any, ...]) -> ColumnCodec:
    def enc(vals: list[Any], out: _Out) -> Any:
        return vals

    def dec(col: Any, ctx: _In, n: int) -> list[Any]:
        _types_in(_column(col, n), {str})
        _check(set(col) <= set(choices), "not one of the choices")
        return col

    return enc, dec


def _stacks() -> ColumnCodec:
    """Lists of stack frames: [filename, line, name, loc] rows (STACK_FIELDS; lines by the
    value table)."""

    def enc(vals: list[Any], out: _Out) -> Any:
        return [[[f.filename, out.value(f.line), f.name, f.loc] for f in v] for v in vals]

    def dec(col: Any, ctx: _In, n: int) -> list[Any]:
        _types_in(_column(col, n), {list})
        values = ctx.values
        shared = ctx.shared.stack_frames
        out = []
        for rows in col:
            frames = []
            for row in rows:
                _check(type(row) is list and len(row) == len(STACK_FIELDS), "bad stack frame")
                filename, at, name, loc = row
                _check(type(filename) is str and type(name) is str, "bad stack frame")
                _check(type(loc) is str, "bad stack frame")
                _check(type(at) is int and 0 <= at < len(values), "bad stack frame")
                line = values[at]
                # Stacks repeat (the same program on every rank): one object for equal frames.
                key = _stack_key(filename, line, name, loc) if type(line) in _SCALARS else None
                frame = shared.get(key) if key is not None else None
                if frame is None:
                    frame = StackFrame(filename, line, name, loc)
                    if key is not None:
                        shared[key] = frame
                frames.append(frame)
            out.append(frames)
        return out

    return enc, dec


def _metadata_check(hint: Any) -> Callable[[Any], Any]:
    """For a field of a metadata record (model/metadata.py): its JSON value checked, as the
    field holds it (a tuple of str is written as a list)."""
    if typing.get_origin(hint) is tuple and typing.get_args(hint) == (str, ...):

        def strs(v: Any) -> Any:
            _check(type(v) is list and all(type(x) is str for x in v), "bad metadata field")
            return tuple(v)

        return strs
    allowed = (
        set(typing.get_args(hint))
        if typing.get_origin(hint) in (Union, types.UnionType)
        else {hint}
    )
    if not allowed <= {str, int, float, bool, _NONE}:
        raise CodecError(f"snapshot.py cannot write a metadata field of type {hint!r}")

    def scalar(v: Any) -> Any:
        _check(type(v) in allowed, "bad metadata field")
        return v

    return scalar


def _metadata(cls: type) -> ColumnCodec:
    """Lists of metadata records (model/metadata.py `METADATA_TYPES`): not written, since
    they are decoded from their records' header values, which are (`_decode_metadata` makes
    them again on restore: cheaper than reading them back, and never out of step)."""

    def enc(vals: list[Any], out: _Out) -> Any:
        return None

    def dec(col: Any, ctx: _In, n: int) -> list[Any]:
        _check(col is None, f"bad {cls.__name__} column")
        return [[] for _ in range(n)]

    return enc, dec


def _decode_metadata(compiles: list[Compile]) -> None:
    """Each compile's typed metrics, from its metrics records, in file order (as the header
    handlers made them)."""
    for comp in compiles:
        records = sorted([*comp.metric_records, *comp.runtime_records], key=attrgetter("offset"))
        comp.metric_values = [
            CompilationMetrics.decode(r.kind, r.meta) for r in records if type(r.meta) is dict
        ]


def _always_empty(cls: type) -> ColumnCodec:
    """Lists of facts only a TORCH_LOGS capture makes (TEXT_ONLY_LISTS): empty in a trace file;
    nothing is written, and each object gets an empty list of its own back."""

    def enc(vals: list[Any], out: _Out) -> Any:
        if any(vals):
            raise CodecError(f"a trace file made {cls.__name__}s: snapshot.py does not write them")
        return None

    def dec(col: Any, ctx: _In, n: int) -> list[Any]:
        _check(col is None, f"bad {cls.__name__} column")
        return [[] for _ in range(n)]

    return enc, dec


def _stack_key(filename: str, line: Any, name: str, loc: str) -> tuple[Any, ...]:
    """What makes two stack frames equal (the line's type too: 1 and 1.0 and True differ)."""
    return (filename, type(line), line, name, loc)


def field_codec(hint: Any) -> ColumnCodec:
    """How a dataclass field of this declared type is written and read back."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    optional = origin in (Union, types.UnionType) and _NONE in args and len(args) == 2
    inner = next((a for a in args if a is not _NONE), None) if optional else hint
    if hint == JsonValue or hint is Any:
        return _json_value(None)
    if inner in (str, int, bool, float):
        return _scalar({inner, _NONE} if optional else {inner})
    if inner is Record or inner in TABLES:
        return _ref(inner, optional)
    if optional:
        if typing.get_origin(inner) is dict and typing.get_args(inner) == (str, Any):
            return _json_value({dict, _NONE})
        raise CodecError(f"snapshot.py cannot write a field of type {hint!r}")
    if hint is _IntArray:
        return _int_array()
    if hint is CompileKey:
        return _keys(_compile_key)
    if hint is FrameKey:
        return _keys(_frame_key)
    if origin is list and len(args) == 1 and args[0] in TEXT_ONLY_LISTS.values():
        return _always_empty(args[0])
    if origin is list and len(args) == 1:
        (item,) = args
        if item is str:
            return _str_list()
        if item is Record or item in TABLES:
            return _ref_list(item)
        if item is StackFrame:
            return _stacks()
        if item in METADATA_TYPES:
            return _metadata(item)
    if origin is Counter and args == (IdPart,):
        return _counter_idpart()
    if origin is Literal and all(type(a) is str for a in args):
        return _literal(args)
    raise CodecError(f"snapshot.py cannot write a field of type {hint!r}")


class ClassCodec:
    """Writes a table of model dataclass objects as one column per field (all but the source
    and skipped caches), and reads them back into objects made beforehand (references may be
    circular)."""

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.init: Callable[..., None] = cls.__init__  # type: ignore[misc]  # a dataclass's
        hints = typing.get_type_hints(cls, localns={"array": _IntArray})
        skipped = SKIPPED_FIELDS.get(cls, frozenset())
        self.names: list[str] = []
        self.codecs: list[ColumnCodec] = []
        self.source_at: int | None = None
        for i, f in enumerate(dataclasses.fields(cls)):
            if f.name in skipped:
                if f.init:
                    raise CodecError(f"{cls.__name__}.{f.name}: a skipped field must be init=False")
                continue
            if not f.init:
                raise CodecError(f"{cls.__name__}.{f.name}: a field without init is not written")
            if hints[f.name] is LogSource:
                self.source_at = i
                continue
            self.names.append(f.name)
            self.codecs.append(field_codec(hints[f.name]))

    def encode(self, objs: Sequence[Any], out: _Out) -> dict[str, Any]:
        columns: dict[str, Any] = {"n": len(objs)}
        for name, (enc, _) in zip(self.names, self.codecs, strict=True):
            columns[name] = enc(list(map(attrgetter(name), objs)), out)
        return columns

    def decode_into(self, objs: list[Any], doc: Any, ctx: _In) -> None:
        _check(type(doc) is dict and doc.get("n") == len(objs), f"bad {self.cls.__name__}s")
        n = len(objs)
        columns = [
            dec(doc[name], ctx, n) for name, (_, dec) in zip(self.names, self.codecs, strict=True)
        ]
        if self.source_at is not None:
            columns.insert(self.source_at, [ctx.source] * n)
        list(map(self.init, objs, *columns))


_CODECS: dict[type, ClassCodec] = {}


def codec(cls: type) -> ClassCodec:
    if cls not in _CODECS:
        _CODECS[cls] = ClassCodec(cls)
    return _CODECS[cls]


def check_coverage(tf: TraceFile) -> None:
    """Raise CodecError when the model holds what a snapshot does not write."""
    known = NOT_SAVED | FILE_SCALARS.keys() | FILE_STRUCTURED
    unknown = sorted(set(vars(tf)) - known)
    if unknown:
        raise CodecError(f"TraceFile attributes not in snapshot.py: {', '.join(unknown)}")
    facts = set(vars(Facts()))
    lists = FACT_LISTS.keys() | TEXT_ONLY_LISTS.keys()
    if facts != lists:
        raise CodecError(f"Facts lists not in snapshot.py: {sorted(facts ^ lists)}")
    if tuple(f.name for f in dataclasses.fields(StackFrame)) != STACK_FIELDS:
        raise CodecError("StackFrame's fields changed: update STACK_FIELDS and _stacks")
    if Record.__slots__ != RECORD_SLOTS:
        raise CodecError("Record's slots changed: update RECORD_SLOTS and the record columns")
    for cls in TABLES:
        codec(cls)


# ---------------------------------------------------------------------- encode


def encode(tf: TraceFile, facts: Facts) -> bytes:
    """The snapshot of `tf` (fed, not finished) and of the facts it made (in order)."""
    check_coverage(tf)
    if tf.finished:
        raise CodecError("a finished file cannot be fed on: snapshot it before finish()")
    compiles = list(tf.compiles.values())
    if not _same(compiles, facts.compiles) or not _same(tf.kernels, facts.kernels):
        raise CodecError("the facts given are not the file's")
    made = [name for name in TEXT_ONLY_LISTS if vars(facts)[name]]
    if made:
        raise CodecError(f"a trace file made {', '.join(made)}: snapshot.py does not write them")
    records: list[Record] = list(tf.records)
    open_rec = tf._open
    open_at: int | None = None
    if open_rec is not None:
        if records and records[-1] is open_rec:
            open_at = len(records) - 1
        else:  # a record that is not kept in `records` (an oddly shaped chromium event)
            open_at = len(records)
            records.append(open_rec)
    tables: dict[str, Sequence[Any]] = {
        "compiles": compiles,
        "frames": list(tf.frames.values()),
        "breaks": facts.breaks,
        "recompiles": facts.recompiles,
        "failures": facts.failures,
        "errors": facts.errors,
        "cache_events": facts.cache_events,
        "kernels": facts.kernels,
        "handler_errors": tf.handler_errors,
    }
    fast = HAVE_ORJSON and not tf.slow_json
    out = _Out(tables, records, fast)
    doc: dict[str, Any] = {"records": _encode_records(records, out), "open": open_at}
    doc["n_records"] = len(tf.records)
    for cls, name in TABLES.items():
        doc[name] = codec(cls).encode(tables[name], out)
    doc["file"] = _encode_file(tf, out)
    doc["values"] = out.values
    line = tf._line
    raw = b"".join(line.pieces)
    doc["raw"] = [line.start, line.skipping, [len(p) for p in line.pieces]]
    flags = 0
    if fast:
        try:
            text = orjson.dumps(doc)
        except (TypeError, orjson.JSONEncodeError) as exc:
            raise CodecError(f"orjson cannot write the index: {exc}") from None
    else:
        flags |= STDLIB_JSON
        try:  # NaN and lone surrogates as json reads them back
            text = json.dumps(doc, ensure_ascii=True, allow_nan=True).encode("ascii")
        except (TypeError, ValueError, RecursionError) as exc:
            raise CodecError(f"json cannot write the index: {exc}") from None
    ints = out.ints
    if sys.byteorder == "big":  # pragma: no cover - little-endian machines here
        ints = array("q", ints)
        ints.byteswap()
    blob = ints.tobytes()
    parts = [text, blob, raw]
    head = _HEAD.pack(MAGIC, FORMAT, flags, SECTIONS) + b"".join(
        _LENGTH.pack(len(p)) for p in parts
    )
    return head + b"".join(parts)


def _same(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def _encode_records(records: list[Record], out: _Out) -> dict[str, Any]:
    strings: dict[str, int] = {}

    def sid(s: str | None) -> int:
        if s is None:
            return -1
        at = strings.get(s)
        if at is None:
            at = strings[s] = len(strings)
        return at

    compiles = out.index["compiles"]
    return {
        "offset": out.column(r.offset for r in records),
        "lineno": out.column(r._lineno for r in records),
        "hdr_end": out.column(r.hdr_end for r in records),
        "end": out.column(r.end for r in records),
        "kind": out.column(sid(r.kind) for r in records),
        "name": out.column(sid(r.name) for r in records),
        "meta": out.column(out.value(r.meta) for r in records),
        "compile": out.column(
            -1 if r.compile is None else compiles[id(r.compile)] for r in records
        ),
        "closed": out.column(int(r.closed) for r in records),
        "role": out.column(sid(r.role) for r in records),
        "attempt": [_idpart_out(r.attempt) for r in records],
        "md5": [r.md5 for r in records],
        "strings": list(strings),
    }


def _idpart_out(v: Any) -> Any:
    if type(v) not in _SCALARS:
        raise CodecError("an id part that is not a JSON scalar")
    return v


def _encode_file(tf: TraceFile, out: _Out) -> dict[str, Any]:
    doc: dict[str, Any] = {name: getattr(tf, name) for name in FILE_SCALARS}
    compiles = out.index["compiles"]
    doc["kinds"] = list(tf.kinds.items())
    doc["artifacts"] = list(tf.artifacts.items())
    doc["unknown"] = list(tf.unknown.items())
    doc["ranks"] = sorted(tf.ranks)
    doc["pids"] = sorted(tf.pids)
    doc["current"] = [[list(k), compiles[id(c)]] for k, c in tf.current.items()]
    doc["started"] = [list(k) for k in tf.started]
    for k in tf.strings:
        _idpart_out(k)
    doc["strings"] = [[k, v] for k, v in tf.strings.items()]
    doc["chromium"] = out.column(tf.chromium)
    doc["minor"] = out.column(tf.minor)
    doc["unparsed"] = [out.column(tf.unparsed.offsets), out.column(tf.unparsed.linenos)]
    doc["marks"] = out.column(x for mark in tf.store.marks for x in mark)
    doc["pid_b"] = sorted(p.decode("ascii") for p in tf._pid_b)
    doc["last_ts_b"] = None if tf._last_ts_b is None else tf._last_ts_b.decode("ascii")
    doc["bad_md5"] = sorted(tf.bad_md5)
    doc["blank_restored"] = sorted(tf.store.blank_restored)
    return doc


# ---------------------------------------------------------------------- decode


def restore(tf: TraceFile, data: bytes, size: int, shared: Shared | None = None) -> Facts:
    """Fill `tf` (new, never fed) from a snapshot of a file that now has `size` bytes; returns
    the facts it had made, in order. Raises Invalid for anything that is not a snapshot of a
    file of at most `size` bytes. `shared`: what the snapshots of one load share."""
    # Many objects at once: collecting garbage meanwhile (it finds none) would double the time.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _restore(tf, data, size, shared)
    except Invalid:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the bytes make go wrong is Invalid
        raise Invalid(f"{type(exc).__name__}: {exc}") from None
    finally:
        if enabled:
            gc.enable()


def _sections(data: bytes) -> tuple[int, list[memoryview]]:
    view = memoryview(data)
    if len(view) < _HEAD.size:
        raise Invalid("too short")
    magic, fmt, flags, n = _HEAD.unpack_from(view)
    if magic != MAGIC or fmt != FORMAT or n != SECTIONS:
        raise Invalid("not a snapshot of this format")
    at = _HEAD.size + n * _LENGTH.size
    if len(view) < at:
        raise Invalid("too short")
    lengths = [_LENGTH.unpack_from(view, _HEAD.size + i * _LENGTH.size)[0] for i in range(n)]
    if at + sum(lengths) != len(view):
        raise Invalid("section lengths do not add up")
    parts = []
    for length in lengths:
        parts.append(view[at : at + length])
        at += length
    return flags, parts


def _load_doc(text: memoryview, flags: int) -> Any:
    if flags & ~STDLIB_JSON:
        raise Invalid("unknown flags")
    if HAVE_ORJSON and not flags & STDLIB_JSON:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise Invalid(f"bad JSON: {exc}") from None
    try:
        return json.loads(bytes(text))
    except (ValueError, RecursionError) as exc:
        raise Invalid(f"bad JSON: {exc}") from None


def _restore(tf: TraceFile, data: bytes, size: int, shared: Shared | None) -> Facts:
    flags, (text, blob, raw) = _sections(data)
    doc = _load_doc(text, flags)
    _check(type(doc) is dict, "not a document")
    if len(blob) % 8:
        raise Invalid("int section of a bad length")
    ints = array("q")
    ints.frombytes(blob)
    if sys.byteorder == "big":  # pragma: no cover
        ints.byteswap()
    values = doc["values"]
    _check(type(values) is list, "bad values")
    file_doc = doc["file"]
    _check(type(file_doc) is dict, "bad file")
    pos = file_doc["pos"]
    _check(type(pos) is int and 0 <= pos <= size, "indexed past the end of the file")

    # Every object of a table first (empty), so that references can be resolved.
    tables: dict[str, list[Any]] = {}
    for cls, name in TABLES.items():
        n = doc[name]["n"]
        _check(type(n) is int and 0 <= n <= len(data), f"bad {name}")
        tables[name] = [object.__new__(cls) for _ in range(n)]
    if shared is None:
        shared = Shared()
    shared.intern(values, stdlib=not HAVE_ORJSON or bool(flags & STDLIB_JSON))
    ctx = _In(tf, ints, values, tables, shared)
    records = _decode_records(tf, doc["records"], ctx, tables["compiles"], pos)
    tables["records"] = records
    n_records = doc["n_records"]
    _check(type(n_records) is int and 0 <= n_records <= len(records), "bad record count")
    for cls, name in TABLES.items():
        codec(cls).decode_into(tables[name], doc[name], ctx)
    compiles: list[Compile] = tables["compiles"]
    _decode_metadata(compiles)
    frames: list[Frame] = tables["frames"]
    _check_structure(compiles, frames, tables["kernels"])

    tf.records = records[:n_records]
    tf.compiles = {c.key: c for c in compiles}
    tf.frames = {f.key: f for f in frames}
    _check(len(tf.compiles) == len(compiles) and len(tf.frames) == len(frames), "duplicate keys")
    tf.kernels = list(tables["kernels"])
    tf.handler_errors = tables["handler_errors"]
    open_at = doc["open"]
    if open_at is None:
        tf._open = None
    else:
        _check(type(open_at) is int and n_records - 1 <= open_at < len(records), "bad open")
        _check(open_at >= 0, "bad open")
        tf._open = records[open_at]
    _check(len(records) <= n_records + 1, "bad record count")
    if len(records) > n_records:
        _check(open_at == n_records, "a detached record that is not the open one")
    _decode_file(tf, file_doc, ctx, compiles, pos)
    _decode_raw(tf, doc["raw"], raw, pos)
    facts = Facts()
    facts.compiles = list(compiles)
    facts.breaks = tables["breaks"]
    facts.recompiles = tables["recompiles"]
    facts.failures = tables["failures"]
    facts.errors = tables["errors"]
    facts.cache_events = tables["cache_events"]
    facts.kernels = list(tables["kernels"])
    return facts


def _decode_records(
    tf: TraceFile, doc: Any, ctx: _In, compiles: list[Compile], pos: int
) -> list[Record]:
    _check(type(doc) is dict, "bad records")
    offsets = ctx.column(doc["offset"])
    n = len(offsets)
    linenos = ctx.column(doc["lineno"], n)
    hdr_ends = ctx.column(doc["hdr_end"], n)
    ends = ctx.column(doc["end"], n)
    kind_at = ctx.column(doc["kind"], n)
    name_at = ctx.column(doc["name"], n)
    meta_at = ctx.column(doc["meta"], n)
    comp_at = ctx.column(doc["compile"], n)
    closed = ctx.column(doc["closed"], n)
    role_at = ctx.column(doc["role"], n)
    attempts = doc["attempt"]
    md5s = doc["md5"]
    strings = doc["strings"]
    _check(type(attempts) is list and len(attempts) == n, "bad attempts")
    _check(all(type(a) in _SCALARS for a in attempts), "bad attempt")
    _check(type(md5s) is list and len(md5s) == n, "bad md5s")
    _check(all(m is None or type(m) is str for m in md5s), "bad md5")
    _check(type(strings) is list and all(type(s) is str for s in strings), "bad strings")
    if n:
        _check(min(offsets) >= 0 and max(ends) <= pos, "a record outside the file")
        _check(all(map(int.__lt__, offsets, hdr_ends)), "a header that ends before it starts")
        _check(all(map(int.__le__, hdr_ends, ends)), "a payload that ends before it starts")
        _check(all(map(int.__le__, offsets[:-1], offsets[1:])), "records out of order")
        _check(min(linenos) >= -1 and 0 not in linenos, "bad line number")
        _check(min(kind_at) >= 0 and max(kind_at) < len(strings), "bad kind")
        _check(min(name_at) >= -1 and max(name_at) < len(strings), "bad name")
        _check(min(meta_at) >= 0 and max(meta_at) < len(ctx.values), "bad meta")
        _check(min(comp_at) >= -1 and max(comp_at) < len(compiles), "bad compile")
        _check(min(closed) >= 0 and max(closed) <= 1, "bad closed flag")
        _check(min(role_at) >= -1 and max(role_at) < len(strings), "bad role")
    interned = [sys.intern(s) for s in strings]
    md5s = [m if m is None else sys.intern(m) for m in md5s]
    kinds = [interned[i] for i in kind_at]
    names_or_none = [*interned, None]  # -1 is None
    names = [names_or_none[i] for i in name_at]
    values = ctx.values
    metas = [values[i] for i in meta_at]
    comps_or_none: list[Compile | None] = [*compiles, None]
    comps = [comps_or_none[i] for i in comp_at]
    records = list(
        map(
            Record,
            repeat(tf, n),
            offsets,
            linenos,
            hdr_ends,
            kinds,
            metas,
            comps,
            attempts,
            md5s,
            names,
        )
    )
    roles = [names_or_none[i] for i in role_at]
    _check(set(roles) <= _ROLES, "bad role")
    for rec, end, shut, role in zip(records, ends, closed, roles, strict=True):
        if end != rec.hdr_end:  # else it is hdr_end already (one int object for both)
            rec.end = end
        if shut:
            rec.closed = True
        rec.role = role
    return records


def _check_structure(compiles: list[Compile], frames: list[Frame], kernels: list[Kernel]) -> None:
    """The relations an index always has (a crafted snapshot must not make the UI trip)."""
    framed = 0
    for i, comp in enumerate(compiles):
        if comp.order != i or comp.chromium != len(comp.chromium_at) or comp.minor < 0:
            raise Invalid("compile counts")
        for r in comp.records:
            if r.compile is not comp:
                raise Invalid("a compile's records")
        for facts in (comp.breaks, comp.failures, comp.cache, comp.kernels):
            for fact in facts:
                if fact.compile is not comp:
                    raise Invalid("a compile's facts")
        if comp.recompile is not None and comp.recompile.compile is not comp:
            raise Invalid("a recompile")
        if comp.frame is not None:
            framed += 1
            if comp.frame.key != comp.key.frame:
                raise Invalid("a compile's frame")
        if comp.chromium_at and min(comp.chromium_at) < 0:
            raise Invalid("chromium offsets")
    listed: set[int] = set()
    for frame in frames:
        for c in frame.compiles:
            if c.frame is not frame:
                raise Invalid("a frame's compiles")
            listed.add(id(c))
    if len(listed) != framed or sum(len(f.compiles) for f in frames) != framed:
        raise Invalid("frames and compiles do not match")
    previous: Kernel | None = None
    for k in kernels:
        if previous is not None and previous.output is k.output:
            if k.index != previous.index + 1:
                raise Invalid("kernel positions")
        elif k.index != 0:
            raise Invalid("kernel positions")
        if k.compile is not k.output.compile:
            raise Invalid("a kernel's compile")
        previous = k


def _counter(v: Any) -> Counter[str]:
    _check(type(v) is list, "bad counter")
    out: Counter[str] = Counter()
    for pair in v:
        _check(type(pair) is list and len(pair) == 2, "bad counter item")
        k, n = pair
        _check(type(k) is str and type(n) is int and n >= 0, "bad counter item")
        out[sys.intern(k)] = n
    return out


def _ints(v: Any) -> list[int]:
    _check(type(v) is list and _all_ints(v), "bad int list")
    return v


def _decode_file(
    tf: TraceFile, doc: dict[str, Any], ctx: _In, compiles: list[Any], pos: int
) -> None:
    for name, kind in FILE_SCALARS.items():
        v = doc[name]
        if kind == _INT:
            _check(type(v) is int, f"bad {name}")
        elif kind == _BOOL:
            _check(type(v) is bool, f"bad {name}")
        elif kind == _OPT_STR:
            _check(v is None or type(v) is str, f"bad {name}")
        else:
            _check(type(v) is list and all(type(x) is str for x in v), f"bad {name}")
        setattr(tf, name, v)
    _check(not tf.finished, "a finished file")
    _check(0 <= tf._open_scan <= pos and tf.episode >= 1, "bad state")
    tf.kinds = _counter(doc["kinds"])
    tf.artifacts = _counter(doc["artifacts"])
    tf.unknown = _counter(doc["unknown"])
    tf.ranks = set(_ints(doc["ranks"]))
    tf.pids = set(_ints(doc["pids"]))
    current = doc["current"]
    _check(type(current) is list, "bad current")
    tf.current = {}
    for pair in current:
        _check(type(pair) is list and len(pair) == 2, "bad current")
        at = pair[1]
        _check(type(at) is int and 0 <= at < len(compiles), "bad current compile")
        tf.current[_compile_key(pair[0])] = compiles[at]
    started = doc["started"]
    _check(type(started) is list, "bad started")
    tf.started = {_compile_key(k) for k in started}
    strings = doc["strings"]
    _check(type(strings) is list, "bad strings")
    tf.strings = {}
    for pair in strings:
        _check(type(pair) is list and len(pair) == 2, "bad string")
        k, v = pair
        _check(_is_idpart(k) and type(v) is str, "bad string")
        tf.strings[k] = v
    tf.chromium = ctx.column(doc["chromium"])
    tf.minor = ctx.column(doc["minor"])
    for offsets in (tf.chromium, tf.minor):
        _check(not offsets or (min(offsets) >= 0 and max(offsets) < pos), "offsets")
    unparsed = doc["unparsed"]
    _check(type(unparsed) is list and len(unparsed) == 2, "bad unparsed")
    refs = LineRefs()
    refs.offsets = ctx.column(unparsed[0])
    refs.linenos = ctx.column(unparsed[1], len(refs.offsets))
    _check(not refs.offsets or (min(refs.offsets) >= 0 and max(refs.offsets) < pos), "offsets")
    tf.unparsed = refs
    marks = ctx.column(doc["marks"])
    _check(len(marks) % 2 == 0 and len(marks) >= 2, "bad marks")
    pairs = list(zip(marks[::2], marks[1::2], strict=True))
    _check(
        pairs[0] == (0, 1) and all(a <= b for a, b in zip(pairs, pairs[1:], strict=False)),
        "bad marks",
    )
    tf.store.marks = pairs
    pid_b = doc["pid_b"]
    _check(type(pid_b) is list and all(type(p) is str and p.isdigit() for p in pid_b), "pids")
    tf._pid_b = {p.encode("ascii") for p in pid_b}
    last = doc["last_ts_b"]
    _check(last is None or (type(last) is str and last.isascii()), "bad last_ts")
    tf._last_ts_b = None if last is None else last.encode("ascii")
    tf.bad_md5 = set(_ints(doc["bad_md5"]))
    tf.store.blank_restored = set(_ints(doc["blank_restored"]))


def _decode_raw(tf: TraceFile, layout: Any, raw: memoryview, pos: int) -> None:
    """The line the file ends in, held until its newline comes (`LineBuffer`)."""
    _check(type(layout) is list and len(layout) == 3, "bad raw layout")
    start, skipping, pieces = layout
    _check(type(start) is int and type(skipping) is bool and type(pieces) is list, "bad raw")
    _check(_all_ints(pieces) and all(m > 0 for m in pieces), "bad raw layout")
    _check(sum(pieces) == len(raw), "raw bytes of a bad length")
    _check(0 <= start <= pos and (not pieces or start + len(raw) == pos), "raw bytes do not match")
    _check(not (skipping and pieces), "a skipped line that is held")
    data = bytes(raw)
    line = LineBuffer()
    line.start, line.skipping, line.size = start, skipping, len(data)
    at = 0
    for m in pieces:
        line.pieces.append(data[at : at + m])
        at += m
    tf._line = line
