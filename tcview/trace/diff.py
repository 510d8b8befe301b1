"""Diffs: two compiles (a recompile and the compile it replaced), and two runs.

A compile diff compares the guards (added, removed, changed: the same guard on the same source
with another value), the Dynamo graph's code, the AOT graphs, the output code's kernels (same,
changed, new, gone, renamed: matched by name, kind and a fingerprint of their source) and the
compile times. A run diff compares two models: compiles per frame (frames matched by function,
file and first line, never by id), graph breaks (by cause and location), recompiles,
failures, errors, kernels, compile time per frame and phase, and cache results.

Pure: reads payloads (guards, graphs, output code) from disk; call it off the UI thread.
Text is compared with difflib; nothing from a trace is executed.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .facts import short_guard
from .kernels import split_output_code
from .model import Compile, Frame, Kernel, Model, Record, short_location

# ---------------------------------------------------------------------- text


SAME, REMOVED, ADDED, CHANGED, NEW, GONE, RENAMED, MOVED = (
    "same",
    "removed",
    "added",
    "changed",
    "new",
    "gone",
    "renamed",
    "moved",
)
CONTEXT = 3  # unchanged lines kept around a change
DIFF_LIMIT = 20_000  # lines of one side compared (more are cut, with a note)
INTRALINE_LIMIT = 2_000  # longer line pairs are not compared character by character


@dataclass
class DiffLine:
    """A line of a unified diff: ``" "`` same, ``"-"`` only in A, ``"+"`` only in B,
    ``"…"`` a run of same lines left out (`text` says how many). `marks`: the character
    spans that differ from the paired line on the other side."""

    op: str
    text: str
    a_no: int | None = None  # 1-based line in A
    b_no: int | None = None
    marks: list[tuple[int, int]] = field(default_factory=list)


def _char_marks(a: str, b: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    if len(a) + len(b) > INTRALINE_LIMIT:
        return [(0, len(a))], [(0, len(b))]
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    ma: list[tuple[int, int]] = []
    mb: list[tuple[int, int]] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        if i2 > i1:
            ma.append((i1, i2))
        if j2 > j1:
            mb.append((j1, j2))
    return ma, mb


def text_diff(a: Sequence[str], b: Sequence[str], context: int = CONTEXT) -> list[DiffLine]:
    """A unified diff of two texts (as lines), with the differing characters of replaced
    lines marked; runs of more than 2×`context` same lines are folded into one ``…`` line."""
    a, b = list(a[:DIFF_LIMIT]), list(b[:DIFF_LIMIT])
    out: list[DiffLine] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            n = i2 - i1
            keep = range(n)
            if n > 2 * context + 1:
                first = context if out else 0
                last = context if i2 < len(a) or j2 < len(b) else 0
                keep = range(first)
                for k in keep:
                    out.append(DiffLine(" ", a[i1 + k], i1 + k + 1, j1 + k + 1))
                out.append(DiffLine("…", f"{n - first - last} same lines", None, None))
                for k in range(n - last, n):
                    out.append(DiffLine(" ", a[i1 + k], i1 + k + 1, j1 + k + 1))
                continue
            for k in keep:
                out.append(DiffLine(" ", a[i1 + k], i1 + k + 1, j1 + k + 1))
            continue
        removed = [DiffLine("-", a[i], i + 1, None) for i in range(i1, i2)]
        added = [DiffLine("+", b[j], None, j + 1) for j in range(j1, j2)]
        if op == "replace":
            for old, new in zip(removed, added, strict=False):
                old.marks, new.marks = _char_marks(old.text, new.text)
        out.extend(removed)
        out.extend(added)
    return out


def diff_counts(lines: Iterable[DiffLine]) -> tuple[int, int]:
    """(lines removed, lines added)."""
    c = Counter(line.op for line in lines)
    return c["-"], c["+"]


# ---------------------------------------------------------------------- guards


GUARD_RECORDS = ("dynamo_cpp_guards_str", "dynamo_guards")
_GUARD_LINE = re.compile(r"^[|\s]*\+- ([A-Z][A-Z_]*): (.*)$")
_MANAGER = re.compile(r"^([|\s]*)\+- (?:\w*GuardManager|GuardManager): source=([^,]*)")
_COMMENT = re.compile(r"\s{2,}#.*$|\s+# \(.*$")


@dataclass(frozen=True)
class Guard:
    """One guard of a compile: what it checks (`source`, the enclosing guard manager's
    source, "" at the root), its kind (``TENSOR_MATCH``) and its expression, without the
    comment that says where it came from (`comment`)."""

    source: str
    kind: str
    expr: str
    comment: str = ""

    @property
    def text(self) -> str:
        where = f"{self.source}: " if self.source else ""
        return f"{where}{self.kind}: {self.expr}"


def parse_guards(text: str) -> list[Guard]:
    """The guards of a ``dynamo_cpp_guards_str`` tree (or any text: one guard a line)."""
    out: list[Guard] = []
    stack: list[tuple[int, str]] = []  # (indent, source) of the open guard managers
    tree = "+- " in text
    for raw in text.split("\n"):
        if not raw.strip() or raw.startswith(("TREE_GUARD_MANAGER", "Guard latency")):
            continue
        if not tree:
            out.append(Guard("", "", _COMMENT.sub("", raw).strip(), raw.strip()))
            continue
        indent = len(raw) - len(raw.lstrip("| "))
        m = _MANAGER.match(raw)
        if m is not None:
            while stack and stack[-1][0] >= indent:
                stack.pop()
            stack.append((indent, m.group(2).strip()))
            continue
        g = _GUARD_LINE.match(raw)
        if g is None:
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        body = g.group(2)
        expr = _COMMENT.sub("", body).strip()
        comment = body[len(expr) :].strip() if body.startswith(expr) else ""
        out.append(Guard(stack[-1][1] if stack else "", g.group(1), expr, comment))
    return out


def compile_guards(comp: Compile) -> list[Guard] | None:
    """The guards a compile logged (None: it logged none)."""
    for kind in GUARD_RECORDS:
        records = comp.records_of(kind)
        if records:
            return parse_guards(records[-1].payload())
    return None


@dataclass
class GuardChange:
    status: str  # SAME, ADDED, REMOVED, CHANGED
    a: Guard | None
    b: Guard | None

    @property
    def guard(self) -> Guard:
        guard = self.b if self.b is not None else self.a
        assert guard is not None
        return guard


def guard_diff(a: Sequence[Guard], b: Sequence[Guard]) -> list[GuardChange]:
    """Guards matched by (source, kind) where that pair is one guard on each side (its
    value may have changed), else by their whole text; in B's order, removed ones after
    the guard they followed."""

    def key_counts(guards: Sequence[Guard]) -> Counter[tuple[str, str]]:
        return Counter((g.source, g.kind) for g in guards)

    ca, cb = key_counts(a), key_counts(b)
    unique = {k for k in ca if ca[k] == 1 and cb.get(k) == 1}
    by_key = {(g.source, g.kind): g for g in a if (g.source, g.kind) in unique}
    left = [g for g in a if (g.source, g.kind) not in unique]
    out: list[GuardChange] = []
    used: set[int] = set()
    for g in b:
        k = (g.source, g.kind)
        if k in unique:
            old = by_key[k]
            used.add(id(old))
            out.append(GuardChange(SAME if old.expr == g.expr else CHANGED, old, g))
            continue
        # The same guard: source, kind and expression (the comment may differ).
        match = next(
            (o for o in left if id(o) not in used and (o.source, o.kind, o.expr) == k + (g.expr,)),
            None,
        )
        if match is not None:
            used.add(id(match))
            out.append(GuardChange(SAME, match, g))
        else:
            out.append(GuardChange(ADDED, None, g))
    out.extend(GuardChange(REMOVED, g, None) for g in a if id(g) not in used)
    return _pair_by_source(out)


def _pair_by_source(changes: list[GuardChange]) -> list[GuardChange]:
    """One guard removed and one added on the same source (``L['n'] == 0`` became a type
    check): that source's guard changed."""
    by_source: dict[str, list[GuardChange]] = {}
    for c in changes:
        if c.status in (ADDED, REMOVED) and c.guard.source:
            by_source.setdefault(c.guard.source, []).append(c)
    for pair in by_source.values():
        statuses = sorted(c.status for c in pair)
        if statuses != [ADDED, REMOVED]:
            continue
        added = next(c for c in pair if c.status == ADDED)
        removed = next(c for c in pair if c.status == REMOVED)
        added.status, added.a = CHANGED, removed.a
        changes.remove(removed)
    return changes


# ---------------------------------------------------------------------- kernels


_KERNEL_PATH = re.compile(r"^\s*# kernel path: .*$", re.M)
_BACKEND_HASH = re.compile(r"'backend_hash': '[0-9A-Fa-f]+',?\s*")


def kernel_fingerprint(source: str, name: str) -> str:
    """A digest of a kernel's source that ignores its own name, the cache path and the
    backend hash (two runs' copies of one kernel compare equal)."""
    text = _KERNEL_PATH.sub("", source)
    text = _BACKEND_HASH.sub("", text)
    if name:
        text = text.replace(name, "KERNEL")
    return hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=12).hexdigest()


@dataclass(frozen=True)
class KernelInfo:
    name: str
    kind: str
    digest: str  # `kernel_fingerprint` ("" when its source was not found)
    where: str  # the compile id, with the output code's position when it has several

    @property
    def key(self) -> tuple[str, str]:
        return (self.name, self.kind)


def output_kernels(rec: Record, kernels: Sequence[Kernel], where: str) -> list[KernelInfo]:
    """The kernels of one output code, with their fingerprints (reads the payload)."""
    text = rec.payload()
    lines = text.split("\n")
    spans = {s.name: s for s in split_output_code(text)}
    out = []
    for k in kernels:
        span = spans.get(k.name)
        digest = kernel_fingerprint(span.source(lines), k.name) if span is not None else ""
        out.append(KernelInfo(k.name, k.kind, digest, where))
    return out


def compile_kernels(comp: Compile) -> list[KernelInfo]:
    out: list[KernelInfo] = []
    codes = comp.output_codes
    for i, rec in enumerate(codes):
        where = comp.id_label + (f" #{i + 1}" if len(codes) > 1 else "")
        out.extend(output_kernels(rec, [k for k in comp.kernels if k.output is rec], where))
    return out


@dataclass
class KernelChange:
    status: str  # SAME, CHANGED (same name and kind, other source), NEW, GONE, RENAMED
    a: KernelInfo | None
    b: KernelInfo | None

    @property
    def name(self) -> str:
        k = self.b if self.b is not None else self.a
        return k.name if k is not None else ""

    @property
    def kind(self) -> str:
        k = self.b if self.b is not None else self.a
        return k.kind if k is not None else ""


def kernel_diff(a: Sequence[KernelInfo], b: Sequence[KernelInfo]) -> list[KernelChange]:
    """Kernels matched by name and kind (same or changed source), then the rest by source
    fingerprint (renamed); what is left is new (B only) or gone (A only). A name that
    occurs several times (recompiles) is one kernel: changed when its sources differ."""

    def grouped(infos: Sequence[KernelInfo]) -> dict[tuple[str, str], list[KernelInfo]]:
        out: dict[tuple[str, str], list[KernelInfo]] = {}
        for info in infos:
            out.setdefault(info.key, []).append(info)
        return out

    ga, gb = grouped(a), grouped(b)
    out: list[KernelChange] = []
    only_a = [infos[0] for key, infos in ga.items() if key not in gb]
    only_b = [infos[0] for key, infos in gb.items() if key not in ga]
    for key, infos in gb.items():
        before = ga.get(key)
        if before is None:
            continue
        same = {i.digest for i in before} == {i.digest for i in infos}
        out.append(KernelChange(SAME if same else CHANGED, before[0], infos[0]))
    by_digest: dict[str, KernelInfo] = {}
    for info in only_a:
        if info.digest:
            by_digest.setdefault(info.digest, info)
    gone = list(only_a)
    for info in only_b:
        old = by_digest.pop(info.digest, None) if info.digest else None
        if old is not None and old.kind == info.kind:
            gone.remove(old)
            out.append(KernelChange(RENAMED, old, info))
        else:
            out.append(KernelChange(NEW, None, info))
    out.extend(KernelChange(GONE, info, None) for info in gone)
    return out


# ---------------------------------------------------------------------- compile diff


GRAPH_RECORDS = (
    ("dynamo_output_graph", "Dynamo graph"),
    ("aot_joint_graph", "AOT joint graph"),
    ("aot_forward_graph", "AOT forward graph"),
    ("aot_backward_graph", "AOT backward graph"),
    ("aot_inference_graph", "AOT inference graph"),
)


@dataclass
class GraphDiff:
    label: str
    lines: list[DiffLine]
    in_a: bool
    in_b: bool


@dataclass
class CompileDiff:
    a: Compile
    b: Compile
    guards: list[GuardChange] | None  # None: a compile logged no guards (`guards_logged`)
    guards_logged: tuple[bool, bool]
    graphs: list[GraphDiff]
    kernels: list[KernelChange]
    times: list[tuple[str, float | None, float | None]]  # (phase, A seconds, B seconds)
    reasons: list[str]  # why B was compiled (its recompile reasons)

    @property
    def guard_counts(self) -> Counter[str]:
        return Counter(c.status for c in self.guards or [])

    @property
    def kernel_counts(self) -> Counter[str]:
        return Counter(c.status for c in self.kernels)


def predecessor(comp: Compile) -> Compile | None:
    """The compile a recompile replaced: the same frame's compile with the highest
    frame_compile_id below its own, in the same episode (the frame is per episode)."""
    frame = comp.frame
    mine = comp.key.frame_compile_id
    if frame is None or not isinstance(mine, int):
        return None
    earlier = [
        c
        for c in frame.compiles
        if isinstance(c.key.frame_compile_id, int) and c.key.frame_compile_id < mine
    ]
    return max(earlier, key=lambda c: c.key.frame_compile_id or 0) if earlier else None


def _payload_lines(comp: Compile, kind: str) -> list[str] | None:
    records = comp.records_of(kind)
    return records[-1].payload().split("\n") if records else None


def compile_times(a: Compile, b: Compile) -> list[tuple[str, float | None, float | None]]:
    pa = {label: v for label, v, _ in a.metric_phases()}
    pb = {label: v for label, v, _ in b.metric_phases()}
    labels = list(pa) + [k for k in pb if k not in pa]
    return [(label, pa.get(label), pb.get(label)) for label in labels]


def compile_diff(a: Compile, b: Compile) -> CompileDiff:
    ga, gb = compile_guards(a), compile_guards(b)
    guards = guard_diff(ga, gb) if ga is not None and gb is not None else None
    graphs = []
    for kind, label in GRAPH_RECORDS:
        la, lb = _payload_lines(a, kind), _payload_lines(b, kind)
        if la is None and lb is None:
            continue
        graphs.append(
            GraphDiff(label, text_diff(la or [], lb or []), la is not None, lb is not None)
        )
    kernels = kernel_diff(compile_kernels(a), compile_kernels(b))
    reasons = b.recompile.reasons if b.recompile is not None else []
    logged = (ga is not None, gb is not None)
    return CompileDiff(a, b, guards, logged, graphs, kernels, compile_times(a, b), reasons)


# ---------------------------------------------------------------------- run diff


@dataclass(frozen=True)
class FrameSig:
    """What identifies a frame across runs: its function, file (by name) and first line."""

    name: str
    file: str
    line: int | None

    @property
    def text(self) -> str:
        return f"{self.name} ({self.file}:{'?' if self.line is None else self.line})"


def frame_sig(frame: Frame) -> FrameSig:
    if frame.co_name:
        line = frame.co_firstlineno
        return FrameSig(
            frame.co_name,
            Path(frame.co_filename or "?").name,
            line if isinstance(line, int) else None,
        )
    code = frame.code_frame
    if code is not None:
        line = code.line
        return FrameSig(
            code.name, Path(code.filename).name, line if isinstance(line, int) else None
        )
    return FrameSig(f"frame {frame.id_text}", "?", None)


@dataclass
class Side:
    """One frame's numbers in one run."""

    frames: int = 0
    compiles: int = 0
    recompiles: int = 0
    breaks: int = 0
    failures: int = 0
    cache_hits: int = 0
    time_s: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)
    statuses: Counter[str] = field(default_factory=Counter)

    def add(self, frame: Frame) -> None:
        self.frames += 1
        for comp in frame.compiles:
            self.compiles += 1
            self.recompiles += comp.key.is_recompile
            self.breaks += len(comp.breaks)
            self.failures += len(comp.failures)
            self.cache_hits += comp.cache_hit
            self.time_s += comp.compile_time_s or 0.0
            self.statuses[comp.status] += 1
            for label, value, depth in comp.metric_phases():
                if depth <= 2:
                    self.phases[label] = self.phases.get(label, 0.0) + value

    @property
    def shape(self) -> tuple[object, ...]:
        """What must be equal for a frame to count as unchanged (times aside)."""
        return (
            self.compiles,
            self.recompiles,
            self.breaks,
            self.failures,
            self.cache_hits,
            sorted(self.statuses.items()),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "frames": self.frames,
            "compiles": self.compiles,
            "recompiles": self.recompiles,
            "graph_breaks": self.breaks,
            "failures": self.failures,
            "cache_hits": self.cache_hits,
            "compile_time_s": round(self.time_s, 6),
            "phases_s": {k: round(v, 6) for k, v in self.phases.items()},
            "statuses": dict(self.statuses),
        }


@dataclass
class FrameDiff:
    sig: FrameSig
    a: Side
    b: Side

    @property
    def status(self) -> str:
        if not self.a.frames:
            return NEW
        if not self.b.frames:
            return GONE
        return SAME if self.a.shape == self.b.shape else CHANGED


@dataclass
class CountChange:
    """A thing counted in both runs (a graph break cause at a location, a failure, a
    recompile reason): NEW, GONE, MOVED (same cause, another line), CHANGED (count), SAME."""

    what: str
    where: str
    a: int
    b: int
    status: str = ""
    a_where: str = ""  # for MOVED: where it was in A

    def settle(self) -> CountChange:
        if not self.status:
            if not self.a:
                self.status = NEW
            elif not self.b:
                self.status = GONE
            else:
                self.status = SAME if self.a == self.b else CHANGED
        return self

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "what": self.what, "where": self.where}
        out["a"], out["b"] = self.a, self.b
        if self.a_where:
            out["a_where"] = self.a_where
        return out


def _counted(
    a: Counter[tuple[str, str]], b: Counter[tuple[str, str]], moved: bool = False
) -> list[CountChange]:
    out = [CountChange(w, loc, a[(w, loc)], b[(w, loc)]) for (w, loc) in b]
    out.extend(CountChange(w, loc, a[(w, loc)], 0) for (w, loc) in a if (w, loc) not in b)
    if moved:  # same cause, same file, another line: moved, not new and gone
        new = [c for c in out if not c.a]
        gone = [c for c in out if not c.b]
        for c in new:
            match = next(
                (g for g in gone if g.what == c.what and _file_of(g.where) == _file_of(c.where)),
                None,
            )
            if match is not None:
                gone.remove(match)
                out.remove(match)
                c.a, c.a_where, c.status = match.a, match.where, MOVED
    return [c.settle() for c in out]


def _file_of(where: str) -> str:
    return where.rpartition(":")[0] or where


@dataclass
class RunDiff:
    a_label: str
    b_label: str
    totals: dict[str, tuple[float, float]]
    frames: list[FrameDiff]
    breaks: list[CountChange]
    recompile_reasons: list[CountChange]
    failures: list[CountChange]
    errors: list[CountChange]
    kernels: list[KernelChange]
    cache: dict[str, tuple[int, int]]  # "fx_graph hit" -> (A, B)
    phases: dict[str, tuple[float, float]]

    @property
    def changed(self) -> bool:
        """Anything but compile time differs."""
        if any(f.status != SAME for f in self.frames):
            return True
        lists: list[Sequence[CountChange]] = [
            self.breaks,
            self.recompile_reasons,
            self.failures,
            self.errors,
        ]
        if any(c.status != SAME for items in lists for c in items):
            return True
        if any(k.status != SAME for k in self.kernels):
            return True
        return any(a != b for a, b in self.cache.values())

    def counts(self) -> dict[str, int]:
        """How many of each change (the head of the report, and what `--fail-on` reads)."""
        kernels = Counter(k.status for k in self.kernels)
        frames = Counter(f.status for f in self.frames)
        return {
            "new_frames": frames[NEW],
            "gone_frames": frames[GONE],
            "changed_frames": frames[CHANGED],
            "new_breaks": sum(c.b - c.a for c in self.breaks if c.b > c.a and c.status != MOVED),
            "gone_breaks": sum(c.a - c.b for c in self.breaks if c.a > c.b and c.status != MOVED),
            "moved_breaks": sum(1 for c in self.breaks if c.status == MOVED),
            "new_recompiles": max(
                0, int(self.totals["recompiles"][1] - self.totals["recompiles"][0])
            ),
            "new_failures": sum(c.b - c.a for c in self.failures if c.b > c.a),
            "new_errors": sum(c.b - c.a for c in self.errors if c.b > c.a),
            "new_kernels": kernels[NEW],
            "gone_kernels": kernels[GONE],
            "changed_kernels": kernels[CHANGED],
            "renamed_kernels": kernels[RENAMED],
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a_label,
            "b": self.b_label,
            "changed": self.changed,
            "counts": self.counts(),
            "totals": {k: {"a": a, "b": b} for k, (a, b) in self.totals.items()},
            "frames": [
                {"status": f.status, "frame": f.sig.text, "a": f.a.to_json(), "b": f.b.to_json()}
                for f in self.frames
            ],
            "graph_breaks": [c.to_json() for c in self.breaks],
            "recompile_reasons": [c.to_json() for c in self.recompile_reasons],
            "failures": [c.to_json() for c in self.failures],
            "errors": [c.to_json() for c in self.errors],
            "kernels": [
                {
                    "status": k.status,
                    "name": k.name,
                    "kind": k.kind,
                    **({"a_name": k.a.name} if k.status == RENAMED and k.a else {}),
                }
                for k in self.kernels
                if k.status != SAME
            ]
            + [{"status": SAME, "count": sum(1 for k in self.kernels if k.status == SAME)}],
            "cache": {k: {"a": a, "b": b} for k, (a, b) in self.cache.items()},
            "phases_s": {
                k: {"a": round(a, 6), "b": round(b, 6)} for k, (a, b) in self.phases.items()
            },
        }


def model_kernels(model: Model, cancelled: Callable[[], bool] | None = None) -> list[KernelInfo]:
    """Every kernel of a model with its fingerprint (reads each output code once)."""
    out: list[KernelInfo] = []
    for comp in list(model.compiles):
        if cancelled is not None and cancelled():
            break
        out.extend(compile_kernels(comp))
    return out


def _break_counts(model: Model) -> Counter[tuple[str, str]]:
    return Counter((gb.reason, gb.short_location) for gb in model.breaks)


def _reason_counts(model: Model) -> Counter[tuple[str, str]]:
    out: Counter[tuple[str, str]] = Counter()
    for rc in model.recompiles:
        frame = rc.compile.frame
        where = frame_sig(frame).text if frame is not None else ""
        for reason in rc.reasons:
            out[(_normal_guard(short_guard(reason)), where)] += 1
    return out


def _normal_guard(text: str) -> str:
    """A recompile reason without the compile id it names (``0/1: …``)."""
    return re.sub(r"^\d+/\d+: ", "", text)


def _failure_counts(model: Model) -> Counter[tuple[str, str]]:
    return Counter(
        (f"{f.fail_type}: {f.reason.strip().split(chr(10), 1)[0]}", short_location(f.location))
        for f in model.failures
    )


def _error_counts(model: Model) -> Counter[tuple[str, str]]:
    return Counter((e.headline, e.stack[-1] if e.stack else "") for e in model.run_errors())


def _cache_counts(model: Model) -> Counter[str]:
    return Counter(f"{e.cache} {e.result}" for e in model.cache_events)


def _frames_of(model: Model) -> dict[FrameSig, Side]:
    out: dict[FrameSig, Side] = {}
    for source in list(model.files):
        for frame in list(source.frames.values()):
            out.setdefault(frame_sig(frame), Side()).add(frame)
    return out


def _match_frames(fa: dict[FrameSig, Side], fb: dict[FrameSig, Side]) -> list[FrameDiff]:
    """Frames by signature; a frame whose first line moved (code above it changed) still
    matches one of the same function and file when that pairing is unique."""
    out = [FrameDiff(sig, fa.get(sig, Side()), side) for sig, side in fb.items()]
    out.extend(FrameDiff(sig, side, Side()) for sig, side in fa.items() if sig not in fb)
    new = [f for f in out if not f.a.frames]
    gone = [f for f in out if not f.b.frames]
    for f in new:
        same = [g for g in gone if (g.sig.name, g.sig.file) == (f.sig.name, f.sig.file)]
        rivals = [n for n in new if (n.sig.name, n.sig.file) == (f.sig.name, f.sig.file)]
        if len(same) == 1 and len(rivals) == 1:
            gone.remove(same[0])
            out.remove(same[0])
            f.a = same[0].a
    return out


def run_diff(
    a: Model,
    b: Model,
    a_label: str = "A",
    b_label: str = "B",
    cancelled: Callable[[], bool] | None = None,
) -> RunDiff:
    ca, cb = a.compile_counts(), b.compile_counts()
    time_a = sum(c.compile_time_s or 0.0 for c in a.compiles)
    time_b = sum(c.compile_time_s or 0.0 for c in b.compiles)
    totals: dict[str, tuple[float, float]] = {
        "compiles": (ca["compiles"], cb["compiles"]),
        "frames": (ca["frames"], cb["frames"]),
        "recompiles": (ca["recompiles"], cb["recompiles"]),
        "graph_breaks": (len(a.breaks), len(b.breaks)),
        "failures": (len(a.failures), len(b.failures)),
        "errors": (ca["errors"], cb["errors"]),
        "kernels": (ca["kernels"], cb["kernels"]),
        "compile_time_s": (round(time_a, 6), round(time_b, 6)),
    }
    frames = _match_frames(_frames_of(a), _frames_of(b))
    kernels = kernel_diff(model_kernels(a, cancelled), model_kernels(b, cancelled))
    cache_a, cache_b = _cache_counts(a), _cache_counts(b)
    cache = {k: (cache_a[k], cache_b[k]) for k in sorted(set(cache_a) | set(cache_b))}
    phases: dict[str, tuple[float, float]] = {}
    for f in frames:
        for label, value in f.a.phases.items():
            pa, pb = phases.get(label, (0.0, 0.0))
            phases[label] = (pa + value, pb)
        for label, value in f.b.phases.items():
            pa, pb = phases.get(label, (0.0, 0.0))
            phases[label] = (pa, pb + value)
    return RunDiff(
        a_label,
        b_label,
        totals,
        frames,
        _counted(_break_counts(a), _break_counts(b), moved=True),
        _counted(_reason_counts(a), _reason_counts(b)),
        _counted(_failure_counts(a), _failure_counts(b)),
        _counted(_error_counts(a), _error_counts(b)),
        kernels,
        cache,
        phases,
    )


# ---------------------------------------------------------------------- CI gate


FAIL_ON_CHECKS = (
    "new-breaks",
    "new-recompiles",
    "new-failures",
    "new-errors",
    "new-frames",
    "changed-kernels",
    "new-kernels",
    "slower:N%",
)
_SLOWER = re.compile(r"^slower:(\d+(?:\.\d+)?)%?$")


def parse_diff_fail_on(text: str | None) -> list[str]:
    """The checks of ``--fail-on`` (comma-separated); ValueError names unknown ones."""
    checks = [c.strip() for c in (text or "").split(",") if c.strip()]
    unknown = [c for c in checks if c not in FAIL_ON_CHECKS[:-1] and not _SLOWER.match(c)]
    if unknown:
        raise ValueError(
            f"--fail-on: unknown {', '.join(unknown)} (use {','.join(FAIL_ON_CHECKS)})"
        )
    return checks


def diff_fail_on(diff: RunDiff, checks: Sequence[str]) -> list[str]:
    """What tripped, one message per check (empty: the gate passes)."""
    counts = diff.counts()
    out = []
    simple = {
        "new-breaks": ("new_breaks", "new graph break(s)"),
        "new-recompiles": ("new_recompiles", "more recompile(s)"),
        "new-failures": ("new_failures", "new compile failure(s)"),
        "new-errors": ("new_errors", "new error(s)"),
        "new-frames": ("new_frames", "new compiled frame(s)"),
        "changed-kernels": ("changed_kernels", "kernel(s) with changed source"),
        "new-kernels": ("new_kernels", "new kernel(s)"),
    }
    for check in checks:
        if check in simple:
            key, what = simple[check]
            if counts[key] > 0:
                out.append(f"{check}: {counts[key]} {what}")
            continue
        m = _SLOWER.match(check)
        if m is None:
            continue
        limit = float(m.group(1))
        ta, tb = diff.totals["compile_time_s"]
        if ta > 0 and (tb - ta) / ta * 100 > limit:
            out.append(
                f"{check}: compile time {ta:.3f}s -> {tb:.3f}s (+{(tb - ta) / ta * 100:.1f}%)"
            )
        elif ta == 0 and tb > 0 and limit >= 0:
            out.append(f"{check}: compile time 0s -> {tb:.3f}s")
    return out


# ---------------------------------------------------------------------- text


# A line of a diff report: (style tag, text, marked character spans). Tags: "title",
# "heading", "field", "dim", "warn", "ok", "fold", and the statuses (SAME, ADDED, REMOVED,
# CHANGED, NEW, GONE, RENAMED, MOVED) for lines that are one.
Row = tuple[str, str, list[tuple[int, int]]]
LIST_LIMIT = 500  # rows of one list in a report


def _t(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds >= 1:
        return f"{seconds:.2f}s"
    return f"{seconds * 1000:.0f}ms" if seconds >= 0.001 else f"{seconds * 1e6:.0f}µs"


def _pct(a: float, b: float) -> str:
    if a <= 0:
        return ""
    return f"  ({(b - a) / a * 100:+.0f}%)"


def _arrow(a: float, b: float, seconds: bool = False) -> str:
    if seconds:
        return f"{_t(a)} → {_t(b)}{_pct(a, b)}"
    return f"{a:g}" if a == b else f"{a:g} → {b:g}"


def _diff_rows(lines: Sequence[DiffLine], limit: int = DIFF_LIMIT) -> list[Row]:
    tags = {" ": SAME, "-": REMOVED, "+": ADDED, "…": "fold"}
    out: list[Row] = []
    for line in lines[:limit]:
        if line.op == "…":
            out.append(("fold", f"  ⋯ {line.text}", []))
            continue
        no = line.a_no if line.op == "-" else line.b_no
        prefix = f"{line.op} {'' if no is None else no:>5} "
        marks = [(s + len(prefix), e + len(prefix)) for s, e in line.marks]
        out.append((tags[line.op], prefix + line.text, marks))
    if len(lines) > limit:
        out.append(("dim", f"  … {len(lines) - limit} more diff lines", []))
    return out


def guard_rows(changes: Sequence[GuardChange], all_guards: bool = False) -> list[Row]:
    out: list[Row] = []
    for c in changes:
        if c.status == SAME and not all_guards:
            continue
        if c.status == CHANGED and c.a is not None and c.b is not None:
            ma, mb = _char_marks(c.a.text, c.b.text)
            out.append((REMOVED, f"  - {c.a.text}", [(s + 4, e + 4) for s, e in ma]))
            out.append((ADDED, f"  + {c.b.text}", [(s + 4, e + 4) for s, e in mb]))
            continue
        sign = {SAME: " ", ADDED: "+", REMOVED: "-"}[c.status]
        out.append((c.status, f"  {sign} {c.guard.text}", []))
    return out


def compile_diff_lines(d: CompileDiff) -> list[Row]:
    """The compile diff as report lines: what the pane shows."""
    a, b = d.a, d.b
    out: list[Row] = [("title", f"compile {a.id_label} → {b.id_label}", [])]
    frame = b.frame.label if b.frame is not None else ""
    if frame:
        out.append(("field", f"frame     {frame}", []))
    out.append(("field", f"status    {a.status_text} → {b.status_text}", []))
    ta, tb = a.compile_time_s, b.compile_time_s
    if ta is not None or tb is not None:
        out.append(("field", f"time      {_t(ta)} → {_t(tb)}{_pct(ta or 0, tb or 0)}", []))
    if d.reasons:
        out.append(("", "", []))
        out.append(("heading", f"why {b.id_label} was compiled (the guard that failed)", []))
        out.extend(("warn", f"  • {short_guard(r)}", []) for r in d.reasons)
    out.append(("", "", []))
    counts = d.guard_counts
    if d.guards is None:
        logged = [c.id_label for c, yes in zip((a, b), d.guards_logged, strict=True) if yes]
        missing = [c for c, yes in zip((a, b), d.guards_logged, strict=True) if not yes]
        why = " · ".join(f"{c.id_label}: {c.status}" for c in missing)
        if logged:
            out.append(("heading", f"guards: only {logged[0]} logged its guards ({why})", []))
        else:
            out.append(("heading", "guards: neither compile logged its guards", []))
    else:
        out.append(
            (
                "heading",
                f"guards: {counts[CHANGED]} changed, {counts[ADDED]} added, "
                f"{counts[REMOVED]} removed, {counts[SAME]} same",
                [],
            )
        )
        rows = guard_rows(d.guards)
        out.extend(rows or [("dim", "  (the same guards)", [])])
    kc = d.kernel_counts
    out.append(("", "", []))
    out.append(
        (
            "heading",
            f"kernels: {kc[CHANGED]} changed, {kc[NEW]} new, {kc[GONE]} gone, "
            f"{kc[RENAMED]} renamed, {kc[SAME]} same",
            [],
        )
    )
    for k in d.kernels:
        if k.status == RENAMED and k.a is not None:
            out.append((RENAMED, f"  renamed  {k.a.name} → {k.name}  {k.kind}", []))
        else:
            out.append((k.status, f"  {k.status:<8} {k.name}  {k.kind}", []))
    if d.times:
        out.append(("", "", []))
        out.append(("heading", "compile time", []))
        for label, ta, tb in d.times:
            out.append(
                ("field", f"  {label:<28}{_t(ta):>9} → {_t(tb):<9}{_pct(ta or 0, tb or 0)}", [])
            )
    for g in d.graphs:
        removed, added = diff_counts(g.lines)
        out.append(("", "", []))
        if not g.in_a or not g.in_b:
            where = b.id_label if g.in_b else a.id_label
            out.append(("heading", f"{g.label}: only in {where}", []))
        else:
            out.append(("heading", f"{g.label}: {removed} line(s) removed, {added} added", []))
        out.extend(_diff_rows(g.lines))
    return out


def run_diff_lines(d: RunDiff) -> list[Row]:
    """The run diff as report lines: what ``tcview diff`` prints and its view shows."""
    out: list[Row] = [("title", f"tcview diff  A: {d.a_label}  →  B: {d.b_label}", [])]
    c = d.counts()
    if not d.changed:
        out.append(("ok", "no change (compile times aside)", []))
    else:
        parts = [f"{v} {k.replace('_', ' ')}" for k, v in c.items() if v]
        out.append(("warn", "changed: " + ", ".join(parts), []))
    out.append(("", "", []))
    out.append(("heading", f"{'':<16}{'A':>10}{'B':>10}", []))
    for key, (a, b) in d.totals.items():
        if key == "compile_time_s":
            row = f"{'compile time':<16}{_t(a):>10}{_t(b):>10}{_pct(a, b)}"
        else:
            row = f"{key.replace('_', ' '):<16}{a:>10g}{b:>10g}"
        out.append(("field" if a == b else CHANGED, row, []))

    def section(title: str, rows: list[Row]) -> None:
        out.append(("", "", []))
        out.append(("heading", title, []))
        out.extend(rows[:LIST_LIMIT] or [("dim", "  (none)", [])])
        if len(rows) > LIST_LIMIT:
            out.append(("dim", f"  … {len(rows) - LIST_LIMIT} more", []))

    frames: list[Row] = []
    for f in d.frames:
        sa, sb = f.a, f.b
        text = (
            f"  {f.status:<8} {f.sig.text}  compiles {_arrow(sa.compiles, sb.compiles)}"
            f" · recompiles {_arrow(sa.recompiles, sb.recompiles)}"
            f" · breaks {_arrow(sa.breaks, sb.breaks)}"
            f" · time {_arrow(sa.time_s, sb.time_s, seconds=True)}"
        )
        if sa.failures or sb.failures:
            text += f" · failures {_arrow(sa.failures, sb.failures)}"
        if sa.cache_hits or sb.cache_hits:
            text += f" · cache hits {_arrow(sa.cache_hits, sb.cache_hits)}"
        frames.append((f.status, text, []))
    section("frames (matched by function, file and first line)", frames)

    def counted(items: Sequence[CountChange]) -> list[Row]:
        rows: list[Row] = []
        for item in sorted(items, key=lambda i: i.status == SAME):
            where = f"{item.where}" + (f" (was {item.a_where})" if item.a_where else "")
            rows.append(
                (
                    item.status,
                    f"  {item.status:<8} {_arrow(item.a, item.b)}×  {where}  {item.what}",
                    [],
                )
            )
        return rows

    section("graph breaks (by cause and location)", counted(d.breaks))
    section("recompile reasons (the guard that failed, per frame)", counted(d.recompile_reasons))
    section("failures", counted(d.failures))
    if d.errors:
        section("errors", counted(d.errors))
    kernels: list[Row] = []
    for k in d.kernels:
        if k.status == SAME:
            continue
        if k.status == RENAMED and k.a is not None:
            kernels.append((RENAMED, f"  renamed  {k.a.name} → {k.name}  {k.kind}", []))
        else:
            kernels.append((k.status, f"  {k.status:<8} {k.name}  {k.kind}", []))
    same = sum(1 for k in d.kernels if k.status == SAME)
    kernels.append(("dim", f"  {same} kernel(s) the same", []))
    section("kernels (by name and kind; changed: another source)", kernels)
    section(
        "compile time by phase (summed over compiles)",
        [
            ("field", f"  {label:<28}{_t(a):>9} → {_t(b):<9}{_pct(a, b)}", [])
            for label, (a, b) in d.phases.items()
        ],
    )
    section(
        "cache",
        [
            (SAME if a == b else CHANGED, f"  {key:<24}{a:>6} → {b}", [])
            for key, (a, b) in d.cache.items()
        ],
    )
    return out
