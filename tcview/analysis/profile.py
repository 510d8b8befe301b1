"""Join a profiler trace's kernels to what made them: the model's compiled kernels, the extern
kernels (cuBLAS, cuDNN, attention) a compiled graph launched, and eager ops.

A GPU profile's kernels (cat "kernel") are tied to the CPU call that launched them through their
correlation id; the CPU ops around that call say which compiled graph ran (``## Call
CompiledFxGraph … ##``), which compile (``Torch-Compiled Region: 0/0``; a backward through the
autograd sequence number of its ``CompiledFunction``) and which op launched it. A CPU profile
has no kernel events: its kernels are the CPU ops that call no other op (Inductor's C++ kernels
are such ops with ``cpp.enable_kernel_profile``), and their own ranges are their context.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tcview.analysis.kernels import OUTPUT_CODES, kernel_num_gb
from tcview.analysis.provenance import SourceLine, Unit, compile_units
from tcview.model.objects import Compile, Kernel, Model

GRAPH_PREFIX = "## Call "  # ``## Call CompiledFxGraph KEY ##`` and friends (AOTInductor)
REGION_PREFIX = "Torch-Compiled Region: "
FORWARD, BACKWARD = "CompiledFunction", "CompiledFunctionBackward"
STEP_PREFIX = "ProfilerStep#"
# The runtime calls that replay a captured CUDA (HIP) graph: every kernel of the graph is
# launched by one such call, with its correlation id.
GRAPH_LAUNCHES = frozenset({"cudaGraphLaunch", "cuGraphLaunch", "hipGraphLaunch"})
REPLAYED = "CUDA graph"  # the launching op shown for a kernel a graph replay launched
# CPU ranges that mark where a kernel ran and never launch one themselves.
_MARKERS = (GRAPH_PREFIX, REGION_PREFIX, STEP_PREFIX, "CompiledFunction")
# How a kernel's name reads in a profile: C++ kernels with enable_kernel_profile record
# ``graph_N_cpp_fused_…`` (their RecordFunctionHandle in the kernel's source).
_CPP_RECORD = re.compile(r'RecordFunctionHandle \w+\("([^"]+)"')
_TRITON_DEF = re.compile(r"^\s*def (\w+)\(", re.M)
_GRAPH_N = re.compile(r"^graph_\d+_")
GENERATED = re.compile(r"^(?:triton_|graph_\d+_cpp_|cpp_fused)")
GAPS_SHOWN = 5
KINDS = ("triton", "cpp", "extern", "overhead", "eager")  # how a kernel came to run
# Ranges torch.compile's own runtime opens around a compiled graph: on CPU, a range of these
# that calls no op is time compiled code costs outside its kernels (guards, wrappers).
OVERHEAD_PREFIXES = (
    "TorchDynamo Cache Lookup",
    "Pregraph bytecode",
    "AOTDispatcher Runtime Wrapper",
    GRAPH_PREFIX,
    REGION_PREFIX,
    "CompiledFunction",
)


# What the join reads of a profile (ingest.profile's classes have these; analysis does not
# import ingest).
class Op(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def ts(self) -> float: ...
    @property
    def end(self) -> float: ...
    @property
    def dur(self) -> float: ...
    @property
    def thread(self) -> tuple[int, Any, Any]: ...  # (file index, pid, tid)
    @property
    def seq(self) -> int | None: ...


class DeviceKernelLike(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def ts(self) -> float: ...
    @property
    def dur(self) -> float: ...
    @property
    def device(self) -> tuple[int, Any]: ...
    @property
    def correlation(self) -> int | None: ...


class LaunchLike(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def ts(self) -> float: ...
    @property
    def thread(self) -> Hashable: ...


class FileLike(Protocol):
    @property
    def steps(self) -> list[int]: ...


class ProfileLike(Protocol):
    @property
    def files(self) -> Sequence[FileLike]: ...
    @property
    def kernels(self) -> Sequence[DeviceKernelLike]: ...
    @property
    def launches(self) -> Mapping[tuple[int, int], LaunchLike]: ...
    @property
    def cpu_ops(self) -> Sequence[Op]: ...


@dataclass(slots=True)
class Context:
    """What the CPU side was doing when a kernel was launched (or, on CPU, ran)."""

    op: str | None = None  # the innermost op that is not a marker
    graph: str | None = None  # the compiled graph's record function
    region: str | None = None  # the compile id of ``Torch-Compiled Region``
    direction: str | None = None  # CompiledFunction or CompiledFunctionBackward
    seq: int | None = None  # its autograd sequence number
    step: int | None = None
    pid: Any = None  # the CPU process (a trace file's pid tells ranks apart)
    call: Hashable = None  # which run of the compiled graph (its range's thread and start)


@dataclass
class KernelTime:
    """One kernel name as it ran, for one compile (or eager, or several compiles)."""

    name: str
    kind: str  # one of KINDS
    compile: Compile | None = None
    kernel: Kernel | None = None  # the model's kernel (triton, cpp)
    candidates: list[Compile] = field(default_factory=list)  # when the name is ambiguous
    op: str | None = None  # the launching op (extern, eager)
    calls: int = 0
    time_us: float = 0.0
    share: float = 0.0
    num_gb: float | None = None  # bytes moved per launch, from ``kernel_num_gb``
    event_name: str | None = None  # the profile's name when it differs (``triton_``)
    lines: list[SourceLine] = field(default_factory=list)  # the user lines it was made from

    @property
    def compile_label(self) -> str | None:
        if self.compile is not None:
            return self.compile.id_label
        if self.candidates:
            return " or ".join(sorted({c.id_label for c in self.candidates}))
        return None

    @property
    def ambiguous(self) -> bool:
        return self.compile is None and len(self.candidates) > 1

    @property
    def avg_us(self) -> float:
        return self.time_us / self.calls if self.calls else 0.0

    @property
    def gb_s(self) -> float | None:
        if self.num_gb is None or not self.avg_us:
            return None
        return self.num_gb / (self.avg_us * 1e-6)


@dataclass
class OpTime:
    op: str
    calls: int = 0
    time_us: float = 0.0
    share: float = 0.0


@dataclass
class Idle:
    """Time within the kernels' window when no kernel ran (per device, summed)."""

    window_us: float = 0.0
    busy_us: float = 0.0
    gaps: list[tuple[float, float]] = field(default_factory=list)  # (offset µs, length µs)

    @property
    def idle_us(self) -> float:
        return max(0.0, self.window_us - self.busy_us)


@dataclass
class RuntimeJoin:
    """A profile joined to a model."""

    device: str  # "gpu" or "cpu"
    total_us: float = 0.0  # the sum of every kernel event
    events: int = 0  # kernel events
    rows: list[KernelTime] = field(default_factory=list)  # by time, longest first
    eager_ops: list[OpTime] = field(default_factory=list)
    by_compile: list[tuple[Compile, float]] = field(default_factory=list)
    by_frame: list[tuple[str, float]] = field(default_factory=list)
    by_line: list[tuple[SourceLine, float, list[str]]] = field(default_factory=list)
    idle: Idle = field(default_factory=Idle)
    unmatched: int = 0  # generated-looking kernel events not found among the model's kernels
    ambiguous: int = 0  # kernel events whose name more than one compile defines
    replayed: int = 0  # kernel events a CUDA graph replay launched
    steps: list[int] = field(default_factory=list)

    @property
    def unit(self) -> str:
        """What its time is of, in words: a CPU profile's kernels are ops."""
        return "GPU" if self.device == "gpu" else "CPU-kernel"

    def time_of(self, kinds: Iterable[str]) -> float:
        wanted = set(kinds)
        return sum(r.time_us for r in self.rows if r.kind in wanted)

    @property
    def compiled_share(self) -> float:
        return self.time_of(("triton", "cpp", "extern")) / self.total_us if self.total_us else 0.0


# ---------------------------------------------------------------------- names


def profile_names(
    model: Model,
    num_gb: dict[int, float | None] | None = None,
    sources: dict[int, int] | None = None,
) -> dict[str, list[Kernel]]:
    """Each name a profile may give a compiled kernel -> the model's kernels of that name.
    By the kernel's id, `num_gb` gets the GB a Triton kernel moves per launch where known,
    `sources` a hash of its definition's text."""
    names: dict[str, list[Kernel]] = defaultdict(list)
    for kernel in model.kernels:
        seen = {kernel.name}
        try:
            code = OUTPUT_CODES.get(kernel.output)
            span = code.span_of(kernel)
        except (OSError, ValueError):
            span = None
        if span is not None:
            source = span.source(code.lines)
            pattern = _CPP_RECORD if kernel.kind == "cpp" else _TRITON_DEF
            seen.update(pattern.findall(source)[:1])
            if sources is not None:
                sources[id(kernel)] = hash(source)
            if num_gb is not None and kernel.kind != "cpp":
                num_gb[id(kernel)] = kernel_num_gb(code, span)
        for name in seen:
            names[name].append(kernel)
    return names


# ---------------------------------------------------------------------- CPU context


class _Walk:
    """The CPU ops of every thread, nested: the context of a time on a thread, and which ops
    call no other op (leaves)."""

    def __init__(self, ops: Sequence[Op]) -> None:
        self.threads: dict[Hashable, list[Op]] = defaultdict(list)
        for op in ops:
            self.threads[op.thread].append(op)
        # The compile of each forward's autograd sequence number, for its backward (which
        # runs on another thread, outside the region): every thread walked once.
        self.seq_region: dict[int, str] = {}
        for spans in self.threads.values():
            spans.sort(key=lambda s: (s.ts, -s.end))
            stack: list[Any] = []
            for span in spans:
                while stack and stack[-1].end <= span.ts:
                    stack.pop()
                if span.name == FORWARD and span.seq is not None:
                    region = _innermost(stack, REGION_PREFIX)
                    if region is not None:
                        self.seq_region[span.seq] = region
                stack.append(span)

    def leaves(self) -> list[tuple[Op, Context]]:
        """Ops that call no other op, each with the context of its callers."""
        out: list[tuple[Op, Context]] = []
        for spans in self.threads.values():
            stack: list[Any] = []
            for i, span in enumerate(spans):
                while stack and stack[-1].end <= span.ts:
                    stack.pop()
                nxt = spans[i + 1] if i + 1 < len(spans) else None
                if nxt is None or nxt.ts >= span.end:
                    ctx = _context(stack, span)
                    ctx.pid = span.thread[1]
                    out.append((span, ctx))
                stack.append(span)
        return out

    def contexts(self, queries: Sequence[tuple[Any, float]]) -> list[Context]:
        """The context of each (thread, time)."""
        by_thread: dict[Any, list[int]] = defaultdict(list)
        for i, (thread, _) in enumerate(queries):
            by_thread[thread].append(i)
        out: list[Context] = [Context() for _ in queries]
        for thread, idx in by_thread.items():
            idx.sort(key=lambda i: queries[i][1])
            spans = self.threads.get(thread, [])
            stack: list[Any] = []
            j = 0
            for i in idx:
                t = queries[i][1]
                while j < len(spans) and spans[j].ts <= t:
                    while stack and stack[-1].end <= spans[j].ts:
                        stack.pop()
                    stack.append(spans[j])
                    j += 1
                while stack and stack[-1].end < t:
                    stack.pop()
                out[i] = _context(stack, None)
                out[i].pid = thread[1] if isinstance(thread, tuple) else None
        return out


def _innermost(stack: Sequence[Any], prefix: str) -> str | None:
    for span in reversed(stack):
        if span.name.startswith(prefix):
            return str(span.name[len(prefix) :])
    return None


def _context(stack: Sequence[Any], leaf: Any) -> Context:
    ctx = Context()
    for span in reversed(stack):
        name = span.name
        if name.startswith(GRAPH_PREFIX):
            if ctx.graph is None:
                ctx.graph, ctx.call = name, (span.thread, span.ts)
        elif name.startswith(REGION_PREFIX):
            ctx.region = ctx.region or name[len(REGION_PREFIX) :]
        elif name in (FORWARD, BACKWARD):
            if ctx.direction is None:
                ctx.direction, ctx.seq = name, span.seq
        elif name.startswith(STEP_PREFIX):
            digits = name[len(STEP_PREFIX) :]
            ctx.step = int(digits) if digits.isdigit() else None
        elif ctx.op is None and not name.startswith(_MARKERS):
            ctx.op = name
    if leaf is not None:
        ctx.op = leaf.name
    return ctx


# ---------------------------------------------------------------------- the join


@dataclass(slots=True)
class _Event:
    name: str
    ts: float
    dur: float
    device: Any
    ctx: Context
    replay: Hashable = None  # the graph launch (file, correlation) that ran it, if one did


def _events(profile: ProfileLike) -> tuple[str, list[_Event], _Walk]:
    walk = _Walk(profile.cpu_ops)
    if profile.kernels:
        queries: list[tuple[Any, float]] = []
        replays: list[Hashable] = []
        for k in profile.kernels:
            launch = (
                profile.launches.get((k.device[0], k.correlation))
                if k.correlation is not None
                else None
            )
            queries.append((launch.thread, launch.ts) if launch else (None, 0.0))
            replayed = launch is not None and launch.name in GRAPH_LAUNCHES
            replays.append((k.device[0], k.correlation) if replayed else None)
        ctxs = walk.contexts(queries)
        events = [
            _Event(k.name, k.ts, k.dur, k.device, c, r)
            for k, c, r in zip(profile.kernels, ctxs, replays, strict=True)
        ]
        return "gpu", events, walk
    events = [_Event(op.name, op.ts, op.dur, op.thread[:2], ctx) for op, ctx in walk.leaves()]
    return "cpu", events, walk


def join_profile(model: Model, profile: ProfileLike) -> RuntimeJoin:
    """Every kernel event of `profile` (an ingest.profile.Profile) tied to its maker."""
    device, events, walk = _events(profile)
    num_gb: dict[int, float | None] = {}
    sources: dict[int, int] = {}
    names = profile_names(model, num_gb, sources)
    compiles_by_id: dict[str, list[Compile]] = defaultdict(list)
    for f in model.files:
        for each in f.compiles.values():
            compiles_by_id[each.id_text].append(each)
    out = RuntimeJoin(device, events=len(events))
    out.steps = sorted({s for f in profile.files for s in f.steps})
    matched = [_match(ev, names, walk, sources) for ev in events]
    replay_compile = _replay_compiles(events, matched)
    # Runs of a compiled graph that replayed a CUDA graph: what else they launched is the CUDA
    # graph's own work around the replay (copying inputs into the graph's static buffers).
    replaying = {ev.ctx.call for ev in events if ev.replay is not None and ev.ctx.call}
    rows: dict[tuple[Any, ...], KernelTime] = {}

    def row_of(key: tuple[Any, ...], *made: Any, **named: Any) -> KernelTime:
        row = rows.get(key)
        if row is None:
            row = rows[key] = KernelTime(*made, **named)
        return row

    comp: Compile | None
    for ev, (cands, name, region) in zip(events, matched, strict=True):
        ctx = ev.ctx
        out.replayed += ev.replay is not None
        op = REPLAYED if ev.replay is not None else ctx.op
        if cands:
            row = _model_kernel_row(rows, cands, name, ev.name, num_gb)
            out.ambiguous += len(cands) > 1
        elif ctx.graph is not None and ev.replay is None and ctx.call in replaying:
            found = compiles_by_id.get(region or "", [])
            comp = found[0] if len(found) == 1 else None
            row = row_of(
                (ev.name, "overhead", id(comp), ctx.op), ev.name, "overhead", comp, op=ctx.op
            )
        elif ctx.graph is not None or ev.replay is not None:
            # Launched by a compiled graph (or replayed from its CUDA graph): an extern kernel,
            # or (a generated name the trace does not define) a kernel of a compile the trace
            # lacks.
            generated = GENERATED.match(ev.name) is not None
            out.unmatched += generated
            kind = ("cpp" if "cpp_" in ev.name else "triton") if generated else "extern"
            found = compiles_by_id.get(region or "", [])
            comp = found[0] if len(found) == 1 and not generated else None
            if comp is None and not generated and ev.replay is not None:
                comp = replay_compile.get(ev.replay)
            row = row_of(
                (ev.name, kind, id(comp), op), ev.name, kind, comp, op=None if generated else op
            )
        elif device == "cpu" and ev.name.startswith(OVERHEAD_PREFIXES):
            row = row_of((ev.name, "overhead"), ev.name, "overhead")
        else:
            out.unmatched += GENERATED.match(ev.name) is not None
            row = row_of((ev.name, "eager", ctx.op), ev.name, "eager", op=ctx.op)
        row.calls += 1
        row.time_us += ev.dur
        out.total_us += ev.dur
    out.rows = sorted(rows.values(), key=lambda r: -r.time_us)
    for row in out.rows:
        row.share = row.time_us / out.total_us if out.total_us else 0.0
    out.eager_ops = _eager_ops(out)
    out.by_compile, out.by_frame = _by_compile(out.rows)
    out.by_line = _by_line(out.rows)
    out.idle = _idle(events)
    return out


def _model_kernel_row(
    rows: dict[tuple[Any, ...], KernelTime],
    cands: list[Kernel],
    name: str,
    event_name: str,
    num_gb: Mapping[int, float | None],
) -> KernelTime:
    """The row of a kernel the model has (one of `cands`, when they are several)."""
    kernel = cands[0] if len(cands) == 1 else None
    comp = kernel.compile if kernel is not None else _one_compile(cands)
    kind = "cpp" if cands[0].kind == "cpp" else "triton"
    key: tuple[Any, ...] = (name, kind, id(kernel), id(comp), len(cands))
    row = rows.get(key)
    if row is None:
        row = rows[key] = KernelTime(name, kind, comp, kernel)
        if name != event_name:
            row.event_name = event_name
        if kernel is None and comp is None:
            row.candidates = [c.compile for c in cands if c.compile is not None]
        if kernel is not None and kind == "triton":
            row.num_gb = num_gb.get(id(kernel))
    return row


def _match(
    ev: _Event, names: Mapping[str, list[Kernel]], walk: _Walk, sources: Mapping[int, int]
) -> tuple[list[Kernel], str, str | None]:
    """The model's kernels `ev` may be (by its name, narrowed by its context), the name it
    matched by, and the compile id its context names."""
    ctx = ev.ctx
    region = ctx.region
    if region is None and ctx.direction == BACKWARD and ctx.seq is not None:
        region = walk.seq_region.get(ctx.seq)
    cands = names.get(ev.name) or names.get(_GRAPH_N.sub("", ev.name)) or []
    cands = _narrow(cands, ctx, region, sources) if cands else cands
    name = ev.name
    if len(cands) != 1 and ctx.op in names and GENERATED.match(ev.name):
        # Without unique kernel names every Triton kernel is `triton_` on the GPU; the
        # record function Inductor's launcher opens around it has the kernel's name.
        by_op = _narrow(names[str(ctx.op)], ctx, region, sources)
        if not cands or len(by_op) < len(cands):
            cands, name = by_op, str(ctx.op)
    return cands, name, region


def _replay_compiles(
    events: Sequence[_Event], matched: Sequence[tuple[list[Kernel], str, str | None]]
) -> dict[Hashable, Compile]:
    """The compile of each graph replay whose generated kernels all belong to one compile:
    one captured graph is one compiled graph's work, so its extern kernels (cuBLAS, attention)
    are that compile's too, whatever the CPU ranges around the launch say."""
    seen: dict[Hashable, set[int]] = defaultdict(set)
    found: dict[Hashable, Compile] = {}
    for ev, (cands, _, _) in zip(events, matched, strict=True):
        if ev.replay is None or not cands:
            continue
        comp = cands[0].compile if len(cands) == 1 else _one_compile(cands)
        seen[ev.replay].add(id(comp) if comp is not None else 0)
        if comp is not None:
            found[ev.replay] = comp
    return {r: c for r, c in found.items() if seen[r] == {id(c)}}


def _narrow(
    cands: list[Kernel], ctx: Context, region: str | None, sources: Mapping[int, int]
) -> list[Kernel]:
    """Keep the candidates that the process (a rank's trace file), the compile id and the
    graph's direction allow."""
    if len(cands) > 1 and ctx.pid is not None:
        same = [k for k in cands if k.compile is not None and k.compile.file.pid == ctx.pid]
        cands = same or cands
    direction = ctx.direction
    if len(cands) > 1 and region is not None:
        same = [k for k in cands if k.compile is not None and k.compile.id_text == region]
        cands = same or cands
    if len(cands) > 1 and direction is not None:
        roles = ("backward",) if direction == BACKWARD else ("forward", "inference")
        same = [k for k in cands if k.role in roles]
        cands = same or cands
    if len({(id(k.compile), k.role, sources.get(id(k))) for k in cands}) == 1:
        return cands[:1]  # one graph's kernel, written twice (its output code logged again)
    return cands


def _one_compile(cands: Sequence[Kernel]) -> Compile | None:
    comps = {id(k.compile): k.compile for k in cands if k.compile is not None}
    return next(iter(comps.values())) if len(comps) == 1 else None


def _eager_ops(join: RuntimeJoin) -> list[OpTime]:
    ops: dict[str, OpTime] = {}
    for row in join.rows:
        if row.kind != "eager":
            continue
        op = ops.setdefault(row.op or row.name, OpTime(row.op or row.name))
        op.calls += row.calls
        op.time_us += row.time_us
    for op in ops.values():
        op.share = op.time_us / join.total_us if join.total_us else 0.0
    return sorted(ops.values(), key=lambda o: -o.time_us)


def _by_compile(
    rows: Sequence[KernelTime],
) -> tuple[list[tuple[Compile, float]], list[tuple[str, float]]]:
    comps: dict[int, list[Any]] = {}
    frames: dict[str, float] = defaultdict(float)
    for row in rows:
        if row.compile is None:
            continue
        entry = comps.setdefault(id(row.compile), [row.compile, 0.0])
        entry[1] += row.time_us
        frame = row.compile.frame
        frames[frame.label if frame is not None else f"frame {row.compile.id_text}"] += row.time_us
    by_compile = sorted(((c, t) for c, t in comps.values()), key=lambda x: -x[1])
    return by_compile, sorted(frames.items(), key=lambda x: -x[1])


def _by_line(rows: Sequence[KernelTime]) -> list[tuple[SourceLine, float, list[str]]]:
    """The time of the kernels each user line became (a kernel made from several lines counts
    toward each of them). Each compile's provenance is read once."""
    units: dict[int, list[Unit]] = {}
    lines: dict[SourceLine, list[Any]] = {}
    for row in rows:
        kernel = row.kernel
        if kernel is None or kernel.compile is None:
            continue
        try:
            if id(kernel.compile) not in units:
                units[id(kernel.compile)] = compile_units(kernel.compile)
        except (OSError, ValueError):
            units[id(kernel.compile)] = []
        unit = next((u for u in units[id(kernel.compile)] if u.code is kernel.output), None)
        prov = unit.kernel_for(kernel) if unit is not None else None
        if prov is None:
            continue
        row.lines = list(prov.user_lines)
        for line in prov.user_lines:
            entry = lines.setdefault(line, [0.0, []])
            entry[0] += row.time_us
            if row.name not in entry[1]:
                entry[1].append(row.name)
    return sorted(((ln, t, ks) for ln, (t, ks) in lines.items()), key=lambda x: -x[1])


def _idle(events: Sequence[_Event]) -> Idle:
    """Busy and idle time of each device within its kernels' window, summed; the longest gaps."""
    out = Idle()
    per_device: dict[Any, list[tuple[float, float]]] = defaultdict(list)
    for ev in events:
        per_device[ev.device].append((ev.ts, ev.ts + ev.dur))
    gaps: list[tuple[float, float]] = []
    for spans in per_device.values():
        spans.sort()
        first = spans[0][0]
        out.window_us += max(end for _, end in spans) - first
        cur_start, cur_end = spans[0]
        for start, end in spans[1:]:
            if start > cur_end:
                out.busy_us += cur_end - cur_start
                gaps.append((cur_end - first, start - cur_end))
                cur_start = start
            cur_end = max(cur_end, end)
        out.busy_us += cur_end - cur_start
    out.gaps = sorted(gaps, key=lambda g: -g[1])[:GAPS_SHOWN]
    return out
