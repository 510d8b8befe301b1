"""Open a source location of a trace in the user's editor: ``$VISUAL``, ``$EDITOR``, else vi.

The editor runs with an argument list (never a shell): its own words (``code -w`` is two),
``+LINE``, then the file as an absolute path, so that no path a trace names can read as an
option. A path is mapped first (`PathMap`: traces are often opened far from where they were
made); a file that is not on this machine is not opened.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass

from tcview.analysis.paths import Location, PathMap

FALLBACK = "vi"


def editor_words() -> list[str]:
    """The editor command as words (``$VISUAL``, then ``$EDITOR``, then vi)."""
    for name in ("VISUAL", "EDITOR"):
        value = os.environ.get(name, "").strip()
        if value:
            try:
                words = shlex.split(value)
            except ValueError:
                words = value.split()
            if words:
                return words
    return [FALLBACK]


@dataclass(frozen=True)
class EditorCall:
    """What to run for a location, or why nothing can be (argv is then empty)."""

    argv: list[str]
    path: str  # the local file (mapped, absolute), or the path that is missing
    problem: str = ""


def editor_call(location: Location, paths: PathMap | None = None) -> EditorCall:
    mapped = (paths or PathMap()).local(location.path)
    local = os.path.abspath(os.path.expanduser(mapped))
    if not os.path.isfile(local):
        hint = "" if paths else " (map a prefix to your checkout: --map-path /remote=/local)"
        return EditorCall([], local, f"not on this machine: {local}{hint}")
    argv = [*editor_words()]
    if location.line > 0:
        argv.append(f"+{location.line}")
    argv.append(local)
    return EditorCall(argv, local)
