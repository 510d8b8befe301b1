"""One process of a TORCH_LOGS capture, (rank, pid): the log source of its messages."""

from __future__ import annotations

from tcview.ingest.textlines import LogReader, clean_line, message_payload
from tcview.model.objects import (
    Compile,
    CudagraphNote,
    Failure,
    GraphBreak,
    LogMeta,
    LogSource,
    Record,
)


class ProcessLog(LogSource):
    """The messages of one process: what a TraceFile is for a trace. The TextLog indexes it."""

    def __init__(self, reader: LogReader, rank: int | None, pid: int) -> None:
        display = f"pid {pid}" if rank is None else f"rank {rank} · pid {pid}"
        LogSource.__init__(self, display, reader.path)
        self.reader = reader
        self.memo = reader.store.memo
        self._rank = rank
        self._pid = pid
        self.pids.add(pid)
        if rank is not None:
            self.ranks.add(rank)
        self.unparsed: list[tuple[int, int]] = []  # other output is kept on the TextLog
        self.last_message_ts: str | None = None
        self.output_codes = 0  # `Output code:` messages
        self.step_span: dict[Compile, list[float]] = {}  # Step 1/2/3 times of each compile
        # (function, file, first line) -> the last compile that started tracing that frame
        self.started_frames: dict[tuple[str, str, int], Compile] = {}
        self.limit_failure: Failure | None = None  # a recompile limit its WON'T CONVERT repeats
        # The compile of its last message that named one: where a message without a compile
        # id that torch logs while a compile's graph runs belongs (cudagraph skips)
        self.last_compile: Compile | None = None
        # The message being extended, and what its handlers keep until it is complete.
        self.open: Record | None = None
        self.open_prefix = b""  # the prefix its further lines repeat
        self.open_marks: tuple[bytes, ...] = ()  # first-line starts that begin a new message
        self.open_text = b""  # its first line's text, after the prefix
        self.open_handled = False  # its first line makes it a fact its kind's handlers read
        # made at its start, completed at close
        self.open_fact: GraphBreak | Failure | CudagraphNote | None = None

    @property
    def rank(self) -> int | None:
        return self._rank

    @property
    def pid(self) -> int | None:
        return self._pid

    @property
    def last_ts(self) -> str | None:
        return self.last_message_ts

    def read_payload(self, record: Record) -> bytes:
        """The message's lines with the prefix removed, joined with newlines."""
        return message_payload(self.reader.read(record.offset, record.end))

    def header_line(self, record: Record) -> bytes:
        return clean_line(self.reader.line_at(record.offset))

    def line_at(self, offset: int, limit: int = 1 << 20) -> bytes:
        return self.reader.line_at(offset, limit)

    def lineno_of(self, offset: int) -> int:
        return self.reader.lineno_of(offset)

    def close(self) -> None:
        pass  # the TextLog closes the reader it shares with its other processes

    def __repr__(self) -> str:
        return f"<ProcessLog {self.display}>"


def log_meta(rec: Record) -> LogMeta:
    """The prefix facts of a message (every record of a ProcessLog has them)."""
    if not isinstance(rec.meta, LogMeta):
        raise TypeError(f"{rec!r} is not a TORCH_LOGS message")
    return rec.meta
