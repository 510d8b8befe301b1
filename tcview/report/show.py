"""``tcview show PATH ITEM``: the detail the pane shows for the item a user names (the grammar
of an item is `tcview.report.items`'s, shared with ``--goto`` and the palette; ``stacks`` is
the tree of user stacks that led to every compile; ``findings`` what went wrong, most important
first)."""

from __future__ import annotations

from tcview.analysis.findings import findings
from tcview.analysis.provenance import torch_version, tracking_hint
from tcview.model.objects import Compile, Frame, Kernel, Model
from tcview.report.detail import (
    Detail,
    compile_detail,
    export_detail,
    findings_detail,
    frame_detail,
    kernel_detail,
    kernel_provenance_detail,
    line_detail,
)
from tcview.report.items import EXPORT_ITEM, FINDINGS_ITEM, ShowError, UserLine, find
from tcview.report.stacks import STACKS_ITEM, stacks_detail

__all__ = ["EXPORT_ITEM", "ShowError", "find", "show_detail"]


def show_detail(model: Model, text: str) -> Detail:
    """What the detail pane (or the Export view) shows for the item `text` names."""
    if text.strip() == EXPORT_ITEM:
        return export_detail(model)
    if text.strip() == STACKS_ITEM:
        return stacks_detail(model)
    if text.strip() == FINDINGS_ITEM:
        return findings_detail(findings(model))
    item = find(model, text)
    if isinstance(item, Compile):
        return compile_detail(item, model)
    if isinstance(item, Frame):
        return frame_detail(item)
    if isinstance(item, Kernel):
        return kernel_detail(item, model)
    if isinstance(item, UserLine):
        return line_detail(item.provenance, item.file, item.line)
    unit = item.unit
    hint = tracking_hint(torch_version(model)) if unit is None or unit.fallback else ""
    return kernel_provenance_detail(unit, item, item.key, hint)
