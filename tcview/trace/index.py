"""A set of trace files: discovery, grouping into runs and ranks, and aggregate facts."""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from pathlib import Path
from typing import Any

from .builder import Builder
from .load import Hooks, Progress, file_size, read_chunks
from .model import Lock, LogSource, Model, Run
from .textlog import TextLog
from .tracefile import HEADER, TraceFile

TRACE_NAME_PREFIX = "dedicated_log_torch_trace"
SNIFF_LIMIT = 4 << 20


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


class TraceSet(Model):
    """All trace files of one input, with the facts derived from them."""

    files: list[TraceFile]
    text: TextLog | None = None  # a run directory's TORCH_LOGS capture

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        display: str | None = None,
        lock: Lock | None = None,
    ) -> None:
        path = Path(root) if root is not None else None
        Model.__init__(self, display or (str(root) if root is not None else ""), path, lock)
        self.files = []
        self.other = ()
        self.builder = Builder(self)  # every file reports its facts to this model

    # ------------------------------------------------------------ building

    def add_file(self, path: Path) -> TraceFile:
        display = str(path)
        if self.root is not None and self.root.is_dir():
            with contextlib.suppress(ValueError):
                display = str(path.relative_to(self.root))
        tf = TraceFile(path, display, self.builder)
        self.files.append(tf)
        return tf

    def add_text(self, text: TextLog, skipped: list[tuple[Path, str]] | None = None) -> None:
        """Attach a run directory's TORCH_LOGS capture (and, when given, the skipped files
        without it and the files a run directory holds beside its trace)."""
        self.text = text
        if skipped is not None:
            self.skipped = skipped
        self.version += 1

    def file_for(self, path: Path) -> TraceFile | None:
        return next((f for f in self.files if f.path == path), None)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        progress: Progress | None = None,
        hooks: Hooks | None = None,
        display: str | None = None,
    ) -> TraceSet:
        """Index every trace file under `path` (shown as `display`, by default the path)."""
        hooks = hooks or Hooks(progress)
        root = Path(path)
        ts = cls(root, display)
        found, ts.skipped = discover(root)
        hooks.publish(ts)
        total = sum(file_size(p) for p in found)
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

    # ------------------------------------------------------------ views

    @property
    def runs(self) -> list[Run]:
        """Files grouped by directory, then by overlapping time spans (one launch each)."""
        by_dir: dict[str, list[TraceFile]] = {}
        for tf in self.files:
            by_dir.setdefault(str(tf.path.parent), []).append(tf)
        runs: list[Run] = []
        for directory, in_dir in by_dir.items():
            group: list[LogSource] = []
            group_end = ""
            for tf in sorted(in_dir, key=lambda f: (f.first_ts or "~", f.display)):
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
        artifacts: Counter[str] = Counter()
        kinds: Counter[str] = Counter()
        ranks: set[int] = set()
        for tf in files:
            artifacts.update(tf.artifacts)
            kinds.update(tf.kinds)
            ranks.update(tf.ranks)
        facts = self.compile_counts()
        out: dict[str, Any] = {
            "files": len(files),
            "records": sum(kinds.values()),
            "compiles": facts["compiles"],
            "frames": facts["frames"],
            "recompiles": facts["recompiles"],
            "empty_graphs": facts["empty_graphs"],
            "graph_breaks": artifacts["dynamo_graph_break_reason"],
            "failures": sum(tf.failure_count for tf in files),
            "errors": facts["errors"],
            "output_codes": kinds["inductor_output_code"],
            "kernels": facts["kernels"],
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
