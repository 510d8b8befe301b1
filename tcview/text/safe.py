"""Make untrusted text safe for a terminal: no control characters, no bidi overrides."""

from __future__ import annotations

import re

# C0 controls except TAB and LF, DEL, C1 controls, and bidi embedding/override/isolate marks.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
# An escape sequence: CSI (colours, cursor moves, erases), OSC (titles, links; ended by BEL or
# ST, or cut at the end of the line) and the two-character ones. One definition for text
# (the Run pane) and for bytes (the TORCH_LOGS reader strips them: tcview.ingest.textlog).
ANSI_PATTERN = r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]"
ANSI = re.compile(ANSI_PATTERN)
ANSI_BYTES = re.compile(ANSI_PATTERN.encode())
_SGR = re.compile(r"\x1b\[[0-9;:]*m")  # select graphic rendition: colours and attributes


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


def colours_only(text: str) -> str:
    """`text` with its colour codes (SGR) kept, every other escape sequence removed and the
    control characters left made visible (tabs kept): safe to give to `Text.from_ansi`."""
    out: list[str] = []
    pos = 0
    for m in ANSI.finditer(text):
        out.append(safe_text(text[pos : m.start()]).replace("\n", "\u2424"))
        if _SGR.fullmatch(m.group(0)):
            out.append(m.group(0))
        pos = m.end()
    out.append(safe_text(text[pos:]).replace("\n", "\u2424"))
    return "".join(out)
