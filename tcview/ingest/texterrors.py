"""Uncaught Python tracebacks in a TORCH_LOGS capture: the run's errors.

A traceback is read from the capture's other output (lines that are not part of a log
message: torch logs its own tracebacks inside its messages, and those are not read here),
bare or after a ``[rankN]: `` prefix, one rank at a time:

    [rank0]: Traceback (most recent call last):
    [rank0]:   File "train.py", line 20, in check
    [rank0]:     assert buckets == 2
    [rank0]: AssertionError: expected 2 buckets

Its exception line makes it an `Error` at once. A program that catches an exception and prints
its traceback goes on running: when the same rank (no rank: a process without one) later logs
a message with a compile id, the traceback was caught, and the error is withdrawn. Messages
without a compile id do not count: Dynamo's exit-time report follows an uncaught exception too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tcview.model.objects import Error

if TYPE_CHECKING:  # the TextLog owns the builder; a type-only import keeps this module small
    from tcview.ingest.builder import Builder

TRACEBACK = b"Traceback (most recent call last):"
# An optional launcher tag (``[default0]:``), an optional ``[rankN]:``, one optional space.
_RANK = re.compile(rb"(?:\[(?!rank\d)[A-Za-z_][\w-]*\]:)?(?:\[rank(\d+)\]: ?)?")
_FRAME = re.compile(r'^\s*File "([^"]*)", line (\d+), in (.*)$')
_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*)(?::\s?(.*))?$")
_LOG_LINE = re.compile(r"^\[?[A-Z]\d{4} \d\d:\d\d:\d\d")  # a log line of some other logger
CHAIN_MARKS = (
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
)
# Dynamo's exceptions: their message has blank lines (before "from user code:" and the user's
# frames) and ends with this line.
DYNAMO_EXC = "torch._dynamo.exc."
DYNAMO_LAST = "Set TORCHDYNAMO_VERBOSE=1"
MAX_LINES = 2000  # a traceback longer than this is cut (the error keeps what was read)
MESSAGE_LINES = 40  # lines of a multi-line exception message that are kept


@dataclass
class _Reading:
    """A traceback being read: its lines so far, and its error once the exception line came."""

    rank: int | None
    lineno: int
    offset: int
    lines: list[str] = field(default_factory=list)
    stack: list[str] = field(default_factory=list)
    phase: str = "stack"  # stack, message (the exception's text), after (blank, chain mark)
    chained: bool = False  # a chain mark came: a "Traceback" line continues this one
    error: Error | None = None


class TracebackReader:
    """Reads the tracebacks in a capture's other output and reports them through a builder."""

    def __init__(self, builder: Builder, where: str) -> None:
        self.builder = builder
        self.where = where
        self.reading: dict[int | None, _Reading] = {}
        self.pending: dict[int | None, list[Error]] = {}  # reported; withdrawn if caught

    def other_line(self, line: bytes, lineno: int, offset: int) -> None:
        """A line of other output (cleaned of CR and escapes)."""
        if not self.reading and TRACEBACK not in line:
            return  # the common case: no traceback under way, none starting
        m = _RANK.match(line)
        rank = int(m.group(1)) if m is not None and m.group(1) is not None else None
        text = line[m.end() if m is not None else 0 :].decode("utf-8", "replace")
        st = self.reading.get(rank)
        if text.startswith(TRACEBACK.decode()):
            if st is not None and st.chained:
                st.phase, st.chained, st.stack = "stack", False, []
                st.lines.append(text)
            else:
                self.reading[rank] = _Reading(rank, lineno, offset, [text])
            return
        if st is None:
            return
        if len(st.lines) >= MAX_LINES:
            del self.reading[rank]
            return
        st.lines.append(text)
        if st.phase == "stack":
            self._stack_line(st, text)
        elif st.phase == "message":
            self._message_line(st, text)
        elif text.strip() in CHAIN_MARKS:
            st.chained = True
        elif st.error is not None and st.error.error_type.startswith(DYNAMO_EXC):
            # Dynamo's message goes on after blank lines (its debug context, the user's frames)
            # up to its last line
            if text.strip() and st.error.message.count("\n") < MESSAGE_LINES:
                st.error.message = f"{st.error.message}\n{text.rstrip()}"
            if text.startswith(DYNAMO_LAST):
                del self.reading[st.rank]
        elif text.strip():
            st.lines.pop()
            del self.reading[rank]  # the traceback ended before this line
        if st.error is not None:
            st.error.text = "\n".join(st.lines)

    def _stack_line(self, st: _Reading, text: str) -> None:
        if not text.strip() or text[0] in " \t":
            fm = _FRAME.match(text)
            if fm:
                st.stack.append(f"{fm.group(1)}:{fm.group(2)} in {fm.group(3)}")
            return
        em = _EXCEPTION.match(text.rstrip())
        if em is None:
            return  # another writer's line inside the traceback: kept in its text only
        error_type, message = em.group(1), (em.group(2) or "").strip()
        st.phase = "message"
        if st.error is None:
            st.error = Error(
                st.rank, error_type, message, list(st.stack), "traceback", self.where,
                st.lineno, st.offset,
            )  # fmt: skip
            self.builder.error(st.error)
            self.pending.setdefault(st.rank, []).append(st.error)
        else:  # the chain's last exception is the one that ended the program
            st.error.error_type, st.error.message = error_type, message
            st.error.stack = list(st.stack)

    def _message_line(self, st: _Reading, text: str) -> None:
        stripped = text.strip()
        if stripped in CHAIN_MARKS:
            st.phase, st.chained = "after", True
        elif not stripped:
            st.phase = "after"
        elif _LOG_LINE.match(text):
            st.lines.pop()
            del self.reading[st.rank]
        elif st.error is not None and st.error.message.count("\n") < MESSAGE_LINES:
            st.error.message = f"{st.error.message}\n{text.rstrip()}".strip("\n")

    def message(self, rank: int | None, with_compile_id: bool) -> None:
        """A torch log message of `rank` starts: a traceback of that rank is over, and one
        already reported was caught when the program went on compiling (`with_compile_id`)."""
        self.reading.pop(rank, None)
        if with_compile_id:
            for error in self.pending.pop(rank, ()):
                self.builder.withdraw_error(error)
