"""The input a text command names (`summary`, `show`, `grep`, `export`, `diff`, `bench`),
loaded, or why it cannot be, said once on stderr with the path shown safely."""

from __future__ import annotations

import os
import sys

from tcview.ingest.load import Progress
from tcview.ingest.source import NotATrace, load_source
from tcview.model.objects import Model
from tcview.text.safe import safe_line


def open_input(path: str, progress: Progress | None = None, cache: bool = True) -> Model | None:
    """The model of `path` (`-`: stdin); None when it is missing, unreadable, neither format
    or holds no trace (said): a script's gate must not pass on nothing (exit 2)."""
    if path != "-" and not os.path.exists(path):
        print(f"tcview: no such file or directory: {safe_line(path)}", file=sys.stderr)
        return None
    try:
        model = load_source(path, progress=progress, cache=cache)
    except NotATrace as exc:
        print(f"tcview: {safe_line(path)}: {exc}", file=sys.stderr)
        return None
    except OSError as exc:
        print(f"tcview: {unreadable(exc, path)}", file=sys.stderr)
        return None
    problem = input_problem(model, path)
    if problem is not None:
        print(f"tcview: {safe_line(problem)}", file=sys.stderr)
        model.close()
        return None
    return model


def unreadable(exc: OSError, path: str) -> str:
    """`cannot read PATH: why`, naming the file that failed (inside `path` when it is one)."""
    where = exc.filename if exc.filename is not None else path
    return f"cannot read {safe_line(os.fsdecode(where))}: {exc.strerror or exc}"


def input_problem(model: Model, path: str) -> str | None:
    """Why a loaded input cannot be reported on, else None: a file of it could not be read
    (a report from the rest, or from a run directory's log instead, would hide that), or it
    holds no trace record and no TORCH_LOGS line (a run directory whose run.json reports an
    error still has that to say)."""
    for file, why in model.skipped:
        if why.startswith("unreadable"):
            return f"cannot read {file}: {why.removeprefix('unreadable: ')}"
    if model.files or model.run_errors():
        return None
    if path == "-":
        return "no trace or TORCH_LOGS line on stdin"
    if os.path.isdir(path):
        return (
            f"no trace found in {path}. tcview reads the dedicated_log_torch_trace_*.log files"
            " that TORCH_TRACE=DIR writes, and TORCH_LOGS captures (e.g. torch_logs.txt)."
        )
    return f"no trace or TORCH_LOGS line found in {path}"
