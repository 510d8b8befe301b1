"""The Provenance view (`P`, or `i` on no kernel): user lines (or FX nodes) and the kernels
that implement them."""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text
from textual.binding import Binding

from tcview.analysis.provenance import KernelProvenance, Provenance, ProvenanceRow, model_provenance
from tcview.model.objects import (
    Compile,
    Model,
)
from tcview.report.detail import (
    kernel_provenance_detail,
    line_detail,
)
from tcview.ui.content import (
    KIND_STYLE,
    Document,
    detail_doc,
    lit,
)
from tcview.ui.table_view import (
    Row,
    TableView,
    _cut,
)

# ---------------------------------------------------------------- provenance


class ProvenanceView(TableView[ProvenanceRow]):
    TITLE = "Provenance"
    HELP = (
        "user lines and the kernels that implement them · {provenance.by-node}: by FX node"
        " · enter: the kernel"
    )
    COLUMNS = ("user line / FX node", "kernel", "kind", "compile")
    FLEX = "user line / FX node"
    ELIDE = ("kernel",)
    BINDINGS = [
        Binding(
            "N",
            "toggle_nodes",
            "By node",
            id="provenance.by-node",
            tooltip="list by user line, or by FX node (post- and pre-grad)",
        ),
    ]
    prov: Provenance | None = None
    by_node = False

    def prepare(self, model: Model) -> bool:
        prov = model_provenance(model, self.cancelled)
        for unit in prov.units:  # line numbers are counted from disk: here, not in detail()
            for rec in (
                unit.code,
                unit.mapping,
                unit.stack_traces,
                unit.post_graph,
                unit.pre_graph,
            ):
                if rec is not None:
                    _ = rec.line_number()
        self.prov = prov
        return not self.cancelled()

    def rows(self, model: Model) -> list[Row[ProvenanceRow]]:
        prov = self.prov
        if prov is None:
            return []
        return self._node_rows(prov) if self.by_node else self._line_rows(prov)

    @staticmethod
    def _compiles(kernels: Iterable[KernelProvenance]) -> list[Compile]:
        """The compiles of kernels: what their rows' rank cell and the rank filter read."""
        return [k.unit.compile for k in kernels if k.unit is not None and k.unit.compile]

    def _picked(self, kernels: Iterable[KernelProvenance]) -> list[KernelProvenance]:
        """The kernels the rank filter keeps (one of no known compile is kept)."""
        return [k for k in kernels if all(self.wants(c) for c in self._compiles([k]))]

    def _kernel_cells(self, kp: KernelProvenance, first: str = "") -> list[Text]:
        kind = kp.kernel.kind if kp.kernel is not None else "extern"
        unit = kp.unit
        cells = [
            lit(first, "dim"),
            lit(kp.key),
            Text(kind, style=KIND_STYLE.get(kind, "dim")),
            lit(unit.label if unit is not None else "-", "dim"),
        ]
        return self.ranked_cells(cells, self._compiles([kp]))

    def _line_rows(self, prov: Provenance) -> list[Row[ProvenanceRow]]:
        out: list[Row[ProvenanceRow]] = []
        by_line = prov.by_line(user_only=True)
        for src, all_kernels in by_line.items():
            kernels = self._picked(all_kernels)
            if not kernels:
                continue
            head = f"{src.short}  {src.code}" if src.code else src.short
            cells = [
                lit(_cut(head, 80), "bold"),
                Text(f"{len(kernels)} kernel(s)", "dim"),
                Text(""),
                Text(""),
            ]
            out.append((self.ranked_cells(cells, self._compiles(kernels)), ProvenanceRow(line=src)))
            for i, kp in enumerate(kernels):
                branch = "  └ " if i == len(kernels) - 1 else "  ├ "
                out.append((self._kernel_cells(kp, branch), ProvenanceRow(kernel=kp, line=src)))
        lost = self._picked(k for k in prov.kernels() if not k.user_lines)
        if lost:
            cells = [
                Text("(no user line known)", "bold dim"),
                Text(f"{len(lost)} kernel(s)", "dim"),
                Text(""),
                Text(""),
            ]
            out.append((self.ranked_cells(cells, self._compiles(lost)), ProvenanceRow()))
            out.extend((self._kernel_cells(kp, "  · "), ProvenanceRow(kernel=kp)) for kp in lost)
        return out

    def _node_rows(self, prov: Provenance) -> list[Row[ProvenanceRow]]:
        out: list[Row[ProvenanceRow]] = []
        for unit in prov.units:
            for what, nodes in (
                (
                    "post-grad",
                    {
                        n: unit.kernels_of_post(n)
                        for k in unit.kernels.values()
                        for n in k.post_grad
                    },
                ),
                (
                    "pre-grad",
                    {n: unit.kernels_of_pre(n) for k in unit.kernels.values() for n in k.pre_grad},
                ),
            ):
                for node, all_kernels in nodes.items():
                    kernels = self._picked(all_kernels)
                    if not kernels:
                        continue
                    cells = [
                        lit(f"{unit.label} {what} {node}", "bold"),
                        Text(f"{len(kernels)} kernel(s)", "dim"),
                        Text(""),
                        Text(""),
                    ]
                    row = ProvenanceRow(unit=unit, node=node)
                    out.append((self.ranked_cells(cells, self._compiles(kernels)), row))
                    out.extend(
                        (self._kernel_cells(kp, "  · "), ProvenanceRow(kernel=kp, unit=unit))
                        for kp in kernels
                    )
        return out

    def head(self) -> Text:
        head = super().head()
        prov = self.prov
        if prov is None:
            return head
        head.append("\n")
        tracked = [u for u in prov.units if u.tracked]
        if not prov.units:
            head.append("no Inductor output code in this trace", style="yellow")
        elif not tracked:
            head.append(
                "provenance tracking was off: lines come from the kernels' source-node comments"
                " and the graphs' # File: comments",
                style="yellow",
            )
        else:
            keys = prov.kernels()
            generated = sum(1 for k in keys if k.kernel is not None)
            head.append(
                f"{len(keys)} mapping keys in {len(prov.units)} graphs: {generated} generated"
                f" kernels, {len(keys) - generated} extern calls ({len(tracked)} graphs with"
                " provenance artifacts)",
                style="bold",
            )
        return head

    def empty_text(self) -> str:
        return "No kernel with a known source line."

    def detail(self, row: ProvenanceRow) -> Document | None:
        prov = self.prov
        if row.kernel is not None:
            kp = row.kernel
            return detail_doc(kernel_provenance_detail(kp.unit, kp, kp.key))
        if row.line is not None and prov is not None:
            return detail_doc(line_detail(prov, row.line.file, row.line.line))
        return None

    def activate(self, row: ProvenanceRow) -> None:
        kp = row.kernel
        if kp is None:
            return
        if kp.kernel is not None:
            self.reveal("kernel", kp.kernel)
        elif kp.unit is not None and kp.unit.code is not None:
            self.reveal("record", kp.unit.code)

    def action_toggle_nodes(self) -> None:
        self.by_node = not self.by_node
        self.reload()
