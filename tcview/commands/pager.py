"""Long command-line output goes through a pager, as git does.

When stdout is a terminal and the output is taller than it, the text is piped into
``$TCVIEW_PAGER``, else ``$PAGER``, else ``less -R`` (``LESS=FRX`` when LESS is unset: quit
at the end of one screen, keep colours, leave the text on screen). An empty pager or ``cat``
means no pager. Output that fits on the screen, or that goes to a file or a pipe, is
written as it is.

`Pager` streams: lines are held until they fill the screen, then the pager starts and gets
them and the rest, so `tcview grep` shows results before the search ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from types import TracebackType
from typing import IO, Any

DEFAULT_PAGER = "less -R"


def pager_command() -> str:
    """The pager to use ('' for none)."""
    for name in ("TCVIEW_PAGER", "PAGER"):
        value = os.environ.get(name)
        if value is not None:
            return "" if value.strip() in ("", "cat") else value
    return DEFAULT_PAGER if shutil.which("less") else ""


def _rows(line: str, columns: int) -> int:
    """Terminal rows a line takes (it wraps at `columns`)."""
    return max(1, -(-len(line) // columns)) if columns > 0 else 1


class Pager:
    """Write text to stdout, or through the pager once it is taller than the terminal."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self._held: list[str] = []
        self._rows = 0
        self._pager: subprocess.Popen[bytes] | None = None
        self._closed = False  # the pager quit (the user pressed q): drop the rest
        self._direct = not self._is_terminal() or not pager_command()
        size = shutil.get_terminal_size()
        self._limit = size.lines - 1  # a line for the shell's prompt
        self._columns = size.columns

    def _is_terminal(self) -> bool:
        try:
            return self.stream.isatty()
        except (AttributeError, ValueError):
            return False

    def write(self, text: str) -> None:
        if self._closed or not text:
            return
        if self._direct:
            self.stream.write(text)
            return
        if self._pager is None:
            self._held.append(text)
            self._rows += sum(_rows(line, self._columns) for line in text.split("\n")) - 1
            if self._rows >= self._limit:
                self._start()
            return
        self._send(text)

    def _start(self) -> None:
        env = dict(os.environ)
        env.setdefault("LESS", "FRX")
        env.setdefault("LV", "-c")
        try:
            # The pager is the user's own setting (like git's core.pager): run by the shell.
            self._pager = subprocess.Popen(
                pager_command(), shell=True, stdin=subprocess.PIPE, env=env
            )
        except OSError:
            self._direct = True
            self.stream.write("".join(self._held))
            self._held = []
            return
        held, self._held = "".join(self._held), []
        self._send(held)

    def _send(self, text: str) -> None:
        pager = self._pager
        assert pager is not None and pager.stdin is not None
        try:
            pager.stdin.write(text.encode("utf-8", "replace"))
        except (BrokenPipeError, OSError):
            self._closed = True

    def close(self) -> None:
        if self._pager is None:
            if self._held:
                self.stream.write("".join(self._held))
                self._held = []
            self.stream.flush()
            return
        pager = self._pager
        assert pager.stdin is not None
        with contextlib.suppress(BrokenPipeError, OSError):
            pager.stdin.close()
        # Ctrl-C is for the pager now (less uses it), as git does while it waits.
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            pager.wait()
        finally:
            signal.signal(signal.SIGINT, previous)

    def __enter__(self) -> Pager:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def emit_json(data: Any, stream: IO[str] | None = None) -> None:
    """`data` as indented JSON (json.dumps(data, indent=2)), printed as `emit` prints, in
    pieces: a big summary (1,024 ranks: 7 MB of JSON) is never held as one string, nor as
    the encoder's million small ones."""
    with Pager(stream) as out:
        batch: list[str] = []
        size = 0
        for chunk in json.JSONEncoder(indent=2).iterencode(data):
            batch.append(chunk)
            size += len(chunk)
            if size >= JSON_BATCH:
                out.write("".join(batch))
                batch, size = [], 0
        batch.append("\n")
        out.write("".join(batch))


JSON_BATCH = 1 << 16  # characters written at a time


def emit(text: str, stream: IO[str] | None = None) -> None:
    """Print `text` (a newline is added), through the pager when it is taller than the
    terminal: what `tcview summary`, `grep` and `diff` print."""
    with Pager(stream) as out:
        out.write(text if text.endswith("\n") else text + "\n")
