"""Tell inputs apart and load them: trace directory, trace file, TORCH_LOGS text, stdin."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from tcview.ingest.builder import Builder
from tcview.ingest.index import TRACE_NAME_PREFIX, TraceSet, discover, trace_reason
from tcview.ingest.load import Hooks, Progress
from tcview.ingest.profile import PROFILE_DIR
from tcview.ingest.textlog import TextLog
from tcview.ingest.tracefile import HEADER
from tcview.model.objects import Error, Model

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


# A file is 'other' (neither a trace nor TORCH_LOGS text) when its first bytes hold no log prefix
# and look binary: a NUL byte, or more than this share of characters that text does not have.
BINARY_SNIFF = 64 << 10
BINARY_SHARE = 0.10
_NOT_TEXT = re.compile("[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f\ufffd]")


class NotATrace(ValueError):
    """The input is neither a trace nor TORCH_LOGS text; the message says what it looks like."""


def detect(path: str) -> str:
    """'stdin', 'stream', 'trace-dir', 'run-dir', 'trace-file', 'text', 'other' or 'missing'.

    A 'stream' is a FIFO, a device or a `<(...)` pipe: read once, never sniffed. 'other' is a
    file that is neither format (see `looks_binary`).
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
    if trace_reason(p) is None:
        return "trace-file"
    return "other" if looks_binary(_head(p, BINARY_SNIFF)) else "text"


@dataclass(frozen=True)
class InputPlan:
    """What an input is and how it is read: the one answer for a load, follow mode and
    `tcview open` (which files of a directory are traces is `index.trace_reason`'s)."""

    path: str
    kind: str  # detect()'s, but for a missing path that is followed: what it will be
    live: bool  # read as it grows: a pipe or stream always, anything else when followed
    problem: str | None  # why it cannot be opened; None when it can


def plan_input(path: str, follow: bool = False) -> InputPlan:
    """The plan for `path`; with `follow`, a path that does not exist yet is waited for (as
    TORCH_LOGS text when it is named like a log file, else as a trace directory)."""
    kind = detect(path)
    live = follow or kind in ("stdin", "stream")
    problem = None
    if kind == "other":
        problem = describe_other(Path(path))
    elif kind == "missing" and live:
        kind = "text" if _looks_like_log_name(path) else "trace-dir"
    elif kind == "missing":
        problem = "no such file or directory"
    return InputPlan(path, kind, live, problem)


def _looks_like_log_name(path: str) -> bool:
    name = Path(path).name
    return "." in name and not name.startswith(TRACE_NAME_PREFIX) and not name.endswith("trace")


def looks_binary(head: bytes) -> bool:
    """True for the first bytes of a file that is not text: no trace or log prefix in them,
    and a NUL byte or more than BINARY_SHARE characters that are neither printable nor
    whitespace nor ESC (colour codes), invalid UTF-8 included."""
    if not head or HEADER.search(head):
        return False
    if b"\0" in head:
        return True
    text = head.decode("utf-8", "replace")
    return len(_NOT_TEXT.findall(text)) > BINARY_SHARE * len(text)


def describe_other(path: Path) -> str:
    """What a file of neither format looks like: its size and first bytes, shown safely."""
    head = _head(path, 16)
    try:
        size = path.stat().st_size
    except OSError:
        size = len(head)
    hexes = " ".join(f"{b:02x}" for b in head[:8]) + (" …" if size > 8 else "")
    shown = "".join(_ascii(b) for b in head) + ("…" if size > len(head) else "")
    return f'not a trace or TORCH_LOGS capture: {size_text(size)}, starts with {hexes} ("{shown}")'


def _ascii(byte: int) -> str:
    if byte in (0x22, 0x5C):  # " and \
        return "\\" + chr(byte)
    return chr(byte) if 0x20 <= byte < 0x7F else f"\\x{byte:02x}"


def size_text(size: int) -> str:
    """1.2 MB, 12.3 kB, 812 bytes."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} byte{'s' if size != 1 else ''}"


def _head(path: Path, limit: int) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(limit)
    except OSError:
        return b""


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
    with contextlib.suppress(OSError):
        os.unlink(name)


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


__all__ = ["detect", "discover", "find_text_log", "load_source", "plan_input"]
