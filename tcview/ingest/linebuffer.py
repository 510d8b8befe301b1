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

    @property
    def at_line_start(self) -> bool:
        """Nothing held or skipped: the input so far ends with a newline (or is empty)."""
        return not self.size and not self.skipping

    def hold(self, piece: bytes, offset: int) -> bytes | None:
        """Keep `piece` (no newline in it, at input `offset`). When the line has just gone
        past MAX_LINE, it is dropped (the rest of it is skipped) and this is its first byte;
        else None."""
        if self.skipping or not piece:
            return None
        if not self.size:
            self.start = offset
        self.pieces.append(piece)
        self.size += len(piece)
        if self.size > MAX_LINE:
            first = self.pieces[0][:1]
            self.pieces, self.size, self.skipping = [], 0, True
            return first
        return None

    def complete(self, end: bytes, lead: bytes = b"") -> bytes | None:
        """`lead`, the held line and `end` (its bytes from this chunk, up to its newline), and
        the buffer emptied; None when the line was too long (skipped)."""
        skipped = self.skipping
        line = None if skipped else b"".join([lead, *self.pieces, end])
        self.pieces, self.size, self.skipping, self.start = [], 0, False, 0
        return line

    def take(self, lead: bytes = b"") -> bytes | None:
        """At the end of the input: `lead` and the held bytes (a last line without a newline),
        and the buffer emptied; None when that line was too long."""
        return self.complete(b"", lead)
