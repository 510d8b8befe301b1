"""Run a job under TORCH_TRACE, capture its output, and never leave a process behind.

UI-agnostic: `tcview run --no-tui` and the TUI's Run pane both drive a `Launcher`.

Process tree::

    tcview ──> _supervisor.py (new session; pgid G; parent-death signal) ──> the job (pgid G)

Threading model of a `RunSession`: two reader threads (stdout, stderr) drain the pipes
continuously, tee raw bytes into the run directory and deliver `OutputLine`s; one waiter
thread reaps the supervisor, writes run.json and calls `on_exit`; `stop()` escalates in its
own thread. Callbacks run on those threads (never concurrently with themselves): a UI must
hand them to its own loop (Textual: `app.call_from_thread`) or poll `lines_since()` instead.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import BinaryIO, Literal

from tcview.run import cleanup
from tcview.run._supervisor import group_members
from tcview.run.gpu import GpuSample, GpuSampler
from tcview.run.profiling import profile_env
from tcview.run.spec import LaunchError, PythonInfo, RunOptions, RunSpec, probe_python
from tcview.text.safe import safe_line

SUPERVISOR = Path(__file__).with_name("_supervisor.py")


def supervised(argv: Sequence[str], grace_s: float) -> list[str]:
    """`argv` run under the supervisor, which ends its group when tcview goes (cleanup.py)."""
    return [
        sys.executable,
        "-I",
        "-S",
        str(SUPERVISOR),
        str(os.getpid()),
        str(grace_s),
        "--",
        *argv,
    ]


_MAX_DISPLAY = 4000  # characters of one output line kept for display
_MAX_PENDING = 64 << 10  # a line without newline is cut here
_KEEP_LINES = 20000  # lines kept in memory for the Run pane

State = Literal["starting", "running", "exited", "killed"]


@dataclass(frozen=True)
class OutputLine:
    seq: int  # increasing over both streams of one session
    stream: Literal["stdout", "stderr"]
    raw: str  # as the job wrote it, escape sequences included: never print it as is
    time: float  # time.time()

    @property
    def text(self) -> str:
        """The line made safe for a terminal (escape codes shown, not obeyed)."""
        return safe_line(self.raw)


@dataclass(frozen=True)
class RunStatus:
    state: State
    pid: int | None
    elapsed_s: float
    returncode: int | None = None  # exit code when state == "exited"
    signal: str | None = None  # "SIGINT" … when state == "killed"
    stopping: bool = False  # stop() is under way

    @property
    def text(self) -> str:
        """For the status bar: ``running pid 123 · 0:12``, ``exited 0``, ``killed (SIGTERM)``."""
        if self.state == "starting":
            return "starting"
        if self.state == "running":
            minutes, seconds = divmod(int(self.elapsed_s), 60)
            stop = " · stopping" if self.stopping else ""
            return f"running pid {self.pid} · {minutes}:{seconds:02d}{stop}"
        if self.state == "exited":
            return f"exited {self.returncode}"
        return f"killed ({self.signal})" if self.signal else "killed"

    @property
    def exit_code(self) -> int | None:
        """Shell convention: the exit code, or 128 + signal number."""
        if self.state == "exited":
            return self.returncode
        if self.state == "killed":
            return 128 + getattr(signal.Signals, self.signal or "SIGKILL", signal.SIGKILL)
        return None


class Launcher:
    """One command and its options; each `start()` is a new `RunSession` in a new directory."""

    def __init__(
        self,
        spec: RunSpec,
        options: RunOptions | None = None,
        *,
        on_line: Callable[[OutputLine], None] | None = None,
        on_exit: Callable[[RunSession], None] | None = None,
        tee_stdout: BinaryIO | None = None,
        tee_stderr: BinaryIO | None = None,
        on_gpu: Callable[[GpuSample], None] | None = None,
    ) -> None:
        self.spec = spec
        self.options = options or RunOptions()
        self.on_line = on_line
        self.on_exit = on_exit
        # The job's GPUs (NVML), sampled in a thread while it runs; nothing without NVML.
        self.on_gpu = on_gpu
        self.tee_stdout = tee_stdout
        self.tee_stderr = tee_stderr
        self.python_info: PythonInfo | None = None
        self.sessions: list[RunSession] = []

    def child_env(self, run_dir: Path) -> dict[str, str]:
        """The user's environment plus the tracing variables and --env."""
        env = dict(os.environ)
        env["TORCH_TRACE"] = str((run_dir / "trace").resolve())
        if self.options.logs:
            env["TORCH_LOGS"] = self.options.logs
        else:
            env.pop("TORCH_LOGS", None)
        # Live output: Python block-buffers stdout on a pipe. Respect the user's own setting.
        env.setdefault("PYTHONUNBUFFERED", "1")
        env.update(self.options.env)
        if self.options.profile is not None:
            env.update(profile_env(self.options.profile, run_dir, env))
        return env

    def preflight(self) -> PythonInfo:
        """Ask the job's Python for versions; LaunchError if it needs torch and has none."""
        env = dict(os.environ)
        env.update(self.options.env)
        info = probe_python(self.spec.python, env)
        self.python_info = info
        if self.spec.needs_torch and (info.error or not info.torch):
            why = info.error or f"{info.executable} cannot import torch (no torch installed there)"
            raise LaunchError(
                f"{why}; install torch into that Python or choose another with --python"
            )
        return info

    def start(self) -> RunSession:
        """A started session in a fresh run directory."""
        if self.python_info is None:
            self.preflight()
        run_dir = self._claim_run_dir()
        session = RunSession(self, run_dir)
        self.sessions.append(session)
        session.start()
        return session

    def _claim_run_dir(self) -> Path:
        opts = self.options
        if opts.run_dir is not None:
            base = Path(opts.run_dir)
            first = not self.sessions
            if first and not (base.exists() and any(base.iterdir())):
                base.mkdir(parents=True, exist_ok=True)
                return base
            if first:
                raise LaunchError(f"{base} is not empty: choose another --dir or remove it")
            parent, stem = base.parent, base.name
        else:
            parent = opts.runs_root
            stem = f"{time.strftime('%Y%m%d-%H%M%S')}-{self.spec.name}"
        parent.mkdir(parents=True, exist_ok=True)
        for n in range(1, 1000):
            candidate = parent / (stem if n == 1 else f"{stem}-{n}")
            try:
                candidate.mkdir()
                return candidate
            except FileExistsError:
                continue
        raise LaunchError(f"cannot create a run directory under {parent}")


class RunSession:
    """One run of the job: its directory, process, output and status."""

    def __init__(self, launcher: Launcher, run_dir: Path) -> None:
        self.launcher = launcher
        self.run_dir = run_dir
        self.trace_dir = run_dir / "trace"
        self._proc: subprocess.Popen[bytes] | None = None
        self._group_lock = threading.RLock()  # reentrant: the signal handler may nest
        self._reaped = False
        self._line_lock = threading.RLock()  # callbacks may call lines_since()
        self._lines: collections.deque[OutputLine] = collections.deque(maxlen=_KEEP_LINES)
        self._seq = 0
        self._readers: list[threading.Thread] = []
        self._done = threading.Event()
        self._stopping = threading.Event()
        self._start_wall = 0.0
        self._start_mono = 0.0
        self._end_mono: float | None = None
        self._status = RunStatus("starting", None, 0.0)
        self.gpu = GpuSampler(self._gpu_sampled, self._job_pids)

    # -- public ---------------------------------------------------------------------

    @property
    def spec(self) -> RunSpec:
        return self.launcher.spec

    @property
    def pid(self) -> int | None:
        """The supervisor's pid, which is also the process group id of the whole job."""
        return self._proc.pid if self._proc else None

    @property
    def status(self) -> RunStatus:
        st = self._status
        if st.state == "running":
            return replace(
                st,
                elapsed_s=time.monotonic() - self._start_mono,
                stopping=self._stopping.is_set(),
            )
        return st

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> RunStatus | None:
        """The final status, or None if still running after `timeout` seconds."""
        return self._status if self._done.wait(timeout) else None

    def stop(self, grace_s: float | None = None) -> None:
        """SIGINT to the group, SIGTERM after the grace period, then SIGKILL. Returns at once."""
        if self._done.is_set() or self._stopping.is_set():
            return
        self._stopping.set()
        grace = self.launcher.options.grace_s if grace_s is None else grace_s
        threading.Thread(target=self._escalate, args=(grace,), daemon=True).start()

    def kill(self) -> None:
        """SIGKILL to the whole group, now."""
        self._stopping.set()
        self.signal_group(signal.SIGKILL)

    def signal_group(self, sig: int) -> bool:
        """Send `sig` to the job's process group; False when it is gone."""
        with self._group_lock:
            if self._proc is None or self._reaped:
                return False
            return cleanup.signal_group(self._proc.pid, sig)

    def rerun(self) -> RunSession:
        """The same command in a new run directory (this one must have finished)."""
        if not self._done.is_set():
            raise LaunchError("the job is still running: stop it first")
        return self.launcher.start()

    def lines_since(self, seq: int = 0) -> tuple[list[OutputLine], int]:
        """Output lines numbered >= seq still in memory, and the seq to ask for next."""
        with self._line_lock:
            first = self._seq - len(self._lines)
            new = list(itertools.islice(self._lines, max(seq - first, 0), None))
            return new, self._seq

    @property
    def reopen_hint(self) -> str:
        return f"tcview open {shlex.quote(str(self.run_dir))}"

    # -- starting -------------------------------------------------------------------

    def start(self) -> None:
        launcher = self.launcher
        opts = launcher.options
        env = launcher.child_env(self.run_dir)
        self.trace_dir.mkdir(parents=True, exist_ok=True)
        # Both are closed by their reader threads, when the job's pipes end.
        stdout_file = open(self.run_dir / "stdout.txt", "wb")  # noqa: SIM115
        stderr_file = open(self.run_dir / "torch_logs.txt", "wb")  # noqa: SIM115
        argv = supervised(launcher.spec.argv, max(opts.grace_s, 0.5))
        cleanup.install_cleanup()
        self._start_wall = time.time()
        self._start_mono = time.monotonic()
        try:
            with cleanup.registering(self):
                self._proc = subprocess.Popen(
                    argv,
                    stdin=None if opts.inherit_stdin else subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    env=env,
                    cwd=opts.cwd,
                    start_new_session=True,
                )
        except OSError as exc:
            stdout_file.close()
            stderr_file.close()
            raise LaunchError(f"cannot start the job: {exc}") from exc
        self._status = RunStatus("running", self._proc.pid, 0.0)
        self._write_run_json()
        assert self._proc.stdout is not None and self._proc.stderr is not None
        for stream, pipe, file, tee in (
            ("stdout", self._proc.stdout, stdout_file, launcher.tee_stdout),
            ("stderr", self._proc.stderr, stderr_file, launcher.tee_stderr),
        ):
            reader = threading.Thread(
                target=self._pump,
                args=(stream, pipe, file, tee),
                name=f"tcview-run-{stream}",
                daemon=True,
            )
            reader.start()
            self._readers.append(reader)
        threading.Thread(target=self._wait_for_exit, name="tcview-run-wait", daemon=True).start()
        self.gpu.start()

    def _job_pids(self) -> list[int]:
        """The job's processes: its process group (whose NVML memory is the job's)."""
        pid = self.pid
        return group_members(pid) if pid is not None else []

    def _gpu_sampled(self, sample: GpuSample) -> None:
        callback = self.launcher.on_gpu
        if callback is not None:
            callback(sample)

    # -- threads --------------------------------------------------------------------

    def _pump(self, stream: str, pipe: BinaryIO, file: BinaryIO, tee: BinaryIO | None) -> None:
        fd = pipe.fileno()
        pending = bytearray()
        try:
            while True:
                try:
                    chunk = os.read(fd, 65536)
                except InterruptedError:
                    continue
                except OSError:
                    break
                if not chunk:
                    break
                file.write(chunk)
                file.flush()
                if tee is not None:
                    try:
                        tee.write(chunk)
                        tee.flush()
                    except (OSError, ValueError):
                        tee = None  # the terminal went away: keep draining the pipe
                pending += chunk
                self._emit_lines(stream, pending)
            if pending:
                self._deliver(stream, bytes(pending))
        finally:
            file.close()
            pipe.close()

    def _emit_lines(self, stream: str, pending: bytearray) -> None:
        start = 0
        while True:
            cut = pending.find(b"\n", start)
            if cut < 0:
                break
            self._deliver(stream, bytes(pending[start:cut]))
            start = cut + 1
        del pending[:start]  # once per chunk, not once per line
        if len(pending) >= _MAX_PENDING:
            self._deliver(stream, bytes(pending))
            pending.clear()

    def _deliver(self, stream: str, raw: bytes) -> None:
        text = raw.decode("utf-8", "replace").rstrip("\r")
        text = text.rsplit("\r", 1)[-1]  # what a terminal shows after progress-bar rewrites
        if len(text) > _MAX_DISPLAY:
            text = text[:_MAX_DISPLAY] + f" … ({len(text) - _MAX_DISPLAY} more characters)"
        with self._line_lock:
            line = OutputLine(self._seq, stream, text, time.time())  # type: ignore[arg-type]
            self._seq += 1
            self._lines.append(line)
            callback = self.launcher.on_line
            if callback is not None:
                try:
                    callback(line)
                except Exception as exc:  # noqa: BLE001 - a UI bug must not stop the pipe draining
                    print(f"tcview: output callback failed: {exc!r}", file=sys.stderr)

    def _wait_for_exit(self) -> None:
        proc = self._proc
        assert proc is not None
        if hasattr(os, "waitid"):
            # Wait without reaping: while the supervisor is a zombie its pid, and so the
            # group id, cannot be reused, so the leftover sweep below is safe.
            with contextlib.suppress(ChildProcessError):
                os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
            self._sweep_group()
        with self._group_lock:
            returncode = proc.wait()
            self._reaped = True
        end = time.monotonic()
        for reader in self._readers:
            reader.join(timeout=5.0)  # a process outside the group may still hold the pipe
        if returncode < 0:
            name = _signal_name(-returncode)
            status = RunStatus("killed", proc.pid, end - self._start_mono, signal=name)
        else:
            status = RunStatus("exited", proc.pid, end - self._start_mono, returncode=returncode)
        self._end_mono = end
        self._status = status
        self.gpu.stop()
        cleanup.forget(self)
        try:
            self._write_run_json()
        finally:
            self._done.set()
            callback = self.launcher.on_exit
            if callback is not None:
                try:
                    callback(self)
                except Exception as exc:  # noqa: BLE001 - nor stop the job's end being recorded
                    print(f"tcview: exit callback failed: {exc!r}", file=sys.stderr)

    def _sweep_group(self) -> None:
        """Kill what is left of the group (normally nothing: the supervisor cleans up)."""
        assert self._proc is not None
        pgid = self._proc.pid
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if not [p for p in group_members(pgid) if p != pgid]:
                return
            self.signal_group(sig)
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline and [p for p in group_members(pgid) if p != pgid]:
                time.sleep(0.05)

    def _escalate(self, grace: float) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            if not self.signal_group(sig) or self._done.wait(grace):
                return
        self.signal_group(signal.SIGKILL)

    # -- run.json -------------------------------------------------------------------

    def _write_run_json(self) -> None:
        launcher = self.launcher
        info = launcher.python_info
        st = self._status
        data = {
            "command": list(launcher.spec.argv),
            "command_line": launcher.spec.display,
            "kind": launcher.spec.kind,
            "cwd": str(Path(launcher.options.cwd or os.getcwd()).resolve()),
            "start": _iso(self._start_wall),
            "end": _iso(self._start_wall + (self._end_mono - self._start_mono))
            if self._end_mono is not None
            else None,
            "elapsed_s": round(st.elapsed_s, 3) if st.state != "running" else None,
            "status": st.text if st.state != "running" else "running",
            "exit_code": st.returncode,
            "signal": st.signal,
            # The user asked it to stop (`x`, q, Ctrl-C): its end is not a crash.
            "stopped_by_user": self._stopping.is_set(),
            "pid": st.pid,  # the supervisor's, which is also the job's process group id
            "python": info.executable if info else launcher.spec.python,
            "python_version": info.version if info else None,
            "torch": info.torch if info else None,
            "triton": info.triton if info else None,
            "cuda": info.cuda if info else None,  # the CUDA torch was built with
            "hip": info.hip if info else None,
            "gpus": list(info.gpus) if info else [],
            "gpu_driver": info.gpu_driver if info else None,
            "gpu_use": self.gpu.summary(),  # NVML's peaks while the job ran
            "env": {
                "TORCH_TRACE": str(self.trace_dir.resolve()),
                "TORCH_LOGS": launcher.options.logs or None,
                **({} if "PYTHONUNBUFFERED" in os.environ else {"PYTHONUNBUFFERED": "1"}),
                **dict(launcher.options.env),
            },
            "host": socket.gethostname(),
            # --profile: the window asked for (profile/ holds what each process recorded)
            "profile": asdict(launcher.options.profile) if launcher.options.profile else None,
        }
        target = self.run_dir / "run.json"
        tmp = target.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, indent=2) + "\n")
        os.replace(tmp, target)


def _iso(stamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(stamp))


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
