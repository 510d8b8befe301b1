"""Index trace files in worker processes, one file per job, every core busy.

A worker indexes a whole file into a `TraceFile` of its own (with its own facts), and sends
back the file's snapshot (snapshot.py) and signatures, never objects; with a cache, it looks
the file up first (an unchanged file: the entry's snapshot is sent as it is; a grown one: the
rest is fed to the restored index) and stores what it made. The parent restores the snapshots
into its model, in the files' order, so the result is the serial index's.

The workers are forked when the process has one thread (the CLI: cheap, nothing to import
again; no other thread can hold a lock the child would inherit locked), and made by the
forkserver otherwise (the UI indexes in a thread while the app runs others).
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.context import ForkContext, ForkServerContext, SpawnContext
from pathlib import Path
from typing import Any

from . import signatures, snapshot
from .cache import IndexCache, stamp
from .load import Hooks
from .model import JsonValue
from .tracefile import TraceFile

# Below this many bytes to index, one process is faster than starting workers (~0.1-0.2 s).
PARALLEL_MIN_BYTES = 24 << 20
JOBS_ENV = "TCVIEW_JOBS"  # worker processes; 1 indexes in the loading thread


def job_count() -> int:
    """Worker processes to use: $TCVIEW_JOBS, else the CPUs this process may run on."""
    try:
        wanted = int(os.environ.get(JOBS_ENV, "0"))
    except ValueError:
        wanted = 0
    if wanted > 0:
        return wanted
    counter = getattr(os, "process_cpu_count", None)  # Python 3.13
    if counter is not None:
        return int(counter() or 1)
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@dataclass(frozen=True)
class Job:
    path: str
    cache_root: str | None = None  # None: no cache
    cache_max: int = 0


@dataclass
class Done:
    """A job's result: the file's snapshot (None when the worker failed) and signatures."""

    body: bytes | None
    signatures: dict[str, JsonValue] = field(default_factory=dict)
    how: str = "indexed"  # "hit", "resumed", "indexed" or "error"
    error: str = ""


def run_job(job: Job) -> Done:
    """Index one file (in a worker; the tests call it in-process too)."""
    path = Path(job.path)
    cache = IndexCache(Path(job.cache_root), job.cache_max) if job.cache_root else None
    before = stamp(path)
    entry = cache.lookup(path, before) if cache is not None and before is not None else None
    if entry is not None and not entry.grown:
        return Done(entry.body, entry.signatures or {}, "hit")
    tf = TraceFile(path)
    try:
        start = 0
        if entry is not None and before is not None:
            tf.builder.adopt(snapshot.restore(tf, entry.body, before.size))
            start = entry.pos
        tf.feed_from(Hooks(), start)
        body = snapshot.encode(tf, tf.builder.facts)
        pos, pending = tf.pos, tf.pending_bytes
        tf.finish()
        sigs = signatures.compute(tf)
        if cache is not None and before is not None:
            cache.store(path, before, pos, body, sigs, pos - pending)
        return Done(body, sigs, "resumed" if entry is not None else "indexed")
    except Exception as exc:  # noqa: BLE001 - reported; the parent indexes the file itself
        return Done(None, {}, "error", f"{type(exc).__name__}: {exc}")
    finally:
        tf.close()


def _serve(conn: Connection) -> None:
    """A worker's loop: a job in, its result out, until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        conn.send(run_job(job))


def start_method() -> str:
    """fork when this process has one thread, else forkserver, else spawn (see above)."""
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and sys.platform == "linux" and threading.active_count() == 1:
        return "fork"
    return "forkserver" if "forkserver" in methods else "spawn"


def _context(method: str) -> ForkContext | ForkServerContext | SpawnContext:
    if method == "fork":
        return ForkContext()
    if method == "forkserver":
        ctx = ForkServerContext()
        ctx.set_forkserver_preload([__name__])  # imported once, in the server
        return ctx
    return SpawnContext()


class Workers:
    """Worker processes, each given one job at a time; `map` yields results in job order."""

    def __init__(self, count: int, method: str | None = None) -> None:
        self.method = method or start_method()
        ctx = _context(self.method)
        self.count = count
        self._procs: list[Any] = []
        self._conns: list[Connection] = []
        for _ in range(count):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_serve, args=(child,), daemon=True, name="tcview-index")
            proc.start()
            child.close()
            self._procs.append(proc)
            self._conns.append(parent)

    def map(self, jobs: list[Job]) -> Iterator[Done | None]:
        """Each job's result, in order; None for a job whose worker died."""
        todo = deque(enumerate(jobs))
        idle = list(range(len(self._conns)))
        busy: dict[int, int] = {}  # worker -> job
        results: dict[int, Done | None] = {}
        nxt = 0
        while nxt < len(jobs):
            while idle and todo:
                w = idle.pop()
                i, job = todo.popleft()
                try:
                    self._conns[w].send(job)
                except OSError:
                    results[i] = None  # the worker is gone; so is its place in `idle`
                    continue
                busy[w] = i
            if nxt in results:
                yield results.pop(nxt)
                nxt += 1
                continue
            if not busy:  # every worker is gone
                for i, _job in todo:
                    results[i] = None
                todo.clear()
                if nxt not in results:
                    results[nxt] = None
                continue
            waiting = {self._conns[w]: w for w in busy}
            sentinels = {self._procs[w].sentinel: w for w in busy}
            ready = multiprocessing.connection.wait([*waiting, *sentinels])
            for obj in ready:
                found = waiting.get(obj) if isinstance(obj, Connection) else sentinels.get(obj)
                if found is None or found not in busy:
                    continue
                w = found
                try:
                    if self._conns[w].poll():
                        done = self._conns[w].recv()
                        results[busy.pop(w)] = done if isinstance(done, Done) else None
                        idle.append(w)
                        continue
                except (EOFError, OSError):
                    pass
                if not self._procs[w].is_alive() or isinstance(obj, Connection):
                    results[busy.pop(w)] = None  # died: not given more jobs

    def close(self) -> None:
        """Stop the workers: at once (a job still running is killed)."""
        for conn in self._conns:
            try:
                conn.close()
            except OSError:
                pass
        for proc in self._procs:
            if proc.is_alive():
                proc.kill()
        for proc in self._procs:
            proc.join(timeout=5)
        self._procs, self._conns = [], []

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
