"""Read a torch.profiler Chrome trace: ``prof.export_chrome_trace("x.json")`` (or ``.json.gz``)
or a folder that ``tensorboard_trace_handler`` wrote (``*.pt.trace.json[.gz]``, merged).

The file is streamed once: its ``traceEvents`` array is decoded one event at a time from chunks
(these files reach gigabytes), and only what the join needs is kept: device kernels, the CPU
runtime calls that launched them (by correlation id), and the CPU ops and annotations (name,
start, end, thread). Events that are not JSON objects, or lack a time, are counted, never raised.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

CHUNK_CHARS = 1 << 20  # characters decoded per read
MAX_EVENT_CHARS = 64 << 20  # an event that does not end within this is skipped as bad
TRACE_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz")
PROFILE_FILES = ("profile.json.gz", "profile.json")  # what `tcview run --profile` writes
PROFILE_DIR = "profile"  # … into this folder of the run directory
KERNEL_CATS = frozenset({"kernel"})
LAUNCH_CATS = frozenset({"cuda_runtime", "cuda_driver", "hip_runtime", "xpu_runtime"})
CPU_CATS = frozenset({"cpu_op", "user_annotation"})
STEP_PREFIX = "ProfilerStep#"
_WS = re.compile(r"[\s,]*")
_SEQ_NAMES = ("CompiledFunction", "CompiledFunctionBackward")


class ProfileError(Exception):
    """A path that is not a profile (said to the user as is)."""


@dataclass(slots=True)
class CpuOp:
    """A CPU op or annotation: a range on one thread."""

    name: str
    ts: float
    end: float
    dur: float  # as the profile says (end - ts loses digits: ts are ~1e12 µs)
    thread: tuple[int, Any, Any]  # (file index, pid, tid)
    seq: int | None = None  # autograd's sequence number (CompiledFunction[Backward] only)


@dataclass(slots=True)
class DeviceKernel:
    """A kernel the GPU ran (cat "kernel")."""

    name: str
    ts: float
    dur: float
    device: tuple[int, Any]  # (file index, pid): one GPU
    stream: Any
    correlation: int | None


@dataclass(slots=True)
class LaunchCall:
    """The CPU runtime call (cudaLaunchKernel, …) that a correlation id names."""

    name: str
    ts: float
    thread: tuple[int, Any, Any]


@dataclass
class ProfileFile:
    path: Path
    events: int = 0
    bad: int = 0
    steps: list[int] = field(default_factory=list)


@dataclass
class Profile:
    """What a profile says, read once."""

    display: str  # the path as given
    files: list[ProfileFile] = field(default_factory=list)
    device_name: str | None = None  # deviceProperties[0].name (GPU profiles)
    kernels: list[DeviceKernel] = field(default_factory=list)
    launches: dict[tuple[int, int], LaunchCall] = field(default_factory=dict)
    cpu_ops: list[CpuOp] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def events(self) -> int:
        return sum(f.events for f in self.files)

    @property
    def bad_events(self) -> int:
        return sum(f.bad for f in self.files)

    @property
    def on_gpu(self) -> bool:
        return bool(self.kernels)


# ---------------------------------------------------------------------- finding the files


def profile_files(path: Path) -> list[Path]:
    """The trace files of a profile path: the file itself, a tensorboard folder's
    ``*.pt.trace.json[.gz]`` (oldest first), or a run directory's ``profile/``."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise ProfileError("no such file or folder")
    found = sorted(
        (p for p in path.iterdir() if p.is_file() and p.name.endswith(TRACE_SUFFIXES)),
        key=lambda p: (p.stat().st_mtime, p.name),
    )
    if found:
        return found
    for name in PROFILE_FILES:
        if (path / name).is_file():
            return [path / name]
    if (path / PROFILE_DIR).is_dir():
        return profile_files(path / PROFILE_DIR)
    raise ProfileError("holds no profiler trace (*.pt.trace.json[.gz] or profile.json[.gz])")


def run_profile(run_dir: Path) -> Path | None:
    """The profile a run directory holds (written by `tcview run --profile`), if any."""
    folder = run_dir / PROFILE_DIR
    if folder.is_dir():
        try:
            profile_files(folder)
        except (ProfileError, OSError):
            return None
        return folder
    return None


def profile_path(input_path: str | None, given: str | None) -> Path | None:
    """The profile to read: --profile, else the one a run directory holds."""
    if given:
        return Path(given)
    if input_path and input_path != "-" and Path(input_path).is_dir():
        return run_profile(Path(input_path))
    return None


def profile_stamp(path: Path) -> tuple[tuple[str, int, int], ...]:
    """What changes when a profile is written or rewritten: its files' names, sizes, mtimes."""
    try:
        files = profile_files(path)
        return tuple((f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in files)
    except (ProfileError, OSError):
        return ()


# ---------------------------------------------------------------------- the streaming reader


def _open_text(path: Path) -> IO[str]:
    with open(path, "rb") as probe:
        gz = probe.read(2) == b"\x1f\x8b"
    raw = gzip.open(path, "rb") if gz else open(path, "rb")  # noqa: SIM115
    return io.TextIOWrapper(cast(IO[bytes], raw), encoding="utf-8", errors="replace")


class _Stream:
    """JSON values decoded one at a time from a text stream read in chunks."""

    def __init__(self, text: IO[str]) -> None:
        self.text = text
        self.buf = ""
        self.pos = 0
        self.eof = False
        self.decoder = json.JSONDecoder()

    def _more(self) -> bool:
        if self.eof:
            return False
        chunk = self.text.read(CHUNK_CHARS)
        if not chunk:
            self.eof = True
            return False
        self.buf = self.buf[self.pos :] + chunk
        self.pos = 0
        return True

    def skip(self, pattern: re.Pattern[str] = _WS) -> None:
        while True:
            m = pattern.match(self.buf, self.pos)
            self.pos = m.end() if m else self.pos
            if self.pos < len(self.buf) or not self._more():
                return

    def peek(self) -> str:
        self.skip()
        return self.buf[self.pos] if self.pos < len(self.buf) else ""

    def take(self, char: str) -> bool:
        if self.peek() == char:
            self.pos += 1
            return True
        return False

    def value(self) -> Any:
        """The next value; ValueError when it is not JSON (the reader moves past it)."""
        self.skip()
        while True:
            try:
                obj, end = self.decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as e:
                if len(self.buf) - self.pos < MAX_EVENT_CHARS and self._more():
                    continue
                self._resync(e.pos)
                raise ValueError(str(e)) from None
            if end >= len(self.buf) and self._more():  # a number may go on in the next chunk
                continue
            self.pos = end
            return obj

    def _resync(self, at: int) -> None:
        """Move past a bad value: to the next ``{`` that starts a line, or the end."""
        nxt = self.buf.find("\n", max(at, self.pos + 1))
        while nxt < 0 and self._more():
            nxt = self.buf.find("\n", self.pos + 1)
        self.pos = len(self.buf) if nxt < 0 else nxt


def read_events(path: Path, on_header: Callable[[str, Any], None] | None = None) -> Iterator[Any]:
    """Every element of the file's ``traceEvents`` array (or of a top-level array), decoded
    one by one; a bad element is yielded as the ValueError it raised. Top-level keys other
    than traceEvents go to `on_header`."""
    with _open_text(path) as text:
        s = _Stream(text)
        if s.take("["):
            yield from _array(s)
            return
        if not s.take("{"):
            raise ProfileError("is not a JSON Chrome trace")
        while s.peek() not in ("}", ""):
            try:
                key = s.value()
            except ValueError as e:
                raise ProfileError(f"is not a Chrome trace ({e})") from None
            if not s.take(":"):
                raise ProfileError("is not a Chrome trace (no ':' after a key)")
            if key == "traceEvents" and s.take("["):
                yield from _array(s)
                continue
            try:
                val = s.value()
            except ValueError:
                continue
            if on_header is not None:
                on_header(str(key), val)


def _array(s: _Stream) -> Iterator[Any]:
    while True:
        c = s.peek()
        if c == "]":
            s.pos += 1
            return
        if c == "":
            return  # cut short: what was read stands
        try:
            yield s.value()
        except ValueError as e:
            yield e


# ---------------------------------------------------------------------- the profile


def load_profile(path: Path, display: str | None = None) -> Profile:
    """Read the profile at `path` (a file, or a folder of them merged): once, streamed."""
    files = profile_files(path)
    prof = Profile(display if display is not None else str(path))
    for index, file in enumerate(files):
        info = ProfileFile(file)
        prof.files.append(info)
        try:
            _read_file(prof, index, info)
        except (OSError, EOFError, gzip.BadGzipFile, ProfileError) as e:
            prof.problems.append(f"{file.name}: {e}")
    if len(prof.problems) == len(files) and not prof.events:
        raise ProfileError(
            prof.problems[0] if len(files) > 1 else prof.problems[0].split(": ", 1)[1]
        )
    return prof


def _key(value: Any) -> Any:
    """A pid or tid as a key: what a trace gives, unless it cannot be one (a list, say)."""
    return value if isinstance(value, (int, str, float)) or value is None else str(value)


def _read_file(prof: Profile, index: int, info: ProfileFile) -> None:
    def header(key: str, value: Any) -> None:
        if key == "deviceProperties" and isinstance(value, list) and prof.device_name is None:
            for dev in value:
                if isinstance(dev, dict) and isinstance(dev.get("name"), str):
                    prof.device_name = dev["name"]
                    return

    intern = sys.intern
    threads: dict[tuple[Any, Any], tuple[int, Any, Any]] = {}  # one tuple per thread

    def thread_of(ev: dict[str, Any]) -> tuple[int, Any, Any]:
        key = (_key(ev.get("pid")), _key(ev.get("tid")))
        found = threads.get(key)
        if found is None:
            found = threads[key] = (index, *key)
        return found

    for ev in read_events(info.path, header):
        info.events += 1
        if not isinstance(ev, dict):
            info.bad += 1
            continue
        if ev.get("ph") != "X":
            continue
        try:
            name = intern(str(ev.get("name", "")))
            cat = ev.get("cat")
            ts = float(ev["ts"])
            dur = float(ev.get("dur", 0.0))
            args = ev.get("args")
            args = args if isinstance(args, dict) else {}
            if cat in KERNEL_CATS:
                corr = args.get("correlation")
                prof.kernels.append(
                    DeviceKernel(
                        name,
                        ts,
                        dur,
                        (index, _key(ev.get("pid"))),
                        _key(ev.get("tid")),
                        corr if isinstance(corr, int) else None,
                    )
                )
            elif cat in LAUNCH_CATS:
                corr = args.get("correlation")
                if isinstance(corr, int):
                    prof.launches[(index, corr)] = LaunchCall(name, ts, thread_of(ev))
            elif cat in CPU_CATS:
                seq = args.get("Sequence number") if name in _SEQ_NAMES else None
                prof.cpu_ops.append(
                    CpuOp(
                        name,
                        ts,
                        ts + dur,
                        dur,
                        thread_of(ev),
                        seq if isinstance(seq, int) else None,
                    )
                )
                if name.startswith(STEP_PREFIX) and name[len(STEP_PREFIX) :].isdigit():
                    info.steps.append(int(name[len(STEP_PREFIX) :]))
        except (KeyError, TypeError, ValueError):
            info.bad += 1
