"""Unpacking the project's own test archives on every Python the project admits.

`TarFile.extractall(filter="data")` needs Python 3.11.4 (3.10.12 on 3.10); Debian 12's system
Python is 3.11.2. Without the filter, the members are checked here first: plain files and
folders, inside the destination.
"""

from __future__ import annotations

import tarfile
from pathlib import Path


def extract(tar: tarfile.TarFile, dest: Path) -> None:
    if hasattr(tarfile, "data_filter"):
        tar.extractall(dest, filter="data")
        return
    root = dest.resolve()
    for member in tar.getmembers():
        if not (member.isfile() or member.isdir()):
            raise ValueError(f"{member.name}: not a plain file or folder")
        target = (root / member.name).resolve()
        if target != root and root not in target.parents:
            raise ValueError(f"{member.name}: outside the destination")
    tar.extractall(dest)  # checked above
