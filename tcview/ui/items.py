"""What a node of the tree stands for (`Item`), apart from the tree widget: the browser's
controller keeps the item shown without importing Textual."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from tcview.model.objects import Compile, Frame, Kernel, LogSource, Model, Rank, Record, Run

ItemKind = Literal[
    "root", "run", "rank", "file", "frame", "compile", "record", "kernel", "group", "others",
    "more", "page",
]  # fmt: skip
# What a node stands for: the model (root), a run, a rank, a trace file or process log
# (file; "others": its records without a compile id), a frame, a compile, a record, a kernel,
# a group of records, or the paged node ("page": the Item whose children it pages).
ItemObject: TypeAlias = "Model | Run | Rank | LogSource | Frame | Compile | Record | Kernel | list[Record] | Item | None"


@dataclass(eq=False, repr=False)
class Item:
    """What a tree node stands for. `key` identifies it across model refreshes."""

    kind: ItemKind
    obj: ItemObject
    key: Hashable
    loaded: bool = False
    comp: Compile | None = None  # a record's or a group's compile (its kernels, its breaks)
    by_label: bool = True  # a group: split its records by label first
    files: list[LogSource] = field(default_factory=list)  # trace files under a run/rank/file
    limit: int = 0  # children shown so far when there are more than PAGE (0: all)

    def __repr__(self) -> str:  # the model objects' reprs can be huge
        return f"<Item {self.kind} {self.key!r}>"
