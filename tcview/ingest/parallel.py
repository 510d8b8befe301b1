"""Index trace files in worker processes, one file per job, every core busy.

A worker indexes a whole file into a `TraceFile` of its own (with its own facts), and sends
back the file's snapshot (snapshot.py) and signatures, never objects; with a cache, it looks
the file up first (an unchanged file: the entry's snapshot is sent as it is; a grown one: the
rest is fed to the restored index) and stores what it made. The parent restores the snapshots
into its model, in the files' order, so the result is the serial index's.

The workers are forked when the process has one thread (the CLI: cheap, nothing to import
again, and no other thread can hold a lock that the child would inherit locked). Otherwise (the
UI indexes in a thread while the app runs others) each is a new interpreter that imports this
module and serves jobs on a pipe (see `_Worker`). Workers get no terminal: the app's screen
stays the app's.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import multiprocessing.connection
import multiprocessing.process
import os
import pickle
import signal
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.context import ForkContext
from pathlib import Path
from typing import Any, TypeVar

from tcview.ingest import signatures, snapshot
from tcview.ingest.cache import IndexCache, stamp
from tcview.ingest.load import Hooks
from tcview.ingest.tracefile import Lines, TraceFile, prescan
from tcview.model.objects import JsonValue

T = TypeVar("T")

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


# What a file costs, relative to indexing it: its snapshot written (in a worker, and in the
# loading thread for the cache), read back (in the loading thread), and stored in the cache.
# Measured on the shared rank traces (tests/benchmarks; storing: 0.45 ms a file, against 5.8
# ms to index it).
ENCODE_COST = 0.15
RESTORE_COST = 0.14
STORE_COST = 0.08


def own_share(workers: int, caching: bool = False) -> float:
    """The share of the files the loading thread indexes itself beside `workers` processes,
    so that it is as busy as each of them: it restores their snapshots besides, and with
    `caching`, encodes and stores its own files' snapshots as they do theirs."""
    per_worker = (1 + ENCODE_COST + caching * STORE_COST) / workers  # a worker's file
    own = 1 + caching * (ENCODE_COST + STORE_COST)  # a file it indexes itself
    return max(0.0, (per_worker - RESTORE_COST) / (own - RESTORE_COST + per_worker))


# One big file is split into ranges of about this many bytes (record boundaries) when it has
# this many bytes at least; the workers prescan most ranges (see `split_share`). A 4 MB range's
# result (about 80 KB pickled) fits in a socket's default buffer, so that a worker sends it and
# goes on without waiting for the loading thread to read it; a 16 MB range's did not, and its
# worker stood still: the big file's load took 0.94 s in 16 MB ranges, 0.76 s in 4 MB ones
# (tests/benchmarks/PROFILE.md, a worker that never stands still).
SPLIT_MIN_BYTES = 48 << 20
RANGE_BYTES = 4 << 20
# What prescanning a range costs a worker (read whole, pickled to send), and applying it costs
# the loading thread, relative to the loading thread reading the range itself. Measured on
# forty 4 MB ranges of bench_index.py's trace with the C line matcher (minimum of 5,
# tests/benchmarks/PROFILE.md, the line matcher in C): 188 ms read here, 154 ms prescanned and
# pickled, 19 ms unpickled and 45 ms applied.
PRESCAN_COST = 0.82
APPLY_COST = 0.34
# Jobs a worker is sent before its first result comes back: it goes from one to the next
# without waiting for the loading thread to ask.
JOBS_AHEAD = 4


def idle_workers() -> int:
    """Worker processes worth starting beside this one: the cores that are idle besides this
    process's (`busy_cores`), at most $TCVIEW_JOBS - 1
    (which, when set, is taken as it is). A worker that must share its core makes the loading
    thread wait, since results are merged in order: on the 2-core VM with two other jobs
    running, a big file split took 1.8 s where one process took 1.5 s, and 128 ranks in two
    processes 1.8-3.0 s where one took 1.6-2.6 s."""
    cores = job_count()
    if JOBS_ENV in os.environ:
        return cores - 1
    return max(0, min(cores - 1, int(cores - busy_cores()) - 1))


LOADAVG = "/proc/loadavg"
RUNNABLE_READS = 5


def busy_cores() -> float:
    """The cores other work holds: the fewer of the 1-minute load average and the tasks
    runnable now (the kernel's count, /proc/loadavg's fourth field, the median of a few reads),
    this process counted as one. The average lags: just after other jobs end (a benchmark's
    previous round) it still counts them, and the count now does not; the count includes this
    process's other threads (the app's), and the average, over a minute, hardly does."""
    try:
        busy = max(0.0, os.getloadavg()[0] - 1)
    except OSError:
        busy = 0.0
    try:
        runnable = []
        for _ in range(RUNNABLE_READS):
            with open(LOADAVG, "rb") as fh:
                runnable.append(int(fh.read().split()[3].split(b"/")[0]))
    except (OSError, ValueError, IndexError):
        return busy
    return min(busy, max(0, sorted(runnable)[len(runnable) // 2] - 1))


def split_share(workers: int) -> float:
    """The share of a big file's ranges the loading thread reads itself beside `workers`
    prescanning the others, so that it is as busy as each of them (it applies theirs too):
    x + (1 - x) * APPLY_COST = (1 - x) * PRESCAN_COST / workers."""
    each = PRESCAN_COST / workers
    return max(0.0, (each - APPLY_COST) / (1 - APPLY_COST + each))


@dataclass(frozen=True)
class Job:
    path: str
    cache_root: str | None = None  # None: no cache
    cache_max: int = 0
    start: int = 0  # with `end`: prescan bytes [start, end) of the file (see `prescan`)
    end: int = 0


@dataclass
class Done:
    """A job's result: the file's snapshot (None when the worker failed) and signatures."""

    body: bytes | None
    signatures: dict[str, JsonValue] = field(default_factory=dict)
    how: str = "indexed"  # "hit", "resumed", "indexed", "prescanned" or "error"
    error: str = ""
    lines: Lines | None = None  # a prescanned range


def run_job(job: Job) -> Done:
    """Index one file (in a worker; the tests call it in-process too)."""
    path = Path(job.path)
    if job.end:
        try:
            return Done(None, how="prescanned", lines=prescan(path, job.start, job.end))
        except (OSError, ValueError) as exc:
            return Done(None, {}, "error", f"{type(exc).__name__}: {exc}")
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
    # The terminal may be the app's screen: a worker writes nothing there (errors are sent).
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    # A file's index is full of reference cycles (its records, compiles and the file itself),
    # which the command's raised thresholds (cli.GC_THRESHOLDS) left for many jobs: on 1,024
    # ranks a worker held 65 MB, its parent's 250 beside it. Each job's objects are collected
    # when it is done (0.4 ms a file), and only those: what the worker was started with is
    # frozen, so that the collector never walks it (a fork's pages are shared until written).
    # The worker then holds 31 MB (tests/benchmarks/PROFILE.md, a worker's memory).
    gc.freeze()
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        conn.send(run_job(job))
        gc.collect()


def start_method() -> str:
    """fork when this process has one thread (see above), else spawn."""
    if (
        "fork" in multiprocessing.get_all_start_methods()
        and sys.platform == "linux"
        and threading.active_count() == 1
    ):
        return "fork"
    return "spawn"


# A forked child copies the pages it writes to (every object it touches), up to all that
# this process holds: above this much resident memory, `in_child` runs its function here, so
# that the two stay under 300 MB (the goal for the summary of 1,024 ranks: docs/performance.md).
IN_CHILD_MAX_RSS = 150 << 20


def resident_bytes(pid: int | None = None) -> int | None:
    """The resident memory of process `pid`, by default this one (Linux; None elsewhere)."""
    try:
        with open(f"/proc/{pid or 'self'}/statm", "rb") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def in_child(fn: Callable[[], T]) -> Callable[[], T]:
    """`fn` run in a forked child while this process goes on; what this returns gives its
    result (pickled back), waiting for it. Where a fork is not safe (see `start_method`),
    would cost too much memory (IN_CHILD_MAX_RSS), or the child fails, `fn` runs here, when
    its result is asked for. In the child `fn` sees this process as it was at the fork, and
    what it changes there is lost: only its result comes back."""
    rss = resident_bytes()
    if start_method() != "fork" or rss is None or rss > IN_CHILD_MAX_RSS:
        return fn
    try:
        read, write = os.pipe()
    except OSError:
        return fn
    try:
        pid = os.fork()
    except OSError:
        os.close(read)
        os.close(write)
        return fn
    if pid == 0:  # the child: the result down the pipe, then gone without any cleanup
        status = 1
        try:  # (Ctrl-C in the terminal ends it too: its result is then not wanted)
            os.close(read)
            with os.fdopen(write, "wb") as out:
                out.write(pickle.dumps(fn(), protocol=pickle.HIGHEST_PROTOCOL))
            status = 0
        finally:
            os._exit(status)  # (no atexit handlers, no flush of the parent's buffered output)

    os.close(write)
    asked = False

    def result() -> T:
        nonlocal asked
        if asked:  # (the pipe is read once; asked again after an error: made here)
            return fn()
        asked = True
        try:
            with os.fdopen(read, "rb") as pipe:
                data = pipe.read()
        except BaseException:  # Ctrl-C: the child's work is not wanted
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            raise
        finally:
            os.waitpid(pid, 0)
        try:
            value: T = pickle.loads(data)
        except Exception:  # noqa: BLE001 - the child failed: made here instead
            return fn()
        return value

    return result


def serve_fd(fd: int) -> None:
    """A spawned worker's main: serve jobs on the connection at `fd`."""
    _serve(Connection(fd))


class _Worker:
    """One worker process and the connection to it."""

    def __init__(self, method: str) -> None:
        parent, child = multiprocessing.Pipe()
        self.conn = parent
        self.proc: multiprocessing.process.BaseProcess | None = None
        self.popen: subprocess.Popen[bytes] | None = None
        if method == "fork":
            self.proc = ForkContext().Process(
                target=_serve, args=(child,), daemon=True, name="tcview-index"
            )
            self.proc.start()
        else:
            # A new interpreter that imports this module only: not multiprocessing's spawn,
            # which imports the parent's __main__ again (a script without a main guard would
            # run twice) and hands its helpers sys.stderr (an app's has no file descriptor).
            fd = child.fileno()
            # The collector's thresholds as this process has them (a fork inherits them).
            code = (
                f"import gc; gc.set_threshold(*{gc.get_threshold()}); "
                f"from {__name__} import serve_fd; serve_fd({fd})"
            )
            root = str(Path(__file__).resolve().parents[2])  # where this tcview is imported from
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
            self.popen = subprocess.Popen(
                [sys.executable, "-c", code],
                pass_fds=(fd,),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
                start_new_session=True,  # Ctrl-C in the terminal is the parent's
            )
        child.close()

    @property
    def waitable(self) -> list[Any]:
        """What `wait` watches: the connection, and the process of a fork (whose siblings
        hold its pipe too, so that its end may never read as closed)."""
        return [self.conn] if self.proc is None else [self.conn, self.proc.sentinel]

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.close()
        if self.proc is not None:
            if self.proc.is_alive():
                self.proc.kill()
            self.proc.join(timeout=5)
        if self.popen is not None:
            if self.popen.poll() is None:
                self.popen.kill()
            self.popen.wait(timeout=5)


class Workers:
    """Worker processes, each given up to JOBS_AHEAD jobs at a time; `map` yields results in
    job order."""

    def __init__(self, count: int, method: str | None = None) -> None:
        self.method = method or start_method()
        self.count = count
        self._workers: list[_Worker] = []
        try:
            for _ in range(count):
                self._workers.append(_Worker(self.method))
        except BaseException:
            self.close()
            raise

    def map(self, jobs: list[Job]) -> Iterator[Done | None]:
        """Each job's result, in order; None for a job whose worker died. The first jobs are
        sent at once: the workers start while the caller does its own share."""
        todo = deque(enumerate(jobs))
        queued: dict[int, deque[int]] = {w: deque() for w in range(len(self._workers))}
        results: dict[int, Done | None] = {}
        self._send(todo, queued, results)
        return self._results(len(jobs), todo, queued, results)

    def _send(
        self,
        todo: deque[tuple[int, Job]],
        queued: dict[int, deque[int]],
        results: dict[int, Done | None],
        only: int | None = None,
    ) -> None:
        """Jobs to the workers (or to worker `only`), until each has JOBS_AHEAD."""
        for w in [only] if only is not None else list(queued):
            mine = queued[w]
            while todo and len(mine) < JOBS_AHEAD:
                i, job = todo.popleft()
                try:
                    self._workers[w].conn.send(job)
                except OSError:  # it is gone: no more jobs for it
                    results.update((j, None) for j in [*queued.pop(w), i])
                    break
                mine.append(i)

    def _results(
        self,
        count: int,
        todo: deque[tuple[int, Job]],
        queued: dict[int, deque[int]],
        results: dict[int, Done | None],
    ) -> Iterator[Done | None]:
        nxt = 0
        while nxt < count:
            if nxt in results:
                yield results.pop(nxt)
                nxt += 1
                continue
            busy = [w for w, mine in queued.items() if mine]
            if not busy:  # every worker is gone
                results.update((i, None) for i, _job in todo)
                todo.clear()
                results.setdefault(nxt, None)
                continue
            owner = {id(obj): w for w in busy for obj in self._workers[w].waitable}
            ready = multiprocessing.connection.wait(
                [obj for w in busy for obj in self._workers[w].waitable]
            )
            for w in {owner[id(obj)] for obj in ready}:
                conn = self._workers[w].conn
                try:
                    if conn.poll():
                        done = conn.recv()
                        results[queued[w].popleft()] = done if isinstance(done, Done) else None
                        self._send(todo, queued, results, only=w)
                        continue
                except (EOFError, OSError):
                    pass
                # It died (or hung up): no more jobs for it.
                results.update((i, None) for i in queued.pop(w))

    def close(self) -> None:
        """Stop the workers at once (a job still running is killed)."""
        for worker in self._workers:
            worker.kill()
        self._workers = []

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
