"""Full-screen views: graph breaks, recompiles, kernels, failures, compile time, other output.

Each view is a table of rows over the model, with the detail of the highlighted row below.
Enter jumps to the compile (or, for kernels, to the kernel's source) in the tree. The rows
(and the head above them) are built in a worker; the UI thread only fills the table. With more
than one rank, each row says its rank (or ranks), and the app's rank filter (`#`) keeps the
rows of the ranks picked.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeAlias, TypeVar

from rich.cells import cell_len
from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static
from textual.worker import get_current_worker

from tcview.analysis.autotune import autotune_seconds
from tcview.analysis.compiletime import compile_seconds, time_note
from tcview.analysis.export import ExportIssue, ExportReport, export_report
from tcview.analysis.kernels import KernelGroup, group_kernels, needs_digests, source_digests
from tcview.analysis.profile import RuntimeJoin
from tcview.analysis.provenance import KernelProvenance, Provenance, ProvenanceRow, model_provenance
from tcview.analysis.recompiles import diagnose
from tcview.ingest.session import ModelSession
from tcview.model.facts import short_guard
from tcview.model.objects import (
    ROLE_SHORT,
    BreakGroup,
    Compile,
    Error,
    Failure,
    Frame,
    Kernel,
    Model,
    Record,
    group_breaks,
)
from tcview.model.ranks import (
    LABEL_PARTS,
    Fact,
    RankSet,
    rank_of,
    ranks_label,
    ranks_of,
    ranks_text,
    wanted,
)
from tcview.report.detail import (
    compile_detail,
    fmt_seconds,
    frame_detail,
    issue_detail,
    kernel_detail,
    kernel_provenance_detail,
    line_detail,
    phase_times,
    report_summary,
)
from tcview.report.profile import fmt_us, measured_section
from tcview.run.bench import KernelTime
from tcview.ui.bench import with_bench
from tcview.ui.content import (
    KIND_STYLE,
    STATUS_MARK,
    STATUS_STYLE,
    Document,
    bar,
    detail_doc,
    detail_lines,
    elide_end,
    elide_middle,
    error_doc,
    lit,
    lit_lines,
    record_doc,
    styled_doc,
    tag_style,
    verdict_text,
)
from tcview.ui.messages import Reveal
from tcview.ui.reader import Reader
from tcview.ui.status import StatusBar

ROW_LIMIT = 5000
T = TypeVar("T")
Row: TypeAlias = tuple[list[Text], T]  # the cells, and what the row stands for


def _cut(text: str, n: int) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= n else text[: n - 1] + "…"


def rank_cell(facts: Iterable[Fact | Error]) -> Text:
    """The rank column: the ranks the row's facts come from (``0–3, 5``), ``-`` for none."""
    return ranks_cell({r for r in map(rank_of, facts) if r is not None})


def ranks_cell(ranks: set[int]) -> Text:
    return Text(ranks_text(ranks, LABEL_PARTS) or "-", style="bold magenta")


def _frame_name(comp: Compile | None) -> str:
    if comp is None:
        return ""
    if comp.frame is not None:
        return comp.frame.label
    m = comp.metrics or {}
    return str(m.get("co_name") or "")


ELIDE_MIN = 32  # an elided column keeps this many cells while the flex column needs room
FLEX_MIN = 20


def fit_rows(
    rows: list[Row[T]], columns: tuple[str, ...], width: int, flex: str, elide: tuple[str, ...]
) -> list[Row[T]]:
    """The rows with their cells cut so that the table fits `width` cells, where cutting the
    `flex` and `elide` columns can make it fit: flex first gets what it needs."""
    if not flex and not elide:
        return rows
    wanted = [cell_len(c) for c in columns]
    for cells, _obj in rows:
        for i, cell in enumerate(cells[: len(wanted)]):
            wanted[i] = max(wanted[i], cell.cell_len)
    room = width - 2 * len(columns) - 1  # each column's padding, and the scrollbar
    if sum(wanted) <= room:
        return rows
    widths = list(wanted)
    named = {name: i for i, name in enumerate(columns)}
    squeezed = [named[c] for c in elide if c in named]
    for i in squeezed:
        widths[i] = min(wanted[i], max(ELIDE_MIN, cell_len(columns[i])))
    f = named.get(flex) if flex else None
    if f is not None:
        rest = room - (sum(widths) - widths[f])
        widths[f] = min(wanted[f], max(rest, FLEX_MIN, cell_len(flex)))
    spare = room - sum(widths)
    for i in squeezed:  # what flex left over goes back to the names
        more = max(0, min(spare, wanted[i] - widths[i]))
        widths[i] += more
        spare -= more
    cut = {i: elide_middle for i in squeezed}
    if f is not None:
        cut[f] = elide_end
    return [
        ([cut[i](c, widths[i]) if i in cut else c for i, c in enumerate(cells)], obj)
        for cells, obj in rows
    ]


class ViewTable(DataTable):
    """A view's table: Enter goes to the row's compile (or kernel source)."""

    BINDINGS = [
        Binding(
            "enter",
            "select_cursor",
            "Go to",
            show=False,
            id="view.go-to",
            tooltip="go to the compile in the tree, or show the kernel's source",
        ),
    ]


class TableView(Screen[None], Generic[T]):
    """A table of rows and the detail of the highlighted row."""

    TITLE = ""
    HELP = ""
    AUTO_FOCUS = "#view-table"
    COLUMNS: tuple[str, ...] = ()
    say_nothing_here = True  # an empty table adds "nothing here in this trace" to the head
    # A rank column first when the input has more than one rank (rows() then gives its cell).
    RANK_COLUMN = True
    # Column widths when the rows are wider than the screen: FLEX (the reason, say) gets the
    # room and is cut at its end; ELIDE columns (names) keep both ends; the others keep theirs.
    FLEX = ""
    ELIDE: tuple[str, ...] = ()
    BINDINGS = [
        Binding("escape", "close", "Back to tree", id="view.close"),
        Binding("j", "row(1)", "Down", show=False, id="view.down", tooltip="next row"),
        Binding("k", "row(-1)", "Up", show=False, id="view.up", tooltip="previous row"),
        Binding("g", "edge(0)", "First", show=False, id="view.first", tooltip="first row"),
        Binding("G", "edge(1)", "Last", show=False, id="view.last", tooltip="last row"),
    ]

    def __init__(
        self,
        session: ModelSession,
        ranks: RankSet = None,
        times: dict[int, KernelTime] | None = None,
    ) -> None:
        """`session`: the model's; `ranks`: the rank filter (the browser sets it anew before
        a reload); `times`: the benchmarked kernels' times (by id), which the browser keeps."""
        super().__init__()
        self.session = session
        self.times = times if times is not None else {}
        self.objects: list[T] = []
        # The rank filter; and, from the rows worker, whether the input has several ranks
        # (the rows then carry a rank cell).
        self.ranks = ranks
        self.ranked = False
        self.shown_columns: tuple[str, ...] = ()
        self.fitted_width = 0  # the screen width the rows' cells were fitted to

    def compose(self) -> ComposeResult:
        yield Static(id="view-head", classes="view-head")
        with Vertical(id="view-body"):
            yield from self.compose_top()
            table = ViewTable(id="view-table", cursor_type="row", zebra_stripes=True)
            yield table
            yield Reader(id="view-detail")
        yield StatusBar()
        yield Footer()

    def compose_top(self) -> ComposeResult:
        return iter(())

    def on_mount(self) -> None:
        self._set_columns(self.COLUMNS)
        self.reload()

    def columns(self) -> tuple[str, ...]:
        """The table's columns now: a rank column first when the input has several ranks."""
        own = self.own_columns()
        return ("rank", *own) if self.ranked and self.RANK_COLUMN else own

    def own_columns(self) -> tuple[str, ...]:
        """The view's own columns now (a view may add some as facts arrive)."""
        return self.COLUMNS

    def _set_columns(self, columns: tuple[str, ...]) -> None:
        if columns == self.shown_columns:
            return
        table = self.query_one(DataTable)
        shown = self.shown_columns
        if columns[: len(shown)] == shown:
            # Columns added (the bench column): the others keep the widths their rows gave
            # them, instead of starting again from their labels' widths.
            table.add_columns(*columns[len(shown) :])
        else:
            table.clear(columns=True)
            table.add_columns(*columns)
        self.shown_columns = columns

    def wants(self, fact: Fact | Error) -> bool:
        """Whether the rank filter keeps the fact."""
        return wanted(self.ranks, fact)

    def ranked_cells(self, cells: list[Text], facts: Iterable[Fact | Error]) -> list[Text]:
        """A row's cells with its rank cell first when the view has a rank column."""
        return [rank_cell(facts), *cells] if self.ranked and self.RANK_COLUMN else cells

    def bench_target(self) -> Compile | Kernel | None:
        """What the bench key (B) benchmarks here: the highlighted row's compile or kernel."""
        return None

    def highlighted(self) -> T | None:
        row = self.query_one(DataTable).cursor_row
        return self.objects[row] if 0 <= row < len(self.objects) else None

    @property
    def model(self) -> Model | None:
        return self.session.model

    def reveal(self, kind: str, obj: Compile | Kernel | Record) -> None:
        """Go to `obj` in the browser's tree (the browser closes the view)."""
        self.post_message(Reveal(kind, obj))

    def rows(self, model: Model) -> list[Row[T]]:
        return []

    def head(self) -> Text:
        head = Text.assemble((self.TITLE, "bold"), "  ", (self.HELP, "dim"))
        if self.ranks is not None:
            head.append(f"  [{ranks_label(self.ranks)} only · # to change]", style="bold magenta")
        return head

    def reload(self) -> None:
        """Rebuild the rows off the UI thread; a newer reload replaces one still running."""
        self._build_rows()

    @work(thread=True, group="rows", exclusive=True, exit_on_error=False, description="rows")
    def _build_rows(self) -> None:
        model = self.model
        rows: list[Row[T]] = []
        if model is not None and not self.prepare(model):
            return  # replaced by a newer reload
        with self.session.lock:
            if model is not None:
                self.ranked = len(ranks_of(model)) > 1
                rows = self.rows(model)
            head = self.head()
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._fill, rows, head)

    def prepare(self, model: Model) -> bool:
        """Work before the rows that needs no lock held (reading from disk); False when a
        newer reload replaced this one meanwhile."""
        return True

    def say(self, text: str) -> None:
        """Show `text` in the head while the rows are being built (from the rows worker)."""
        head = Text.assemble((self.TITLE, "bold"), "  ", (text, "dim"))
        self.app.call_from_thread(self._put_head, head)

    def _put_head(self, head: Text) -> None:
        if self.is_attached:
            self.query_one("#view-head", Static).update(head)

    def cancelled(self) -> bool:
        """True in a rows worker that a newer reload replaced (rows() may stop early)."""
        return get_current_worker().is_cancelled

    def _fill(self, rows: list[Row[T]], head: Text) -> None:
        if not self.is_attached:
            return  # closed meanwhile
        columns = self.columns()
        self._set_columns(columns)
        table = self.query_one(DataTable)
        table.clear()
        self.objects = []
        self.fitted_width = self.app.size.width
        shown = fit_rows(rows[:ROW_LIMIT], columns, self.fitted_width, self.FLEX, self.ELIDE)
        for i, (cells, obj) in enumerate(shown):
            table.add_row(*cells, key=str(i))
            self.objects.append(obj)
        if len(rows) > ROW_LIMIT:
            head.append(f"  (first {ROW_LIMIT} of {len(rows)} shown)", style="yellow")
        if not rows and self.say_nothing_here:
            head.append("  — nothing here in this trace", style="green")
        self.query_one("#view-head", Static).update(head)
        if shown:
            self._show_detail(0)
        else:
            self.query_one(Reader).show(styled_doc("", [Text(self.empty_text(), style="dim")]))

    def on_resize(self) -> None:
        if self.fitted_width and self.fitted_width != self.app.size.width:
            self.reload()  # the columns fit the old width

    def empty_text(self) -> str:
        return "nothing to show"

    def detail(self, obj: T) -> Document | None:
        return None

    def activate(self, obj: T) -> None:
        """Enter on a row: go to what it stands for."""

    def _show_detail(self, index: int) -> None:
        if 0 <= index < len(self.objects):
            self._build_detail(self.objects[index])

    @work(thread=True, group="detail", exclusive=True, exit_on_error=False, description="detail")
    def _build_detail(self, obj: T) -> None:
        """Build the highlighted row's detail off the UI thread (it reads from disk)."""
        with self.session.lock:
            try:
                doc = self.detail(obj)
            except Exception as exc:  # noqa: BLE001 - never end the app on a bad record
                doc = styled_doc("error", [lit(f"could not show: {exc!r}", "red")])
        if doc is not None and not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._put_detail, doc)

    def _put_detail(self, doc: Document) -> None:
        if self.is_attached:
            self.query_one(Reader).show(doc)

    @on(DataTable.RowHighlighted)
    def _row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_detail(event.cursor_row)

    @on(DataTable.RowSelected)
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        if 0 <= event.cursor_row < len(self.objects):
            obj = self.objects[event.cursor_row]
            if obj is not None:
                self.activate(obj)

    def action_close(self) -> None:
        self.app.pop_screen()

    def selected(self) -> T | None:
        """The object of the highlighted row (what `y`, `Y` and `e` act on)."""
        row = self.query_one(DataTable).cursor_row
        return self.objects[row] if 0 <= row < len(self.objects) else None

    def action_row(self, step: int) -> None:
        table = self.query_one(DataTable)
        if step > 0:
            table.action_cursor_down()
        else:
            table.action_cursor_up()

    def action_edge(self, end: int) -> None:
        table = self.query_one(DataTable)
        if table.row_count:
            table.move_cursor(row=table.row_count - 1 if end else 0)


# ---------------------------------------------------------------- graph breaks


class BreaksView(TableView[BreakGroup]):
    TITLE = "Graph breaks"
    HELP = "de-duplicated by reason and location · enter: go to the compile · esc: back"
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


# ---------------------------------------------------------------- kernels


class KernelsView(TableView[KernelGroup]):
    """Every kernel, one row per distinct source: a kernel compiled again with the same source
    (a frame recompiled for another shape, say) is one row with the compiles it is in."""

    TITLE = "Kernels"
    HELP = (
        "type to filter by name, kind or graph · ↓ to the list · enter: show source"
        " · B: bench · esc: back"
    )
    COLUMNS = ("kernel", "kind", "compiles", "graph")
    BENCH_COLUMN = "bench (ms · share · GB/s)"
    MEASURED_COLUMN = "measured (time · share · calls)"
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
        extra: tuple[str, ...] = (self.MEASURED_COLUMN,) if self.measured is not None else ()
        if self.times:
            extra += (self.BENCH_COLUMN,)
        return (*self.COLUMNS, *extra)

    def measured_time(self, group: KernelGroup) -> tuple[float, float, int] | None:
        """(µs, share, calls) the profile measured for the group's kernels, if any ran."""
        join = self.measured
        if join is None:
            return None
        ids = {id(k) for k in group.kernels}
        rows = [r for r in join.rows if r.kernel is not None and id(r.kernel) in ids]
        if not rows:
            return None
        us = sum(r.time_us for r in rows)
        return us, us / (join.total_us or 1.0), sum(r.calls for r in rows)

    def bench_time(self, group: KernelGroup) -> KernelTime | None:
        """The benchmark of the group's kernels (the same source: any of them), if any."""
        times = self.times
        return next((t for k in group.kernels if (t := times.get(id(k))) is not None), None)

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
        with self.session.lock:
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
            cells = [
                lit(g.name),
                Text(g.kind, style=KIND_STYLE.get(g.kind, "")),
                Text.assemble(count, lit(shown)),
                lit(", ".join(roles), "magenta"),
            ]
            if self.measured is not None:
                cells.append(measured_cell(self.measured_time(g)))
            if timed:
                cells.append(bench_cell(self.bench_time(g)))
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
        if event.key == "down" and isinstance(self.focused, Input):
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


# ---------------------------------------------------------------- failures


class FailuresView(TableView[Failure]):
    TITLE = "Failures"
    HELP = "compiles that failed · enter: go to the compile · esc: back"
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
    HELP = "the run crashed: uncaught tracebacks, a non-zero exit code · esc: back"
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
    HELP = "s: sort by time / by order · enter: go to the compile · esc: back"
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


# ---------------------------------------------------------------- other output


OTHER_LIMIT = 100_000


@dataclass
class OtherLines:
    """The other output of one file: its path said once, then its lines (number, text)."""

    display: str
    what: str  # "unparsed lines", "lines that are not log messages"
    lines: list[tuple[int, str]]


def other_output(model: Model) -> list[OtherLines]:
    """Unparsed lines and text-log output, file by file, at most OTHER_LIMIT lines in all
    (read from disk)."""
    out: list[OtherLines] = []
    left = OTHER_LIMIT
    for tf in list(model.files):
        unparsed = tf.unparsed[:left]
        if not unparsed:
            continue
        lines = [
            (lineno, tf.line_at(offset, 1 << 16).decode("utf-8", "replace"))
            for offset, lineno in unparsed
        ]
        out.append(OtherLines(tf.display, "unparsed lines", lines))
        left -= len(lines)
    for log in (model, model.text):
        if log is None or not log.other or left <= 0:
            continue
        other = log.other
        lines = [(other[i].lineno, other[i].text) for i in range(min(len(other), left))]
        out.append(OtherLines(log.display, "lines that are not log messages", lines))
        left -= len(lines)
    return out


def other_doc(groups: list[OtherLines]) -> tuple[Document, dict[tuple[str, int], int]]:
    """The Other view's text: each file's path once, then its lines, numbered as in the
    file; and where each (path, line number) is in it."""
    lines: list[str] = []
    where: dict[tuple[str, int], int] = {}
    width = max((len(str(n)) for g in groups for n, _ in g.lines[-1:]), default=1)
    for group in groups:
        if lines:
            lines.append("")
        lines.append(f"{group.display} · {len(group.lines)} {group.what}")
        for lineno, text in group.lines:
            where.setdefault((group.display, lineno), len(lines))
            lines.append(f"  {lineno:>{width}}  {text}")
    doc = Document("other output", lines or ["(none: every line was parsed)"], numbered=False)
    return doc, where


class OtherView(Screen[None]):
    BINDINGS = [Binding("escape", "close", "Back to tree", id="view.close")]
    AUTO_FOCUS = "Reader CodeView"

    def __init__(
        self,
        session: ModelSession,
        ranks: RankSet = None,
        times: dict[int, KernelTime] | None = None,
        target: tuple[str, int, re.Pattern[str], str] | None = None,
    ) -> None:
        """`target`: (path, line number, pattern, label): go to that line of that file,
        marking a global search's matches (the other output is every rank's: `ranks` and
        `times` are for a view's common signature)."""
        super().__init__()
        self.session = session
        self.target = target

    def compose(self) -> ComposeResult:
        yield Static(id="view-head", classes="view-head")
        yield Reader(id="other-reader")
        yield StatusBar()
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#view-head", Static).update(Text("Other output  reading…", style="dim"))
        self._load()

    @work(thread=True, group="other", exclusive=True, exit_on_error=False, description="other")
    def _load(self) -> None:
        """Read the lines off the UI thread (they come from disk, one read each)."""
        model = self.session.model
        groups: list[OtherLines] = []
        if model is not None:
            with self.session.lock:
                groups = other_output(model)
        self.app.call_from_thread(self._show, groups)

    def _show(self, groups: list[OtherLines]) -> None:
        total = sum(len(g.lines) for g in groups)
        head = Text.assemble(
            ("Other output", "bold"),
            "  ",
            (
                f"{total} lines that are not trace records (log lines, unparsed lines)"
                " · / search · esc: back",
                "dim",
            ),
        )
        self.query_one("#view-head", Static).update(head)
        doc, where = other_doc(groups)
        reader = self.query_one(Reader)
        reader.show(doc)
        if self.target is not None:
            display, lineno, pattern, label = self.target
            index = where.get((display, lineno), -1)
            reader.viewer.mark(pattern, label, index + doc.first_lineno)

    def action_close(self) -> None:
        self.app.pop_screen()


# ---------------------------------------------------------------- export


class ExportView(TableView[ExportIssue]):
    TITLE = "Export"
    HELP = "the draft-export report: guards, data-dependent errors, fake kernels · esc: back"
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


# ---------------------------------------------------------------- provenance


class ProvenanceView(TableView[ProvenanceRow]):
    TITLE = "Provenance"
    HELP = "user lines and the kernels that implement them · N: by FX node · enter: the kernel"
    COLUMNS = ("user line / FX node", "kernel", "kind", "compile")
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
                    _ = rec.lineno
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


VIEWS: dict[str, type[TableView[Any]] | type[OtherView]] = {
    "breaks": BreaksView,
    "recompiles": RecompilesView,
    "kernels": KernelsView,
    "failures": FailuresView,
    "errors": ErrorsView,
    "time": TimeView,
    "other": OtherView,
    "export": ExportView,
    "provenance": ProvenanceView,
}

__all__ = ["VIEWS", "record_doc"]
