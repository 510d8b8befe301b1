"""Tell inputs apart and load them: trace directory, trace file, TORCH_LOGS text, stdin."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import stat
import tempfile
from dataclasses import replace
from pathlib import Path

from .builder import Builder
from .index import TraceSet, discover, sniff_trace
from .load import Hooks, Progress
from .model import Error, Model
from .textlog import TextLog

TEXT_LOG_NAMES = ("torch_logs.txt", "torch_logs.log", "stderr.txt", "logs.txt")
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


def detect(path: str) -> str:
    """'stdin', 'stream', 'trace-dir', 'run-dir', 'trace-file', 'text' or 'missing'.

    A 'stream' is a FIFO, a device or a `<(...)` pipe: read once, never sniffed.
    """
    if path == "-":
        return "stdin"
    p = Path(path)
    if is_stream(p):
        return "stream"
    if p.is_dir():
        return "run-dir" if find_text_log(p) is not None else "trace-dir"
    if not p.exists():
        return "missing"
    if p.name.startswith("dedicated_log_torch_trace") or sniff_trace(p) is None:
        return "trace-file"
    return "text"


def is_stream(path: Path) -> bool:
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def spool(path: str) -> Path:
    """Copy a stream into a temporary file (removed at exit), so records can point into it."""
    fd, name = tempfile.mkstemp(prefix="tcview-stream-", suffix=".log")
    atexit.register(_remove, name)
    with open(path, "rb") as src, os.fdopen(fd, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    return Path(name)


def _remove(name: str) -> None:
    try:
        os.unlink(name)
    except OSError:
        pass


def find_text_log(directory: Path) -> Path | None:
    """The captured TORCH_LOGS of a run directory (``trace/`` plus ``torch_logs.txt``)."""
    for name in TEXT_LOG_NAMES:
        candidate = directory / name
        if candidate.is_file():
            return candidate
    return None


def run_dir_skipped(
    root: Path, skipped: list[tuple[Path, str]], log: Path
) -> list[tuple[Path, str]]:
    """A run directory's skipped files, less its log and the files a run holds beside it."""
    return [
        (p, why)
        for p, why in skipped
        if p != log and not (p.parent == root and p.name in RUN_FILES)
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
) -> Model:
    """A TraceSet for traces (with `.text` for a run directory's log), or a TextLog.

    With `hooks`, the model is published at once and grows under their lock (the UI).
    """
    hooks = hooks or Hooks(progress)
    kind = detect(path)
    if kind == "missing":
        raise FileNotFoundError(path)
    if kind == "stream":
        return load_source(str(spool(path)), hooks=hooks, display=display or path)
    if kind in ("stdin", "text"):
        return TextLog.load(path, hooks=hooks, display=display)
    ts = TraceSet.load(path, hooks=hooks, display=display)
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


__all__ = ["detect", "discover", "find_text_log", "load_source"]
