"""Compile ids: ``0/1``, ``0/0_1``, ``!0``, ``!0/1/0`` and their parts, and compile episodes.

`torch._dynamo.reset()` makes a process number its frames and compiles from 0 again. A compile
is therefore named by its id *and* its episode: episode 1 until an id starts a second time,
then 2, and so on (see `Builder.compile_for`). The episode is shown as ``0/0 #2`` wherever a
compile id is shown; the first episode is shown without it.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple, TypeAlias

# A part of a compile id as a header gives it: an int normally; hostile headers may carry any
# JSON value there, which is kept hashable (lists and objects become their repr).
IdPart: TypeAlias = int | float | str | None
# The types a well-formed header gives every id key: read without further checks.
PLAIN_TYPES = (int, type(None))

_TEXT = re.compile(r"^\[?(?:!(\d+)(?:/)?)?(?:(\d+)/(\d+))?(?:_(\d+))?\]?(?: #([1-9]\d*))?$")


FIRST_EPISODE = 1


def episode_suffix(episode: int) -> str:
    """`` #2`` for the second episode of a process, nothing for the first."""
    return "" if episode == FIRST_EPISODE else f" #{episode}"


class FrameKey(NamedTuple):
    """Identifies one frame (code object) inside one process, in one compile episode."""

    autograd_id: IdPart = None
    frame_id: IdPart = None
    episode: int = FIRST_EPISODE


class CompileKey(NamedTuple):
    """Identifies one compile inside one process; attempts are merged.

    Parsed ids (headers, log lines) are in the first episode; `Builder.compile_for` moves them
    into the episode their process is in.
    """

    autograd_id: IdPart = None
    frame_id: IdPart = None
    frame_compile_id: IdPart = None
    episode: int = FIRST_EPISODE

    @property
    def text(self) -> str:
        """The id as torch prints it (``!0/1/0``, ``0/1``), without the episode."""
        parts = []
        if self.autograd_id is not None:
            parts.append(f"!{self.autograd_id}")
        if self.frame_id is not None or self.frame_compile_id is not None:
            parts.append(f"{_show(self.frame_id)}/{_show(self.frame_compile_id)}")
        return "/".join(parts) or "-"

    @property
    def label(self) -> str:
        """The id with its episode where it has one: ``0/0``, ``0/0 #2``."""
        return self.text + episode_suffix(self.episode)

    @property
    def frame(self) -> FrameKey:
        return FrameKey(self.autograd_id, self.frame_id, self.episode)

    def in_episode(self, episode: int) -> CompileKey:
        return CompileKey(self.autograd_id, self.frame_id, self.frame_compile_id, episode)

    @property
    def is_recompile(self) -> bool:
        fc = self.frame_compile_id
        return isinstance(fc, int) and not isinstance(fc, bool) and fc > 0

    def sort_key(self) -> tuple[tuple[int, int | str], ...]:
        ordered = (self.episode, self.autograd_id, self.frame_id, self.frame_compile_id)
        return tuple((0, v) if isinstance(v, int) else (1, str(v)) for v in ordered)


def _show(value: IdPart) -> str:
    return "?" if value is None else str(value)


def attempt_text(key: CompileKey, attempt: IdPart) -> str:
    """``0/0`` for attempt 0, ``0/0_1`` for attempt 1 (``0/0_1 #2`` in a second episode)."""
    if attempt in (None, 0):
        return key.label
    return f"{key.text}_{attempt}{episode_suffix(key.episode)}"


def parse_compile_id(text: str) -> tuple[CompileKey, int] | None:
    """Parse ``[0/1]``, ``0/0_1``, ``!0/1/0``, ``!0``, ``0/0 #2`` (an episode, as shown);
    None when it is not one."""
    m = _TEXT.match(text.strip())
    if not m or not any(m.group(i) for i in (1, 2)):
        return None
    ca, fid, fcid, attempt, episode = m.groups()
    key = CompileKey(
        int(ca) if ca is not None else None,
        int(fid) if fid is not None else None,
        int(fcid) if fcid is not None else None,
        int(episode) if episode is not None else FIRST_EPISODE,
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
