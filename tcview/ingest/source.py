"""Tell inputs apart and load them: trace directory, trace file, TORCH_LOGS text, stdin."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path

from tcview.ingest.archives import STDIN, ArchiveError, archive_format, spool_archive, unpack
from tcview.ingest.builder import Builder
from tcview.ingest.cache import cache_disabled
from tcview.ingest.detect import PipeKind, find_text_log, plan_input, sniff_chunks
from tcview.ingest.index import TraceSet
from tcview.ingest.load import CHUNK, Hooks, Progress
from tcview.ingest.profile import PROFILE_DIR
from tcview.ingest.textlog import TextLog
from tcview.model.objects import Error, JobEnd, Model

# Files a run directory holds beside its trace and its log (`tcview run` writes run.json,
# through run.json.tmp, and stdout.txt; the shared runs the others); not reported as skipped.
RUN_FILES = frozenset(
    {
        "run.json",
        "run.json.tmp",
        "stdout.txt",
        "command.txt",
        "script.py",
        "stdout_typescript.txt",
        "versions.txt",
    }
)


class NotATrace(ValueError):
    """The input is neither a trace nor TORCH_LOGS text; the message says what it looks like."""


def new_spool() -> tuple[int, Path]:
    """A temporary file for a stream's bytes (removed at exit), so records can point into it:
    its descriptor, open for writing, and its path."""
    fd, name = tempfile.mkstemp(prefix="tcview-stream-", suffix=".log")
    atexit.register(_remove, name)
    return fd, Path(name)


def spool(path: str) -> Path:
    """Copy a stream into a temporary file (`new_spool`)."""
    with open(path, "rb") as src:
        return spool_chunks(iter(lambda: src.read(1 << 20), b""))


def spool_chunks(chunks: Iterable[bytes]) -> Path:
    """Write a pipe's chunks into a temporary file (`new_spool`)."""
    fd, name = new_spool()
    with os.fdopen(fd, "wb") as dst:
        for chunk in chunks:
            dst.write(chunk)
    return name


def stdin_chunks() -> Iterator[bytes]:
    """What stdin gives, a read at a time (what one read of a pipe gave, up to CHUNK)."""
    buffer = sys.stdin.buffer
    read: Callable[[int], bytes] = getattr(buffer, "read1", buffer.read)
    return iter(lambda: read(CHUNK), b"")


def _remove(name: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(name)


def run_dir_skipped(
    root: Path, skipped: list[tuple[Path, str]], log: Path
) -> list[tuple[Path, str]]:
    """A run directory's skipped files, less its log and the files a run holds beside it."""
    return [
        (p, why)
        for p, why in skipped
        if p != log
        and not (p.parent == root and p.name in RUN_FILES)
        and p.parent != root / PROFILE_DIR  # `tcview run --profile` writes its window there
    ]


RUN_JSON = "run.json"  # what `tcview run` writes beside the trace: the job's exit code


def read_job_end(directory: Path) -> JobEnd | None:
    """How the job of a run directory ended, from its run.json (None without one)."""
    try:
        data = json.loads((directory / RUN_JSON).read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    code = data.get("exit_code")
    sig = data.get("signal")
    elapsed = data.get("elapsed_s")
    command = data.get("command_line")
    return JobEnd(
        str(data.get("status") or ""),
        code if isinstance(code, int) and not isinstance(code, bool) else None,
        sig if isinstance(sig, str) and sig else None,
        data.get("stopped_by_user") is True,
        float(elapsed)
        if isinstance(elapsed, (int, float)) and not isinstance(elapsed, bool)
        else None,
        command if isinstance(command, str) else "",
    )


def run_json_error(directory: Path) -> Error | None:
    """The error a run directory's run.json reports: a non-zero exit code the user did not
    ask for (None otherwise; a signal is the job's end, not an error with a traceback)."""
    end = read_job_end(directory)
    if end is None or not end.exit_code or end.stopped_by_user:
        return None
    return Error(
        None,
        f"exit code {end.exit_code}",
        end.command,
        origin="run.json",
        where=str(directory / RUN_JSON),
    )


def load_source(
    path: str,
    progress: Progress | None = None,
    hooks: Hooks | None = None,
    display: str | None = None,
    cache: bool = True,
) -> Model:
    """A TraceSet for traces (with `.text` for a run directory's log), or a TextLog.

    With `hooks`, the model is published at once and grows under their lock (the UI).
    `cache`: keep and use trace files' indexes in the index cache (unless $TCVIEW_NO_CACHE).
    """
    hooks = hooks or Hooks(progress)
    plan = plan_input(path)
    kind = plan.kind
    if kind == "missing":
        raise FileNotFoundError(path)
    if plan.problem is not None:
        raise NotATrace(plan.problem)
    if kind == "stream":
        # A spooled copy is a new file each time: nothing to find in the cache again.
        return load_source(str(spool(path)), hooks=hooks, display=display or path, cache=False)
    if kind == "archive":
        return load_archive(path, hooks, display or path, cache)[0]
    if kind == "stdin":
        piped, chunks = sniff_chunks(stdin_chunks())
        if piped is PipeKind.ARCHIVE:  # spooled, then read as that file
            try:
                packed = spool_archive(chunks, cache, hooks.progress, hooks.stop)
            except ArchiveError as exc:
                raise NotATrace(str(exc)) from exc
            return load_archive(str(packed), hooks, display or STDIN, cache)[0]
        if piped is PipeKind.TRACE:  # records point into the file: spooled, then read as one
            return load_source(
                str(spool_chunks(chunks)), hooks=hooks, display=display or STDIN, cache=False
            )
        return TextLog.load_chunks(chunks, hooks=hooks, display=display)
    if kind == "text":
        return TextLog.load(path, hooks=hooks, display=display)
    ts = TraceSet.load(path, hooks=hooks, display=display, cache=cache)
    model: Model = ts
    if kind == "run-dir" and not hooks.stop():
        log = find_text_log(Path(path))
        if log is not None:
            text = TextLog.load(
                str(log),
                hooks=replace(hooks, publish=lambda model: None),
                display=f"{display}/{log.relative_to(path).as_posix()}" if display else None,
            )
            ts.add_text(text, run_dir_skipped(Path(path), ts.skipped, log))
            if not ts.files:
                # The files that were not read are the run's, whichever model reports it.
                text.skipped = [*text.skipped, *ts.skipped]
                hooks.publish(text)
                model = text
    directory = Path(path)
    end = read_job_end(directory) if directory.is_dir() else None
    error = run_json_error(directory) if end is not None else None
    if end is not None:
        model.job_end = end
        if error is not None:
            Builder(model).error(error)
        model.version += 1
    return model


def load_archive(path: str, hooks: Hooks, display: str, cache: bool) -> tuple[Model, bool]:
    """An archive, read from its unpacked copy (archives.py) as the input it holds, shown by
    the archive's name, and whether it was cut short. Read once, as it is: follow mode has
    nothing to follow in it."""
    fmt = archive_format(Path(path))
    if fmt is None:  # changed since it was planned
        raise NotATrace("no longer an archive")
    try:
        copy = unpack(path, fmt, hooks.progress, hooks.stop, cache and not cache_disabled())
    except ArchiveError as exc:
        raise NotATrace(str(exc)) from exc
    inner = plan_input(str(copy.path))
    if inner.kind == "archive":  # (a compressed archive is one format: .tar.gz, .tgz)
        raise NotATrace(f"a {fmt.describe()} holding another archive: unpack that one first")
    if inner.problem is not None:
        raise NotATrace(f"unpacked from a {fmt.describe()}: {inner.problem}")
    return load_source(str(copy.path), hooks=hooks, display=display, cache=cache), copy.cut


__all__ = ["NotATrace", "load_archive", "load_source", "new_spool", "spool_chunks", "stdin_chunks"]
