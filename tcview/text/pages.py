"""A generated table in a docs page: the lines between two markers, made again from the code
(`python -m tcview.analysis.rules PAGE`, `python -m tcview.ui.keymap PAGE`)."""

from __future__ import annotations

import sys
from collections.abc import Callable


def with_lines(page: str, begin: str, end: str, lines: list[str]) -> str:
    """`page` with `lines` put between its markers; ValueError when it lacks them (a page is
    never half rewritten)."""
    head, found, rest = page.partition(begin)
    _old, found_end, tail = rest.partition(end)
    if not (found and found_end):
        raise ValueError(f"no {begin!r} … {end!r} in the page")
    return "\n".join([head + begin, *lines, end + tail])


def rewrite(argv: list[str], begin: str, end: str, lines: Callable[[], list[str]]) -> None:
    """Each page named in `argv` with its table made again; without a page, the table on
    stdout."""
    if not argv:
        sys.stdout.write("\n".join(lines()) + "\n")
        return
    for name in argv:
        with open(name, encoding="utf-8") as fh:
            page = with_lines(fh.read(), begin, end, lines())  # before it is opened to write
        with open(name, "w", encoding="utf-8") as fh:
            fh.write(page)
