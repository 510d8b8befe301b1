"""The declared model: what a log source and a model offer, and the objects they hold.

A `LogSource` is one stream of records: a `TraceFile`, or one process (`ProcessLog`) of a
TORCH_LOGS capture. A `Model` is what one input yields: a `TraceSet` or a `TextLog`. The UI,
`summary` and follow mode read these two types only.

Records keep byte offsets only; payload text is read on demand through the record's source.
Derived facts (graph breaks, recompiles, failures, cache events, kernels) are plain objects that
point back at the compile and record they came from.
"""

from __future__ import annotations

import hashlib
import re
from abc import ABC, abstractmethod
from array import array
from collections import Counter
from collections.abc import Iterator, Sequence, Set
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Literal, NamedTuple, TypeAlias

from tcview.model.compile_id import (
    FIRST_EPISODE,
    CompileKey,
    FrameKey,
    IdPart,
    attempt_text,
    episode_suffix,
)
from tcview.model.facts import BreakText
from tcview.model.memo import Memo
from tcview.model.metadata import FRAME_METRICS, CompilationMetrics
from tcview.model.metadata import LIMIT_KEY as LIMIT_KEY  # re-exported: tracefile.py's slim()
from tcview.model.metadata import config_limit as config_limit

# A header's JSON value (a record's `meta`, a compilation_metrics dict, a stack frame's line).
JsonValue: TypeAlias = dict[str, Any] | list[Any] | str | int | float | bool | None
# A lock, or any context manager that stands for one.
Lock: TypeAlias = AbstractContextManager[Any]
# When a handler runs: "header" when its record starts, "close" when its payload is complete.
Phase: TypeAlias = Literal["header", "close"]


# What an AOT graph, or the Inductor output code compiled from it, is for: the forward or the
# backward of a training graph, or an inference graph (no autograd).
GRAPH_ROLES = ("forward", "backward", "inference")
ROLE_SHORT = {"forward": "fwd", "backward": "bwd", "inference": "inference"}
AOT_GRAPH_ROLES = {
    "aot_forward_graph": "forward",
    "aot_backward_graph": "backward",
    "aot_inference_graph": "inference",
}
# The first payload line of an output code names its AOT graph: ``# AOT ID: ['0_forward']``.
# One pattern text, compiled for str or bytes where used.
AOT_ID_LINE = r"# AOT ID: \['\d+_(forward|backward|inference)'\]"
OUTPUT_CODE_KINDS = ("inductor_output_code", "output_code")
# Records whose payload is an FX graph as Python code (shown highlighted as Python).
GRAPH_KINDS = frozenset(
    [
        "dynamo_output_graph",
        "aot_forward_graph",
        "aot_backward_graph",
        "aot_joint_graph",
        "aot_inference_graph",
        "inductor_pre_grad_graph",
        "inductor_post_grad_graph",
        "graph_dump",
        "compiled_autograd_graph",
        "optimize_ddp_split_graph",
        "optimize_ddp_split_child",
        "before_pre_grad_graph",
        "after_pre_grad_graph",
        "before_joint_graph",
        "after_joint_graph",
        "before_post_grad_graph",
        "fx_graph_runnable",
    ]
)
# Records of one Inductor compile that are not an AOT graph: whether the output code whose role
# they take comes after them (True) or before.
ROLE_FOLLOWERS = {
    "inductor_post_grad_graph": True,
    "before_post_grad_graph": True,
    "after_post_grad_graph": True,
    "fx_graph_runnable": True,
    "triton_kernel_info": False,
}


class LogMeta:
    """What the prefix of a TORCH_LOGS message says besides its compile id and tag."""

    __slots__ = ("level", "ts", "where")

    def __init__(self, level: str, ts: str, where: str) -> None:
        self.level = level
        self.ts = ts
        self.where = where

    def __repr__(self) -> str:
        return f"<LogMeta {self.level} {self.ts} {self.where}>"


class Record:
    """One event: a trace record (header plus optional payload) or a TORCH_LOGS message.

    `meta` is the header's JSON value for a trace record (slimmed when big: `full_meta()` reads
    it all), a `LogMeta` for a message. `compile` is the compile the record's id names.
    """

    __slots__ = (
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

    def __init__(
        self,
        source: LogSource,
        offset: int,
        lineno: int,
        hdr_end: int,
        kind: str,
        meta: JsonValue | LogMeta,
        compile: Compile | None,
        attempt: IdPart,
        md5: str | None,
        name: str | None = None,
    ) -> None:
        self.source = source
        self.offset = offset
        self._lineno = lineno  # < 0: computed on first use
        self.hdr_end = hdr_end
        self.end = hdr_end
        self.kind = kind
        self.name = name
        self.meta = meta
        self.compile = compile
        self.attempt = attempt
        self.md5 = md5
        self.closed = False
        # "forward", "backward" or "inference" for an AOT graph or output code (`GRAPH_ROLES`).
        self.role: str | None = AOT_GRAPH_ROLES.get(kind)

    @property
    def key(self) -> CompileKey | None:
        return self.compile.key if self.compile is not None else None

    @property
    def label(self) -> str:
        return self.name or self.kind

    def line_number(self) -> int:
        """1-based line number of the header: known, or counted through its source (which may
        read the file up to it, and remembers it: the record is not changed)."""
        if self._lineno >= 0:
            return self._lineno
        return self.source.lineno_of(self.offset)

    def full_meta(self) -> Any:
        """The event's value with nothing dropped (big headers are slimmed in memory)."""
        return self.source.full_meta(self)

    @property
    def compile_text(self) -> str:
        key = self.key
        return attempt_text(key, self.attempt) if key is not None else "-"

    def payload_bytes(self) -> bytes:
        return self.source.read_payload(self)

    def payload(self) -> str:
        return self.payload_bytes().decode("utf-8", "replace")

    def md5_ok(self) -> bool | None:
        """True/False when the record carries an md5, None when it has none."""
        if not self.md5:
            return None
        return hashlib.md5(self.payload_bytes()).hexdigest() == self.md5

    def md5_state(self) -> str | None:
        """None without an md5; else one of `MD5_STATES`: the payload matches its md5, matches
        once its tab-less blank lines are counted as payload lines (the writer left blank
        lines unindented: harmless, and `payload()` restores them), or does not match."""
        if not self.md5:
            return None
        if hashlib.md5(self.payload_bytes()).hexdigest() != self.md5:
            return MD5_MISMATCH
        return MD5_BLANK_LINES if self.source.blank_lines_restored(self) else MD5_OK

    def __repr__(self) -> str:
        return f"<Record {self.label} {self.compile_text} @{self.offset}>"


# A record's payload against its md5 (`Record.md5_state`).
MD5_OK = "ok"
MD5_BLANK_LINES = "whitespace-only lines lost their tab"
MD5_MISMATCH = "mismatch"
MD5_STATES = (MD5_OK, MD5_BLANK_LINES, MD5_MISMATCH)


def payload_from_region(raw: bytes) -> bytes:
    """Payload text from the raw bytes between a header and the next header."""
    lines = [ln[1:] for ln in raw.split(b"\n") if ln.startswith(b"\t")]
    return b"\n".join(lines)


def has_bare_lines(raw: bytes) -> bool:
    """The region holds an empty line among (or after) its payload lines."""
    return b"\n\n" in raw or raw.startswith(b"\n")


def restored_payloads(raw: bytes) -> Iterator[bytes]:
    """The payloads a region may have had before its whitespace-only lines were stripped.

    Each payload line is written as a tab and the line; a tool that strips trailing
    whitespace (an editor, a git filter) turns a whitespace-only payload line into an empty
    line, tab and indentation gone, and the payload's last empty line too. The candidates:
    such lines empty, or as indented as the line before or after them, or by 1-16 spaces;
    with and without a final newline. Trailing empty lines are the gap before the next header.
    """
    lines = raw.split(b"\n")
    while lines and not lines[-1]:
        lines.pop()
    kept = [ln for ln in lines if ln.startswith(b"\t") or not ln]
    body = [ln[1:] if ln else None for ln in kept]

    def indent(line: bytes | None) -> bytes:
        return b"" if line is None else line[: len(line) - len(line.lstrip(b" "))]

    fills: list[list[bytes]] = [
        [b""] * len(body),
        [indent(body[i - 1]) if i else b"" for i in range(len(body))],
        [indent(body[i + 1]) if i + 1 < len(body) else b"" for i in range(len(body))],
        *([b" " * n] * len(body) for n in range(1, 17)),
    ]
    for fill in fills:
        text = b"\n".join(ln if ln is not None else fill[i] for i, ln in enumerate(body))
        yield text
        yield text + b"\n"


@dataclass(slots=True)
class StackFrame:
    filename: str
    line: JsonValue
    name: str
    loc: str = ""  # the line's code, where the trace gives it

    @property
    def where(self) -> str:
        return f"{Path(self.filename).name}:{self.line}"

    @property
    def text(self) -> str:
        """``/a/b.py:12 in forward``, and ``    code`` when known (one line)."""
        out = f"{self.filename}:{self.line} in {self.name}"
        return f"{out}    {self.loc}" if self.loc else out


STACK_LIMIT = 256  # frames of one stack that are kept


def stack_frames(source: LogSource, value: object) -> list[StackFrame]:
    """A header's stack (``[{"filename": 3, "line": 12, "name": "f", "loc": "…"}]``) with its
    file names resolved through the source's string table (a name that was never defined is
    shown as ``<missing string 3>``)."""
    if not isinstance(value, list):
        return []
    frames = []
    for item in value[:STACK_LIMIT]:
        if not isinstance(item, dict):
            continue
        fid = item.get("filename")
        filename = fid if isinstance(fid, str) else source.file_name(fid)
        if filename is None:
            filename = f"<missing string {fid!r}>"
        loc = item.get("loc")
        frames.append(
            StackFrame(
                filename,
                item.get("line"),
                str(item.get("name", "?")),
                loc if isinstance(loc, str) else "",
            )
        )
    return frames


_TORCH_INTERNAL = re.compile(
    r"(?:^|/)(?:site|dist)-packages/torch/"
    r"|(?:^|/)torch/(?:_dynamo|_functorch|_inductor|nn|optim|autograd|fx|utils|export|distributed"
    r"|_export|_logging|_subclasses|_higher_order_ops|_library|_refs|_prims|_decomp)/"
    r"|(?:^|/)torch/(?:__init__|_ops|_tensor)\.py$"
)


def is_torch_internal(filename: str) -> bool:
    return bool(_TORCH_INTERNAL.search(filename))


class CompileStatus(str, Enum):
    """A compile's status, worst first: tlparse's precedence (a compilation_metrics record with
    a fail_type; in a complete trace file, no compilation_metrics record at all; one whose
    graph_op_count is 0 or missing; a restart); see `Compile.status`. A member is its word:
    it equals, hashes, prints and is written to JSON as the string."""

    def __str__(self) -> str:
        return self.value

    FAILED = "failed"
    NO_METRICS = "no metrics"
    EMPTY_GRAPH = "empty graph"
    GRAPH_BREAK = "graph break"
    OK = "ok"


class CompileMark(str, Enum):
    """What a compile is besides its status: a recompile (frame_compile_id > 0), a cache hit."""

    def __str__(self) -> str:
        return self.value

    RECOMPILE = "recompile"
    CACHE_HIT = "cache hit"


STATUSES = tuple(CompileStatus)
MARKS = tuple(CompileMark)
# Each status's and mark's symbol and style (a Rich style, and a name of `text.term.STYLES`).
# The one table: the tree, the views, the help's legend and the overview's stack tree read it.
# Its keys are the members, found by their words too.
MARK_TABLE: dict[str, tuple[str, str]] = {
    CompileStatus.FAILED: ("✗", "bold red"),
    CompileStatus.NO_METRICS: ("?", "dim"),
    CompileStatus.EMPTY_GRAPH: ("∅", "magenta"),
    CompileStatus.GRAPH_BREAK: ("✂", "yellow"),
    CompileStatus.OK: ("✓", "green"),
    CompileMark.RECOMPILE: ("↻", "cyan"),
    CompileMark.CACHE_HIT: ("●", "blue"),
}


@dataclass(eq=False, slots=True)
class Frame:
    """A Python frame that Dynamo compiled (one code object), within one process."""

    file: LogSource
    key: FrameKey
    stack: list[StackFrame] = field(default_factory=list)
    compiles: list[Compile] = field(default_factory=list)
    co_name: str | None = None
    co_filename: str | None = None
    co_firstlineno: JsonValue = None

    @property
    def user_frame(self) -> StackFrame | None:
        for frame in reversed(self.stack):
            if not is_torch_internal(frame.filename):
                return frame
        return self.stack[-1] if self.stack else None

    @property
    def code_frame(self) -> StackFrame | None:
        return self.stack[-1] if self.stack else None

    @property
    def label(self) -> str:
        user = self.user_frame
        code = self.code_frame
        if user is None:
            if self.co_name:
                where = Path(self.co_filename or "?").name
                return f"{self.co_name} ({where}:{self.co_firstlineno})"
            return f"frame {self.id_text}"
        text = f"{user.name} ({user.where})"
        if code is not None and code is not user:
            text += f" → {code.name}"
        return text

    @property
    def id_text(self) -> str:
        """``0`` or ``!0/1``, without the episode."""
        ca, fid = self.key.autograd_id, self.key.frame_id
        return (f"!{ca}/" if ca is not None else "") + ("?" if fid is None else str(fid))

    @property
    def id_label(self) -> str:
        """The id with its episode where it has one: ``0``, ``0 #2``."""
        return self.id_text + episode_suffix(self.key.episode)

    @property
    def episode(self) -> int:
        return self.key.episode

    @property
    def status(self) -> CompileStatus:
        """The worst status of its compiles (`STATUSES` order)."""
        seen = {c.status for c in self.compiles}
        return next((s for s in STATUSES if s in seen), CompileStatus.OK)

    @property
    def marks(self) -> list[CompileMark]:
        """The marks any of its compiles has, in `MARKS` order."""
        seen = {m for c in self.compiles for m in c.marks}
        return [m for m in MARKS if m in seen]


@dataclass(eq=False, slots=True)
class GraphBreak:
    compile: Compile | None
    record: Record | None
    reason: str
    location: str
    explanation: str = ""
    hints: list[str] = field(default_factory=list)
    url: str = ""
    user_stack: list[str] = field(default_factory=list)
    text: str = ""

    @property
    def group_key(self) -> tuple[str, str]:
        return (self.reason, self.location)

    @property
    def short_location(self) -> str:
        return short_location(self.location)

    def fill(self, parsed: BreakText) -> None:
        """Take the fields parsed from the whole message (a location only when it has one)."""
        self.reason = parsed.reason
        self.location = parsed.location or self.location
        self.explanation = parsed.explanation
        self.hints = parsed.hints
        self.url = parsed.url
        self.user_stack = parsed.user_stack


def short_location(location: str) -> str:
    """``/a/b/train.py:12`` -> ``train.py:12``."""
    path, _, line = location.rpartition(":")
    if not path or not line.isdigit():
        return location
    return f"{Path(path).name}:{line}"


@dataclass(eq=False, slots=True)
class BreakGroup:
    reason: str
    location: str
    breaks: list[GraphBreak]

    @property
    def count(self) -> int:
        return len(self.breaks)

    @property
    def first(self) -> GraphBreak:
        return self.breaks[0]


def group_breaks(breaks: list[GraphBreak]) -> list[BreakGroup]:
    """Graph breaks de-duplicated by (reason, location), the most frequent first."""
    groups: dict[tuple[str, str], BreakGroup] = {}
    for gb in breaks:
        g = groups.get(gb.group_key)
        if g is None:
            groups[gb.group_key] = BreakGroup(gb.reason, gb.location, [gb])
        else:
            g.breaks.append(gb)
    return sorted(groups.values(), key=lambda g: -g.count)


@dataclass(eq=False, slots=True)
class Recompile:
    compile: Compile
    reasons: list[str] = field(default_factory=list)
    record: Record | None = None


@dataclass(eq=False, slots=True)
class Failure:
    compile: Compile | None
    fail_type: str
    reason: str
    location: str = ""
    record: Record | None = None
    source: str = "compilation_metrics"  # or dynamo_error, torch_logs

    @property
    def is_recompile_limit(self) -> bool:
        return "recompile limit" in self.reason.lower() or "recompile_limit" in self.reason


_WORDY = re.compile(r"\w")


@dataclass(frozen=True, slots=True)
class JobEnd:
    """How a job that `tcview run` ran ended, as its run.json records it."""

    status: str  # "exited 1", "killed (SIGSEGV)", "running"
    exit_code: int | None  # None when a signal ended it
    signal: str | None  # "SIGSEGV", "SIGKILL" …
    stopped_by_user: bool  # the user asked it to stop (`x`, Ctrl-C, q)
    elapsed_s: float | None
    command: str = ""


@dataclass(eq=False, slots=True)
class Error:
    """The run crashed: an uncaught Python traceback in a capture, or a non-zero exit code.

    `stack` holds the traceback's frames as ``file:line in function`` (outermost first);
    `lineno` and `offset` locate the ``Traceback`` line in the capture (0 and -1 for run.json).
    """

    rank: int | None
    error_type: str  # the exception's type as printed ("AssertionError"), or "exit code"
    message: str
    stack: list[str] = field(default_factory=list)
    origin: str = "traceback"  # or "run.json"
    where: str = ""  # the file the error was read from
    lineno: int = 0
    offset: int = -1
    text: str = ""  # the traceback as printed (prefixes removed)

    @property
    def first_line(self) -> str:
        """The message's first line that says something (it may start with a ruler of ====)."""
        return next((ln.strip() for ln in self.message.split("\n") if _WORDY.search(ln)), "")

    @property
    def headline(self) -> str:
        first = self.first_line
        who = "" if self.rank is None else f"rank {self.rank}: "
        return f"{who}{self.error_type}: {first}" if first else f"{who}{self.error_type}"


@dataclass(eq=False, slots=True)
class CacheEvent:
    compile: Compile | None
    cache: str  # fx_graph / aotautograd / ...
    result: str  # hit / miss / bypass
    record: Record


KERNEL_KINDS = ("pointwise", "reduction", "persistent", "template", "cpp", "user", "other")
# A kernel definition in output code: ``NAME = async_compile.METHOD(`` (groups: name, method).
# One pattern text, compiled for str or bytes, with or without the payload's tab, where used.
KERNEL_DEF = r"([A-Za-z_]\w*) = async_compile\.([A-Za-z_]\w*)\("
# async_compile methods that define no kernel (``async_compile.wait(globals())``).
NOT_KERNEL_METHODS = frozenset({"wait"})


def kernel_kind(name: str, kind: str) -> str:
    """Kind from the name prefix and the async_compile method."""
    if kind.startswith("cpp"):
        return "cpp"
    if kind != "triton":
        return "other"
    for prefix, what in (
        ("triton_poi_", "pointwise"),
        ("triton_red_", "reduction"),
        ("triton_per_", "persistent"),
        ("triton_tem_", "template"),
    ):
        if name.startswith(prefix):
            return what
    if name.startswith("triton_"):
        return "other"
    return "user"


@dataclass(eq=False, slots=True)
class Kernel:
    name: str
    method: str  # async_compile.<method>
    output: Record  # the output code record (or message) that defines it
    index: int  # position among this output code's kernels
    compile: Compile | None = None

    @property
    def kind(self) -> str:
        return kernel_kind(self.name, self.method)

    @property
    def role(self) -> str | None:
        """The graph its output code was compiled from: forward, backward, inference."""
        return self.output.role


# (metric key, label, divisor to seconds, depth) - the phases of one compile, nested. Each key
# is a field of `CompilationMetrics` (metadata.TIME_FIELDS).
PHASES = (
    ("entire_frame_compile_time_s", "entire frame", 1.0, 0),
    ("dynamo_cumulative_compile_time_us", "dynamo", 1e6, 1),
    ("backend_compile_time_s", "backend compile", 1.0, 1),
    ("aot_autograd_cumulative_compile_time_us", "aot autograd", 1e6, 2),
    ("joint_graph_pass_time_us", "joint graph passes", 1e6, 3),
    ("inductor_compile_time_s", "inductor", 1.0, 2),
    ("inductor_cumulative_compile_time_us", "inductor (cumulative)", 1e6, 2),
    ("pre_grad_pass_time_us", "pre-grad passes", 1e6, 3),
    ("post_grad_pass_time_us", "post-grad passes", 1e6, 3),
    ("code_gen_time_s", "code gen", 1.0, 3),
    ("inductor_code_gen_cumulative_compile_time_us", "code gen (cumulative)", 1e6, 3),
    ("triton_compile_time_us", "triton compile", 1e6, 3),
    ("compile_time_autotune_time_us", "autotune", 1e6, 3),
    ("gc_time_us", "gc", 1e6, 1),
    ("structured_logging_overhead_s", "trace logging", 1.0, 1),
)


@dataclass(eq=False, slots=True)
class Compile:
    file: LogSource
    key: CompileKey
    frame: Frame | None = None
    records: list[Record] = field(default_factory=list)
    metrics: dict[str, Any] | None = None
    metric_records: list[Record] = field(default_factory=list)
    breaks: list[GraphBreak] = field(default_factory=list)
    recompile: Recompile | None = None
    failures: list[Failure] = field(default_factory=list)
    cache: list[CacheEvent] = field(default_factory=list)
    kernels: list[Kernel] = field(default_factory=list)
    chromium: int = 0  # chromium_event records (timing), read from disk on demand
    chromium_at: array[int] = field(default_factory=lambda: array("q"))  # their header offsets
    minor: int = 0  # describe_* records (inputs' fake-tensor metadata), read on demand
    # compilation_metrics_runtime records (costs paid when the compiled graph first runs:
    # cudagraphify, Triton autotuning)
    runtime_records: list[Record] = field(default_factory=list)
    # The values of `metric_records` and `runtime_records` decoded at ingest, in arrival order
    # (a TORCH_LOGS capture: its estimate of the compile's time)
    metric_values: list[CompilationMetrics] = field(default_factory=list)
    # What a TORCH_LOGS capture says about its CUDA graphs (reduce-overhead)
    cudagraph_notes: list[CudagraphNote] = field(default_factory=list)
    order: int = 0

    @property
    def id_text(self) -> str:
        """The id as torch prints it (``0/1``), without the episode."""
        return self.key.text

    @property
    def id_label(self) -> str:
        """The id with its episode where it has one: ``0/0``, ``0/0 #2``."""
        return self.key.label

    @property
    def episode(self) -> int:
        """1, or 2, 3, … for compiles after `torch._dynamo.reset()` reused the process's ids."""
        return self.key.episode

    def compilation_metrics(self) -> list[CompilationMetrics]:
        """Its `compilation_metrics` values, decoded (one per compile; `bwd_compilation_metrics`
        and the runtime's apart)."""
        return [m for m in self.metric_values if m.kind == FRAME_METRICS]

    @property
    def own_metrics(self) -> CompilationMetrics | None:
        """Its frame's metrics: the last `compilation_metrics` value decoded (`metrics` holds it
        raw), or a TORCH_LOGS capture's estimate; None before either."""
        for m in reversed(self.metric_values):
            if not m.backward and not m.runtime:
                return m
        return None

    @property
    def empty_graph(self) -> bool:
        """A compilation_metrics record says its graph has no ops (0, or the count is missing)."""
        return any(m.empty_graph for m in self.compilation_metrics())

    @property
    def restart_reasons(self) -> list[str]:
        """Why Dynamo restarted the analysis (compilation_metrics' restart_reasons, whole)."""
        return [r for m in self.compilation_metrics() for r in m.restart_reasons]

    @property
    def retried(self) -> bool:
        """Its records name more than one attempt: Dynamo restarted the analysis."""
        records = self.records
        first = records[0].attempt if records else None
        return any(r.attempt != first for r in records)

    @property
    def has_break(self) -> bool:
        """A restart: non-empty restart_reasons, a graph break logged, or a second attempt."""
        if self.breaks or self.retried:
            return True
        return any(m.restart_reasons for m in self.compilation_metrics())

    @property
    def status(self) -> CompileStatus:
        """One of `STATUSES`: failed > no metrics > empty graph > graph break > ok (see the
        docs/explanation/status.md). A compile of a trace still growing has no metrics until it ends: not yet "no
        metrics"."""
        if self.failures:
            return CompileStatus.FAILED
        if self.file.logs_metrics and self.file.finished and not self.compilation_metrics():
            return CompileStatus.NO_METRICS
        if self.empty_graph:
            return CompileStatus.EMPTY_GRAPH
        if self.has_break:
            return CompileStatus.GRAPH_BREAK
        return CompileStatus.OK

    @property
    def cache_hit(self) -> bool:
        """A cache hit and no miss (the compiled graph came from the cache)."""
        results = {c.result for c in self.cache}
        return "hit" in results and "miss" not in results

    @property
    def status_text(self) -> str:
        """Its status and marks in words: ``ok, recompile, cache hit``."""
        return ", ".join([self.status, *self.marks])

    @property
    def marks(self) -> list[CompileMark]:
        """The `MARKS` it has besides its status."""
        out = []
        if self.key.is_recompile:
            out.append(CompileMark.RECOMPILE)
        if self.cache_hit:
            out.append(CompileMark.CACHE_HIT)
        return out

    @property
    def recompile_limit(self) -> int | None:
        """The recompile limit it ran with, from its metrics in memory (never the disk)."""
        m = self.own_metrics
        return m.recompile_limit if m is not None else None

    @property
    def compile_time_s(self) -> float | None:
        m = self.own_metrics
        return m.compile_time_s if m is not None else None

    def metric_phases(self) -> list[tuple[str, float, int]]:
        """(label, seconds, depth) of the `PHASES` its compilation metrics time."""
        m = self.own_metrics
        if m is None:
            return []
        out = []
        for key, label, div, depth in PHASES:
            value: float | None = getattr(m, key)
            if value is not None and value > 0:
                out.append((label, value / div, depth))
        return out

    def phases(self) -> list[tuple[str, float, int]]:
        """(phase, seconds, depth) from this compile's chromium B/E events, in start order
        (read from disk once; kept in its file's memo, keyed by the events' offsets)."""
        at = self.chromium_at
        if not at:
            return []
        return self.file.memo.of(("phases", at[0], at[-1], len(at)), self._read_phases)

    def _read_phases(self) -> list[tuple[str, float, int]]:
        events = self.file.chromium_payloads(self.chromium_at)
        out: list[tuple[str, float, int]] = []
        open_: list[tuple[str, float, int]] = []  # (name, ts, index in out)
        for ev in events:
            ph, name, ts = ev.get("ph"), str(ev.get("name", "?")), ev.get("ts")
            if not isinstance(ts, (int, float)):
                continue
            if ph == "B":
                open_.append((name, ts, len(out)))
                out.append((name, 0.0, len(open_) - 1))
            elif ph == "E":
                for i in range(len(open_) - 1, -1, -1):
                    if open_[i][0] == name:
                        _, start, at = open_.pop(i)
                        out[at] = (name, max(0.0, (ts - start) / 1e6), out[at][2])
                        break
        return out

    def records_of(self, kind: str) -> list[Record]:
        return [r for r in self.records if r.kind == kind or r.name == kind]

    @property
    def output_codes(self) -> list[Record]:
        return [r for r in self.records if r.kind in OUTPUT_CODE_KINDS]

    def output_role(self) -> str | None:
        """The role of an output code whose text does not name its AOT graph (torch before
        2.4): from the AOT graphs this compile logged, and whether its compilation_metrics
        came first (AOTAutograd compiles the backward lazily, after the forward's metrics)."""
        kinds = {r.kind for r in self.records}
        if "aot_backward_graph" in kinds and self.metric_records:
            return "backward"
        if "aot_inference_graph" in kinds:
            return "inference"
        if "aot_forward_graph" in kinds:
            return "forward"
        return None

    def graph_role(self, rec: Record) -> str | None:
        """The role of one of its records: an AOT graph or output code's own; a post-grad
        graph (or its runnable) takes the role of the output code compiled from it, the next
        one; Triton's kernel info the role of the output code it follows."""
        if rec.role is not None or rec.label not in ROLE_FOLLOWERS:
            return rec.role
        records = self.records
        try:
            at = records.index(rec)
        except ValueError:
            return None
        after = ROLE_FOLLOWERS[rec.label]
        seq = records[at + 1 :] if after else reversed(records[:at])
        return next((r.role for r in seq if r.kind in OUTPUT_CODE_KINDS), None)


@dataclass(eq=False, slots=True)
class FusionDecision:
    """One ``fusing A with B`` or ``cannot fuse A with B: why`` line of the fusion log."""

    compile: Compile | None = field(repr=False)
    record: Record = field(repr=False)
    first: str = ""
    second: str = ""
    fused: bool = False
    reason: str = ""


@dataclass(eq=False, slots=True)
class CudagraphNote:
    """One TORCH_LOGS message about a compile's CUDA graphs (the ``cudagraphs`` log, or
    ``perf_hints`` on older torch). Messages logged without a compile id (torch 2.11's
    ``skipping cudagraphs due to …`` warning) belong to the compile of the process's
    message before them: torch logs them while that compile's graph first runs."""

    compile: Compile = field(repr=False)
    record: Record = field(repr=False)
    kind: str  # one of `CUDAGRAPH_NOTES`
    text: str  # the message (a skip: its whole text, read when the message is complete)


# What a `CudagraphNote` says: CUDA graphs skipped (and why), a graph recorded, how Inductor
# split the graph ("Created 2 graph partitions: 1 cudagraphable, 1 non-cudagraphable"), and
# why an op cannot be in a CUDA graph ("op0: reason=cpu ops, …").
RAN_EAGERLY = "ran eagerly"  # its text: torch's warning saying why, when the capture has one
CUDAGRAPH_NOTES = ("skipped", "recorded", "partitions", "not cudagraphable", RAN_EAGERLY)
# torch's warning when CUDA graph trees run a graph eagerly instead of replaying it
CUDAGRAPH_EAGER_WARNING = "Unable to hit fast path of CUDAGraphs"


class PlacedLine(NamedTuple):
    """A line of a capture's other output that belongs to a compile: torch writes some facts
    to stderr without the log prefix (the autotuning choice tables), so the compile is the
    one of the records around it (see `TextLog`). `at` is its position in `Model.other`."""

    at: int
    lineno: int
    compile: Compile | None


class OtherLine(NamedTuple):
    """A line of a capture that is not part of a TORCH_LOGS message (read from disk)."""

    lineno: int
    offset: int
    text: str


@dataclass(eq=False, slots=True)
class HandlerError:
    """A handler that raised on one record: the record is kept, facts from it may be missing."""

    record: Record
    phase: Phase
    error: str  # the exception's type
    message: str

    @property
    def kind(self) -> str:
        return self.record.label

    @property
    def offset(self) -> int:
        return self.record.offset

    def line_number(self) -> int:
        return self.record.line_number()

    def text(self) -> str:
        """One line of it (reads the record's line number: off the UI thread)."""
        message = " ".join(self.message.split("\n"))
        return (
            f"{self.record.source.display}:{self.line_number()}: {self.kind} ({self.phase} handler): "
            f"{self.error}: {message}"
        )


# ---------------------------------------------------------------------- log sources


class LogSource(ABC):
    """One stream of records and what was indexed from it: a trace file, or one process of a
    TORCH_LOGS capture. Records read their payload, header line and line number through it."""

    # Damage only a trace file can have; a text source keeps these at 0.
    bad_headers: int = 0  # header JSON that parsed but is not a well-typed record
    truncated: int = 0  # a last record whose payload is incomplete when the file ends
    # Payloads that match their md5 only with stripped whitespace-only lines restored
    # (counted by `verify`; harmless, read restored).
    blank_line_records: int = 0
    missing_strings: int = 0  # stack frames naming a string-table id never defined
    # Where a trace file shows it was cut, known once it is finished (a live file may yet
    # grow past a partial last line, so nothing is set before): its size in bytes; the bytes
    # of payload lines it begins with (their record's header is missing); the offset of what
    # it ends inside (-1: none): the header of the record whose payload it ends in (a payload
    # failing its md5, `truncated`, or a last payload line with no newline: `tail_in_payload`),
    # else its last line, which has no newline; that record's label ("" when not kept).
    size: int = 0
    head_cut: int = 0
    tail_cut: int = -1
    tail_label: str = ""
    tail_in_payload: bool = False
    bad_md5: Set[int] = frozenset()  # header offsets whose payload failed its md5 (verify)
    deleted: bool = False  # set by follow mode when the file is gone from disk
    finished: bool = False  # the input is complete (a last partial line was indexed)
    logs_metrics: bool = False  # it records compilation_metrics for each compile (traces do)
    torch_version: str | None = None  # its torch_version artifact's version (torch 2.12+)
    unparsed: Sequence[tuple[int, int]]  # (offset, line number) of each unparsed line

    def __init__(self, display: str, path: Path | None) -> None:
        self.display = display
        self.path = path
        self.records: list[Record] = []
        self.compiles: dict[CompileKey, Compile] = {}
        self.frames: dict[FrameKey, Frame] = {}
        self.kernels: list[Kernel] = []
        self.kinds: Counter[str] = Counter()
        self.artifacts: Counter[str] = Counter()
        self.unknown: Counter[str] = Counter()
        self.ranks: set[int] = set()
        self.pids: set[int] = set()
        self.first_ts: str | None = None
        self.failure_count = 0
        self.problems: list[str] = []
        self.handler_errors: list[HandlerError] = []  # records whose handler raised
        self.version = 0  # bumped whenever the index changes
        # What readers derived from the file's bytes (shared with the file's store: memo.py).
        self.memo = Memo()
        # Of a finished trace file, made where it was indexed (ingest/signatures.py); a text
        # source has none.
        self.signatures: dict[str, JsonValue] = {}
        # The compile episode records are in now, its compiles by the id records name them
        # with, and the ids that started in it (for Builder.compile_for: an id that starts
        # again begins the next episode).
        self.episode = FIRST_EPISODE
        self.current: dict[CompileKey, Compile] = {}
        self.started: set[CompileKey] = set()

    @property
    @abstractmethod
    def rank(self) -> int | None: ...

    @property
    @abstractmethod
    def pid(self) -> int | None: ...

    @property
    @abstractmethod
    def last_ts(self) -> str | None: ...

    @abstractmethod
    def read_payload(self, record: Record) -> bytes:
        """The record's payload (a message's text without its line prefixes)."""

    @abstractmethod
    def header_line(self, record: Record) -> bytes:
        """The record's first line as it is on disk (cleaned of escapes for text)."""

    @abstractmethod
    def line_at(self, offset: int, limit: int = 1 << 20) -> bytes:
        """The line starting at `offset`, at most `limit` bytes."""

    @abstractmethod
    def lineno_of(self, offset: int) -> int:
        """1-based line number of the line starting at `offset`."""

    def full_meta(self, record: Record) -> Any:
        """The record's value with nothing dropped; sources that slim values override it."""
        return record.meta

    def file_name(self, fid: object) -> str | None:
        """The file name a stack frame's string-table id stands for (traces only)."""
        return None

    def file_names(self) -> list[str]:
        """Every file name of the string table (traces only)."""
        return []

    def define_string(self, fid: Any, name: str) -> None:
        """A string-table entry: stack frames name `name` by `fid` (traces only)."""
        return None

    def blank_lines_restored(self, record: Record) -> bool:
        """The record's payload is read with bare blank lines restored (traces only)."""
        return False

    def chromium_payloads(self, offsets: Sequence[int]) -> list[dict[str, Any]]:
        """The Chrome trace events of the chromium_event records at `offsets` (traces only)."""
        return []

    def chromium_offsets(self) -> array[int]:
        """Every chromium event's header offset, in file order (traces only)."""
        return array("q")

    @abstractmethod
    def close(self) -> None:
        """Release the file handle, if any."""


@dataclass(eq=False, slots=True)
class Rank:
    rank: int | None
    files: list[LogSource] = field(default_factory=list)

    @property
    def label(self) -> str:
        return "no rank" if self.rank is None else f"rank {self.rank}"


@dataclass(eq=False, slots=True)
class Run:
    """The sources of one launch (a directory's files with overlapping times, or a capture)."""

    index: int
    directory: str
    files: list[LogSource]
    name: str = ""  # shown in place of "run N"

    @property
    def ranks(self) -> list[Rank]:
        by: dict[int | None, Rank] = {}
        for tf in self.files:
            by.setdefault(tf.rank, Rank(tf.rank)).files.append(tf)
        return sorted(by.values(), key=lambda r: (r.rank is None, r.rank or 0))

    @property
    def start(self) -> str:
        return min((f.first_ts for f in self.files if f.first_ts), default="")

    @property
    def label(self) -> str:
        pids = sorted({p for f in self.files for p in f.pids})
        pid_text = ",".join(map(str, pids[:4])) + ("…" if len(pids) > 4 else "")
        start = self.start
        when = f"{start[:2]}-{start[2:4]} {start[5:13]}" if start else "no records"
        return f"{self.name or f'run {self.index + 1}'} · {when} · pid {pid_text or '?'}"


# ---------------------------------------------------------------------- models


TRACE_FORMAT = "trace"
TEXT_FORMAT = "torch_logs"


class Facts:
    """The facts one input yielded, in arrival order (what a `Builder` appends to)."""

    def __init__(self) -> None:
        self.compiles: list[Compile] = []
        self.breaks: list[GraphBreak] = []
        self.recompiles: list[Recompile] = []
        self.failures: list[Failure] = []
        self.errors: list[Error] = []
        self.cache_events: list[CacheEvent] = []
        self.kernels: list[Kernel] = []
        self.cudagraph_notes: list[CudagraphNote] = []
        # First lines of the autotuning choice tables in the other output (TORCH_LOGS text)
        self.autotune_lines: list[PlacedLine] = []


class Model(Facts, ABC):
    """What one input yielded: a `TraceSet` (trace files) or a `TextLog` (a TORCH_LOGS capture).

    Every change is made under `lock`; readers of a model that grows take it too, and compare
    `version` (and the files' versions) to know when to redraw.
    """

    files: Sequence[LogSource]
    other: Sequence[OtherLine]  # output that is not a log message (empty for traces)
    format: str = TRACE_FORMAT  # TRACE_FORMAT or TEXT_FORMAT (a TORCH_LOGS capture)
    text: Model | None = None  # a run directory's TORCH_LOGS capture, beside its traces
    job_end: JobEnd | None = None  # a run directory's run.json: how the job ended

    def __init__(self, display: str, root: Path | None) -> None:
        Facts.__init__(self)
        self.display = display
        self.root = root
        self.skipped: list[tuple[Path, str]] = []  # inputs not read, and why
        self.version = 0

    @property
    @abstractmethod
    def runs(self) -> list[Run]: ...

    @abstractmethod
    def summary_counts(self, verify: bool = False) -> dict[str, Any]:
        """The counts of `summary --json` (its definitions are in docs/reference/summary-json.md)."""

    @abstractmethod
    def verify(self) -> int:
        """Hash every payload; returns the number of mismatches (0 for text)."""

    @property
    def notices(self) -> list[str]:
        """Things the user must know to read the result (e.g. a custom log format)."""
        return []

    def counts(self) -> dict[str, int]:
        """The four numbers of the status bar, as `summary --json` has them."""
        s = self.summary_counts()
        return {k: s[k] for k in ("compiles", "graph_breaks", "recompiles", "kernels")}

    def compile_counts(self) -> dict[str, int]:
        """compiles, frames, recompiles, empty graphs, kernels and errors, counted the same
        way for both formats."""
        files = self.files
        return {
            "compiles": sum(len(f.compiles) for f in files),
            "frames": sum(
                len({k.frame for k in f.compiles if k.frame_id is not None}) for f in files
            ),
            "recompiles": sum(1 for f in files for k in f.compiles if k.is_recompile),
            "empty_graphs": sum(
                1 for f in files for c in f.compiles.values() if c.status == "empty graph"
            ),
            "kernels": sum(len(f.kernels) for f in files),
            "errors": len(self.run_errors()),
        }

    def run_errors(self) -> list[Error]:
        """The run's errors: this model's, and for a run directory its capture's too."""
        return [*self.errors, *(self.text.errors if self.text is not None else [])]

    def grouped_breaks(self) -> list[BreakGroup]:
        # File by file (each in its own order): a followed directory's breaks arrive
        # interleaved across its files, and the groups must not depend on it.
        return group_breaks(
            sorted(self.breaks, key=lambda b: str(b.compile.file.path) if b.compile else "")
        )

    def unknown_kinds(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for f in self.files:
            total.update(f.unknown)
        return total

    def records_of(self, kind: str) -> list[Record]:
        """Every record of a kind or artifact name (a message tag for text), in file order."""
        return [r for f in self.files for r in f.records if r.kind == kind or r.name == kind]

    def handler_errors(self) -> list[HandlerError]:
        """Records whose handler raised (the load went on without their facts)."""
        return [e for f in self.files for e in f.handler_errors]

    def fusion_decisions(self, compile: Compile | None = None) -> list[FusionDecision]:
        """Inductor's fusion choices (all, or one compile's), from the TORCH_LOGS text."""
        return self.text.fusion_decisions(compile) if self.text is not None else []

    def same_compiles(self, compile: Compile) -> list[Compile]:
        """This model's compiles that are `compile`: itself when it is one of this model's
        (a TextLog also finds a run directory's trace compile among its processes)."""
        return [compile] if any(compile.file is f for f in self.files) else []

    def text_compiles(self, compile: Compile) -> list[Compile]:
        """`compile` as the TORCH_LOGS text saw it: the compile itself for a capture, the
        capture's compiles with its id and process for a run directory's trace."""
        if self.text is not None:
            return self.text.same_compiles(compile)
        return self.same_compiles(compile)

    def close(self) -> None:
        for f in self.files:
            f.close()
