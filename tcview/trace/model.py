"""The model every source feeds: records, files, frames, compiles and derived facts.

Records keep byte offsets only; payload text is read on demand through the record's source.
Derived facts (graph breaks, recompiles, failures, cache events, kernels) are plain objects that
point back at the compile and record they came from.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .compile_id import CompileKey, attempt_text


class Record:
    """One structured event: a header plus optional payload, located by byte offsets."""

    __slots__ = (
        "source",
        "offset",
        "_lineno",
        "hdr_end",
        "end",
        "kind",
        "name",
        "meta",
        "key",
        "attempt",
        "md5",
        "closed",
    )

    def __init__(
        self,
        source: Any,
        offset: int,
        lineno: int,
        hdr_end: int,
        kind: str,
        meta: Any,
        key: CompileKey | None,
        attempt: Any,
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
        self.key = key
        self.attempt = attempt
        self.md5 = md5
        self.closed = False

    @property
    def label(self) -> str:
        return self.name or self.kind

    @property
    def lineno(self) -> int:
        """1-based line number of the header."""
        if self._lineno < 0:
            self._lineno = self.source.lineno_of(self.offset)
        return self._lineno

    def full_meta(self) -> Any:
        """The event's value with nothing dropped (big headers are slimmed in memory)."""
        full = getattr(self.source, "full_meta", None)
        return full(self) if full is not None else self.meta

    @property
    def compile_text(self) -> str:
        return attempt_text(self.key, self.attempt) if self.key else "-"

    def payload_bytes(self) -> bytes:
        return self.source.read_payload(self)

    def payload(self) -> str:
        return self.payload_bytes().decode("utf-8", "replace")

    def md5_ok(self) -> bool | None:
        """True/False when the record carries an md5, None when it has none."""
        if not self.md5:
            return None
        return hashlib.md5(self.payload_bytes()).hexdigest() == self.md5

    def __repr__(self) -> str:
        return f"<Record {self.label} {self.compile_text} @{self.offset}>"


def payload_from_region(raw: bytes) -> bytes:
    """Payload text from the raw bytes between a header and the next header."""
    lines = [ln[1:] for ln in raw.split(b"\n") if ln.startswith(b"\t")]
    return b"\n".join(lines)


@dataclass
class StackFrame:
    filename: str
    line: Any
    name: str

    @property
    def where(self) -> str:
        return f"{Path(self.filename).name}:{self.line}"


_TORCH_INTERNAL = re.compile(
    r"(?:^|/)(?:site|dist)-packages/torch/"
    r"|(?:^|/)torch/(?:_dynamo|_functorch|_inductor|nn|optim|autograd|fx|utils|export|distributed)/"
)


def is_torch_internal(filename: str) -> bool:
    return bool(_TORCH_INTERNAL.search(filename))


@dataclass(eq=False)
class Frame:
    """A Python frame that Dynamo compiled (one code object), within one process."""

    file: Any
    key: tuple[Any, Any]  # (compiled_autograd_id, frame_id)
    stack: list[StackFrame] = field(default_factory=list)
    compiles: list[Compile] = field(default_factory=list)
    co_name: str | None = None
    co_filename: str | None = None
    co_firstlineno: Any = None

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
        ca, fid = self.key
        return (f"!{ca}/" if ca is not None else "") + ("?" if fid is None else str(fid))

    @property
    def status(self) -> str:
        order = ("failed", "graph break", "recompile", "cache hit", "ok")
        seen = {c.status for c in self.compiles}
        return next((s for s in order if s in seen), "ok")


@dataclass(eq=False)
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


def short_location(location: str) -> str:
    """``/a/b/train.py:12`` -> ``train.py:12``."""
    path, _, line = location.rpartition(":")
    if not path or not line.isdigit():
        return location
    return f"{Path(path).name}:{line}"


@dataclass(eq=False)
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


class Facts:
    """What one input yielded, in arrival order: shared by TraceSet and TextLog."""

    def __init__(self) -> None:
        self.files: list[Any] = []  # TraceFiles, or one object per logging process
        self.skipped: list[tuple[Path, str]] = []
        self.compiles: list[Compile] = []
        self.breaks: list[GraphBreak] = []
        self.recompiles: list[Recompile] = []
        self.failures: list[Failure] = []
        self.cache_events: list[CacheEvent] = []
        self.kernels: list[Kernel] = []

    def summary_counts(self, verify: bool = False) -> dict[str, Any]:
        raise NotImplementedError

    def counts(self) -> dict[str, int]:
        """The four numbers of the status bar, as `summary --json` has them."""
        s = self.summary_counts()
        return {k: s[k] for k in ("compiles", "graph_breaks", "recompiles", "kernels")}

    def grouped_breaks(self) -> list[BreakGroup]:
        return group_breaks(self.breaks)

    def unknown_kinds(self) -> Counter:
        total: Counter = Counter()
        for f in self.files:
            total.update(f.unknown)
        return total


@dataclass(eq=False)
class Recompile:
    compile: Compile
    reasons: list[str] = field(default_factory=list)
    record: Record | None = None


@dataclass(eq=False)
class Failure:
    compile: Compile | None
    fail_type: str
    reason: str
    location: str = ""
    record: Record | None = None
    source: str = "compilation_metrics"  # or dynamo_error

    @property
    def is_recompile_limit(self) -> bool:
        return "recompile limit" in self.reason.lower() or "recompile_limit" in self.reason


@dataclass(eq=False)
class CacheEvent:
    compile: Compile | None
    cache: str  # fx_graph / aotautograd / ...
    result: str  # hit / miss / bypass
    record: Record


KERNEL_KINDS = ("pointwise", "reduction", "persistent", "template", "cpp", "user", "other")


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


@dataclass(eq=False)
class Kernel:
    name: str
    method: str  # async_compile.<method>
    output: Record  # the inductor_output_code record
    index: int  # position among this output code's kernels
    compile: Compile | None = None

    @property
    def kind(self) -> str:
        return kernel_kind(self.name, self.method)


@dataclass(eq=False)
class Compile:
    file: Any
    key: CompileKey
    frame: Frame | None = None
    records: list[Record] = field(default_factory=list)
    attempts: Counter = field(default_factory=Counter)  # attempt -> record count
    metrics: dict | None = None
    metric_records: list[Record] = field(default_factory=list)
    breaks: list[GraphBreak] = field(default_factory=list)
    recompile: Recompile | None = None
    failures: list[Failure] = field(default_factory=list)
    cache: list[CacheEvent] = field(default_factory=list)
    kernels: list[Kernel] = field(default_factory=list)
    chromium: int = 0  # chromium_event records (timing), read from disk on demand
    chromium_at: list[int] = field(default_factory=list)  # their header offsets
    minor: int = 0  # describe_* records (inputs' fake-tensor metadata), read on demand
    order: int = 0

    @property
    def id_text(self) -> str:
        return self.key.text

    @property
    def has_break(self) -> bool:
        if self.breaks or len(self.attempts) > 1:
            return True
        return bool(self.metrics and self.metrics.get("restart_reasons"))

    @property
    def status(self) -> str:
        if self.failures or (self.metrics and self.metrics.get("fail_type")):
            return "failed"
        if self.has_break:
            return "graph break"
        if self.key.is_recompile:
            return "recompile"
        if any(c.result == "hit" for c in self.cache) and not any(
            c.result == "miss" for c in self.cache
        ):
            return "cache hit"
        return "ok"

    @property
    def compile_time_s(self) -> float | None:
        m = self.metrics
        if not m:
            return None
        value = m.get("entire_frame_compile_time_s")
        if isinstance(value, (int, float)):
            return float(value)
        dur = m.get("duration_us")
        return dur / 1e6 if isinstance(dur, (int, float)) else None

    def phases(self) -> list[tuple[str, float, int]]:
        """(phase, seconds, depth) from this compile's chromium B/E events, in start order."""
        cached = getattr(self, "_phases", None)
        if cached is not None:
            return cached
        read = getattr(self.file, "chromium_payloads", None)
        events = read(self.chromium_at) if read is not None and self.chromium_at else []
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
        self._phases = out
        return out

    def records_of(self, kind: str) -> list[Record]:
        return [r for r in self.records if r.kind == kind or r.name == kind]

    @property
    def output_codes(self) -> list[Record]:
        return [r for r in self.records if r.kind in ("inductor_output_code", "output_code")]
