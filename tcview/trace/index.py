"""A set of trace files: discovery, grouping into runs and ranks, and aggregate facts."""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .handlers import Sink
from .model import (
    CacheEvent,
    Compile,
    Facts,
    Failure,
    GraphBreak,
    Kernel,
    Recompile,
)
from .tracefile import HEADER, TraceFile

CHUNK = 4 << 20
TRACE_NAME_PREFIX = "dedicated_log_torch_trace"
SNIFF_LIMIT = 4 << 20

Progress = Callable[[int, int], None]


@dataclass
class Hooks:
    """How a long load shares a model that grows (the UI indexes in a worker thread).

    `publish` gets the model as soon as it exists; every change to it is made under `lock`;
    `stop` ends the load early (the model is then finished as far as it got).
    """

    progress: Progress | None = None
    lock: Any = field(default_factory=nullcontext)
    stop: Callable[[], bool] = lambda: False
    publish: Callable[[Any], None] = lambda model: None


def read_chunks(
    path: Path, feed: Callable[[bytes], None], hooks: Hooks, done: int = 0, total: int = 0
) -> int:
    """Feed a file to an index in chunks, each under the hooks' lock; returns bytes done."""
    with open(path, "rb") as fh:
        while not hooks.stop():
            chunk = fh.read(CHUNK)
            if not chunk:
                break
            with hooks.lock:
                feed(chunk)
            done += len(chunk)
            if hooks.progress is not None:
                hooks.progress(done, total)
    return done


def sniff_trace(path: Path) -> str | None:
    """None when `path` is a trace file, else the reason it is not one.

    A trace file's first non-empty line is a record header: the log prefix, then a JSON object.
    A damaged first header still counts when it starts like one (``{"``); TORCH_LOGS text has
    the same prefix but a message after it, not JSON.
    """
    try:
        with open(path, "rb") as fh:
            data = fh.read(65536)
            while data and not data.strip():
                more = fh.read(65536)
                if not more:
                    break
                data = data.lstrip() + more
            data = data.lstrip(b"\r\n\t ")
            if not data:
                return "empty"
            while b"\n" not in data and len(data) < SNIFF_LIMIT:
                more = fh.read(65536)
                if not more:
                    break
                data += more
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    line = data.split(b"\n", 1)[0]
    m = HEADER.match(line)
    if not m:
        return "first line is not a trace record header"
    if not line[m.end() :].lstrip().startswith(b"{"):
        return "first line is a log line, not a trace record"
    return None


def discover(path: Path) -> tuple[list[Path], list[tuple[Path, str]]]:
    """Trace files under `path` (a file or a directory, recursively) and the skipped ones."""
    if path.is_file():
        if path.name.startswith(TRACE_NAME_PREFIX):
            return [path], []
        why = sniff_trace(path)
        return ([path], []) if why is None else ([], [(path, why)])
    found: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    for root, dirs, files in os.walk(
        path,
        onerror=lambda e: skipped.append((Path(e.filename or "?"), f"unreadable: {e.strerror}")),
    ):
        dirs.sort()
        for name in sorted(files):
            p = Path(root) / name
            if not p.is_file():
                skipped.append((p, "not a regular file"))
                continue
            if name.startswith(TRACE_NAME_PREFIX) and name.endswith(".log"):
                if not os.access(p, os.R_OK):
                    skipped.append((p, "unreadable: permission denied"))
                else:
                    found.append(p)
                continue
            why = sniff_trace(p)
            if why is None:
                found.append(p)
            else:
                skipped.append((p, why))
    return found, skipped


@dataclass(eq=False)
class Rank:
    rank: int | None
    files: list[TraceFile] = field(default_factory=list)

    @property
    def label(self) -> str:
        return "no rank" if self.rank is None else f"rank {self.rank}"


@dataclass(eq=False)
class Run:
    index: int
    directory: str
    files: list[Any]  # TraceFiles, or a capture's per-process logs
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


class TraceSet(Sink, Facts):
    """All trace files of one input, with the facts derived from them."""

    def __init__(self, root: str | os.PathLike | None = None) -> None:
        Facts.__init__(self)
        self.root = Path(root) if root is not None else None
        self.version = 0
        self.text: Any = None  # a run directory's TORCH_LOGS capture (a TextLog)
        # Taken by follow mode while it feeds bytes, and by readers that iterate the model.
        self.lock = threading.RLock()

    # ------------------------------------------------------------ building

    def add_file(self, path: Path) -> TraceFile:
        display = str(path)
        if self.root is not None and self.root.is_dir():
            try:
                display = str(path.relative_to(self.root))
            except ValueError:
                pass
        tf = TraceFile(path, display)
        tf.sink = self
        self.files.append(tf)
        return tf

    def file_for(self, path: Path) -> TraceFile | None:
        return next((f for f in self.files if f.path == path), None)

    @classmethod
    def load(
        cls, path: str | os.PathLike, progress: Progress | None = None, hooks: Hooks | None = None
    ) -> TraceSet:
        """Index every trace file under `path`."""
        hooks = hooks or Hooks(progress)
        root = Path(path)
        ts = cls(root)
        found, ts.skipped = discover(root)
        hooks.publish(ts)
        total = sum(_size(p) for p in found)
        done = 0
        for p in found:
            if hooks.stop():
                break
            with hooks.lock:
                tf = ts.add_file(p)
            done = ts.read_file(tf, hooks, done, total)
        return ts

    def read_file(self, tf: TraceFile, hooks: Hooks, done: int = 0, total: int = 0) -> int:
        try:
            done = read_chunks(tf.path, lambda c: tf.feed(c, settle=False), hooks, done, total)
        except OSError as exc:
            with hooks.lock:
                tf.problems.append(f"read error: {exc.strerror or exc}")
        with hooks.lock:
            tf.finish()
            self.version += 1
        return done

    # ------------------------------------------------------------ sink

    def compile(self, comp: Compile) -> None:
        self.compiles.append(comp)

    def graph_break(self, gb: GraphBreak) -> None:
        self.breaks.append(gb)

    def recompile(self, rc: Recompile) -> None:
        self.recompiles.append(rc)

    def failure(self, failure: Failure) -> None:
        self.failures.append(failure)

    def cache(self, event: CacheEvent) -> None:
        self.cache_events.append(event)

    def kernel(self, kernel: Kernel) -> None:
        self.kernels.append(kernel)

    # ------------------------------------------------------------ views

    @property
    def runs(self) -> list[Run]:
        """Files grouped by directory, then by overlapping time spans (one launch each)."""
        by_dir: dict[str, list[TraceFile]] = {}
        for tf in self.files:
            by_dir.setdefault(str(tf.path.parent), []).append(tf)
        runs: list[Run] = []
        for directory, files in by_dir.items():
            files = sorted(files, key=lambda f: (f.first_ts or "~", f.display))
            group: list[TraceFile] = []
            group_end = ""
            for tf in files:
                start = tf.first_ts or ""
                if group and (not start or start > group_end or not group_end):
                    runs.append(Run(len(runs), directory, group))
                    group, group_end = [], ""
                group.append(tf)
                group_end = max(group_end, tf.last_ts or "")
            if group:
                runs.append(Run(len(runs), directory, group))
        return runs

    def summary_counts(self, verify: bool = False) -> dict[str, Any]:
        files = self.files
        artifacts: Counter = Counter()
        kinds: Counter = Counter()
        unknown: Counter = Counter()
        ranks: set[int] = set()
        for tf in files:
            artifacts.update(tf.artifacts)
            kinds.update(tf.kinds)
            unknown.update(tf.unknown)
            ranks.update(tf.ranks)
        out: dict[str, Any] = {
            "files": len(files),
            "records": sum(kinds.values()),
            "compiles": sum(len(tf.compiles) for tf in files),
            "frames": sum(
                len({(k.autograd_id, k.frame_id) for k in tf.compiles if k.frame_id is not None})
                for tf in files
            ),
            "recompiles": sum(1 for tf in files for k in tf.compiles if k.is_recompile),
            "graph_breaks": artifacts["dynamo_graph_break_reason"],
            "failures": sum(tf.failure_count for tf in files),
            "output_codes": kinds["inductor_output_code"],
            "kernels": sum(len(tf.kernels) for tf in files),
            "unparsed_lines": sum(len(tf.unparsed) for tf in files),
            "ranks": sorted(ranks),
            "fx_graph_cache": {
                r: artifacts[f"fx_graph_cache_{r}"] for r in ("hit", "miss", "bypass")
            },
        }
        if verify:
            out["md5_mismatches"] = self.verify()
        return out

    def verify(self) -> int:
        """Hash every payload; returns the number of mismatches."""
        return sum(tf.verify() for tf in self.files)

    def close(self) -> None:
        for tf in self.files:
            tf.close()


def _size(p: Path) -> int:
    try:
        return p.stat().st_size
    except OSError:
        return 0
