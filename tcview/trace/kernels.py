"""Split an Inductor output-code module into its kernels."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from .model import KERNEL_DEF, NOT_KERNEL_METHODS, kernel_kind

_KERNEL_LINE = re.compile("^" + KERNEL_DEF, re.M)
_END = re.compile(r"^.*?'''\s*(?:,[^\n]*)?\)\s*$")


@dataclass
class KernelSpan:
    name: str  # the variable name in the wrapper
    method: str  # async_compile.<method>
    start: int  # 0-based line of the definition
    end: int  # 0-based line of the closing ''' (inclusive)
    launch: int | None = None  # position in call()'s launch order, None if never launched

    @property
    def kind(self) -> str:
        return kernel_kind(self.name, self.method)

    def source(self, lines: list[str]) -> str:
        return "\n".join(lines[self.start : self.end + 1])


def split_output_code(text: str) -> list[KernelSpan]:
    """Kernels defined in `text`, with their line span and launch order."""
    lines = text.split("\n")
    offsets = _line_starts(text)
    spans: list[KernelSpan] = []
    for m in _KERNEL_LINE.finditer(text):
        if m.group(2) in NOT_KERNEL_METHODS:
            continue
        start = _line_of(offsets, m.start())
        spans.append(KernelSpan(m.group(1), m.group(2), start, _span_end(lines, start)))
    order = launch_order(text, spans)
    for s in spans:
        s.launch = order.get(s.name)
    return spans


def _span_end(lines: list[str], start: int) -> int:
    """Line of the closing ``''')`` of a kernel source string."""
    first = lines[start]
    if first.count("'''") >= 2:
        return start
    for i in range(start + 1, min(len(lines), start + 200000)):
        if "'''" in lines[i] and _END.match(lines[i]):
            return i
    return start


def launch_order(text: str, spans: list[KernelSpan]) -> dict[str, int]:
    """Kernel name -> index of its first launch, outside the kernels' own sources.

    Launches live in ``call()`` or, with graph partitions, in ``partition_N()`` functions.
    """
    if not spans:
        return {}
    names = sorted({s.name for s in spans}, key=len, reverse=True)
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")(?:\.run)?\(")
    inside: set[int] = set()
    for s in spans:
        inside.update(range(s.start, s.end + 1))
    order: dict[str, int] = {}
    for i, line in enumerate(text.split("\n")):
        if i in inside or "(" not in line:
            continue
        for m in pattern.finditer(line):
            order.setdefault(m.group(1), len(order))
    return order


def _line_starts(text: str) -> list[int]:
    starts = [0]
    pos = text.find("\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = text.find("\n", pos + 1)
    return starts


def _line_of(starts: list[int], offset: int) -> int:
    return bisect.bisect_right(starts, offset) - 1
