"""The Profile view (`M`): every kernel the joined profile measured (Triton, C++, extern,
overhead and eager alike), longest first, each with its compile and user line."""

from __future__ import annotations

from enum import Enum

from rich.text import Text
from textual.binding import Binding

from tcview.analysis.profile import KernelTime, RuntimeJoin
from tcview.model.objects import Model
from tcview.report.detail import kernel_detail
from tcview.report.profile import fmt_us, measured_lead, measured_section, row_detail
from tcview.ui.content import Document, detail_doc, lit
from tcview.ui.measured import PROFILE_KIND_STYLE
from tcview.ui.table_view import Row, TableView

NO_PROFILE = "No profile joined: open the trace with --profile P (a torch.profiler trace)."


class Sort(str, Enum):
    """What `s` goes through, in order."""

    TIME = "time"
    CALLS = "calls"
    NAME = "name"


class ProfileView(TableView[KernelTime]):
    TITLE = "Profile"
    HELP = (
        "{profile.sort}: sort by time / calls / name · enter: go to the kernel or compile"
        " · {view.close}: back"
    )
    COLUMNS = ("time", "share", "calls", "compile", "kind", "line", "name")
    FLEX = "name"
    ELIDE = ("line",)
    RANK_COLUMN = False  # a profile's processes are not the trace's ranks
    BINDINGS = [
        Binding("s", "sort", "Sort", id="profile.sort", tooltip="sort by time, calls or name"),
    ]
    sort = Sort.TIME
    measured: RuntimeJoin | None = None  # read in prepare (off the UI thread)

    def prepare(self, model: Model) -> bool:
        self.measured = self.session.measured(model)
        return True

    def action_sort(self) -> None:
        order = list(Sort)
        self.sort = order[(order.index(self.sort) + 1) % len(order)]
        self.notify(markup=False, message=f"sorted by {self.sort.value}")
        self.reload()

    def rows(self, model: Model) -> list[Row[KernelTime]]:
        join = self.measured
        if join is None:
            return []
        rows = list(join.rows)  # longest first
        if self.sort == Sort.CALLS:
            rows.sort(key=lambda r: -r.calls)
        elif self.sort == Sort.NAME:
            rows.sort(key=lambda r: r.name)
        out: list[Row[KernelTime]] = []
        for r in rows:
            kind = r.kind if r.op in (None, r.name) else f"{r.kind} {r.op}"
            line = r.lines[0].short if r.lines else ""
            if len(r.lines) > 1:
                line += f" +{len(r.lines) - 1}"
            cells = [
                Text(fmt_us(r.time_us), justify="right", style="bold"),
                Text(f"{r.share:.1%}", justify="right"),
                Text(f"{r.calls:,}", justify="right", style="dim"),
                lit(r.compile_label or "-", "bold"),
                lit(kind, PROFILE_KIND_STYLE.get(r.kind, "")),
                lit(line, "yellow"),
                lit(r.name),
            ]
            out.append((cells, r))
        return out

    def head(self) -> Text:
        head = super().head()
        join = self.measured
        head.append("\n")
        if join is None:
            head.append(NO_PROFILE, style="yellow")
            return head
        head.append(measured_lead(join, 0).headline, style="bold")
        if join.replayed:
            head.append(f" · {join.replayed} kernel events in CUDA graph replays", style="cyan")
        return head

    say_nothing_here = False  # the head says why

    def empty_text(self) -> str:
        return NO_PROFILE if self.measured is None else "The profile has no kernel events."

    def detail(self, row: KernelTime) -> Document:
        join = self.measured
        assert join is not None  # rows exist only with a profile
        if row.kernel is not None:
            detail = kernel_detail(row.kernel, self.model)
            measured_section(detail, join, row.kernel)
            return detail_doc(detail)
        return detail_doc(row_detail(row, join))

    def activate(self, row: KernelTime) -> None:
        if row.kernel is not None:
            self.reveal("kernel", row.kernel)
        elif row.compile is not None:
            self.reveal("compile", row.compile)
