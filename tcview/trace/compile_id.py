"""Compile ids: ``0/1``, ``0/0_1``, ``!0``, ``!0/1/0`` and their parts."""

from __future__ import annotations

import re
from typing import Any, NamedTuple

_TEXT = re.compile(r"^\[?(?:!(\d+)(?:/)?)?(?:(\d+)/(\d+))?(?:_(\d+))?\]?$")


class CompileKey(NamedTuple):
    """Identifies one compile inside one process; attempts are merged."""

    autograd_id: Any = None
    frame_id: Any = None
    frame_compile_id: Any = None

    @property
    def text(self) -> str:
        parts = []
        if self.autograd_id is not None:
            parts.append(f"!{self.autograd_id}")
        if self.frame_id is not None or self.frame_compile_id is not None:
            parts.append(f"{_show(self.frame_id)}/{_show(self.frame_compile_id)}")
        return "/".join(parts) or "-"

    @property
    def frame(self) -> tuple[Any, Any]:
        return (self.autograd_id, self.frame_id)

    @property
    def is_recompile(self) -> bool:
        fc = self.frame_compile_id
        return isinstance(fc, int) and not isinstance(fc, bool) and fc > 0

    def sort_key(self) -> tuple:
        return tuple((0, v) if isinstance(v, int) else (1, str(v)) for v in self)


def _show(value: Any) -> str:
    return "?" if value is None else str(value)


def attempt_text(key: CompileKey, attempt: Any) -> str:
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


def key_from_header(header: dict) -> CompileKey | None:
    """The compile a header record belongs to, or None (records with no compile id)."""
    if "frame_id" not in header and "compiled_autograd_id" not in header:
        return None
    ca = header.get("compiled_autograd_id")
    fid = header.get("frame_id")
    fcid = header.get("frame_compile_id")
    if type(ca) in _PLAIN and type(fid) in _PLAIN and type(fcid) in _PLAIN:
        return CompileKey(ca, fid, fcid)
    return CompileKey(
        _hashable(header.get("compiled_autograd_id")),
        _hashable(header.get("frame_id")),
        _hashable(header.get("frame_compile_id")),
    )


_PLAIN = (int, type(None))


def _hashable(value: Any) -> Any:
    # Hostile headers may carry lists or dicts where ints belong.
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value
