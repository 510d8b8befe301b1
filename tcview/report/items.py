"""The one grammar of an item, for `tcview show`, `tcview open --goto` and the palette: find the
compile, frame, kernel or user line that a user names.

ITEM is one of (any may start with ``rank N`` or ``pid N`` to pick a process):

- a compile id as tcview and torch print it: ``1/0``, ``[1/0]``, ``!0/1/0``, ``0/0 #2`` (the
  second compile episode, after ``torch._dynamo.reset()``);
- ``frame 0`` (``frame 0 #2``);
- a kernel name, optionally ``NAME@ID`` for the one in compile ID, or a key of a provenance
  mapping (``triton_poi_fused_mul_1:2``, ``extern_kernels.mm:4``: extern kernels have no
  other detail);
- ``FILE:LINE`` (``model.py:28`` or a full path): the kernels that implement a user line;
- ``export`` (`tcview show` only): the draft-export report of a torch.export trace;
- ``stacks`` (`tcview show` only): the tree of user stacks that led to every compile;
- ``findings`` (`tcview show` only): what went wrong, most important first.

An id that several processes have is not guessed: the error names the choices.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NoReturn

from tcview.analysis.provenance import KernelProvenance, Provenance, model_provenance
from tcview.model.compile_id import parse_compile_id
from tcview.model.objects import Compile, Frame, Kernel, LogSource, Model
from tcview.report.detail import where_of

_PICK = re.compile(r"^(rank|pid)\s+(\d+)\s+(.*)$", re.S)
_FILE_LINE = re.compile(r"^(.+):(\d+)$", re.S)
EXPORT_ITEM = "export"
FINDINGS_ITEM = "findings"
SUGGESTIONS = 10


class ShowError(Exception):
    """The item is not in the input, or names several things: the message says which."""


class Ambiguous(ShowError):
    """The item names several things (the message says how to pick one)."""


@dataclass
class Query:
    text: str
    rank: int | None = None
    pid: int | None = None

    def wants(self, source: LogSource) -> bool:
        if self.rank is not None and source.rank != self.rank:
            return False
        return self.pid is None or self.pid in source.pids


def parse_query(text: str) -> Query:
    query = Query(text.strip())
    while True:
        m = _PICK.match(query.text)
        if m is None:
            return query
        if m.group(1) == "rank":
            query.rank = int(m.group(2))
        else:
            query.pid = int(m.group(2))
        query.text = m.group(3).strip()


def _who(source: LogSource) -> str:
    """How to pick this source in a query: ``rank 1``, ``pid 4242``."""
    where = where_of(source)
    if where:
        return where
    return f"pid {source.pid}" if source.pid is not None else source.display


@dataclass
class UserLine:
    """``FILE:LINE``: a line of the user's program, and the provenance of the processes asked."""

    file: str
    line: int
    provenance: Provenance


Item = Compile | Frame | Kernel | KernelProvenance | UserLine


def parse_file_line(text: str) -> tuple[str, int] | None:
    m = _FILE_LINE.match(text.strip())
    return (m.group(1), int(m.group(2))) if m is not None else None


def find(model: Model, text: str) -> Item:
    """The one item `text` names (see the module; not ``export``); ShowError when none or
    several."""
    query = parse_query(text)
    sources = [f for f in model.files if query.wants(f)]
    if not sources:
        raise ShowError(f"no process matches {text!r}")
    item = query.text
    if item.startswith("frame "):
        return _one(item, _frames(sources, item[len("frame ") :].strip()))
    parsed = parse_compile_id(item)
    if parsed is not None:
        key = parsed[0]
        found = [f.compiles[key] for f in sources if key in f.compiles]
        return _one(item, found)
    kernel = _kernel(model, sources, item)
    if kernel is not None:
        return kernel
    prov = model_provenance(model)
    prov.units = [u for u in prov.units if u.source in sources]
    name, _, graph = item.partition("@")
    keyed = [
        k
        for k in prov.kernels()
        if name in (k.key, k.name) and (not graph or (k.unit is not None and k.unit.label == graph))
    ]
    if len(keyed) > 1 and len({id(k.unit) for k in keyed}) > 1:
        choices = ", ".join(f"'{name}@{k.unit.label}'" for k in keyed[:SUGGESTIONS] if k.unit)
        raise Ambiguous(f"{name!r} is in {len(keyed)} graphs: say which, e.g. {choices}")
    if keyed:  # a mapping's key: its kernel's detail, or the provenance of an extern kernel
        return keyed[0].kernel or keyed[0]
    where = parse_file_line(item)
    if where is not None:
        return UserLine(*where, prov)
    _no_kernel(model, item)


def _frames(sources: list[LogSource], label: str) -> list[Frame]:
    return [fr for f in sources for fr in f.frames.values() if fr.id_label == label]


def _one(item: str, found: list[Compile] | list[Frame]) -> Compile | Frame:
    if not found:
        raise ShowError(f"{item!r} is not in this input")
    if len(found) > 1:
        choices = ", ".join(f"'{_who(x.file)} {item}'" for x in found[:SUGGESTIONS])
        raise Ambiguous(f"{item!r} is in {len(found)} processes: say which, e.g. {choices}")
    return found[0]


def _kernel(model: Model, sources: list[LogSource], item: str) -> Kernel | None:
    name, _, at = item.partition("@")
    kernels = [k for k in model.kernels if k.name == name and k.output.source in sources]
    if at:
        parsed = parse_compile_id(at)
        key = parsed[0] if parsed is not None else None
        kernels = [k for k in kernels if k.compile is not None and k.compile.key == key]
    return kernels[0] if kernels else None


def _no_kernel(model: Model, item: str) -> NoReturn:
    name = item.partition("@")[0]
    near = sorted({k.name for k in model.kernels if name.lower() in k.name.lower()})
    if near:
        raise ShowError(
            f"no kernel is named {item!r}; kernels whose names contain it: "
            + ", ".join(near[:SUGGESTIONS])
            + (f" … ({len(near)})" if len(near) > SUGGESTIONS else "")
        )
    raise ShowError(
        f"{item!r} is neither a compile id, a frame, a kernel, FILE:LINE, 'export', 'stacks' "
        "nor 'findings' of this input"
    )


Place = Compile | Frame | Kernel  # an item with a row of its own in the app's tree


def names_by_id(text: str) -> bool:
    """Whether `text` names an item by id (a compile id or ``frame N``, maybe after ``rank N``):
    cheap to tell, so the palette can resolve it as it is typed."""
    query = parse_query(text)
    picked = query.rank is not None or query.pid is not None
    item = query.text
    return (
        item.startswith("frame ") or parse_compile_id(item) is not None or (picked and bool(item))
    )


def locate(model: Model, text: str) -> Place:
    """The tree row `text` names (`--goto`, the palette): as `find`, and ShowError for an
    item that has no row (a user line, an extern kernel: `tcview show` prints those)."""
    item = find(model, text)
    if isinstance(item, (Compile, Frame, Kernel)):
        return item
    what = "a user line" if isinstance(item, UserLine) else "a kernel with no source"
    raise ShowError(f"{text.strip()!r} is {what}, not a row of the tree: tcview show prints it")


def goto_failure(text: str, error: ShowError) -> str:
    """What `--goto TEXT` says when `locate` failed."""
    why = str(error) if isinstance(error, Ambiguous) else f"not found: {error}"
    return f"--goto {text}: {why}"
