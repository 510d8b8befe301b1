"""What ``tcview show PATH ITEM`` prints for the items of issue 14: ``export`` (the export
report), ``FILE:LINE`` (the kernels of a user line) and a kernel (its provenance).

Each is a list of (style tag, text) lines (`provenance.Line`), the same the pane shows.
"""

from __future__ import annotations

import re

from .export import export_report, is_export, report_lines
from .model import Kernel, Model
from .provenance import (
    Line,
    kernel_lines,
    kernel_provenance,
    line_lines,
    model_provenance,
    torch_version,
    tracking_hint,
)

EXPORT_ITEM = "export"
_FILE_LINE = re.compile(r"^(.+):(\d+)$")


class ItemNotFound(ValueError):
    """The item names nothing in the input (the message says what was looked for)."""


def parse_file_line(text: str) -> tuple[str, int] | None:
    m = _FILE_LINE.match(text.strip())
    if m is None or "/" in m.group(2):
        return None
    return m.group(1), int(m.group(2))


def export_lines(model: Model) -> list[Line]:
    if not is_export(model):
        return [
            ("title", "Draft export report"),
            ("warn", "this trace was not written by torch.export (no export records)"),
        ]
    return report_lines(export_report(model))


def kernels_named(model: Model, name: str) -> list[Kernel]:
    exact = [k for k in model.kernels if k.name == name]
    if exact:
        return exact
    low = name.lower()
    return [k for k in model.kernels if low in k.name.lower()]


def kernel_report(model: Model, kernel: Kernel) -> list[Line]:
    unit, kp = kernel_provenance(kernel)
    hint = tracking_hint(torch_version(model)) if unit is None or unit.fallback else ""
    return kernel_lines(unit, kp, kernel.name, hint)


def lookup_lines(model: Model, text: str) -> list[Line]:
    """The lines for ITEM; ItemNotFound when it names nothing."""
    item = text.strip()
    if item == EXPORT_ITEM:
        return export_lines(model)
    kernels = kernels_named(model, item) if ":" not in item else []
    if kernels:
        out: list[Line] = []
        for kernel in kernels:
            if out:
                out.append(("", ""))
            out.extend(kernel_report(model, kernel))
        return out
    prov = model_provenance(model)
    keyed = [k for k in prov.kernels() if item in (k.key, k.name)]
    if keyed:
        out = []
        for kp in keyed:
            if out:
                out.append(("", ""))
            hint = tracking_hint(torch_version(model)) if kp.unit and kp.unit.fallback else ""
            out.extend(kernel_lines(kp.unit, kp, kp.key, hint))
        return out
    where = parse_file_line(item)
    if where is not None:
        return line_lines(prov, *where)
    raise ItemNotFound(f"no kernel, FILE:LINE or 'export' matches {item!r}")


def plain_text(lines: list[Line]) -> str:
    return "\n".join(text for _tag, text in lines) + "\n"
