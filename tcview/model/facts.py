"""Parse the text of derived facts; shared by the trace engine and the TORCH_LOGS parser."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

_BREAK_AT = re.compile(r"Graph break(?: \(user stack suppressed[^)]*\))? in user code at (\S+)")
_URL = re.compile(r"https?://\S+gb\d+\S*|https?://\S+")
_FRAME_LINE = re.compile(r'^\s*File "([^"]+)", line (\d+), in (.+)$')
_INTERNAL_TRACEBACK = "Traceback (most recent call last)"


@dataclass
class BreakText:
    location: str = ""
    reason: str = ""
    explanation: str = ""
    hints: list[str] = field(default_factory=list)
    url: str = ""
    user_stack: list[str] = field(default_factory=list)


def parse_graph_break(text: str) -> BreakText:
    """Fields of a ``Graph break in user code at ...`` message."""
    out = BreakText()
    lines = text.split("\n")
    m = _BREAK_AT.search(text)
    if m:
        out.location = m.group(1)
    reason_lines: list[str] = []
    in_reason = False
    in_user = False
    for line in lines:
        stripped = line.strip()
        if stripped.startswith(_INTERNAL_TRACEBACK):
            # Dynamo's own traceback follows, ending in the exception, whose text repeats the
            # explanation and every hint: the fields come from the message above it only.
            break
        if line.startswith("Graph Break Reason:"):
            in_reason = True
            first = line[len("Graph Break Reason:") :].strip()
            if first:
                reason_lines.append(first)
            continue
        if stripped.startswith("Explanation:"):
            # The first one explains the cause; later ones, breaks met while handling it.
            out.explanation = out.explanation or stripped[len("Explanation:") :].strip()
            in_reason = False
            continue
        if stripped.startswith("Hint:"):
            out.hints.append(stripped[len("Hint:") :].strip())
            in_reason = False
            continue
        if stripped.startswith("Developer debug context:"):
            in_reason = False
            continue
        if "For more details about this graph break" in stripped:
            um = _URL.search(stripped)
            if um:
                out.url = um.group(0)
            in_reason = False
            continue
        if stripped.startswith("User code traceback:"):
            in_user = True
            in_reason = False
            continue
        if in_user:
            if stripped and not line.startswith(" "):
                in_user = False
            elif stripped:
                fm = _FRAME_LINE.match(line)
                if fm:
                    out.user_stack.append(f"{fm.group(1)}:{fm.group(2)} in {fm.group(3)}")
                elif out.user_stack:
                    out.user_stack[-1] += f"  |  {stripped}"
            continue
        if in_reason and stripped:
            reason_lines.append(stripped)
    out.reason = _reason_summary(reason_lines) or (lines[0].strip() if lines else "")
    return out


# First lines of a break reason that only wrap the real cause, which follows them: the generic
# "Encountered graph break when attempting to trace CALL: ..." and the frame-skipping
# "Failed to handle graph break gracefully. Skipping the function and falling back to eager.
# Graph break encountered:" (whose cause may follow on the same line).
WRAPPER_STARTS = ("Encountered graph break", "Failed to handle graph break gracefully")
CAUSE_FOLLOWS = "Graph break encountered:"


def _reason_summary(lines: list[str]) -> str:
    """The most specific line: the cause after any wrapper lines (`WRAPPER_STARTS`)."""
    rest = list(lines)
    while len(rest) > 1 and rest[0].startswith(WRAPPER_STARTS):
        head, _, tail = rest[0].partition(CAUSE_FOLLOWS)
        rest = [tail.strip(), *rest[1:]] if tail.strip() else rest[1:]
    if len(rest) == 1 and rest[0].startswith(WRAPPER_STARTS):
        tail = rest[0].partition(CAUSE_FOLLOWS)[2].strip()
        return tail or rest[0]
    return rest[0] if rest else ""


def parse_recompile_reasons(text: str) -> list[str]:
    """Guard failures of a recompile_reasons payload: a JSON list, or a bare string."""
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            value = json.loads(stripped)
        except ValueError:
            value = None
        if isinstance(value, list):
            return [str(v).strip() for v in value]
    if stripped.startswith('"'):
        try:
            return [str(json.loads(stripped)).strip()]
        except ValueError:
            pass
    return [stripped] if stripped else []


def short_guard(reason: str) -> str:
    """First line of a guard failure without its source comment (torch pads the comment to a
    column, with two spaces at least: ``x == 0.00095  # (unknown source ...)``)."""
    first = reason.split("\n", 1)[0]
    return re.sub(r"\s{2,}#(?:\s.*)?$", "", first).strip()
