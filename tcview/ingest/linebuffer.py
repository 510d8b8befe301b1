"""The unfinished last line of an input that is fed in chunks, for trace files and TORCH_LOGS
text alike: held in pieces (no copy per feed) up to MAX_LINE bytes. A longer line is dropped
at once (a file of gigabytes with no newline must not fill memory) and its bytes up to its
newline are skipped; the reader counts it and does not parse it."""

from __future__ import annotations

MAX_LINE = 64 << 20  # the longest line kept and parsed, in bytes


class LineBuffer:
    """Hold the part of a line that has no newline yet."""

    __slots__ = ("pieces", "size", "skipping", "start")

    def __init__(self) -> None:
        self.pieces: list[bytes] = []
        self.size = 0  # bytes held
        self.skipping = False  # inside a line longer than MAX_LINE: its bytes are not kept
        self.start = 0  # input offset of the held (or skipped) line's first byte

    def hold(self, piece: bytes, offset: int) -> bool:
        """Keep `piece` (no newline in it, at input `offset`). True when the line has just
        gone past MAX_LINE: it is dropped, and the rest of it is skipped."""
        if self.skipping or not piece:
            return False
        if not self.size:
            self.start = offset
        self.pieces.append(piece)
        self.size += len(piece)
        if self.size > MAX_LINE:
            self.pieces, self.size, self.skipping = [], 0, True
            return True
        return False

    def complete(self, end: bytes) -> bytes | None:
        """The held line finished by `end` (its bytes from this chunk, up to and with its
        newline), and the buffer emptied; None when the line was too long (skipped)."""
        skipped = self.skipping
        line = None if skipped else (b"".join(self.pieces) + end if self.pieces else end)
        self.pieces, self.size, self.skipping = [], 0, False
        return line

    def take(self) -> bytes | None:
        """At the end of the input: the held bytes (a last line without a newline), and the
        buffer emptied; None when that line was too long."""
        return self.complete(b"")
