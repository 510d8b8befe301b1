"""The direct child of `tcview run`: starts the job in its own process group and guards it.

Run as ``python -I -S _supervisor.py PARENT_PID GRACE_S -- CMD...`` by the launcher, already
as the leader of a new session and process group. Standard library only.

Why a supervisor: a parent-death signal (PR_SET_PDEATHSIG) reaches only the direct child,
but a job may be a tree (torchrun workers, compile workers). When tcview dies, even by
SIGKILL, this process gets the signal and takes down the whole group. It also removes
processes the job leaves behind after it exits, so that no reader waits on an open pipe.

It ignores signals sent to the group while tcview lives (the job gets them too and decides),
and exits the way the job did: the same exit code, or the same signal.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
import time

PR_SET_PDEATHSIG = 1


def set_parent_death_signal(sig: int) -> bool:
    """Linux only; False where prctl is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of the group, from /proc."""
    found: list[int] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: split after the last ')'.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and fields[0] != b"Z" and int(fields[2]) == pgid:
            found.append(int(name))
    return found


def clear_group(grace: float) -> None:
    """SIGTERM every other member of our group, then SIGKILL what is left after `grace`."""
    me = os.getpid()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        others = [p for p in group_members(me) if p != me]
        if not others:
            return
        for pid in others:
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
        deadline = time.monotonic() + (grace if sig == signal.SIGTERM else 1.0)
        while time.monotonic() < deadline and any(p != me for p in group_members(me)):
            time.sleep(0.05)


def main(argv: list[str]) -> int:
    parent, grace, command = int(argv[1]), float(argv[2]), argv[4:]
    dying = False

    def parent_gone() -> bool:
        return os.getppid() != parent

    def take_group_down() -> None:
        nonlocal dying
        if dying:
            return
        dying = True
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        clear_group(grace)
        os._exit(128 + signal.SIGTERM)

    def on_signal(signum: int, frame: object) -> None:
        if parent_gone():
            take_group_down()
        # Otherwise the group got it from tcview's stop(); the job decides what to do.

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    # A handler, not SIG_IGN: handlers reset to the default on exec, so the job keeps Ctrl-C.
    signal.signal(signal.SIGINT, on_signal)
    has_pdeathsig = set_parent_death_signal(signal.SIGTERM)
    if parent_gone():  # tcview died before prctl took effect
        return 128 + signal.SIGTERM

    try:
        job = subprocess.Popen(command)
    except OSError as exc:
        print(f"tcview: cannot start {command[0]!r}: {exc.strerror or exc}", file=sys.stderr)
        return 127

    status = 0
    while True:
        try:
            if has_pdeathsig:
                _, status = os.waitpid(job.pid, 0)
                break
            # No parent-death signal here: poll for the parent instead.
            pid, status = os.waitpid(job.pid, os.WNOHANG)
            if pid:
                break
            if parent_gone():
                take_group_down()
            time.sleep(0.2)
        except ChildProcessError:
            break
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    clear_group(min(grace, 2.0))
    if os.WIFSIGNALED(status):
        exit_like_signal(os.WTERMSIG(status))
    return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1


def exit_like_signal(sig: int) -> None:
    """Die by `sig` so that the launcher sees what the job saw (without a core dump)."""
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
    os.kill(os.getpid(), sig)
    os._exit(128 + sig)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
