"""Tell inputs apart and load them: trace directory, trace file, TORCH_LOGS text, stdin."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from tcview.ingest.builder import Builder
from tcview.ingest.detect import find_text_log, plan_input
from tcview.ingest.index import TraceSet
from tcview.ingest.load import Hooks, Progress
from tcview.ingest.profile import PROFILE_DIR
from tcview.ingest.textlog import TextLog
from tcview.model.objects import Error, Model

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


def spool(path: str) -> Path:
    """Copy a stream into a temporary file (removed at exit), so records can point into it."""
    fd, name = tempfile.mkstemp(prefix="tcview-stream-", suffix=".log")
    atexit.register(_remove, name)
    with open(path, "rb") as src, os.fdopen(fd, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    return Path(name)


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


def run_json_error(directory: Path) -> Error | None:
    """The error a run directory's run.json reports: a non-zero exit code (None otherwise)."""
    path = directory / RUN_JSON
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    code = data.get("exit_code")
    if not isinstance(code, int) or isinstance(code, bool) or code == 0:
        return None
    command = data.get("command_line")
    message = command if isinstance(command, str) else ""
    return Error(None, f"exit code {code}", message, origin="run.json", where=str(path))


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
    if kind in ("stdin", "text"):
        return TextLog.load(path, hooks=hooks, display=display)
    ts = TraceSet.load(path, hooks=hooks, display=display, cache=cache)
    model: Model = ts
    if kind == "run-dir" and not hooks.stop():
        log = find_text_log(Path(path))
        if log is not None:
            text = TextLog.load(str(log), hooks=replace(hooks, publish=lambda model: None))
            with hooks.lock:
                ts.add_text(text, run_dir_skipped(Path(path), ts.skipped, log))
            if not ts.files:
                hooks.publish(text)
                model = text
    error = run_json_error(Path(path)) if Path(path).is_dir() else None
    if error is not None:
        with hooks.lock:
            Builder(model).error(error)
            model.version += 1
    return model


__all__ = ["NotATrace", "load_source"]
