"""TORCH_LOGS text (captured stderr, a file or a pipe) indexed into the trace model.

Every log line of torch has the glog prefix

    [rank0]:V1121 05:22:57.259000 635 torch/_dynamo/guards.py:4760] [0/1] [__recompiles] text

where the rank, the compile id and the artifact tag are optional. A multi-line message repeats
the whole prefix on each line, so consecutive lines of one process with the same prefix form one
message (one `Record`). A few message kinds start a new message even under an identical prefix
(two graph breaks logged in the same millisecond from the same source line stay two).

Lines without the prefix (the program's prints, warnings, tracebacks, launcher lines) are kept in
order as other output. Records and other lines keep byte offsets only; text is read back from the
file (or from the spool file that stdin is copied into) on demand.

Bytes are fed in chunks: complete lines are indexed at once, a partial last line waits for more
bytes or `finish()`. Any split of the input gives the same index as one read.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from array import array
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from ..safe import ANSI_BYTES as ANSI  # one escape-sequence pattern, in tcview/safe.py
from .compile_id import CompileKey, parse_compile_id
from .facts import parse_graph_break
from .index import Hooks, Run, read_chunks
from .model import (
    CacheEvent,
    Compile,
    Facts,
    Failure,
    Frame,
    GraphBreak,
    Kernel,
    Recompile,
    Record,
)

Progress = Callable[[int, int], None]

CHUNK = 4 << 20

# An optional launcher tag (torchrun --tee writes "[default0]:") comes before the rank prefix.
PREFIX = re.compile(
    rb"(?:\[(?!rank\d)[A-Za-z_][\w-]*\]:)?(?:\[rank(\d+)\]:)?([A-Z])(\d{4} \d\d:\d\d:\d\d\.\d+) +(\d+) ([^\]\n]*?):(\d+)\]"
    rb"(?: \[(!?\d+(?:/\d+)*(?:_\d+)?)\])?(?: \[__([\w.]+)\])?"
)
KERNEL_DEF = re.compile(rb"([A-Za-z_]\w*) = async_compile\.([A-Za-z_]\w*)\(")
# Lines that look like torch logging in some other format (TORCH_LOGS_FORMAT).
TORCHISH = re.compile(
    rb"torch\._(?:dynamo|inductor|functorch)|\|__\w+\||TRACED GRAPH|Output code|"
    rb"Graph break in user code|Recompiling function|torchdynamo start tracing"
)

BREAK_MARKS = (
    b"Graph break in user code at",
    b"Graph break (user stack suppressed due to duplicate graph break) in user code at",
)
RECOMPILE_MARK = b"Recompiling function"
OUTPUT_CODE_MARK = b"Output code:"

# Kinds of untagged messages, told apart by how their first line starts.
UNTAGGED_KINDS: tuple[tuple[bytes, str], ...] = (
    (b"Step ", "step"),
    (b"torch._dynamo hit config.", "recompile_limit"),
    (b"WON'T CONVERT", "wont_convert"),
    (b"fx graph cache ", "cache"),
    (b"AOTAutograd cache ", "cache"),
)
UNTAGGED_MARKS = tuple(mark for mark, _ in UNTAGGED_KINDS)
DYNAMIC_SOURCES = (b"symbolic_shapes.py", b"_dynamo/variables/builder.py")

# Artifact tags PyTorch registers (torch/_logging/_registrations.py); others count as unknown.
KNOWN_TAGS = frozenset(
    """graph_breaks recompiles recompiles_verbose guards verbose_guards graph_code
    graph_code_verbose graph graph_sizes aot_graphs aot_joint_graph aot_graphs_effects
    post_grad_graphs pre_grad_graphs ir_pre_fusion ir_post_fusion output_code kernel_code
    schedule fusion overlap loop_ordering loop_tiling perf_hints onnx_diagnostics
    compiled_autograd compiled_autograd_verbose ddp_graphs trace_source trace_call
    trace_bytecode bytecode custom_format_test_artifact side_effects dynamic cudagraphs
    autotuning benchmarking graph_region_expansion inductor_metrics hierarchical_compile
    cudagraph_static_inputs annotation node_runtime_estimation caching""".split()
)

# Record kinds (tags or untagged kinds) that are a split point when their first line starts so.
SPLIT_MARKS: dict[str, tuple[bytes, ...]] = {
    "graph_breaks": BREAK_MARKS,
    "recompiles": (RECOMPILE_MARK,),
    "recompiles_verbose": (RECOMPILE_MARK,),
    "output_code": (OUTPUT_CODE_MARK, b"Output code written to"),
    "graph_code": (b"TRACED GRAPH",),
    "aot_graphs": (b"TRACED GRAPH",),
    "aot_joint_graph": (b"TRACED GRAPH",),
}

CUSTOM_FORMAT_NOTICE = (
    "This capture uses a custom TORCH_LOGS_FORMAT: no line has torch's standard prefix "
    "('I1121 05:22:57.259000 635 torch/_dynamo/x.py:12] ...'), so graph breaks, recompiles "
    "and kernels cannot be told apart. All {n} lines are shown as other output. Unset "
    "TORCH_LOGS_FORMAT when capturing to let tcview parse the log."
)


def clean_line(line: bytes) -> bytes:
    """A raw line without its CR and ANSI escape sequences (never passed to a terminal)."""
    if line.endswith(b"\r"):
        line = line[:-1]
    if b"\x1b" in line:
        line = ANSI.sub(b"", line).replace(b"\x1b", b"")
    return line


def _text_start(line: bytes, end: int) -> int:
    """Where the message text starts: after the prefix and its one separating space."""
    return end + 1 if line[end : end + 1] == b" " else end


def ts_seconds(ts: str) -> float | None:
    """Seconds since the start of the (leap) year of a glog ``MMDD HH:MM:SS.ffffff`` stamp."""
    try:
        month, day = int(ts[0:2]), int(ts[2:4])
        hms, _, frac = ts[5:].partition(".")
        h, m, s = (int(x) for x in hms.split(":"))
        days = datetime(2000, month, day).timetuple().tm_yday
    except (ValueError, IndexError):
        return None
    return ((days * 24 + h) * 60 + m) * 60 + s + float("0." + (frac or "0"))


class LogMeta:
    """What the prefix of a message says besides its compile id and tag."""

    __slots__ = ("level", "ts", "where")

    def __init__(self, level: str, ts: str, where: str) -> None:
        self.level = level
        self.ts = ts
        self.where = where

    def as_dict(self) -> dict[str, str]:
        return {"level": self.level, "ts": self.ts, "where": self.where}

    def __repr__(self) -> str:
        return f"<LogMeta {self.level} {self.ts} {self.where}>"


class OtherLine(NamedTuple):
    lineno: int
    offset: int
    text: str


class OtherLines(Sequence):
    """Lines that are not part of a TORCH_LOGS message, in order; text is read on demand."""

    def __init__(self, log: TextLog) -> None:
        self._log = log
        self.linenos = array("q")
        self.offsets = array("q")
        self.ends = array("q")

    def append(self, lineno: int, offset: int, end: int) -> None:
        self.linenos.append(lineno)
        self.offsets.append(offset)
        self.ends.append(end)

    def __len__(self) -> int:
        return len(self.linenos)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        raw = self._log.read(self.offsets[i], self.ends[i])
        return OtherLine(
            self.linenos[i], self.offsets[i], clean_line(raw).decode("utf-8", "replace")
        )

    def __iter__(self) -> Iterator[OtherLine]:
        for i in range(len(self)):
            yield self[i]


class ProcessLog:
    """The messages of one process, (rank, pid); plays the part of a TraceFile."""

    def __init__(self, log: TextLog, rank: int | None, pid: int) -> None:
        self.log = log
        self.rank = rank
        self.pid = pid
        self.pids = {pid}
        self.ranks: set[int] = set() if rank is None else {rank}
        self.display = f"pid {pid}" if rank is None else f"rank {rank} · pid {pid}"
        self.path = log.path
        self.records: list[Record] = []
        self.unparsed: list[tuple[int, int]] = []  # other output is kept on the TextLog
        self.kinds: Counter = Counter()
        self.artifacts: Counter = Counter()
        self.unknown: Counter = Counter()
        self.compiles: dict[CompileKey, Compile] = {}
        self.frames: dict[tuple, Frame] = {}
        self.kernels: list[Kernel] = []
        self.first_ts: str | None = None
        self.last_ts: str | None = None
        self.failure_count = 0
        self.problems: list[str] = []
        self.version = 0
        # The message being extended: its record, prefix and close handler.
        self.open: Record | None = None
        self.open_prefix = b""
        self.open_marks: tuple[bytes, ...] = ()
        self.open_close: Closer | None = None
        self.kernel_count = 0
        self.step_span: dict[CompileKey, list[float]] = {}

    def read_payload(self, record: Record) -> bytes:
        """The message's lines with the prefix removed, joined with newlines."""
        return message_payload(self.log.read(record.offset, record.end))

    def header_line(self, record: Record) -> bytes:
        return clean_line(self.log.line_at(record.offset))

    def line_at(self, offset: int, limit: int = 1 << 20) -> bytes:
        return self.log.line_at(offset, limit)

    def lineno_of(self, offset: int) -> int:
        return self.log.lineno_of(offset)

    def close(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"<ProcessLog {self.display}>"


def message_payload(raw: bytes) -> bytes:
    """Text of the lines of `raw` that carry the same prefix as its first line."""
    lines = raw.split(b"\n")
    first = clean_line(lines[0])
    m = PREFIX.match(first)
    if m is None:
        return first
    prefix = first[: m.end()]
    out = []
    for raw_line in lines:
        line = clean_line(raw_line)
        if not line.startswith(prefix):
            continue
        lm = PREFIX.match(line)
        if lm is not None and lm.end() == len(prefix):
            out.append(line[_text_start(line, lm.end()) :])
    return b"\n".join(out)


# ---------------------------------------------------------------------- message handlers

Starter = Callable[["TextLog", ProcessLog, Record, bytes], "Closer | None"]
Closer = Callable[["TextLog", ProcessLog, Record], None]


def _comp(proc: ProcessLog, rec: Record) -> Compile | None:
    return proc.compiles.get(rec.key) if rec.key is not None else None


def start_break(log: TextLog, proc: ProcessLog, rec: Record, text: bytes) -> Closer:
    comp = _comp(proc, rec)
    location = text.split(b" in user code at ", 1)[-1].split(b" ", 1)[0].decode("utf-8", "replace")
    gb = GraphBreak(comp, rec, "", location)
    if comp is not None:
        comp.breaks.append(gb)
    log.breaks.append(gb)

    def close(log: TextLog, proc: ProcessLog, rec: Record) -> None:
        parsed = parse_graph_break(rec.payload())
        gb.reason = parsed.reason
        gb.location = parsed.location or gb.location
        gb.explanation = parsed.explanation
        gb.hints = parsed.hints
        gb.url = parsed.url
        gb.user_stack = parsed.user_stack

    return close


_RECOMPILING = re.compile(r"Recompiling function (\S+) in (.+):(\d+)\s*$")


def start_recompile(log: TextLog, proc: ProcessLog, rec: Record, text: bytes) -> Closer | None:
    comp = _comp(proc, rec)
    if comp is None:  # no compile id on the line: a stand-in that is not counted as a compile
        comp = Compile(proc, CompileKey())
    m = _RECOMPILING.match(text.decode("utf-8", "replace"))
    if m and comp.frame is not None and comp.frame.co_name is None:
        comp.frame.co_name, comp.frame.co_filename = m.group(1), m.group(2)
        comp.frame.co_firstlineno = int(m.group(3))
    rc = Recompile(comp, [], rec)
    if comp.recompile is None:
        comp.recompile = rc
    log.recompiles.append(rc)

    def close(log: TextLog, proc: ProcessLog, rec: Record) -> None:
        rc.reasons = parse_guard_failures(rec.payload())

    return close


_GUARD_FAILURE = re.compile(r"^\s*- (!?\d+(?:/\d+)*(?:_\d+)?): (.*)$")
_GUARD_MORE = re.compile(r"^\s*- (.*)$")


def parse_guard_failures(text: str) -> list[str]:
    """``- 0/0: guard`` lines of a recompile message; ``-   more`` lines extend the last one."""
    reasons: list[str] = []
    for line in text.split("\n")[1:]:
        m = _GUARD_FAILURE.match(line)
        if m:
            reasons.append(f"{m.group(1)}: {m.group(2).rstrip()}")
            continue
        more = _GUARD_MORE.match(line)
        if more and reasons:
            reasons[-1] += "\n" + more.group(1).rstrip()
    return reasons


def start_output_code(log: TextLog, proc: ProcessLog, rec: Record, text: bytes) -> None:
    log.output_codes += 1


_STEP = re.compile(r"Step (\d): torchdynamo start tracing (\S+) (.+):(\d+)\s*$")


def start_step(log: TextLog, proc: ProcessLog, rec: Record, text: bytes) -> None:
    comp = _comp(proc, rec)
    if comp is None:
        return
    m = _STEP.match(text.decode("utf-8", "replace"))
    frame = comp.frame
    if m and frame is not None and frame.co_name is None:
        frame.co_name, frame.co_filename, frame.co_firstlineno = (
            m.group(2),
            m.group(3),
            int(m.group(4)),
        )
    seconds = ts_seconds(rec.meta.ts)
    if seconds is None:
        return
    span = proc.step_span.setdefault(comp.key, [seconds, seconds, 0])
    span[0] = min(span[0], seconds)
    span[1] = max(span[1], seconds)
    span[2] += 1
    if span[2] >= 2:
        metrics = comp.metrics if comp.metrics is not None else {}
        metrics.update(
            entire_frame_compile_time_s=round(span[1] - span[0], 6),
            estimated=True,
            source="TORCH_LOGS Step 1/2/3 timestamps",
        )
        comp.metrics = metrics


_LIMIT_FUNCTION = re.compile(r"function: '([^']*)' \((.*)\)")


def start_recompile_limit(log: TextLog, proc: ProcessLog, rec: Record, text: bytes) -> Closer:
    comp = _comp(proc, rec)
    failure = Failure(
        comp, "recompile limit", text.decode("utf-8", "replace"), "", rec, "torch_logs"
    )
    if comp is not None:
        comp.failures.append(failure)
    proc.failure_count += 1
    log.failures.append(failure)

    def close(log: TextLog, proc: ProcessLog, rec: Record) -> None:
        payload = rec.payload()
        failure.reason = payload.strip()
        m = _LIMIT_FUNCTION.search(payload)
        if m:
            failure.location = m.group(2)

    return close


_WONT = re.compile(r"WON'T CONVERT (\S+) (.+) line (\d+)")
_EXC_LINE = re.compile(
    r"^([A-Za-z_][\w.]*(?:Error|Exception|Unsupported|Failed|Exit|Interrupt)\w*): ?(.*)$"
)


def start_wont_convert(log: TextLog, proc: ProcessLog, rec: Record, text: bytes) -> Closer | None:
    # At INFO it is a frame Dynamo skips on purpose (generators, a recompile limit already
    # reported); a warning is a compile that failed and fell back to eager.
    if rec.meta.level == "I" or rec.meta.level == "V":
        return None
    m = _WONT.match(text.decode("utf-8", "replace"))
    where = f"{m.group(2)}:{m.group(3)}" if m else ""
    failure = Failure(_comp(proc, rec), "WON'T CONVERT", "", where, rec, "torch_logs")
    proc.failure_count += 1
    log.failures.append(failure)

    def close(log: TextLog, proc: ProcessLog, rec: Record) -> None:
        lines = rec.payload().split("\n")
        for i, line in enumerate(lines):
            em = _EXC_LINE.match(line)
            if em:
                failure.fail_type = em.group(1).rsplit(".", 1)[-1]
                failure.reason = "\n".join([em.group(2), *lines[i + 1 :]]).strip()
                return
        failure.reason = "\n".join(lines[1:]).strip()

    return close


_CACHE = re.compile(rb"(fx graph|AOTAutograd) cache (hit|miss|bypass)")


def start_cache(log: TextLog, proc: ProcessLog, rec: Record, text: bytes) -> None:
    m = _CACHE.match(text)
    if m is None:
        return
    cache = "fx_graph" if m.group(1) == b"fx graph" else "aotautograd"
    comp = _comp(proc, rec)
    event = CacheEvent(comp, cache, m.group(2).decode(), rec)
    if comp is not None:
        comp.cache.append(event)
    log.cache_events.append(event)


# Record kind -> (first-line marker, handler run when such a message starts).
START_HANDLERS: dict[str, tuple[tuple[tuple[bytes, ...], Starter], ...]] = {
    "graph_breaks": ((BREAK_MARKS, start_break),),
    "recompiles": (((RECOMPILE_MARK,), start_recompile),),
    "recompiles_verbose": (((RECOMPILE_MARK,), start_recompile),),
    "output_code": (((OUTPUT_CODE_MARK,), start_output_code),),
    "step": (((b"Step ",), start_step),),
    "recompile_limit": (((b"torch._dynamo hit config.recompile_limit",), start_recompile_limit),),
    "wont_convert": (((b"WON'T CONVERT",), start_wont_convert),),
    "cache": (((b"fx graph cache ", b"AOTAutograd cache "), start_cache),),
}


def proc_compile(log: TextLog, proc: ProcessLog, key: CompileKey) -> Compile:
    comp = proc.compiles.get(key)
    if comp is not None:
        return comp
    comp = Compile(proc, key, order=len(proc.compiles))
    proc.compiles[key] = comp
    if key.frame_id is not None:
        frame = proc.frames.get(key.frame)
        if frame is None:
            frame = proc.frames[key.frame] = Frame(proc, key.frame)
        frame.compiles.append(comp)
        comp.frame = frame
    log.compiles.append(comp)
    return comp


# ---------------------------------------------------------------------- facts only text has

_FUSION = re.compile(r"^(fusing|cannot fuse) (\S+) with (\S+?)(?::\s*(.*))?$")


@dataclass(eq=False)
class FusionDecision:
    """One ``fusing A with B`` or ``cannot fuse A with B: why`` line of the fusion log."""

    compile: Compile | None = field(repr=False)
    record: Record = field(repr=False)
    first: str = ""
    second: str = ""
    fused: bool = False
    reason: str = ""


def fusion_decisions(proc: ProcessLog, rec: Record) -> list[FusionDecision]:
    comp = _comp(proc, rec)
    out = []
    for line in rec.payload().split("\n"):
        m = _FUSION.match(line.strip())
        if m:
            fused = m.group(1) == "fusing"
            out.append(FusionDecision(comp, rec, m.group(2), m.group(3), fused, m.group(4) or ""))
    return out


# ---------------------------------------------------------------------- views


# ---------------------------------------------------------------------- the log


class TextLog(Facts):
    """A TORCH_LOGS capture indexed into the same model objects as a TraceSet."""

    def __init__(self, path: str | os.PathLike | None = None, display: str | None = None) -> None:
        Facts.__init__(self)
        self.path = Path(path) if path is not None else None
        self.display = display or (str(path) if path is not None else "<stdin>")
        self.root = self.path
        self._fd: int | None = None
        self._spool: Any = None  # temporary file holding fed bytes when there is no path
        self.pos = 0  # bytes consumed
        self._pending: list[bytes] = []
        self._pending_len = 0
        self._lines = 0
        self.finished = False
        self.version = 0

        self._procs: dict[tuple[bytes | None, bytes], ProcessLog] = {}
        self._keys: dict[bytes, tuple[CompileKey, int] | None] = {}
        self.other = OtherLines(self)
        self.by_kind: dict[str, list[Record]] = {}
        self.output_codes = 0
        self.message_lines = 0
        self.blank_other = 0
        self._torchish = 0
        self._last: ProcessLog | None = None  # process of the last message line
        self.text: TextLog | None = None  # TraceSet has it for a run directory's log

    # ---------------------------------------------------------------- loading

    @classmethod
    def load(
        cls, path: str | os.PathLike, progress: Progress | None = None, hooks: Hooks | None = None
    ) -> TextLog:
        """Index a capture; "-" reads stdin, spooled to a temporary file."""
        hooks = hooks or Hooks(progress)
        if str(path) == "-":
            log = cls(None, "<stdin>")
            hooks.publish(log)
            read = lambda: sys.stdin.buffer.read(CHUNK)  # noqa: E731
            done = 0
            while not hooks.stop() and (chunk := read()):
                with hooks.lock:
                    log.feed(chunk)
                done += len(chunk)
                if hooks.progress is not None:
                    hooks.progress(done, 0)
        else:
            log = cls(path)
            hooks.publish(log)
            try:
                read_chunks(
                    Path(path), lambda c: log.feed(c, spool=False), hooks, 0, _size(Path(path))
                )
            except OSError as exc:
                with hooks.lock:
                    log.skipped.append((Path(path), f"unreadable: {exc.strerror or exc}"))
        with hooks.lock:
            log.finish()
        return log

    def feed(self, data: bytes, spool: bool | None = None) -> None:
        """Index appended bytes. Without a path they are also kept in a spool file."""
        if not data:
            return
        if spool is None:
            spool = self.path is None
        if spool:
            self._write_spool(data)
        self.pos += len(data)
        cut = data.rfind(b"\n")
        if cut < 0:
            self._pending.append(data)
            self._pending_len += len(data)
            return
        if self._pending:
            head = b"".join(self._pending) + data[: cut + 1]
            base = self.pos - len(data) - self._pending_len
            self._pending, self._pending_len = [], 0
        else:
            head = data[: cut + 1]
            base = self.pos - len(data)
        self._scan(head, base)
        rest = data[cut + 1 :]
        if rest:
            self._pending.append(rest)
            self._pending_len = len(rest)
        self.version += 1

    def finish(self) -> None:
        """The input is complete: index a last line without newline, close open messages."""
        if self._pending:
            tail = b"".join(self._pending)
            self._pending, self._pending_len = [], 0
            self._scan(tail + b"\n", self.pos - len(tail))
        for proc in self.files:
            self._close(proc)
        self.finished = True
        self.version += 1

    @property
    def pending_bytes(self) -> int:
        return self._pending_len

    def _write_spool(self, data: bytes) -> None:
        if self._spool is None:
            self._spool = tempfile.TemporaryFile(prefix="tcview-stdin-")
        self._spool.seek(0, os.SEEK_END)
        self._spool.write(data)

    # ---------------------------------------------------------------- scanning

    def _scan(self, buf: bytes, base: int) -> None:
        """Index the complete lines of `buf` (which ends with a newline) at offset `base`."""
        lines = buf.split(b"\n")
        lines.pop()  # after the last newline
        offset = base
        lineno = self._lines
        match = PREFIX.match
        for raw in lines:
            lineno += 1
            end = offset + len(raw)
            line = raw
            if line.endswith(b"\r") or b"\x1b" in line:
                line = clean_line(line)
            if not self._continues(line, end):
                m = match(line)
                if m is None:
                    self._other(line, lineno, offset, end)
                else:
                    self._message_line(line, m, lineno, offset, end)
            offset = end + 1
        self._lines = lineno

    def _continues(self, line: bytes, end: int) -> bool:
        """Fast path: `line` extends the message that the previous message line was part of.

        Exact without the regex: the line starts with that message's prefix, followed by the
        end of the line or a space and text that does not start with ``[`` (which could be a
        compile id or tag that makes the prefix longer).
        """
        proc = self._last
        if proc is None or proc.open is None:
            return False
        prefix = proc.open_prefix
        n = len(prefix)
        if not line.startswith(prefix):
            return False
        if len(line) > n:
            if line[n] != 32 or line.startswith(b"[", n + 1):
                return False
            if proc.open_marks and line.startswith(proc.open_marks, n + 1):
                return False
        rec = proc.open
        rec.end = end
        self.message_lines += 1
        if rec.kind == "output_code":
            self._kernel_line(proc, rec, line, n + 1)
        return True

    def _other(self, line: bytes, lineno: int, offset: int, end: int) -> None:
        self.other.append(lineno, offset, end)
        if not line.strip():
            self.blank_other += 1
        elif self.message_lines == 0 and TORCHISH.search(line):
            self._torchish += 1

    def _message_line(self, line: bytes, m: re.Match, lineno: int, offset: int, end: int) -> None:
        self.message_lines += 1
        rank_b, pid_b = m.group(1), m.group(4)
        proc = self._procs.get((rank_b, pid_b))
        if proc is None:
            proc = self._new_process(rank_b, pid_b)
        self._last = proc
        pend = m.end()
        t = _text_start(line, pend)
        rec = proc.open
        if (
            rec is not None
            and proc.open_prefix == line[:pend]
            and not (proc.open_marks and line.startswith(proc.open_marks, t))
        ):
            rec.end = end
            if rec.kind == "output_code":
                self._kernel_line(proc, rec, line, t)
            return
        self._close(proc)
        self._start(proc, line, m, t, lineno, offset, end)

    def _start(
        self, proc: ProcessLog, line: bytes, m: re.Match, t: int, lineno: int, offset: int, end: int
    ) -> None:
        tag_b = m.group(8)
        text = line[t:]
        if tag_b is not None:
            kind = sys.intern(tag_b.decode("ascii", "replace"))
            proc.artifacts[kind] += 1
            if kind not in KNOWN_TAGS:
                proc.unknown[kind] += 1
        else:
            kind = self._untagged_kind(text, m.group(5))
        key = attempt = None
        cid = m.group(7)
        if cid is not None:
            parsed = self._keys.get(cid)
            if parsed is None and cid not in self._keys:
                parsed = self._keys[cid] = parse_compile_id(cid.decode("ascii"))
            if parsed is not None:
                key, attempt = parsed
        ts = m.group(3).decode("ascii")
        where = sys.intern(f"{m.group(5).decode('utf-8', 'replace')}:{int(m.group(6))}")
        meta = LogMeta(m.group(2).decode("ascii"), ts, where)
        rec = Record(proc, offset, lineno, offset, kind, meta, key, attempt or 0, None, kind)
        rec.end = end
        if proc.first_ts is None:
            proc.first_ts = ts
        proc.last_ts = ts
        proc.records.append(rec)
        proc.kinds[kind] += 1
        self.by_kind.setdefault(kind, []).append(rec)
        if key is not None:
            comp = proc_compile(self, proc, key)
            comp.records.append(rec)
            comp.attempts[attempt or 0] += 1
        proc.open = rec
        proc.open_prefix = line[: m.end()]
        proc.open_marks = SPLIT_MARKS.get(kind, UNTAGGED_MARKS if tag_b is None else ())
        proc.open_close = None
        proc.kernel_count = 0
        for marks, starter in START_HANDLERS.get(kind, ()):
            if text.startswith(marks):
                proc.open_close = starter(self, proc, rec, text)
                break
        if kind == "output_code":
            self._kernel_line(proc, rec, line, t)

    @staticmethod
    def _untagged_kind(text: bytes, source: bytes) -> str:
        if text.startswith(UNTAGGED_MARKS):
            for mark, kind in UNTAGGED_KINDS:
                if text.startswith(mark):
                    return kind
        if source.endswith(DYNAMIC_SOURCES):
            return "dynamic"
        return "log"

    def _kernel_line(self, proc: ProcessLog, rec: Record, line: bytes, t: int) -> None:
        km = KERNEL_DEF.match(line, t)
        if km is None or km.group(2) == b"wait":
            return
        comp = _comp(proc, rec)
        kernel = Kernel(
            km.group(1).decode("utf-8", "replace"),
            km.group(2).decode("ascii", "replace"),
            rec,
            proc.kernel_count,
            comp,
        )
        proc.kernel_count += 1
        proc.kernels.append(kernel)
        self.kernels.append(kernel)
        if comp is not None:
            comp.kernels.append(kernel)

    def _close(self, proc: ProcessLog) -> None:
        rec = proc.open
        if rec is None:
            return
        proc.open = None
        rec.closed = True
        close = proc.open_close
        proc.open_close = None
        if close is not None:
            close(self, proc, rec)

    def _new_process(self, rank_b: bytes | None, pid_b: bytes) -> ProcessLog:
        proc = ProcessLog(self, int(rank_b) if rank_b is not None else None, int(pid_b))
        self._procs[(rank_b, pid_b)] = proc
        self.files.append(proc)
        return proc

    # ---------------------------------------------------------------- reading

    def read(self, start: int, end: int) -> bytes:
        if end <= start:
            return b""
        if self._spool is not None:
            self._spool.flush()
            return os.pread(self._spool.fileno(), end - start, start)
        if self.path is None:
            return b""
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY)
        return os.pread(self._fd, end - start, start)

    def line_at(self, offset: int, limit: int = 1 << 20) -> bytes:
        return self.read(offset, offset + limit).split(b"\n", 1)[0]

    def lineno_of(self, offset: int) -> int:
        """1-based line number of the byte at `offset` (counts newlines before it)."""
        count, pos = 0, 0
        while pos < offset:
            data = self.read(pos, min(offset, pos + CHUNK))
            if not data:
                break
            count += data.count(b"\n")
            pos += len(data)
        return count + 1

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._spool is not None:
            self._spool.close()
            self._spool = None

    # ---------------------------------------------------------------- views

    @property
    def notices(self) -> list[str]:
        """Things the user must know to read the result (e.g. a custom log format)."""
        if self.message_lines == 0 and self._torchish:
            return [CUSTOM_FORMAT_NOTICE.format(n=len(self.other))]
        return []

    @property
    def custom_format(self) -> bool:
        return bool(self.message_lines == 0 and self._torchish)

    @property
    def runs(self) -> list[Run]:
        name = self.path.name if self.path is not None else "<stdin>"
        directory = str(self.path.parent) if self.path is not None else "<stdin>"
        return [Run(0, directory, list(self.files), f"TORCH_LOGS {name}")]

    def records_of(self, kind: str) -> list[Record]:
        """Every message of a kind (an artifact tag, or step/dynamic/cache/log...)."""
        return self.by_kind.get(kind, [])

    def compile_of(self, rec: Record) -> Compile | None:
        return _comp(rec.source, rec)

    def fusion_decisions(self) -> list[FusionDecision]:
        """Inductor's fusion choices (read from the `fusion` messages on demand)."""
        return [d for rec in self.records_of("fusion") for d in fusion_decisions(rec.source, rec)]

    def summary_counts(self, verify: bool = False) -> dict[str, Any]:
        ranks = sorted({r for proc in self.files for r in proc.ranks})
        cache = Counter(e.result for e in self.cache_events if e.cache == "fx_graph")
        out: dict[str, Any] = {
            "files": len(self.files),
            "records": sum(len(proc.records) for proc in self.files),
            "compiles": sum(len(proc.compiles) for proc in self.files),
            "frames": sum(
                len({k.frame for k in proc.compiles if k.frame_id is not None})
                for proc in self.files
            ),
            "recompiles": len(self.recompiles),
            "graph_breaks": len(self.breaks),
            "failures": len(self.failures),
            "output_codes": self.output_codes,
            "kernels": len(self.kernels),
            "unparsed_lines": len(self.other) - self.blank_other,
            "ranks": ranks,
            "fx_graph_cache": {r: cache[r] for r in ("hit", "miss", "bypass")},
            "format": "torch_logs",
            "processes": len(self.files),
            "lines": self._lines,
            "message_lines": self.message_lines,
            "other_lines": len(self.other),
            "notices": self.notices,
        }
        if verify:
            out["md5_mismatches"] = 0  # text has no checksums
        return out

    def verify(self) -> int:
        return 0

    def __repr__(self) -> str:
        return f"<TextLog {self.display}>"


def _size(p: Path) -> int:
    try:
        return p.stat().st_size
    except OSError:
        return 0
