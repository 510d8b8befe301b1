"""Byte counts as people read them."""

from __future__ import annotations


def size_text(size: int) -> str:
    """1.2 MB, 12.3 kB, 812 bytes."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} byte{'s' if size != 1 else ''}"
