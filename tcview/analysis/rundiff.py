"""Run diffs: what changed between two runs (two models), and the ``--fail-on`` gate.

Frames are matched by function, file name and first line (never by id), graph breaks by cause
and location, kernels by name and kind with a fingerprint of their source (`diff`).
Reads every output code of both runs (kernel fingerprints): call it off the UI thread.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tcview.analysis.cache_misses import CacheKeyChange, cache_key_changes
from tcview.analysis.checks import SLOWER
from tcview.analysis.compiletime import compile_seconds, time_note
from tcview.analysis.diff import (
    CHANGED,
    GONE,
    MOVED,
    NEW,
    RENAMED,
    SAME,
    KernelChange,
    kernel_diff,
    model_kernels,
    predecessor,
)
from tcview.analysis.findings import Finding, findings, new_and_gone
from tcview.analysis.guard_failures import GuardFamily
from tcview.analysis.guard_values import family_of
from tcview.analysis.recompile_causes import primary_failure
from tcview.model.objects import Compile, CompileStatus, Frame, Model, short_location


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
    statuses: Counter[CompileStatus] = field(default_factory=Counter)
    comps: list[Compile] = field(default_factory=list, repr=False)  # in frame order

    def add(self, frame: Frame) -> None:
        self.frames += 1
        for comp in frame.compiles:
            self.comps.append(comp)
            self.compiles += 1
            self.recompiles += comp.key.is_recompile
            self.breaks += len(comp.breaks)
            self.failures += len(comp.failures)
            self.cache_hits += comp.cache_hit
            self.time_s += compile_seconds(comp) or 0.0
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
            "phases_s": {json_key(k): round(v, 6) for k, v in self.phases.items()},
            # By the words: JSON keys must be plain strings (orjson refuses others).
            "statuses": {json_key(str(s)): n for s, n in self.statuses.items()},
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


@dataclass(frozen=True)
class CompilePair:
    """A frame's n-th compile in each run (None: that run compiled the frame fewer times)."""

    a: Compile | None
    b: Compile | None

    def sides(self) -> tuple[Compile, Compile, str, str] | None:
        """What to diff, with each side's name: A's compile against B's; a compile only one
        run has, against the compile it replaced in that run (why that run recompiled)."""
        if self.a is not None and self.b is not None:
            return self.a, self.b, f"A {self.a.id_label}", f"B {self.b.id_label}"
        run, comp = ("A", self.a) if self.a is not None else ("B", self.b)
        before = predecessor(comp) if comp is not None else None
        if comp is None or before is None:
            return None
        return before, comp, f"{run} {before.id_label}", f"{run} {comp.id_label}"


def compile_pairs(f: FrameDiff) -> list[CompilePair]:
    """The frame's compiles side by side, by their order in the frame."""
    a, b = f.a.comps, f.b.comps
    return [
        CompilePair(a[i] if i < len(a) else None, b[i] if i < len(b) else None)
        for i in range(max(len(a), len(b)))
    ]


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
    time_note: str = ""  # "incl. backward" when compile_time_s counts backward compiles
    new_findings: list[Finding] = field(default_factory=list)  # B's that A does not have
    gone_findings: list[Finding] = field(default_factory=list)  # A's that B no longer has
    cache_keys: list[CacheKeyChange] = field(default_factory=list)  # B's misses A had cached

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
        if self.new_findings or self.gone_findings or self.cache_keys:
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
            "new_findings": len(self.new_findings),
            "gone_findings": len(self.gone_findings),
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
            ],
            "unchanged_kernels": sum(1 for k in self.kernels if k.status == SAME),
            "cache": {json_key(k): {"a": a, "b": b} for k, (a, b) in self.cache.items()},
            "findings": {
                "new": [f.to_json() for f in self.new_findings],
                "gone": [f.to_json() for f in self.gone_findings],
            },
            "cache_key_changes": [c.to_json() for c in self.cache_keys],
            "phases_s": {
                json_key(k): {"a": round(a, 6), "b": round(b, 6)}
                for k, (a, b) in self.phases.items()
            },
        }


_NOT_WORD = re.compile(r"[^0-9a-z]+")


def json_key(words: str) -> str:
    """A report's words as a JSON key a script can name (`fx_graph hit`: `fx_graph_hit`,
    `inductor (cumulative)`: `inductor_cumulative`)."""
    return _NOT_WORD.sub("_", words.lower()).strip("_")


def _break_counts(model: Model) -> Counter[tuple[str, str]]:
    return Counter((gb.reason, gb.short_location) for gb in model.breaks)


def _reason_counts(model: Model) -> Counter[tuple[str, str]]:
    """Recompiles per (cause, frame), each counted once: by the guard that failed against the
    newest earlier compile (a recompile lists one failed guard per earlier compile)."""
    out: Counter[tuple[str, str]] = Counter()
    for rc in model.recompiles:
        frame = rc.compile.frame
        where = frame_sig(frame).text if frame is not None else ""
        out[(_cause(rc.compile), where)] += 1
    return out


def _cause(comp: Compile) -> str:
    """``value: `n``` or the guard's text without its compile id, for a recompile."""
    failure = primary_failure(comp)
    if failure is None:
        return "(no guard failure logged)"
    family = family_of(comp, failure)
    if family is GuardFamily.OTHER or not failure.input:
        return _normal_guard(failure.text)
    return f"{family}: `{failure.input}` {failure.what}"


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
    time_a = sum(compile_seconds(c) or 0.0 for c in a.compiles)
    time_b = sum(compile_seconds(c) or 0.0 for c in b.compiles)
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
    new, gone = new_and_gone(findings(a), findings(b))
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
        time_note([*a.compiles, *b.compiles]),
        new,
        gone,
        cache_key_changes(a, b),
    )


# ---------------------------------------------------------------------- CI gate


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
        m = SLOWER.match(check)
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
