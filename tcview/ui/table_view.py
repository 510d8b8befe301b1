"""The views' table: rows over the model, with the detail of the highlighted row below.

Each view (views.py and its neighbours) is a `TableView`, a pane of the browser screen. Enter
jumps to the row's compile (or, for kernels, to the kernel's source) in the tree. The rows (and
the head above them) are built in a worker; the UI thread only fills the table. With more than
one rank, each row says its rank (or ranks), and the browser's rank filter (`#`) keeps the rows
of the ranks picked.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable
from typing import Generic, TypeAlias, TypeVar

from rich.cells import cell_len
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Static
from textual.worker import get_current_worker

from tcview.ingest.session import ModelSession
from tcview.model.objects import (
    Compile,
    Error,
    Kernel,
    Model,
    Record,
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
from tcview.run.bench import KernelTime
from tcview.ui.content import (
    Document,
    elide_end,
    elide_middle,
    lit,
    styled_doc,
)
from tcview.ui.messages import Reveal
from tcview.ui.pane import BrowserPane
from tcview.ui.reader import Reader

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
FIXED_MAX = 12  # on a narrow screen, another column keeps this many (its header, at least)


def fit_rows(
    rows: list[Row[T]],
    columns: tuple[str, ...],
    width: int,
    flex: str,
    elide: tuple[str, ...],
    keep: tuple[str, ...] = (),
) -> list[Row[T]]:
    """The rows with their cells cut so that the table fits `width` cells, where cutting the
    `flex` and `elide` columns can make it fit: flex first gets what it needs. On a narrow
    screen (80 columns), where flex would get under two fifths (or, without flex, the rows
    would not fit), the elided columns keep a fifth each at most and the others `FIXED_MAX`
    cells (cut at their end), but the `keep` columns (numbers) stay whole; flex gets the rest,
    its header at least."""
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
    f = named.get(flex) if flex else None
    narrow = False
    for elide_min in (ELIDE_MIN, min(ELIDE_MIN, room // 5)):
        for i in squeezed:
            widths[i] = min(wanted[i], max(elide_min, cell_len(columns[i])))
        if f is None and sum(widths) <= room:
            break
        if f is not None and room - (sum(widths) - widths[f]) >= min(wanted[f], room * 2 // 5):
            break
        narrow = True  # flex would get under two fifths (or no room): the others narrow
    cut = {i: elide_middle for i in squeezed}
    kept = {named[c] for c in keep if c in named}
    for i in range(len(columns)) if narrow else ():
        if i != f and i not in squeezed and i not in kept:
            widths[i] = min(wanted[i], max(FIXED_MAX, cell_len(columns[i])))
            cut[i] = elide_end
    if f is not None:
        rest = room - (sum(widths) - widths[f])
        widths[f] = min(wanted[f], max(rest, cell_len(flex)))
        cut[f] = elide_end
    spare = room - sum(widths)
    for i in [*squeezed, *(i for i in cut if i not in squeezed and i != f)]:
        more = max(0, min(spare, wanted[i] - widths[i]))  # what flex left goes back
        widths[i] += more
        spare -= more
    return [
        ([cut[i](c, widths[i]) if i in cut else c for i, c in enumerate(cells)], obj)
        for cells, obj in rows
    ]


# ``{time.sort}`` in a view's HELP: the key a binding id has now.
_KEY_ID = re.compile(r"\{([\w.-]+)\}")


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


class TableView(BrowserPane, Generic[T]):
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
    KEEP: tuple[str, ...] = ()  # columns never cut on a narrow screen (the numbers)
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
        times: dict[Hashable, KernelTime] | None = None,
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

    def help_text(self) -> str:
        """HELP with each ``{binding id}`` as the key it has now (a user's keymap moves it)."""
        return _KEY_ID.sub(lambda m: self.key_now(m.group(1)), self.HELP)

    def key_now(self, binding_id: str) -> str:
        """The key of the binding `binding_id` of this pane, its screen or its app, as the
        app shows keys (`binding_id` itself when none has it)."""
        for node in (self, self.screen, self.app):
            for cls in type(node).__mro__:
                for binding in cls.__dict__.get("BINDINGS", ()):
                    if isinstance(binding, Binding) and binding.id == binding_id:
                        return self.app.get_key_display(binding)
        return binding_id

    def head(self) -> Text:
        head = Text.assemble((self.TITLE, "bold"), "  ", (self.help_text(), "dim"))
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
        shown = fit_rows(
            rows[:ROW_LIMIT], columns, self.fitted_width, self.FLEX, self.ELIDE, self.KEEP
        )
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
