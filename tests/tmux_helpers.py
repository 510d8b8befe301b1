"""A real terminal for tests: tmux on a private server, driven by waits on what the screen shows.

Every tmux test goes through `Terminal`. Each terminal has a tmux server of its own (its socket
in a fresh temporary folder), so parallel pytest workers, other test runs on the machine and
the user's own tmux never meet, and nobody else's client can resize the window.
Every wait polls `capture-pane` until a condition holds, with a generous deadline, and fails
with the last screen: a slow machine makes a test slower, never red.

The pane stays on screen after its command ends (remain-on-exit), so a crash leaves its
traceback to read in the failure message; `wait_ended()` waits for the command to exit and
returns its exit status (which the shell writes to a file: tmux 3.3 does not always record
it), or None where the command `exec`s another program.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from types import TracebackType

import pytest

DEADLINE_S = 60.0  # a cold start (imports, .pyc writing) on a loaded 2-core CI machine
POLL_S = 0.1
SESSION = "t"

need_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

Want = str | Callable[[str], bool]

# The server, and so every pane, gets the test's environment without COLUMNS and LINES: apps in
# a pane must take their size from the terminal. It is passed explicitly: in a serial run the
# process's C environment holds COLUMNS=80 LINES=24 that os.environ does not show (GNU readline,
# which pytest loads, exports them), and a child would inherit those.
_TERMINAL_ENV = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}


class Terminal:
    """One detached tmux session of `size` (columns, rows) running `command` under `sh -c`."""

    def __init__(self, command: str, size: tuple[int, int] = (120, 40)) -> None:
        self.command = command
        self.size = size
        self.started = False
        # the server's socket and the exit status live in a folder of our own, removed at
        # the end (tmux leaves its socket file behind when the server exits)
        self.folder = tempfile.mkdtemp(prefix="tcview-tmux-")
        self.socket = os.path.join(self.folder, "socket")
        self.status_file = os.path.join(self.folder, "status")

    def _shell(self, command: str) -> str:
        """The command, then its exit status written down (unless it `exec`s)."""
        return f"{command}\necho $? > {shlex.quote(self.status_file)}"

    # -- tmux itself

    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-f", "/dev/null", "-S", self.socket, *args],
            capture_output=True,
            text=True,
            check=False,
            env=_TERMINAL_ENV,
        )

    def start(self) -> Terminal:
        width, height = self.size
        # One tmux call: remain-on-exit is set before the command can end.
        done = self.tmux(
            "set-option", "-g", "remain-on-exit", "on", ";",
            "new-session", "-d", "-s", SESSION, "-x", str(width), "-y", str(height),
            self._shell(self.command),
        )  # fmt: skip
        assert done.returncode == 0, f"tmux did not start: {done.stderr}"
        self.started = True
        return self

    def close(self) -> None:
        if self.started:
            self.tmux("kill-server")
            self.started = False
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> Terminal:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- reading and typing

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", SESSION).stdout

    def keys(self, *keys: str) -> None:
        done = self.tmux("send-keys", "-t", SESSION, *keys)
        assert done.returncode == 0, f"send-keys {keys}: {done.stderr}\n{self.screen()}"

    def pane(self, fmt: str) -> str:
        """A pane variable, e.g. `#{pane_pid}` or `#{pane_title}`."""
        return self.tmux("display-message", "-p", "-t", SESSION, fmt).stdout.rstrip("\n")

    def respawn(self, command: str) -> None:
        """Replace the pane's command (killing the one running)."""
        self.command = command
        done = self.tmux("respawn-pane", "-k", "-t", SESSION, self._shell(command))
        assert done.returncode == 0, f"respawn-pane: {done.stderr}"

    def pipe_to(self, path: str) -> None:
        """Append everything written to the terminal from now on to the file at `path`."""
        done = self.tmux("pipe-pane", "-o", "-t", SESSION, f"cat >> {shlex.quote(path)}")
        assert done.returncode == 0, f"pipe-pane: {done.stderr}"

    # -- waiting on conditions

    def wait_for(self, want: Want, timeout: float = DEADLINE_S, what: str = "") -> str:
        """Poll the screen until it shows `want` (text, or a predicate on the screen)."""
        test = (lambda s: want in s) if isinstance(want, str) else want
        label = what or (repr(want) if isinstance(want, str) else "the condition")
        deadline = time.monotonic() + timeout
        screen = self.screen()
        while not test(screen):
            if time.monotonic() > deadline:
                raise AssertionError(self._report(f"{label} not on screen after {timeout:g} s"))
            time.sleep(POLL_S)
            screen = self.screen()
        return screen

    def ended(self) -> bool:
        """The pane's command has exited (or the whole server is gone)."""
        done = self.tmux("display-message", "-p", "-t", SESSION, "#{pane_dead}")
        return done.returncode != 0 or done.stdout.strip() == "1"

    def wait_ended(
        self, timeout: float = DEADLINE_S, what: str = "the command to end"
    ) -> int | None:
        """Wait until the pane's command exits; its exit status (None after an `exec`)."""
        deadline = time.monotonic() + timeout
        while not self.ended():
            if time.monotonic() > deadline:
                raise AssertionError(self._report(f"waited {timeout:g} s for {what}"))
            time.sleep(POLL_S)
        try:
            with open(self.status_file) as fh:
                return int(fh.read())
        except (OSError, ValueError):
            return None

    def _report(self, message: str) -> str:
        state = "ended" if self.ended() else "running"
        return f"{message} (command {state}: {self.command})\n--- last screen ---\n{self.screen()}"
