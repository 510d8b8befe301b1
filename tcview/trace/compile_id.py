"""Compile ids: ``0/1``, ``0/0_1``, ``!0``, ``!0/1/0`` and their parts."""

from __future__ import annotations

import re
from typing import Any, NamedTuple, TypeAlias

# A part of a compile id as a header gives it: an int normally; hostile headers may carry any
# JSON value there, which is kept hashable (lists and objects become their repr).
IdPart: TypeAlias = int | float | str | None
# The types a well-formed header gives every id key: read without further checks.
PLAIN_TYPES = (int, type(None))

_TEXT = re.compile(r"^\[?(?:!(\d+)(?:/)?)?(?:(\d+)/(\d+))?(?:_(\d+))?\]?$")


class FrameKey(NamedTuple):
    """Identifies one frame (code object) inside one process."""

    autograd_id: IdPart = None
    frame_id: IdPart = None


class CompileKey(NamedTuple):
    """Identifies one compile inside one process; attempts are merged."""

    autograd_id: IdPart = None
    frame_id: IdPart = None
    frame_compile_id: IdPart = None

    @property
    def text(self) -> str:
        parts = []
        if self.autograd_id is not None:
            parts.append(f"!{self.autograd_id}")
        if self.frame_id is not None or self.frame_compile_id is not None:
            parts.append(f"{_show(self.frame_id)}/{_show(self.frame_compile_id)}")
        return "/".join(parts) or "-"

    @property
    def frame(self) -> FrameKey:
        return FrameKey(self.autograd_id, self.frame_id)

    @property
    def is_recompile(self) -> bool:
        fc = self.frame_compile_id
        return isinstance(fc, int) and not isinstance(fc, bool) and fc > 0

    def sort_key(self) -> tuple[tuple[int, int | str], ...]:
        return tuple((0, v) if isinstance(v, int) else (1, str(v)) for v in self)


def _show(value: IdPart) -> str:
    return "?" if value is None else str(value)


def attempt_text(key: CompileKey, attempt: IdPart) -> str:
    """``0/0`` for attempt 0, ``0/0_1`` for attempt 1."""
    if attempt in (None, 0):
        return key.text
    return f"{key.text}_{attempt}"


def parse_compile_id(text: str) -> tuple[CompileKey, int] | None:
    """Parse ``[0/1]``, ``0/0_1``, ``!0/1/0``, ``!0``; None when it is not one."""
    m = _TEXT.match(text.strip())
    if not m or not any(m.group(i) for i in (1, 2)):
        return None
    ca, fid, fcid, attempt = m.groups()
    key = CompileKey(
        int(ca) if ca is not None else None,
        int(fid) if fid is not None else None,
        int(fcid) if fcid is not None else None,
    )
    return key, int(attempt) if attempt else 0


def key_from_header(header: dict[str, Any]) -> CompileKey | None:
    """The compile a header record belongs to, or None (records with no compile id)."""
    if "frame_id" not in header and "compiled_autograd_id" not in header:
        return None
    ca = header.get("compiled_autograd_id")
    fid = header.get("frame_id")
    fcid = header.get("frame_compile_id")
    if type(ca) in PLAIN_TYPES and type(fid) in PLAIN_TYPES and type(fcid) in PLAIN_TYPES:
        return CompileKey(ca, fid, fcid)
    return CompileKey(id_part(ca), id_part(fid), id_part(fcid))


def id_part(value: Any) -> IdPart:
    """A header's id value as a hashable id part (hostile headers may carry lists or dicts)."""
    if value is None or isinstance(value, (int, float, str)):
        return value
    return repr(value)
