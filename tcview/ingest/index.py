"""A set of trace files: discovery, grouping into runs and ranks, and aggregate facts."""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tcview.ingest import signatures, snapshot
from tcview.ingest.builder import Builder
from tcview.ingest.cache import Entry, IndexCache, stamp
from tcview.ingest.detect import discover
from tcview.ingest.load import Hooks, Progress
from tcview.ingest.parallel import (
    PARALLEL_MIN_BYTES,
    RANGE_BYTES,
    SPLIT_MIN_BYTES,
    Done,
    Job,
    Workers,
    idle_workers,
    own_share,
    split_share,
)
from tcview.ingest.snapshot import FACT_LISTS
from tcview.ingest.textlog import TextLog
from tcview.ingest.tracefile import PRESCAN_MAX, TraceFile, boundaries
from tcview.model.objects import Facts, JsonValue, LogSource, Model, Run


@dataclass
class LoadStats:
    """How the last load went (for tests and benchmarks): where each file's index came from."""

    workers: int = 0  # worker processes started
    start_method: str = ""  # how they were started (fork, forkserver, spawn)
    from_workers: int = 0  # files restored from a worker's snapshot
    from_cache: int = 0  # files restored from the cache as they were
    indexed_here: int = 0  # files indexed in the loading thread (resumed ones included)
    resumed: int = 0  # files fed on from a cache entry of their beginning
    snapshot_errors: int = 0  # snapshots that did not restore (the file was indexed again)
    worker_errors: list[str] = field(default_factory=list)  # jobs a worker could not do
    cache_written: int = 0  # entries the loading thread wrote (workers write their own)
    ranges: int = 0  # ranges a big file was split into (one file, indexed by all cores)
    prescanned: int = 0  # of those, the ranges a worker prescanned (the rest: read here)


def _takes(n: int, share: float) -> bool:
    """Whether the loading thread indexes the n-th file to index itself: `share` of them,
    spread evenly, the first one included (it starts while the workers do)."""
    shift = 1 - share + 1e-9
    return int((n + 1) * share + shift) > int(n * share + shift)


def walk_key(path: Path) -> list[tuple[int, str]]:
    """Where `discover`'s walk finds `path`: a folder's files (by name) before its subfolders."""
    parts = path.parts
    return [(1, d) for d in parts[:-1]] + [(0, parts[-1])]


class TraceSet(Model):
    """All trace files of one input, with the facts derived from them."""

    files: list[TraceFile]
    text: TextLog | None = None  # a run directory's TORCH_LOGS capture

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        display: str | None = None,
    ) -> None:
        path = Path(root) if root is not None else None
        Model.__init__(self, display or (str(root) if root is not None else ""), path)
        self.files = []
        self.other = ()
        self.builder = Builder(self)  # every file reports its facts to this model
        self.load_stats = LoadStats()

    # ------------------------------------------------------------ building

    def new_file(self, path: Path) -> TraceFile:
        """A trace file of this set (its facts go to this model), not yet in `files`."""
        display = str(path)
        if path == self.root and self.display:  # a one-file input: shown as the input is
            display = self.display
        elif self.root is not None and self.root.is_dir():
            with contextlib.suppress(ValueError):
                display = str(path.relative_to(self.root))
        return TraceFile(path, display, self.builder)

    def add_file(self, path: Path) -> TraceFile:
        tf = self.new_file(path)
        self._insert(tf)
        return tf

    def _insert(self, tf: TraceFile) -> None:
        """Files in discovery's order (a directory's files before its subdirectories, each by
        name), whatever order a followed directory's files appeared in: every list made from
        the model is the same as a load's."""
        key = walk_key(tf.path)
        at = len(self.files)
        while at and walk_key(self.files[at - 1].path) > key:
            at -= 1
        self.files.insert(at, tf)

    def add_text(self, text: TextLog, skipped: list[tuple[Path, str]] | None = None) -> None:
        """Attach a run directory's TORCH_LOGS capture (and, when given, the skipped files
        without it and the files a run directory holds beside its trace)."""
        self.text = text
        if skipped is not None:
            self.skipped = skipped
        self.version += 1

    def add_cached(self, path: Path, store: IndexCache) -> TraceFile | None:
        """Add a file from its cache entry as it was last indexed, not finished (follow mode
        feeds it on from there); None when the cache has no entry for it."""
        now = stamp(path)
        entry = store.lookup(path, now) if now is not None else None
        if entry is None or now is None:
            return None
        tf = self.new_file(path)
        try:
            facts = snapshot.restore(tf, entry.body, now.size)
        except snapshot.Invalid:
            return None
        self._insert(tf)
        self.builder.adopt(facts)
        tf.settle()
        self.version += 1
        return tf

    def file_for(self, path: Path) -> TraceFile | None:
        return next((f for f in self.files if f.path == path), None)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        progress: Progress | None = None,
        hooks: Hooks | None = None,
        display: str | None = None,
        cache: bool = True,
    ) -> TraceSet:
        """Index every trace file under `path` (shown as `display`, by default the path).

        `cache`: use the index cache (cache.py) unless $TCVIEW_NO_CACHE turns it off.
        """
        hooks = hooks or Hooks(progress)
        root = Path(path)
        ts = cls(root, display)
        found, ts.skipped = discover(root)
        hooks.publish(ts)
        ts.load_files(found, hooks, IndexCache.default(root) if cache else None)
        return ts

    def load_files(self, found: list[Path], hooks: Hooks, store: IndexCache | None) -> None:
        """Index `found` into this set, in order: from the cache where it has the file, in
        worker processes when there is enough left to index (this thread indexes its share
        meanwhile), else here."""
        stamps = [stamp(p) for p in found]
        total = sum(s.size for s in stamps if s is not None)
        entries = [  # planned from the entries' headers; each read whole when it is used
            store.peek(p, s) if store is not None and s is not None else None
            for p, s in zip(found, stamps, strict=True)
        ]
        work = [i for i, e in enumerate(entries) if e is None or e.grown]
        left = sum(
            (s.size if s is not None else 0) - (e.pos if e is not None else 0)
            for s, e in ((stamps[i], entries[i]) for i in work)
        )
        stats = self.load_stats = LoadStats()
        workers = None
        count = min(idle_workers(), len(work) - 1)  # this thread is one of the indexers
        split = None  # workers for the ranges of one big file
        if len(work) == 1 and entries[work[0]] is None and left >= SPLIT_MIN_BYTES:
            helpers = idle_workers()
            if helpers >= 1:
                with contextlib.suppress(OSError, ValueError, RuntimeError):
                    split = Workers(helpers)
                    stats.workers, stats.start_method = split.count, split.method
        elif count >= 1 and left >= PARALLEL_MIN_BYTES:
            try:
                workers = Workers(count)
            except (OSError, ValueError, RuntimeError):
                workers = None  # no processes to be had: index here
        sent: set[int] = set()
        results: Iterator[Done | None] | None = None
        if workers is not None:
            stats.workers, stats.start_method = workers.count, workers.method
            share = own_share(workers.count, caching=store is not None)
            sent = {i for n, i in enumerate(work) if not _takes(n, share)}
            root, cap = (str(store.root), store.max_bytes) if store is not None else (None, 0)
            results = workers.map([Job(str(found[i]), root, cap) for i in work if i in sent])
        done = 0
        shared = snapshot.Shared()
        try:
            for i, (p, st, entry) in enumerate(zip(found, stamps, entries, strict=True)):
                if hooks.stop():
                    break
                size = st.size if st is not None else 0
                body: bytes | None = None
                sigs: dict[str, JsonValue] | None = None
                to_worker = results is not None and i in sent
                if entry is not None and not to_worker and store is not None and st is not None:
                    entry = store.lookup(p, st)  # read and checked now; None: indexed here
                    if entry is not None and not entry.grown:
                        body, sigs = entry.body, entry.signatures
                        entry = None  # not kept once restored
                elif results is not None and i in sent:
                    result = next(results)
                    if result is not None and result.body is not None:
                        body, sigs = result.body, result.signatures
                        entry = None  # the worker resumed it
                        stats.resumed += result.how == "resumed"
                    else:
                        stats.worker_errors.append(
                            f"{p}: {result.error if result is not None else 'worker died'}"
                        )
                if body is not None and self._restore(p, body, sigs, size, hooks, shared):
                    if i in sent and entry is None:
                        stats.from_workers += 1
                    else:
                        stats.from_cache += 1
                    done += size
                    if hooks.progress is not None:
                        hooks.progress(done, total)
                    continue
                resume = entry if entry is not None and entry.grown else None
                stats.indexed_here += 1
                tf = self.new_file(p)
                done = self.read_file(tf, hooks, done, total, store, resume, split)
                if len(found) > 1:
                    # As the restored files do (many ranks, one program); in one process too:
                    # less memory (128 ranks: 52 -> 40 MB), no slower.
                    shared.share(tf)
        finally:
            for pool in (workers, split):
                if pool is not None:
                    pool.close()
        if store is not None and store.written:
            store.evict()

    def _restore(
        self,
        path: Path,
        body: bytes,
        sigs: dict[str, JsonValue] | None,
        size: int,
        hooks: Hooks,
        shared: snapshot.Shared,
    ) -> bool:
        """Add a file from its snapshot; False when the snapshot does not restore."""
        tf = self.new_file(path)
        try:
            facts = snapshot.restore(tf, body, size, shared)
        except snapshot.Invalid:
            self.load_stats.snapshot_errors += 1
            return False
        self.files.append(tf)
        self.builder.adopt(facts)
        tf.finish()
        self.version += 1
        tf.signatures = shared.signatures(signatures.complete(tf, sigs))
        return True

    def read_file(
        self,
        tf: TraceFile,
        hooks: Hooks,
        done: int = 0,
        total: int = 0,
        store: IndexCache | None = None,
        resume: Entry | None = None,
        split: Workers | None = None,
    ) -> int:
        """Index a file here (from a cache entry of its beginning when `resume`; with `split`,
        in ranges, most of them prescanned by those workers), add it, and keep its snapshot
        in `store`."""
        before = stamp(tf.path)
        start = 0
        resumed: Facts | None = None
        if resume is not None and before is not None:
            try:
                resumed = snapshot.restore(tf, resume.body, before.size)
                start = resume.pos
                self.load_stats.resumed += 1
            except snapshot.Invalid:
                self.load_stats.snapshot_errors += 1
                tf = self.new_file(tf.path)
        marks = self._fact_marks()
        self.files.append(tf)
        if resumed is not None:
            self.builder.adopt(resumed)
        if split is not None and start == 0 and before is not None:
            done = self._feed_split(tf, hooks, split, before.size, done, total)
        else:
            done = tf.feed_from(hooks, start, done, total)
        body = None
        pos, pending = tf.pos, tf.pending_bytes
        if store is not None and before is not None and pos == before.size:
            try:
                body = snapshot.encode(tf, self._facts_since(marks))
            except snapshot.CodecError:
                body = None
        tf.finish()
        self.version += 1
        tf.signatures = signatures.compute(tf)
        if (
            body is not None
            and store is not None
            and before is not None
            and store.store(tf.path, before, pos, body, tf.signatures, pos - pending)
        ):
            self.load_stats.cache_written += 1
        return done

    def _feed_split(
        self, tf: TraceFile, hooks: Hooks, workers: Workers, size: int, done: int, total: int
    ) -> int:
        """Feed a big file in ranges cut at record boundaries: the workers prescan theirs
        (`prescan`: lines found, headers parsed) while this thread reads its own share, and
        each range is applied in file order, so that the index is the one a single read
        makes. The last range is read here, to the file's end as it is now."""
        n = max(2, -(-size // RANGE_BYTES))
        try:
            cuts = boundaries(tf.path, [size * k // n for k in range(1, n)], size)
        except OSError:
            cuts = []
        edges = [0, *cuts]
        ranges = list(zip(edges, [*cuts, size], strict=True))
        share = split_share(workers.count)
        own = {
            i
            for i, (lo, hi) in enumerate(ranges)
            if _takes(i, share) or hi - lo > PRESCAN_MAX or i == len(ranges) - 1
        }
        jobs = [
            Job(str(tf.path), start=lo, end=hi) for i, (lo, hi) in enumerate(ranges) if i not in own
        ]
        results = workers.map(jobs)
        stats = self.load_stats
        stats.ranges, stats.prescanned = len(ranges), len(jobs)
        for i, (lo, hi) in enumerate(ranges):
            if hooks.stop():
                break
            if tf.pos != lo or i == len(ranges) - 1:  # the last range, or the file changed
                return tf.feed_from(hooks, tf.pos, done, total)
            if i in own:
                tf.feed_range(hooks, lo, hi)
            else:
                result = next(results)
                if result is not None and result.lines is not None:
                    try:
                        tf.apply_lines(result.lines)
                    except ValueError:  # a line cut at `lo`: the file changed under us
                        return tf.feed_from(hooks, tf.pos, done, total)
                else:
                    stats.prescanned -= 1
                    why = result.error if result is not None else "worker died"
                    stats.worker_errors.append(f"{tf.path} [{lo}, {hi}): {why}")
                    tf.feed_range(hooks, lo, hi)
            done += tf.pos - lo
            if hooks.progress is not None:
                hooks.progress(done, total)
        return done

    def _fact_marks(self) -> list[int]:
        return [len(getattr(self, name)) for name in FACT_LISTS]

    def _facts_since(self, marks: list[int]) -> Facts:
        """The facts added to this model since `marks` (a file's, when files are indexed one
        after the other)."""
        facts = Facts()
        for name, mark in zip(FACT_LISTS, marks, strict=True):
            setattr(facts, name, getattr(self, name)[mark:])
        return facts

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
