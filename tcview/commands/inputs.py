"""The input a text command names (`summary`, `show`, `grep`, `export`, `diff`, `bench`),
loaded, or why it cannot be, said once on stderr with the path shown safely."""

from __future__ import annotations

import os
import sys

from tcview.ingest.load import Progress
from tcview.ingest.source import NotATrace, load_source
from tcview.model.objects import Model
from tcview.text.safe import safe_line


def open_input(path: str, progress: Progress | None = None, cache: bool = True) -> Model | None:
    """The model of `path` (`-`: stdin); None when it is missing or neither format (said)."""
    if path != "-" and not os.path.exists(path):
        print(f"tcview: no such file or directory: {safe_line(path)}", file=sys.stderr)
        return None
    try:
        return load_source(path, progress=progress, cache=cache)
    except NotATrace as exc:
        print(f"tcview: {safe_line(path)}: {exc}", file=sys.stderr)
        return None
