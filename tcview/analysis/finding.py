"""A finding: one problem of a run in words a user understands, with its evidence, the user's
line, what it cost and what to do; and what the analyses that make findings share (the user's
line of a stack, a compile's cost, names and counts in words).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tcview.analysis.owner import Where, is_user_file, plain_function, user_line
from tcview.analysis.rules import Kind, Severity
from tcview.model.metadata import BACKWARD_METRICS
from tcview.model.objects import Compile, Frame, is_torch_internal, stack_frames

_PATH = re.compile(r"(?:[\w.~-]*[/\\])+([\w.-]+)")
_DIGITS = re.compile(r"\d+")

# A frame that recompiled this many times (without hitting the limit) is a storm.
STORM_RECOMPILES = 3
# One frame, phase or autotuning taking this share of all compile time "dominates" it, when
# the run spent at least DOMINANT_MIN_S compiling.
DOMINANT_SHARE = 0.5
DOMINANT_MIN_S = 5.0
# Crash stacks: at most this many lines, from the user's line outward; the rest are counted.
STACK_SHOWN = 8


@dataclass
class Finding:
    """One problem: what (`kind`, `severity`, `title`, `detail`), the `evidence`, the user's
    line (`where`: ``{"file", "line"}``), the compile seconds it added (`cost_s`, backward
    compiles included), what to do (`fix`: "" where the trace does not show what would help)
    and a docs page (`doc`). `subject` is what it is about, the same across runs (a frame,
    a user line and a cause; never its wording or its counts): with the kind, it is the
    finding's fingerprint, its `id`."""

    kind: Kind
    severity: Severity
    title: str
    detail: str
    evidence: dict[str, Any] = field(default_factory=dict)
    where: Where | None = None
    cost_s: float | None = None
    fix: str = ""
    doc: str = ""
    compiles: list[Compile] = field(default_factory=list, repr=False, compare=False)
    subject: str = ""

    def __post_init__(self) -> None:
        self.kind = Kind(self.kind)
        self.severity = Severity(self.severity)
        if not self.subject:
            raise ValueError(f"a {self.kind.value} finding without a subject (its fingerprint)")

    @property
    def id(self) -> str:
        """``recompile_limit:f@train.py``: stable across runs (no counts, ids or directories)."""
        return f"{self.kind.value}:{self.subject}"

    @property
    def key(self) -> tuple[str, str]:
        """What identifies the finding across runs (`tcview diff`)."""
        return (self.kind.value, self.id)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind.value,
            "severity": self.severity.value,
            "title": self.title,
            "detail": self.detail,
            "evidence": self.evidence,
            "where": self.where,
            "cost_s": None if self.cost_s is None else round(self.cost_s, 6),
            "fix": self.fix,
            "doc": self.doc,
        }


# ---------------------------------------------------------------------- the user's line

_FRAME_TEXT = re.compile(r"^(?P<file>.+?):(?P<line>\d+)(?: in (?P<name>.*))?$")
TRACEBACK_LINE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<name>\S+))?')


def text_frames(lines: Iterable[str]) -> list[tuple[str, int]]:
    """(file, line) of ``file:line in name`` texts (an `Error`'s stack)."""
    out = []
    for text in lines:
        m = _FRAME_TEXT.match(text.strip())
        if m is not None:
            out.append((m.group("file"), int(m.group("line"))))
    return out


def traceback_frames(text: str) -> list[tuple[str, int]]:
    """(file, line) of each ``File "x.py", line 3, in f`` line of a traceback or message."""
    return [(m.group("file"), int(m.group("line"))) for m in TRACEBACK_LINE.finditer(text)]


def frame_where(frame: Frame | None) -> Where | None:
    if frame is None:
        return None
    found = user_line([(f.filename, f.line) for f in frame.stack])
    if found is None and frame.co_filename and is_user_file(frame.co_filename):
        line = frame.co_firstlineno
        found = {"file": frame.co_filename, "line": line if isinstance(line, int) else None}
    return found


def call_site(frame: Frame | None) -> Where | None:
    """The user's line that called a compiled frame: the innermost user frame of the full
    stack a symbol of its compiles was made under (the frame's own stack in a trace leaves
    out the frames between the module and the call), else of the frame's stack that is not
    the frame's own code, else the frame's own line."""
    if frame is None:
        return None
    for comp in frame.compiles:
        for rec in comp.records:
            if rec.kind != "create_symbol":
                continue
            body = rec.full_meta()
            if isinstance(body, dict):
                found = user_line(
                    [(f.filename, f.line) for f in stack_frames(rec.source, body.get("stack"))]
                )
                if found is not None:
                    return found
    calls = [
        (f.filename, f.line)
        for f in frame.stack
        if not (f.name == frame.co_name and f.filename == frame.co_filename)
    ]
    return user_line(calls) or frame_where(frame)


def where_text(where: Where | None) -> str:
    if not where:
        return ""
    line = where.get("line")
    return f"{where.get('file')}:{'?' if line is None else line}"


# ---------------------------------------------------------------------- cost


def compile_cost_s(comp: Compile) -> float | None:
    """The compile's seconds: its frame compile and its backward compile (compiled lazily on
    the first backward, logged as ``bwd_compilation_metrics``); None when neither is timed."""
    total = comp.compile_time_s
    for m in comp.metric_values:
        if m.kind == BACKWARD_METRICS and m.inductor_compile_time_s is not None:
            total = (total or 0.0) + m.inductor_compile_time_s
    return total


def total_cost(compiles: Iterable[Compile]) -> float | None:
    times = [t for t in map(compile_cost_s, compiles) if t is not None]
    return sum(times) if times else None


def compile_ids(compiles: Iterable[Compile]) -> list[str]:
    return [c.id_label for c in compiles]


def ranks_of(compiles: Sequence[Compile]) -> list[int]:
    return sorted({c.file.rank for c in compiles if c.file.rank is not None})


def sentence(text: str) -> str:
    """`text` with a capital first letter, unless it starts with a name from code
    (``torch.optim …``, ``print()``)."""
    if not text or re.match(r"[a-z_]+[.(_]", text) or text.startswith("`"):
        return text
    return text[0].upper() + text[1:]


def possessive(name: str) -> str:
    """``torch.optim's``, ``transformers'``."""
    return f"{name}'" if name.endswith("s") else f"{name}'s"


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def frame_subject(frame: Frame | None) -> str:
    """A frame as the same across runs: its function and its file's name."""
    if frame is None:
        return "?"
    code = frame.code_frame
    file = (frame.co_filename or (code.filename if code else "")).rsplit("/", 1)[-1]
    return f"{frame_name(frame)}@{file}" if file else frame_name(frame)


def where_subject(where: Where | None) -> str:
    """A user line as the same across runs: its file's name and line ("" without one)."""
    if not where:
        return ""
    return f"{str(where.get('file', '')).rsplit('/', 1)[-1]}:{where.get('line')}"


def unnumbered(text: str) -> str:
    """Text with its numbers and directories left out (a reason as the same across runs)."""
    return _DIGITS.sub("#", _PATH.sub(lambda m: m.group(1), text))


def frame_name(frame: Frame | None) -> str:
    """The function a user knows the frame by: a compiled module's ``forward`` rather than
    torch's ``inner`` wrapper."""
    if frame is None:
        return "?"
    code = frame.code_frame
    if code is not None and is_torch_internal(code.filename):
        return frame.label  # ``<module> (train.py:14) → inner``: the call site and the wrapper
    if frame.co_name:
        return plain_function(frame.co_name)
    return plain_function(code.name) if code is not None else f"frame {frame.id_text}"
