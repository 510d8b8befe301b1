"""`tcview open`: find the input, then run the app."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from tcview.analysis.paths import PathMap
from tcview.commands.config import keymap_or_say
from tcview.ingest.detect import is_trace_name, plan_input
from tcview.text.safe import safe_line

SEARCH_DEPTH = 4
SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", "venv", "site-packages", ".tox"}

NO_INPUT_HELP = """\
tcview open: no trace given, $TORCH_TRACE is not set, and no trace directory was found
under the current directory.

Give it a trace directory, a trace file or a TORCH_LOGS capture:
  tcview open sample_traces/<name>/trace
  tcview open /tmp/my_trace_dir --goto 0/1
To produce a trace, run your script with
  TORCH_TRACE=/tmp/my_trace_dir python train.py
or try the samples shipped in sample_traces/ in the tcview repository.
"""


def newest_trace_dir(start: Path, depth: int = SEARCH_DEPTH) -> Path | None:
    """The directory under `start` whose trace files were written last."""
    best: tuple[float, Path] | None = None
    base = len(start.resolve().parts)
    for root, dirs, files in os.walk(start):
        here = Path(root)
        if len(here.resolve().parts) - base >= depth:
            dirs[:] = []
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        newest = 0.0
        for name in files:
            if is_trace_name(name):
                try:
                    newest = max(newest, (here / name).stat().st_mtime)
                except OSError:
                    continue
        if newest and (best is None or newest > best[0]):
            best = (newest, here)
    return best[1] if best else None


def resolve_path(path: str | None) -> str | None:
    if path:
        return path
    env = os.environ.get("TORCH_TRACE")
    if env:
        return env
    found = newest_trace_dir(Path("."))
    return str(found) if found is not None else None


def _reattach_tty() -> bool:
    """After reading stdin, take keys from the terminal instead."""
    try:
        fd = os.open("/dev/tty", os.O_RDONLY)
    except OSError:
        return False
    os.dup2(fd, 0)
    os.close(fd)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115 - stays open for the app's lifetime
    return True


def open_app(args: argparse.Namespace) -> int:
    try:
        path_map = PathMap.parse(args.map_path)
    except ValueError as exc:
        print(f"tcview open: {safe_line(str(exc))}", file=sys.stderr)
        return 2
    keymap = keymap_or_say("tcview open")  # before the app: a bad config stops here
    if keymap is None:
        return 2
    path = resolve_path(args.path)
    if path is None:
        print(NO_INPUT_HELP, file=sys.stderr, end="")
        return 2
    plan = plan_input(path, follow=bool(args.follow))
    stdin_fd = None
    if plan.problem is not None and plan.kind == "missing":
        print(f"tcview: {plan.problem}: {safe_line(path)}", file=sys.stderr)
        return 2
    if plan.problem is not None:
        print(f"tcview: {safe_line(path)}: {plan.problem}", file=sys.stderr)
        return 2
    if plan.kind == "stdin":
        # The pipe carries the log; keys come from the terminal. Read the pipe live.
        stdin_fd = os.dup(0)
        if not _reattach_tty():
            print("tcview open -: no terminal to read keys from", file=sys.stderr)
            return 2
    if args.profile and not os.path.exists(args.profile):
        print(
            f"tcview: --profile {safe_line(args.profile)}: no such file or folder", file=sys.stderr
        )
        return 2
    if not sys.stdout.isatty():
        print("tcview open: needs a terminal (try `tcview summary` for text)", file=sys.stderr)
        return 2
    from tcview.ui.app import TcviewApp
    from tcview.ui.options import OpenOptions

    options = OpenOptions(
        path,
        goto=args.goto,
        follow=plan.live,
        poll=bool(args.poll),
        stdin_fd=stdin_fd,
        no_exec=bool(args.no_exec),
        python=args.python,
        path_map=path_map,
        profile=args.profile,
        keymap=keymap,
    )
    app = TcviewApp(options)
    app.run()
    return app.return_code or 0
