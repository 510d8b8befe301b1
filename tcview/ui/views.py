"""The views the browser's keys open: graph breaks, recompiles, failures, errors, compile time,
export; the registry of every view by name (`VIEWS`), with those of their own modules
(kernels, other output, provenance, ranks, findings); and the widget of each pane the
browser's controller opens (`pane_widget`).

Each view is a table of rows over the model, with the detail of the highlighted row below
(table_view.TableView); enter goes to the row's compile in the tree.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable
from typing import Any, TypeAlias

from rich.text import Text
from textual.binding import Binding

from tcview.analysis.autotune import autotune_seconds
from tcview.analysis.compiletime import compile_seconds, time_note
from tcview.analysis.export import ExportIssue, ExportReport, export_report
from tcview.analysis.recompiles import diagnose
from tcview.ingest.session import ModelSession
from tcview.model.facts import short_guard
from tcview.model.objects import (
    BreakGroup,
    Compile,
    Error,
    Failure,
    Frame,
    Kernel,
    Model,
    group_breaks,
)
from tcview.model.ranks import RankSet
from tcview.report.detail import (
    compile_detail,
    fmt_seconds,
    frame_detail,
    issue_detail,
    phase_times,
    report_summary,
)
from tcview.run.bench import KernelTime
from tcview.ui.content import (
    STATUS_MARK,
    STATUS_STYLE,
    Document,
    bar,
    detail_doc,
    detail_lines,
    error_doc,
    lit,
    lit_lines,
    styled_doc,
    tag_style,
    verdict_text,
)
from tcview.ui.controller import ComparePane, DiffPane, Pane, SearchPane, ViewPane
from tcview.ui.diffview import CompileDiffView
from tcview.ui.finder import SearchView
from tcview.ui.findings_view import FindingsView
from tcview.ui.kernels_view import KernelsView
from tcview.ui.other_view import OtherView
from tcview.ui.pane import BrowserPane
from tcview.ui.profile_view import ProfileView
from tcview.ui.provenance_view import ProvenanceView
from tcview.ui.ranks_view import CompareView, RanksView
from tcview.ui.table_view import (
    Row,
    TableView,
    _cut,
    _frame_name,
    ranks_cell,
)

# ---------------------------------------------------------------- graph breaks


class BreaksView(TableView[BreakGroup]):
    TITLE = "Graph breaks"
    HELP = "de-duplicated by reason and location · enter: go to the compile · {view.close}: back"
    COLUMNS = ("count", "reason", "location", "compiles")
    FLEX = "reason"
    ELIDE = ("location", "compiles")

    def rows(self, model: Model) -> list[Row[BreakGroup]]:
        out: list[Row[BreakGroup]] = []
        breaks = list(model.breaks)
        groups = (
            model.grouped_breaks()
            if self.ranks is None
            else group_breaks([gb for gb in breaks if self.wants(gb)])
        )
        for g in groups:
            comps = []
            for gb in g.breaks:
                if gb.compile is not None and gb.compile.id_label not in comps:
                    comps.append(gb.compile.id_label)
            ids = ", ".join(comps[:4]) + (f" +{len(comps) - 4}" if len(comps) > 4 else "")
            cells = [
                Text(str(g.count), style="bold yellow", justify="right"),
                lit(_cut(g.reason, 90), "bold"),
                lit(g.first.short_location or "?", "yellow"),
                lit(ids, "dim"),
            ]
            out.append((self.ranked_cells(cells, g.breaks), g))
        return out

    def empty_text(self) -> str:
        return "No graph breaks: every frame compiled as one graph."

    def activate(self, group: BreakGroup) -> None:
        comp = group.first.compile
        if comp is not None:
            self.reveal("compile", comp)

    def detail(self, group: BreakGroup) -> Document:
        gb = group.first
        first, *rest = lit_lines(group.reason, "bold", " " * (len(f"{group.count}× ") + 2))
        lines = [
            Text.assemble((f"{group.count}× ", "bold yellow"), first),
            *rest,
            Text.assemble(("at        ", "dim"), lit(group.location or "?", "yellow")),
        ]
        if gb.explanation:
            lines.append(Text.assemble(("why       ", "dim"), lit(gb.explanation)))
        for hint in gb.hints:
            lines.append(Text.assemble(("hint      ", "dim"), lit(hint, "green")))
        if gb.url:
            lines.append(Text.assemble(("more      ", "dim"), lit(gb.url, "underline")))
        seen = Counter(b.compile.id_label if b.compile else "?" for b in group.breaks)
        lines.append(
            Text.assemble(
                ("compiles  ", "dim"),
                lit(", ".join(f"{k}×{v}" if v > 1 else k for k, v in seen.items())),
            )
        )
        if gb.user_stack:
            lines.append(Text(""))
            lines.append(Text("user stack", style="bold underline"))
            for entry in gb.user_stack[-10:]:
                lines.append(Text.assemble("  ", lit(entry)))
        if gb.record is not None:
            lines.append(Text(""))
            lines.append(Text("full message", style="bold underline"))
            for raw in gb.record.payload().split("\n")[:400]:
                lines.append(lit(raw))
        return styled_doc(f"graph break · {group.count}×", lines)


# ---------------------------------------------------------------- recompiles


class RecompilesView(TableView[Compile | Frame]):
    TITLE = "Recompiles"
    HELP = (
        "per frame: why it recompiled, then each compile and the guard that failed"
        " · enter: go to the compile"
    )
    COLUMNS = ("frame / compile", "status", "time", "why")
    FLEX = "why"
    ELIDE = ("frame / compile",)

    def rows(self, model: Model) -> list[Row[Compile | Frame]]:
        out: list[Row[Compile | Frame]] = []
        frames: list[Frame] = []
        for tf in list(model.files):
            if self.ranks is not None and tf.rank not in self.ranks:
                continue
            for frame in list(tf.frames.values()):
                if len(frame.compiles) > 1 or any(c.key.is_recompile for c in frame.compiles):
                    frames.append(frame)
        for frame in frames:
            # The diagnosis without the config (that is read from disk, for the detail).
            diagnosis = diagnose(frame)
            limit = diagnosis.limit_hit is not None
            mark = "  ⚠ recompile limit hit" if limit else ""
            why = diagnosis.sentences[1 if limit and len(diagnosis.sentences) > 1 else 0]
            cells = [
                Text.assemble(lit(frame.label, "bold"), (mark, "bold red")),
                Text(f"{len(frame.compiles)} compiles", style="dim"),
                Text(""),
                lit(_cut(why, 110), "bold"),
            ]
            out.append((self.ranked_cells(cells, [frame]), frame))
            explained = {id(e.compile): e for e in diagnosis.explanations}
            for i, comp in enumerate(frame.compiles):
                reasons = comp.recompile.reasons if comp.recompile is not None else []
                e = explained.get(id(comp))
                if e is not None and e.failure is not None:
                    why = f"{e.family}: {e.words}"
                elif reasons:
                    why = short_guard(reasons[0])
                    if len(reasons) > 1:
                        why += f"  (+{len(reasons) - 1} more)"
                else:
                    why = "first compile" if i == 0 else "(no reason recorded)"
                cells = [
                    Text.assemble(
                        ("  └ " if i == len(frame.compiles) - 1 else "  ├ ", "dim"),
                        lit(comp.id_label, "bold"),
                    ),
                    verdict_text(comp),
                    Text(fmt_seconds(compile_seconds(comp)), style="dim"),
                    lit(_cut(why, 110), "cyan" if reasons else "dim"),
                ]
                if self.ranked:
                    cells.insert(0, Text(""))  # the frame's row says the rank
                out.append((cells, comp))
        return out

    def empty_text(self) -> str:
        return "No recompiles: every frame compiled once."

    def detail(self, obj: Compile | Frame) -> Document:
        if isinstance(obj, Frame):
            return detail_doc(frame_detail(obj))
        return detail_doc(compile_detail(obj, self.model))

    def activate(self, obj: Compile | Frame) -> None:
        comp = obj.compiles[0] if isinstance(obj, Frame) and obj.compiles else obj
        if isinstance(comp, Compile):
            self.reveal("compile", comp)


# ---------------------------------------------------------------- failures


class FailuresView(TableView[Failure]):
    TITLE = "Failures"
    HELP = "compiles that failed · enter: go to the compile · {view.close}: back"
    COLUMNS = ("compile", "type", "reason", "location")
    FLEX = "reason"
    ELIDE = ("location",)

    def rows(self, model: Model) -> list[Row[Failure]]:
        out: list[Row[Failure]] = []
        for f in list(model.failures):
            if not self.wants(f):
                continue
            comp = f.compile
            cells = [
                lit(comp.id_label if comp is not None else "-", "bold"),
                lit(_cut(f.fail_type, 40), "bold red"),
                lit(_cut(f.reason, 100)),
                lit(f.location or "", "dim"),
            ]
            out.append((self.ranked_cells(cells, [f]), f))
        return out

    def empty_text(self) -> str:
        return "No failures."

    def activate(self, f: Failure) -> None:
        if f.compile is not None:
            self.reveal("compile", f.compile)

    def detail(self, f: Failure) -> Document:
        lines = [
            Text.assemble(
                lit(f.fail_type, "bold red"),
                ("  recompile limit" if f.is_recompile_limit else "", "red"),
            ),
            *lit_lines(f.reason),
        ]
        if f.location:
            lines.append(Text.assemble(("at ", "dim"), lit(f.location)))
        if f.record is not None and isinstance(f.record.meta, dict):
            trace = f.record.meta.get("exception_stack_trace")
            if trace:
                lines.append(Text(""))
                lines.append(Text("exception stack", style="bold underline"))
                text = "\n".join(trace) if isinstance(trace, list) else str(trace)
                lines.extend(lit(ln) for ln in text.split("\n")[:300])
        if f.compile is not None:
            lines.append(Text(""))
            lines.extend(detail_lines(compile_detail(f.compile, self.model)))
        return styled_doc(f"failure · {f.fail_type}", lines)


# ---------------------------------------------------------------- errors


class ErrorsView(TableView[Error]):
    TITLE = "Errors"
    HELP = "the run crashed: uncaught tracebacks, a non-zero exit code · {view.close}: back"
    COLUMNS = ("rank", "type", "message", "where")
    FLEX = "message"
    ELIDE = ("where",)
    RANK_COLUMN = False  # it has one of its own, always

    def rows(self, model: Model) -> list[Row[Error]]:
        out: list[Row[Error]] = []
        for error in model.run_errors():
            if not self.wants(error):
                continue
            where = error.stack[-1] if error.stack else error.where
            out.append(
                (
                    [
                        lit("-" if error.rank is None else error.rank, "bold"),
                        lit(_cut(error.error_type.rsplit(".", 1)[-1], 40), "bold red"),
                        lit(_cut(error.first_line, 100)),
                        lit(_cut(where, 80), "dim"),
                    ],
                    error,
                )
            )
        return out

    def empty_text(self) -> str:
        return "No errors: no uncaught traceback, and no non-zero exit code."

    def detail(self, error: Error) -> Document:
        return error_doc(error)


# ---------------------------------------------------------------- compile time


class TimeView(TableView[Compile]):
    TITLE = "Compile time"
    HELP = "{time.sort}: sort by time / by order · enter: go to the compile · {view.close}: back"
    COLUMNS = ("compile", "time", "", "frame")
    ELIDE = ("frame",)
    BINDINGS = [
        Binding("s", "sort", "Sort", id="time.sort", tooltip="sort by time, or by order"),
    ]
    by_time = True

    def rows(self, model: Model) -> list[Row[Compile]]:
        comps = [c for c in list(model.compiles) if self.wants(c)]
        if self.by_time:
            comps.sort(key=lambda c: -(compile_seconds(c) or 0))
        top = max((compile_seconds(c) or 0.0 for c in comps), default=0.0)
        out: list[Row[Compile]] = []
        for c in comps:
            t = compile_seconds(c)
            cells = [
                Text.assemble(
                    lit(c.id_label, "bold"),
                    " ",
                    (  # the tree's mark (the help's legend lists them)
                        STATUS_MARK.get(c.status, "?") if c.status != "ok" else "",
                        STATUS_STYLE.get(c.status, ""),
                    ),
                ),
                Text(fmt_seconds(t), justify="right"),
                bar(t or 0, top, 28, STATUS_STYLE.get(c.status, "cyan")),
                lit(_cut(_frame_name(c), 60), "dim"),
            ]
            out.append((self.ranked_cells(cells, [c]), c))
        return out

    def head(self) -> Text:
        head = super().head()
        model = self.model
        if model is None:
            return head
        comps = [c for c in list(model.compiles) if self.wants(c)]
        total = sum(compile_seconds(c) or 0 for c in comps)
        head.append("\n")
        head.append(
            f"total {fmt_seconds(total)} in {len(comps)} compiles {time_note(comps)}".rstrip(),
            style="bold",
        )
        sums: dict[str, float] = {}
        order: list[str] = []
        for c in comps:
            for label, value, depth in phase_times(c, detailed=False):
                if depth in (1, 2) and "cumulative" not in label:
                    if label not in sums:
                        order.append(label)
                    sums[label] = sums.get(label, 0.0) + value
        for label in order:
            head.append(f" · {label} {fmt_seconds(sums[label])}", style="cyan")
        tuned = [t for c in comps if (t := autotune_seconds(c)) is not None]
        if tuned:
            head.append(
                f" · autotune {fmt_seconds(sum(tuned))} in {len(tuned)} compiles", style="yellow"
            )
        return head

    def detail(self, comp: Compile) -> Document:
        return detail_doc(compile_detail(comp, self.model))

    def activate(self, comp: Compile) -> None:
        self.reveal("compile", comp)

    def bench_target(self) -> Compile | Kernel | None:
        return self.highlighted()

    def action_sort(self) -> None:
        self.by_time = not self.by_time
        self.reload()


# ---------------------------------------------------------------- export


class ExportView(TableView[ExportIssue]):
    TITLE = "Export"
    HELP = (
        "the draft-export report: guards, data-dependent errors, fake kernels · {view.close}: back"
    )
    COLUMNS = ("#", "issue", "expression / operator", "where")
    FLEX = "where"
    ELIDE = ("expression / operator",)
    report: ExportReport | None = None

    def prepare(self, model: Model) -> bool:
        self.report = export_report(model, self.cancelled)
        return not self.cancelled()

    def rows(self, model: Model) -> list[Row[ExportIssue]]:
        report = self.report
        out: list[Row[ExportIssue]] = []
        for number, issue in enumerate(report.issues if report is not None else [], 1):
            rank = issue.record.source.rank
            if self.ranks is not None and rank not in self.ranks:
                continue
            where = issue.user_line
            cells = [
                Text(str(number), justify="right"),
                lit(issue.title, "bold red" if issue.reported_by_tlparse else "yellow"),
                lit(_cut(issue.expr or issue.op, 70), "bold"),
                lit(f"{where.where} {where.loc}" if where is not None else issue.loc, "dim"),
            ]
            if self.ranked:
                cells.insert(0, ranks_cell(set() if rank is None else {rank}))
            out.append((cells, issue))
        return out

    def head(self) -> Text:
        head = super().head()
        report = self.report
        if report is None:
            return head
        head.append("\n")
        for row in report_summary(report)[:2]:
            head.append_text(lit(row.value, tag_style(row.tag)))
            head.append("  ")
        return head

    say_nothing_here = False  # the head says "No issues found" already

    def empty_text(self) -> str:
        return "No issues found during export."

    def detail(self, issue: ExportIssue) -> Document:
        issues = self.report.issues if self.report is not None else []
        number = issues.index(issue) + 1 if issue in issues else 0  # the report's, as listed
        return detail_doc(issue_detail(number, issue, stacks=40))

    def activate(self, issue: ExportIssue) -> None:
        self.reveal("record", issue.record)


ViewClass: TypeAlias = type[TableView[Any]] | type[OtherView]
# Every view by the name its key opens (`view('breaks')`...).
VIEWS: dict[str, ViewClass] = {
    "breaks": BreaksView,
    "recompiles": RecompilesView,
    "kernels": KernelsView,
    "profile": ProfileView,
    "failures": FailuresView,
    "errors": ErrorsView,
    "time": TimeView,
    "other": OtherView,
    "export": ExportView,
    "provenance": ProvenanceView,
    "ranks": RanksView,
    "findings": FindingsView,
}


def pane_widget(
    pane: Pane, session: ModelSession, ranks: RankSet, times: dict[Hashable, KernelTime]
) -> BrowserPane:
    """The widget that shows a pane over the tree (the controller's): a view on `session`,
    with the rank filter and the benchmarks' times, a compile diff, two ranks compared, the
    global search, or the Other view at a search hit's line."""
    if isinstance(pane, SearchPane):
        return SearchView(session)
    if isinstance(pane, DiffPane):
        return CompileDiffView(pane.a, pane.b)
    if isinstance(pane, ComparePane):
        return CompareView(session, pane.left, pane.right)
    assert isinstance(pane, ViewPane), pane  # the tree's pane is always there
    at = pane.at
    if at is not None:
        return OtherView(session, target=(at.display, at.line, at.pattern, at.label))
    return VIEWS[pane.name](session, ranks, times)
