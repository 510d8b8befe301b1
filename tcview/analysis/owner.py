"""Whose code a location is: the user's, a library's, torch's, or code that torch generated.

A finding speaks of the user's own line (`where`), and of code the user does not own only as
what their call led to: a graph break inside torch.optim is by design, a crash at a line of
Inductor's output code belongs to a compile, not to a file the user can edit.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import Enum
from typing import Any, TypedDict


class Owner(str, Enum):
    def __str__(self) -> str:
        return self.value

    USER = "user"
    LIBRARY = "library"  # an installed package other than torch, or the standard library
    TORCH = "torch"
    GENERATED = "generated"  # Inductor's output code, FX's eval_with_key, <string>


_TORCH = re.compile(r"(?:^|[/\\])(?:torch|functorch)[/\\](?!.*(?:site|dist)-packages)")
_INSTALLED = re.compile(r"(?:^|[/\\])(?:site|dist)-packages[/\\](?P<rest>.*)$")
_STDLIB = re.compile(r"(?:^|[/\\])lib[/\\](?:pypy|python)\d+(?:\.\d+)?[/\\](?P<rest>.*)$")
_LAUNCHER = re.compile(r"(?:^|[/\\])bin[/\\][^/\\.]+$")  # a console script (torchrun)
# Inductor's output code: its cache folder, or its file names (a two-letter folder, then "c"
# and a base-32 hash), wherever TORCHINDUCTOR_CACHE_DIR put them.
_OUTPUT_CODE = re.compile(
    r"(?:^|[/\\])torchinductor_[^/\\]*[/\\]|(?:^|[/\\])[a-z0-9]{2}[/\\]c[a-z0-9]{40,}\.py$"
)


class Where(TypedDict):
    """A line of the user's program, as a finding's `where` gives it (JSON as it is)."""

    file: str
    line: int | None


RESUME_PREFIX = "torch_dynamo_resume_in_"
_RESUME = re.compile(r"^torch_dynamo_resume_in_(?P<fn>.+?)_at_(?P<line>\d+)$")


def owner_of(filename: str, name: str = "") -> Owner:
    """Whose code `filename` is (`name`: the function, when known: a resume function Dynamo
    made is generated, though its file is the user's)."""
    if not filename:
        return Owner.GENERATED
    if filename.startswith("<"):
        return Owner.LIBRARY if filename.startswith("<frozen ") else Owner.GENERATED
    if _OUTPUT_CODE.search(filename):
        return Owner.GENERATED
    if name.startswith(RESUME_PREFIX):
        return Owner.GENERATED
    installed = _INSTALLED.search(filename)
    if installed is not None:
        top = re.split(r"[/\\]", installed.group("rest"), maxsplit=1)[0]
        return Owner.TORCH if top in ("torch", "functorch") else Owner.LIBRARY
    if _TORCH.search(filename):
        return Owner.TORCH
    if _STDLIB.search(filename) or _LAUNCHER.search(filename):
        return Owner.LIBRARY
    return Owner.USER


def is_user_file(filename: str) -> bool:
    """A file of the user's program: not torch, a library, the standard library or
    generated code."""
    return owner_of(filename) is Owner.USER


def package_of(filename: str) -> str:
    """The package a torch or library file belongs to, as the user would import it:
    ``torch.optim``, ``torch.nn.parallel``, ``transformers``, ``contextlib``; "" for the
    user's files and generated code."""
    owner = owner_of(filename)
    if owner is Owner.TORCH:
        installed = _INSTALLED.search(filename)
        rest = (
            installed.group("rest")
            if installed
            else re.split(r"(?:^|[/\\])(?=(?:torch|functorch)[/\\])", filename)[-1]
        )
        parts = re.split(r"[/\\]", rest)[1:-1]  # the folders below torch/
        if parts and parts[0].startswith("_"):  # torch._dynamo, torch._inductor: internals
            return f"torch.{parts[0]}"
        mods = [p for p in parts if p and not p.startswith("_")][:2]
        return ".".join(["torch", *mods])
    if owner is Owner.LIBRARY:
        for pattern in (_INSTALLED, _STDLIB):
            m = pattern.search(filename)
            if m is not None:
                top = re.split(r"[/\\]", m.group("rest"), maxsplit=1)[0]
                return top.removesuffix(".py") or "a library"
        if filename.startswith("<frozen "):
            return filename[len("<frozen ") :].rstrip(">")
        return filename.rsplit("/", 1)[-1]
    return ""


def resume_function(name: str) -> tuple[str, int] | None:
    """(function, line) of a resume function Dynamo made after a graph break
    (``torch_dynamo_resume_in_f_at_31`` -> ("f", 31)), else None."""
    m = _RESUME.match(name)
    return (m.group("fn"), int(m.group("line"))) if m else None


def plain_function(name: str) -> str:
    """A function's name as the user wrote it: a resume function is its function "after the
    graph break at line N"."""
    found = resume_function(name)
    if found is None:
        return name
    fn, line = found
    return f"{fn} (after the graph break at line {line})"


def user_line(frames: Sequence[tuple[str, Any]]) -> Where | None:
    """The innermost of `frames` ((file, line), outermost first) that is the user's code, as
    ``{"file", "line"}``; None when none is."""
    for filename, line in reversed(frames):
        if is_user_file(filename):
            return {"file": filename, "line": line if isinstance(line, int) else None}
    return None
