"""Colour for the command line: ANSI codes from a tiny table (no Rich: the CLI stays light).

Colour is used on a terminal only, never with NO_COLOR (https://no-color.org: set and not
empty), and never when TERM is ``dumb``; ``--color=always`` and ``never`` decide instead.
"""

from __future__ import annotations

import os
from typing import Literal, Protocol

ColorMode = Literal["auto", "always", "never"]
COLOR_MODES: tuple[ColorMode, ...] = ("auto", "always", "never")

# SGR parameters of the styles tcview uses.
STYLES = {
    "bold": "1",
    "dim": "2",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "blue": "34",
    "magenta": "35",
    "cyan": "36",
    "bold red": "1;31",
    "bold yellow": "1;33",
    "bold cyan": "1;36",
    "bold magenta": "1;35",
}


class Stream(Protocol):
    def isatty(self) -> bool: ...


def use_color(mode: str, stream: Stream) -> bool:
    """Whether to colour what goes to `stream` under ``--color=mode``."""
    if mode == "always":
        return True
    if mode == "never":
        return False
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Painter:
    """Wraps text in ANSI colour codes, or leaves it as it is when colour is off."""

    def __init__(self, on: bool) -> None:
        self.on = on

    def __call__(self, text: str, style: str) -> str:
        code = STYLES.get(style)
        if not self.on or not code or not text:
            return text
        return f"\x1b[{code}m{text}\x1b[0m"
