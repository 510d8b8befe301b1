"""Lines of a TORCH_LOGS capture: torch's line prefix, cleaning, and reading lines back.

Every log line of torch has the glog prefix

    [rank0]:V1121 05:22:57.259000 635 torch/_dynamo/guards.py:4760] [0/1] [__recompiles] text

where the rank, the compile id and the artifact tag are optional (a launcher tag such as
torchrun's ``[default0]:`` may come first). Lines are read back by byte offset, from the file,
or from the spool file that keeps what was fed when there is none (stdin).
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import overload

from tcview.ingest.payloads import PayloadStore
from tcview.model.objects import OtherLine
from tcview.text.safe import (
    ANSI_BYTES as ANSI,  # one escape-sequence pattern, in tcview/text/safe.py
)

# Groups: 1 rank, 2 level, 3 time stamp, 4 pid, 5 source file, 6 its line, 7 compile id, 8 tag.
PREFIX = re.compile(
    rb"(?:\[(?!rank\d)[A-Za-z_][\w-]*\]:)?(?:\[rank(\d+)\]:)?([A-Z])(\d{4} \d\d:\d\d:\d\d\.\d+) +(\d+) ([^\]\n]*?):(\d+)\]"
    rb"(?: \[(!?\d+(?:/\d+)*(?:_\d+)?)\])?(?: \[__([\w.]+)\])?"
)
# Lines that look like torch logging in some other format (TORCH_LOGS_FORMAT).
TORCHISH = re.compile(
    rb"torch\._(?:dynamo|inductor|functorch)|\|__\w+\||TRACED GRAPH|Output code|"
    rb"Graph break in user code|Recompiling function|torchdynamo start tracing"
)


def clean_line(line: bytes) -> bytes:
    """A raw line without its CR and ANSI escape sequences (never passed to a terminal)."""
    if line.endswith(b"\r"):
        line = line[:-1]
    if b"\x1b" in line:
        line = ANSI.sub(b"", line).replace(b"\x1b", b"")
    return line


def text_start(line: bytes, end: int) -> int:
    """Where the message text starts: after the prefix and its one separating space."""
    return end + 1 if line[end : end + 1] == b" " else end


def message_payload(raw: bytes) -> bytes:
    """Text of the lines of `raw` that carry the same prefix as its first line."""
    lines = raw.split(b"\n")
    first = clean_line(lines[0])
    m = PREFIX.match(first)
    if m is None:
        return first
    prefix = first[: m.end()]
    out = []
    for raw_line in lines:
        line = clean_line(raw_line)
        if not line.startswith(prefix):
            continue
        lm = PREFIX.match(line)
        if lm is not None and lm.end() == len(prefix):
            out.append(line[text_start(line, lm.end()) :])
    return b"\n".join(out)


def ts_seconds(ts: str) -> float | None:
    """Seconds since the start of the (leap) year of a glog ``MMDD HH:MM:SS.ffffff`` stamp."""
    try:
        month, day = int(ts[0:2]), int(ts[2:4])
        hms, _, frac = ts[5:].partition(".")
        h, m, s = (int(x) for x in hms.split(":"))
        days = datetime(2000, month, day).timetuple().tm_yday
    except (ValueError, IndexError):
        return None
    return ((days * 24 + h) * 60 + m) * 60 + s + float("0." + (frac or "0"))


class LogReader:
    """Reads a capture back by byte offset: its file, or a spool of what was fed (no path)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.store = PayloadStore(path)  # shared by every version of the model

    def keep(self, data: bytes) -> None:
        """Append fed bytes to the spool (made on first use, removed on close)."""
        self.store.keep(data)

    def read(self, start: int, end: int) -> bytes:
        return self.store.read(start, end)

    def line_at(self, offset: int, limit: int = 1 << 20) -> bytes:
        return self.read(offset, offset + limit).split(b"\n", 1)[0]

    def lineno_of(self, offset: int) -> int:
        """1-based line number of the byte at `offset` (counts newlines before it)."""
        return self.store.lineno_of(offset)

    def close(self) -> None:
        self.store.close()


class OtherLines(Sequence[OtherLine]):
    """Lines that are not part of a TORCH_LOGS message, in order; text is read on demand."""

    def __init__(self, reader: LogReader) -> None:
        self._reader = reader
        self.linenos = array("q")
        self.offsets = array("q")
        self.ends = array("q")

    def append(self, lineno: int, offset: int, end: int) -> None:
        self.linenos.append(lineno)
        self.offsets.append(offset)
        self.ends.append(end)

    def __len__(self) -> int:
        return len(self.linenos)

    @overload
    def __getitem__(self, i: int) -> OtherLine: ...

    @overload
    def __getitem__(self, i: slice) -> list[OtherLine]: ...

    def __getitem__(self, i: int | slice) -> OtherLine | list[OtherLine]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        raw = self._reader.read(self.offsets[i], self.ends[i])
        return OtherLine(
            self.linenos[i], self.offsets[i], clean_line(raw).decode("utf-8", "replace")
        )

    def __iter__(self) -> Iterator[OtherLine]:
        for i in range(len(self)):
            yield self[i]
