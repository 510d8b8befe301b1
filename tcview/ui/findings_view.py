"""The Findings view (`w`): what went wrong, worst first; enter goes to a finding's evidence
(its first compile in the tree)."""

from __future__ import annotations

from tcview.analysis.findings import Finding, findings, where_text
from tcview.model.objects import Model
from tcview.report.detail import findings_detail
from tcview.ui.content import Document, detail_doc, fmt_seconds, lit
from tcview.ui.table_view import Row, TableView, _cut

SEVERITY_STYLES = {"error": "bold red", "warning": "bold yellow", "info": "cyan"}


class FindingsView(TableView[Finding]):
    TITLE = "Findings"
    HELP = "worst first · enter: go to the evidence (its compile) · {view.close}: back"
    COLUMNS = ("severity", "finding", "cost", "where")
    FLEX = "finding"
    ELIDE = ("where",)
    RANK_COLUMN = False  # a finding on several ranks is one row that names them

    def rows(self, model: Model) -> list[Row[Finding]]:
        out: list[Row[Finding]] = []
        for f in findings(model):
            if self.ranks is not None and f.compiles and not any(self.wants(c) for c in f.compiles):
                continue
            out.append(
                (
                    [
                        lit(f.severity, SEVERITY_STYLES[f.severity]),
                        lit(_cut(f.title, 100), "bold"),
                        lit(fmt_seconds(f.cost_s) if f.cost_s else ""),
                        lit(_cut(where_text(f.where), 60), "dim"),
                    ],
                    f,
                )
            )
        return out

    def empty_text(self) -> str:
        return "Nothing wrong found."

    def detail(self, finding: Finding) -> Document:
        return detail_doc(findings_detail([finding]))

    def activate(self, finding: Finding) -> None:
        if finding.compiles:
            self.reveal("compile", finding.compiles[0])
        else:
            self.notify(
                markup=False,
                message="no compile holds this finding's evidence: E lists the run's errors",
            )
