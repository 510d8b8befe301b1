"""Make untrusted text safe for a terminal: no control characters, no bidi overrides."""

from __future__ import annotations

import re

# C0 controls except TAB and LF, DEL, C1 controls, and bidi embedding/override/isolate marks.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")


def _visible(ch: str) -> str:
    code = ord(ch)
    if code < 0x20:
        return chr(0x2400 + code)  # ␀ ␁ … ␛ (Control Pictures)
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"<U+{code:04X}>"


def safe_text(text: str) -> str:
    """Replace control characters with visible stand-ins; keep TAB and newline."""
    return _UNSAFE.sub(lambda m: _visible(m.group(0)), text)


def safe_line(text: str, tab: int = 4) -> str:
    """One display line: tabs expanded, controls made visible, CR included."""
    return safe_text(text.expandtabs(tab)).replace("\n", "\u2424")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)
