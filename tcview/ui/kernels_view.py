"""The Kernels view (`K`): every kernel, one row per distinct source, filtered as you type;
with the profile's measured times (--profile) and the benchmarks' (B) in columns."""

from __future__ import annotations

from collections import Counter

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Input

from tcview.analysis.kernels import KernelGroup, group_kernels, needs_digests, source_digests
from tcview.analysis.profile import RuntimeJoin
from tcview.model.keys import stable_key
from tcview.model.objects import (
    ROLE_SHORT,
    Compile,
    Kernel,
    Model,
)
from tcview.report.detail import (
    kernel_detail,
)
from tcview.report.profile import fmt_us, measured_section
from tcview.run.bench import KernelTime
from tcview.ui.bench import with_bench
from tcview.ui.content import (
    KIND_STYLE,
    Document,
    detail_doc,
    lit,
)
from tcview.ui.table_view import (
    ROW_LIMIT,
    Row,
    TableView,
)

# ---------------------------------------------------------------- kernels


class KernelsView(TableView[KernelGroup]):
    """Every kernel, one row per distinct source: a kernel compiled again with the same source
    (a frame recompiled for another shape, say) is one row with the compiles it is in."""

    TITLE = "Kernels"
    HELP = (
        "type to filter by name, kind or graph · ↓ to the list · enter: show source"
        " · {bench.run}: bench · {view.close}: back"
    )
    COLUMNS = ("kernel", "kind", "compiles", "graph")
    ELIDE = ("kernel",)  # long generated names keep both ends; the columns after them show
    BENCH_COLUMN = "bench (ms · share · GB/s)"
    MEASURED_COLUMN = "measured"  # its cells: time · share · ×calls
    KEEP = (MEASURED_COLUMN, BENCH_COLUMN)
    SORTS = ("order", "measured", "bench")  # what `s` goes through, where there are numbers
    measured: RuntimeJoin | None = None  # the profile joined (--profile), read in prepare
    AUTO_FOCUS = "#kernel-filter"
    BINDINGS = [
        Binding(
            "s",
            "sort",
            "Sort",
            id="kernels.sort",
            tooltip="in the list: sort by measured time (a profile), by benchmarked time"
            " (slowest first), or by order",
        ),
    ]
    sort = "order"

    def own_columns(self) -> tuple[str, ...]:
        # Measured columns before the long name: on a narrow screen the name is what is cut.
        first: tuple[str, ...] = (self.MEASURED_COLUMN,) if self.measured is not None else ()
        if self.times:
            first += (self.BENCH_COLUMN,)
        return (*first, *self.COLUMNS)

    def measured_time(self, group: KernelGroup) -> tuple[float, float, int] | None:
        """(µs, share, calls) the profile measured for the group's kernels, if any ran."""
        join = self.measured
        if join is None:
            return None
        # By stable key: the join may be of an earlier version (ModelSession.measured).
        keys = {stable_key(k) for k in group.kernels}
        rows = [r for r in join.rows if r.kernel is not None and stable_key(r.kernel) in keys]
        if not rows:
            return None
        us = sum(r.time_us for r in rows)
        return us, us / (join.total_us or 1.0), sum(r.calls for r in rows)

    def bench_time(self, group: KernelGroup) -> KernelTime | None:
        """The benchmark of the group's kernels (the same source: any of them), if any."""
        times = self.times
        return next((t for k in group.kernels if (t := times.get(stable_key(k))) is not None), None)

    def bench_target(self) -> Compile | Kernel | None:
        group = self.highlighted()
        return group.first if group is not None else None

    def action_sort(self) -> None:
        have = {"order", *(["measured"] if self.measured is not None else [])}
        if self.times:
            have.add("bench")
        order = [s for s in self.SORTS if s in have]
        self.sort = (
            order[(order.index(self.sort) + 1) % len(order)] if self.sort in order else "order"
        )
        said = {
            "order": "in the order compiled",
            "measured": "sorted by measured time (the profile)",
            "bench": "sorted by benchmarked time",
        }
        self.notify(markup=False, message=said[self.sort])
        self.reload()

    def compose_top(self) -> ComposeResult:
        box = Input(
            placeholder="filter kernels by name, kind or graph (e.g. red, cpp, layer_norm, bwd)",
            id="kernel-filter",
        )
        box.cursor_blink = False  # a steady cursor: no redraw twice a second (over SSH)
        yield box

    words: list[str] = []  # the filter, read on the UI thread before each reload
    distinct = 0  # rows before the filter (kernels with the same source are one)

    def reload(self) -> None:
        self.words = self.query_one("#kernel-filter", Input).value.lower().split()
        super().reload()

    def prepare(self, model: Model) -> bool:
        """Identical sources are told apart by a digest of each kernel's text: the output codes
        not read yet are read once, without the model lock (the UI goes on meanwhile)."""
        self.measured = self.session.measured(model)
        pending = needs_digests(model.kernels)
        if pending:
            self.say(f"reading {len(pending)} output code(s) to group identical kernels…")
        for i, batch in enumerate(pending):
            if i % 20 == 19 and self.cancelled():
                return False  # a newer keystroke: its rows are what counts
            source_digests(batch)
        return True

    def rows(self, model: Model) -> list[Row[KernelGroup]]:
        groups = group_kernels([k for k in list(model.kernels) if self.wants(k)])
        self.distinct = len(groups)
        timed = bool(self.times)
        if timed and self.sort == "bench":
            groups.sort(key=lambda g: -(t.ms if (t := self.bench_time(g)) is not None else -1.0))
        if self.measured is not None and self.sort == "measured":
            groups.sort(key=lambda g: -(m[0] if (m := self.measured_time(g)) else -1.0))
        words = self.words
        out: list[Row[KernelGroup]] = []
        for i, g in enumerate(groups):
            if i % 1000 == 999 and self.cancelled():
                return []
            roles = [ROLE_SHORT.get(r, r) for r in g.roles]
            if words:
                first = g.first
                hay = f"{g.name.lower()} {g.kind} {first.method.lower()} {' '.join(roles)}"
                if not all(w in hay for w in words):
                    continue
            if len(out) >= ROW_LIMIT:
                out.append(([], g))  # counted, never shown: no cells to build
                continue
            ids = g.compile_ids
            shown = ", ".join(ids[:3]) + (f" … +{len(ids) - 3}" if len(ids) > 3 else "")
            count = Text(f"×{g.count} " if g.count > 1 else "", style="bold")
            cells = []
            if self.measured is not None:
                cells.append(measured_cell(self.measured_time(g)))
            if timed:
                cells.append(bench_cell(self.bench_time(g)))
            cells += [
                lit(g.name),
                Text(g.kind, style=KIND_STYLE.get(g.kind, "")),
                Text.assemble(count, lit(shown)),
                lit(", ".join(roles), "magenta"),
            ]
            out.append((self.ranked_cells(cells, g.kernels), g))
        return out

    def head(self) -> Text:
        head = super().head()
        model = self.model
        kinds = (
            Counter(k.kind for k in model.kernels if self.wants(k))
            if model is not None
            else Counter()
        )
        if kinds:
            total = sum(kinds.values())
            head.append("\n")
            head.append(f"{total} kernels", style="bold")
            if self.distinct and self.distinct != total:
                head.append(f" ({self.distinct} distinct sources)", style="bold")
            head.append(": ")
            for kind, n in kinds.most_common():
                head.append(f"{n} {kind}  ", style=KIND_STYLE.get(kind, ""))
        return head

    def empty_text(self) -> str:
        return "No kernel matches." if self.model and self.model.kernels else "No kernels."

    @on(Input.Changed, "#kernel-filter")
    def _filter(self, event: Input.Changed) -> None:
        self.reload()

    @on(Input.Submitted, "#kernel-filter")
    def _to_table(self, event: Input.Submitted) -> None:
        self.query_one(DataTable).focus()

    def on_key(self, event: events.Key) -> None:
        if event.key == "down" and isinstance(self.screen.focused, Input):
            self.query_one(DataTable).focus()
            event.stop()

    def detail(self, group: KernelGroup) -> Document:
        detail = with_bench(kernel_detail(group.first, self.model), self.bench_time(group))
        if self.measured is not None:
            measured_section(detail, self.measured, group.first)
        return detail_doc(detail)

    def activate(self, group: KernelGroup) -> None:
        self.reveal("kernel", group.first)


def measured_cell(measured: tuple[float, float, int] | None) -> Text:
    """``1.23ms · 12% · ×300``: what a profile measured for a kernel (blank: did not run)."""
    if measured is None:
        return Text("")
    us, share, calls = measured
    text = Text(f"{fmt_us(us)} · {share:.0%}", style="bold")
    text.append(f" · ×{calls}", style="dim")
    return text


def bench_cell(time: KernelTime | None) -> Text:
    """``0.0208 ms · 46% · 1,234 GB/s``: a kernel's benchmark in the kernels view."""
    if time is None:
        return Text("")
    text = Text(f"{time.ms:.4f} ms · {time.share:.0%}", style="bold")
    if time.gb_s is not None:
        text.append(f" · {time.gb_s:,.0f} GB/s", style="cyan")
    return text
