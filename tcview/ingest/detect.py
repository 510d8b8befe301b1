"""What an input is (a trace file, a directory of them, a run directory, TORCH_LOGS text or
neither) and which files of a directory are traces. Light to import: a reopen whose report is
kept (`tcview.commands.results`) asks this and reads no trace."""

from __future__ import annotations

import gzip
import itertools
import os
import re
import stat
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from tcview.ingest.archives import archive_format, archive_head, archive_problem
from tcview.ingest.profile import PROFILE_FILES, TRACE_SUFFIXES
from tcview.text.sizes import size_text

# A record's prefix, as torch's structured logger writes it (groups: rank, time, process id).
# (The file part is greedy: the match ends at the first "]" either way, and greedy is faster.)
RECORD_PREFIX = rb"(?:\[rank(\d+)\]:)?[A-Z](\d{4} \d\d:\d\d:\d\d\.\d+) +(\d+) [^\]\n]*:\d+\] "
HEADER = re.compile(RECORD_PREFIX)

TRACE_NAME_PREFIX = "dedicated_log_torch_trace"
SNIFF_LIMIT = 4 << 20


def sniff_trace(path: Path) -> str | None:
    """None when `path` is a trace file, else the reason it is not one.

    A trace file's first non-empty line is a record header: the log prefix, then a JSON object.
    A damaged first header still counts when it starts like one (``{"``); TORCH_LOGS text has
    the same prefix but a message after it, not JSON.
    """
    try:
        with open(path, "rb") as fh:
            data = fh.read(65536)
            while data and not data.strip():
                more = fh.read(65536)
                if not more:
                    break
                data = data.lstrip() + more
            data = data.lstrip(b"\r\n\t ")
            if not data:
                return "empty"
            while b"\n" not in data and len(data) < SNIFF_LIMIT:
                more = fh.read(65536)
                if not more:
                    break
                data += more
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    return sniff_head(data)


def sniff_head(data: bytes) -> str | None:
    """`sniff_trace` of a file's first bytes (at least its first line)."""
    data = data.lstrip(b"\r\n\t ")
    if not data:
        return "empty"
    line = data.split(b"\n", 1)[0]
    m = HEADER.match(line)
    if not m:
        return None if _cut_at_start(data) else "first line is not a trace record header"
    if not line[m.end() :].lstrip().startswith(b"{"):
        return "first line is a log line, not a trace record"
    return None


class PipeKind(Enum):
    """What a pipe carries (stdin, a FIFO), known by its first bytes."""

    ARCHIVE = "archive"  # read once it has all come, from its unpacked copy
    TRACE = "trace"  # spooled to a file that its records point into
    TEXT = "text"  # TORCH_LOGS text (or anything else: read line by line)


PIPE_SNIFF_MAX = 1 << 16  # a pipe's first bytes that tell what it carries, at most


def sniff_pipe(head: bytes, ended: bool) -> PipeKind | None:
    """What a pipe whose first bytes are `head` carries; None while they are too few to tell
    (`ended`: no more will come). A trace is known by its first line, or, cut inside a
    payload, by its next record header."""
    ended = ended or len(head) >= PIPE_SNIFF_MAX
    archive = archive_head(head, ended)
    if archive is None:
        return None
    if archive:
        return PipeKind.ARCHIVE
    data = head.lstrip(b"\r\n\t ")
    if not ended and b"\n" not in data:
        return None
    if data and sniff_head(head) is None:
        return PipeKind.TRACE
    if not ended and not HEADER.match(data) and _may_be_payload(data):
        return None
    return PipeKind.TEXT


def _may_be_payload(data: bytes) -> bool:
    """Whether `data`, no record header among its lines, may still be a trace's payload lines
    (the first maybe cut inside): its whole lines after the first are indented with a tab."""
    lines = data.split(b"\n")[1:-1]  # (the last is not whole yet)
    return all(line.startswith(b"\t") for line in lines if line)


def sniff_chunks(chunks: Iterator[bytes]) -> tuple[PipeKind, Iterator[bytes]]:
    """Read `chunks` (a pipe's reads) until they tell what the pipe carries: that, and all of
    its chunks again, the ones read included."""
    head = b""
    kind = None
    for data in chunks:
        head += data
        kind = sniff_pipe(head, ended=False)
        if kind is not None:
            break
    if kind is None:  # it ended (or its reader stopped) before it could tell
        kind = sniff_pipe(head, ended=True) or PipeKind.TEXT  # (ended: it tells)
    return kind, itertools.chain([head] if head else [], chunks)


# Why a torch.profiler trace beside the trace files is not read as one: it is the other input
# of the profile join, never a file that failed.
PROFILE_REASON = "a torch.profiler trace: --profile PATH joins it"
PROFILE_SNIFF = 4096  # where an export_chrome_trace file names its keys
_PROFILE_KEYS = (b'"schemaVersion"', b'"traceEvents"', b'"deviceProperties"')


def split_profiles(
    skipped: list[tuple[Path, str]],
) -> tuple[list[tuple[Path, str]], list[Path]]:
    """An input's skipped files (path, why), less the profiles among them; and the profiles."""
    rest = [(p, why) for p, why in skipped if why != PROFILE_REASON]
    return rest, [p for p, why in skipped if why == PROFILE_REASON]


def is_profile(path: Path) -> bool:
    """Whether `path` is a torch.profiler Chrome trace: by the names torch.profiler and
    `tcview run --profile` give them, or a .json[.gz] that starts with a Chrome trace's keys."""
    name = path.name
    if name.endswith(TRACE_SUFFIXES) or name in PROFILE_FILES:
        return True
    if not name.endswith((".json", ".json.gz")):
        return False
    try:
        with (gzip.open if name.endswith(".gz") else open)(path, "rb") as fh:
            head = fh.read(PROFILE_SNIFF)
    except (OSError, EOFError, zlib.error):
        return False
    return any(key in head for key in _PROFILE_KEYS)


# A record header (with its JSON) at the start of a line: where a file cut at its start, which
# begins inside a record's payload, has its first whole record.
_LATER_HEADER = re.compile(rb"\n" + RECORD_PREFIX + rb"\s*\{")


def begins_in_payload(head: bytes) -> bool:
    """Whether `head`, a file's first bytes before its first record header (or the start of
    them), are payload lines: each indented with a tab, the first maybe cut inside its line
    (then others must follow to tell it from junk). torch starts a file with a header: such a
    file was cut at its start (a copy that kept only its end)."""
    lines = head.split(b"\n")
    rest = [line for line in lines[1:] if line]
    if not all(line.startswith(b"\t") for line in rest):
        return False
    return lines[0].startswith(b"\t") or bool(rest)


def _cut_at_start(data: bytes) -> bool:
    """A trace cut at its start: payload lines (the first one's tab may be stripped already),
    then a record header."""
    m = _LATER_HEADER.search(data)
    return m is not None and begins_in_payload(data[: m.start()])


def is_trace_name(name: str) -> bool:
    """Named as torch names its trace files: read as one unsniffed (while torch creates it, it
    may be empty)."""
    return name.startswith(TRACE_NAME_PREFIX) and name.endswith(".log")


def trace_reason(path: Path) -> str | None:
    """None when the file `path` is read as a trace, else why not: the one rule of a one-shot
    load, of follow mode and of `detect`."""
    if is_trace_name(path.name):
        return None
    why = sniff_trace(path)
    return PROFILE_REASON if why is not None and is_profile(path) else why


def discover(path: Path) -> tuple[list[Path], list[tuple[Path, str]]]:
    """Trace files under `path` (a file or a directory, recursively) and the skipped ones."""
    if path.is_file():
        why = trace_reason(path)
        return ([path], []) if why is None else ([], [(path, why)])
    found: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    for root, dirs, files in os.walk(
        path,
        onerror=lambda e: skipped.append((Path(e.filename or "?"), f"unreadable: {e.strerror}")),
    ):
        dirs.sort()
        for name in sorted(files):
            p = Path(root) / name
            if not p.is_file():
                skipped.append((p, "not a regular file"))
                continue
            why = trace_reason(p)
            if why is None and not os.access(p, os.R_OK):
                skipped.append((p, "unreadable: permission denied"))
            elif why is None:
                found.append(p)
            else:
                skipped.append((p, why))
    return found, skipped


TEXT_LOG_NAMES = ("torch_logs.txt", "torch_logs.log", "stderr.txt", "logs.txt")


# A file is 'other' (neither a trace nor TORCH_LOGS text) when its first bytes hold no log prefix
# and look binary: a NUL byte, or more than this share of characters that text does not have.
BINARY_SNIFF = 64 << 10
BINARY_SHARE = 0.10
_NOT_TEXT = re.compile("[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f\ufffd]")


def detect(path: str) -> str:
    """'stdin', 'stream', 'trace-dir', 'run-dir', 'trace-file', 'text', 'archive', 'other' or
    'missing'.

    A 'stream' is a FIFO, a device or a `<(...)` pipe: read once, never sniffed. An 'archive'
    is a compressed file, a tar or a zip (archives.py), read from its unpacked copy. 'other' is
    a file that is neither format (see `looks_binary`).
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
    if not is_trace_name(p.name) and archive_format(p) is not None:
        return "archive"
    if trace_reason(p) is None:
        return "trace-file"
    return "other" if looks_binary(_head(p, BINARY_SNIFF)) else "text"


@dataclass(frozen=True)
class InputPlan:
    """What an input is and how it is read: the one answer for a load, follow mode and
    `tcview open` (which files of a directory are traces is `trace_reason`'s)."""

    path: str
    kind: str  # detect()'s, but for a missing path that is followed: what it will be
    live: bool  # read as it grows: a pipe or stream always, anything else when followed (an
    # archive never: it is read once, from its unpacked copy, as it is when opened)
    problem: str | None  # why it cannot be opened; None when it can


def plan_input(path: str, follow: bool = False) -> InputPlan:
    """The plan for `path`; with `follow`, a path that does not exist yet is waited for (as
    TORCH_LOGS text when it is named like a log file, else as a trace directory)."""
    kind = detect(path)
    live = (follow and kind != "archive") or kind in ("stdin", "stream")
    problem = None
    if kind == "archive":
        fmt = archive_format(Path(path))
        problem = archive_problem(fmt) if fmt is not None else None
    elif kind == "other":
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


def find_text_log(directory: Path) -> Path | None:
    """The captured TORCH_LOGS of a run directory (``trace/`` plus ``torch_logs.txt``)."""
    for name in TEXT_LOG_NAMES:
        candidate = directory / name
        if candidate.is_file():
            return candidate
    return None
