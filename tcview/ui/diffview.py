"""Diff views: two compiles (a pane of the browser), and two runs (`tcview diff`'s app).

`tcview diff`'s app lists the frames of both runs side by side (`rundiff.FrameDiff`) above
the rest of the run diff report; enter on a frame lists its compiles side by side
(`rundiff.compile_pairs`) with the highlighted pair's compile diff below, and enter on a pair
shows that diff on its own screen. The diffs are tagged lines (`diffreport`) in a Reader:
only the lines on screen are drawn, `/` searches. A compile diff is computed in a worker (it
reads guards, graphs and output code from disk).
"""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import ScrollableContainer, Vertical
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static
from textual.worker import get_current_worker

from tcview.analysis.compiletime import compile_seconds
from tcview.analysis.diff import compile_diff
from tcview.analysis.rundiff import CompilePair, FrameDiff, RunDiff, Side, compile_pairs
from tcview.model.objects import Compile
from tcview.report.diffreport import (
    Row,
    compile_diff_lines,
    pct,
    run_diff_lines,
    secs,
)
from tcview.text.safe import safe_line
from tcview.ui.content import lit, mark_text, marks_text, rows_doc, tagged_text
from tcview.ui.help import HelpPlace, HelpScreen, bindings_of, spelled
from tcview.ui.pane import BrowserPane
from tcview.ui.reader import Reader, SearchBox
from tcview.ui.status import StatusBar
from tcview.ui.viewer import CodeView


def diff_rows(a: Compile, b: Compile, names: tuple[str, str] | None = None) -> list[Row]:
    """The compile diff's report lines (reads from disk: call it off the UI thread)."""
    try:
        return compile_diff_lines(compile_diff(a, b), names)
    except (OSError, ValueError) as exc:
        return [("warn", f"could not diff: {exc}", [])]


SEARCH_DIFF = Binding(
    "slash", "search", "Search", key_display="/", id="diff.search", tooltip="search the diff"
)


class DiffBody(Vertical):
    """Compile A against compile B: guards, kernels, times, Dynamo and AOT graph code; the
    head says which, the reader shows the diff (read in a worker)."""

    def __init__(self, a: Compile, b: Compile, names: tuple[str, str] | None = None) -> None:
        """`names`: what to call the two compiles (``A 0/1``, ``B 0/1``); their ids else."""
        super().__init__()
        self.a = a
        self.b = b
        self.names = names or (a.id_label, b.id_label)

    def compose(self) -> ComposeResult:
        yield Static(id="view-head", classes="view-head")
        yield Reader(id="diff-reader")

    def on_mount(self) -> None:
        na, nb = self.names
        head = Text.assemble(("Compile diff", "bold"), "  ", (f"{na} → {nb}  reading…", "dim"))
        self.query_one("#view-head", Static).update(head)
        self._load()

    @work(thread=True, group="diff", exclusive=True, exit_on_error=False, description="diff")
    def _load(self) -> None:
        rows = diff_rows(self.a, self.b, self.names)
        self.app.call_from_thread(self._show, rows)

    def _show(self, rows: list[Row]) -> None:
        if not self.is_attached:
            return
        na, nb = self.names
        head = Text.assemble(
            ("Compile diff", "bold"),
            "  ",
            (
                f"{na} → {nb} · red: only in {na}, green: only in {nb},"
                " reversed: what changed in a line · / search · esc: back",
                "dim",
            ),
        )
        self.query_one("#view-head", Static).update(head)
        self.query_one(Reader).show(rows_doc(f"{na} → {nb}", rows))

    def open_search(self) -> None:
        self.query_one(Reader).open_search()


class CompileDiffView(BrowserPane):
    """A compile diff in the browser (`d`): a pane over the one it was asked from."""

    BINDINGS = [Binding("escape", "close", "Back to tree", id="view.close"), SEARCH_DIFF]
    AUTO_FOCUS = "Reader CodeView"

    def __init__(self, a: Compile, b: Compile, names: tuple[str, str] | None = None) -> None:
        super().__init__()
        self.body = DiffBody(a, b, names)

    def compose(self) -> ComposeResult:
        yield self.body

    def action_search(self) -> None:
        self.body.open_search()


class PairDiffView(Screen[None]):
    """A compile diff in `tcview diff`'s app: escape goes back to the frame's compiles."""

    BINDINGS = [
        Binding("escape", "close", "Back", id="diff.back", tooltip="back to the list"),
        SEARCH_DIFF,
    ]
    AUTO_FOCUS = "Reader CodeView"

    def __init__(self, a: Compile, b: Compile, names: tuple[str, str] | None = None) -> None:
        super().__init__()
        self.body = DiffBody(a, b, names)

    def compose(self) -> ComposeResult:
        yield self.body
        yield StatusBar()
        yield Footer()

    def action_close(self) -> None:
        self.app.pop_screen()

    def action_search(self) -> None:
        self.body.open_search()


class DiffTable(DataTable):
    """A list of `tcview diff`'s app: j and k move in it, as in every tcview list."""

    BINDINGS = [
        Binding("j", "cursor_down", "Down", show=False, id="diff.down", tooltip="next row"),
        Binding("k", "cursor_up", "Up", show=False, id="diff.up", tooltip="previous row"),
    ]


class FramesTable(DiffTable):
    """The frames of both runs, matched."""

    BINDINGS = [
        Binding(
            "enter",
            "select_cursor",
            "Compiles",
            id="diff.frame",
            tooltip="the frame's compiles in A and B side by side, with their diffs",
        ),
    ]


class PairsTable(DiffTable):
    """A frame's compiles in A and B, side by side."""

    BINDINGS = [
        Binding(
            "enter",
            "select_cursor",
            "Diff",
            id="diff.pair",
            tooltip="the highlighted pair's compile diff on its own screen",
        ),
    ]


def _side_cell(side: Side, other: Side) -> Text:
    """A frame's compiles in one run, its cache hits marked (``2 ●1``)."""
    if not side.frames:
        return Text("-", style="dim")
    text = Text(str(side.compiles), style="" if side.compiles == other.compiles else "yellow")
    if side.cache_hits:
        text.append_text(marks_text(["cache hit"], words=False))
        text.append(str(side.cache_hits), style="blue")
    return text


def _time_cell(side: Side) -> Text:
    return Text(secs(side.time_s) if side.frames else "-", style="" if side.frames else "dim")


def frame_cells(f: FrameDiff) -> list[Text]:
    """One frame's row: status, frame, compiles in A and B, compile time in A and B (and the
    change), recompiles and graph breaks A → B."""
    a, b = f.a, f.b
    change = pct(a.time_s, b.time_s).strip().strip("()") if a.frames and b.frames else ""
    return [
        tagged_text(f.status, f.status),
        lit(f.sig.text),
        _side_cell(a, b),
        _side_cell(b, a),
        _time_cell(a),
        _time_cell(b),
        Text(change, style="dim"),
        Text(_arrow(a.recompiles, b.recompiles)),
        Text(_arrow(a.breaks, b.breaks)),
    ]


def _arrow(a: int, b: int) -> str:
    return str(a) if a == b else f"{a} → {b}"


def _compile_cells(comp: Compile | None) -> list[Text]:
    if comp is None:
        return [Text("-", style="dim"), Text(""), Text("")]
    status = mark_text(comp.status)
    if comp.marks:
        status.append(" ")
        status.append_text(marks_text(comp.marks, words=False))
    return [Text(comp.id_label, style="bold"), status, Text(secs(compile_seconds(comp)))]


def pair_cells(i: int, pair: CompilePair) -> list[Text]:
    """A pair's row: its place in the frame, each run's compile (id, status and marks, time),
    and what its diff compares."""
    sides = pair.sides()
    diffed = Text(f"{sides[2]} → {sides[3]}" if sides else "(nothing to diff against)", "dim")
    return [Text(str(i + 1)), *_compile_cells(pair.a), *_compile_cells(pair.b), diffed]


class FrameScreen(Screen[None]):
    """A frame's compiles in A and B side by side, the highlighted pair's diff below."""

    BINDINGS = [
        Binding("escape", "close", "Back", id="diff.frames", tooltip="back to the frames"),
        Binding(
            "slash",
            "search",
            "Search",
            key_display="/",
            id="diff.search",
            tooltip="search the diff",
        ),
    ]
    AUTO_FOCUS = "PairsTable"
    COLUMNS = ("#", "A", "status", "time", "B", "status", "time", "diffed")

    def __init__(self, frame: FrameDiff) -> None:
        super().__init__()
        self.frame = frame
        self.pairs = compile_pairs(frame)

    def compose(self) -> ComposeResult:
        yield Static(id="view-head", classes="view-head")
        with Vertical(id="diff-body"):
            yield PairsTable(id="diff-pairs", cursor_type="row", zebra_stripes=True)
            yield Reader(id="diff-reader")
        yield StatusBar()
        yield Footer()

    def on_mount(self) -> None:
        f = self.frame
        head = Text.assemble(("Frame ", "bold"), lit(f.sig.text, "bold"), "  ")
        head.append_text(tagged_text(f.status, f.status))
        head.append(
            f"  compiles {_arrow(f.a.compiles, f.b.compiles)} · side by side in their order"
            " · below: the highlighted pair's diff · enter: that diff alone · esc: back",
            style="dim",
        )
        self.query_one("#view-head", Static).update(head)
        table = self.query_one(PairsTable)
        table.add_columns(*self.COLUMNS)
        for i, pair in enumerate(self.pairs):
            table.add_row(*pair_cells(i, pair), key=str(i))
        if not self.pairs:
            self.query_one(Reader).show(rows_doc("", [("dim", "no compiles", [])]))

    @on(DataTable.RowHighlighted, "PairsTable")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if 0 <= event.cursor_row < len(self.pairs):
            self._load(self.pairs[event.cursor_row])

    @work(thread=True, group="diff", exclusive=True, exit_on_error=False, description="diff")
    def _load(self, pair: CompilePair) -> None:
        sides = pair.sides()
        if sides is None:
            only = "A" if pair.a is not None else "B"
            comp = pair.a or pair.b
            label = comp.id_label if comp is not None else "?"
            rows: list[Row] = [
                ("dim", f"{label} only in {only}, and no compile before it there to diff", [])
            ]
            title = label
        else:
            a, b, na, nb = sides
            rows, title = diff_rows(a, b, (na, nb)), f"{na} → {nb}"
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._show, title, rows)

    def _show(self, title: str, rows: list[Row]) -> None:
        if self.is_attached:
            self.query_one(Reader).show(rows_doc(title, rows))

    @on(DataTable.RowSelected, "PairsTable")
    def _selected(self, event: DataTable.RowSelected) -> None:
        if not 0 <= event.cursor_row < len(self.pairs):
            return
        sides = self.pairs[event.cursor_row].sides()
        if sides is None:
            self.app.notify("only one run has this compile, and nothing before it to diff")
            return
        a, b, na, nb = sides
        self.app.push_screen(PairDiffView(a, b, (na, nb)))

    def action_close(self) -> None:
        self.app.pop_screen()

    def action_search(self) -> None:
        self.query_one(Reader).open_search()


class DiffApp(App[int]):
    """`tcview diff RUN_A RUN_B` on a terminal: the frames of both runs side by side, above
    the rest of the run diff report; enter leads to a frame's compiles and their diffs."""

    CSS_PATH = "app.tcss"
    CSS = """
    #diff-frames, #diff-pairs { height: auto; max-height: 50%; scrollbar-size: 1 1; }
    #diff-body Reader { height: 1fr; }
    """
    TITLE = "tcview diff"
    BINDINGS = [
        Binding("q", "quit", "Quit", id="diff.quit", tooltip="quit"),
        Binding(
            "question_mark", "help", "Help", key_display="?", id="diff.help", tooltip="this help"
        ),
        Binding("slash", "search", "Search", key_display="/", id="diff.search", tooltip="search"),
    ]
    # What the compile screens' status bar shows.
    status_left: reactive[str] = reactive("")
    status_right: reactive[str] = reactive("")

    def get_key_display(self, binding: Binding) -> str:
        return spelled(super().get_key_display(binding), binding)

    def __init__(self, diff: RunDiff, keymap: dict[str, str] | None = None) -> None:
        """`keymap`: the user's (checked by the command: tcview.commands.config)."""
        super().__init__()
        self.animation_level = "none"
        self.diff = diff
        if keymap:
            self.set_keymap(keymap)

    def compose(self) -> ComposeResult:
        yield Static(id="view-head", classes="view-head")
        with Vertical(id="diff-body"):
            yield FramesTable(id="diff-frames", cursor_type="row", zebra_stripes=True)
            yield Reader(id="diff-reader")
        yield Footer()

    def on_mount(self) -> None:
        d = self.diff
        self.status_left = safe_line(f"A: {d.a_label}  B: {d.b_label}")
        rows = run_diff_lines(d, frames=False)
        head = Text.assemble(tagged_text(rows[0][0], rows[0][1]), "\n")
        head.append_text(tagged_text(rows[1][0], rows[1][1]))
        self.query_one("#view-head", Static).update(head)
        table = self.query_one(FramesTable)
        table.add_columns(
            "", "frame (matched by function, file, first line)", "A", "B",
            "time A", "time B", "change", "recompiles", "breaks",
        )  # fmt: skip
        for i, f in enumerate(d.frames):
            table.add_row(*frame_cells(f), key=str(i))
        self.query_one(Reader).show(rows_doc("run diff", rows[2:]))
        table.focus()

    @on(DataTable.RowSelected, "FramesTable")
    def _selected(self, event: DataTable.RowSelected) -> None:
        if 0 <= event.cursor_row < len(self.diff.frames):
            self.push_screen(FrameScreen(self.diff.frames[event.cursor_row]))

    def action_search(self) -> None:
        self.query_one(Reader).open_search()

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.help_places()))

    @classmethod
    def help_places(cls) -> list[HelpPlace]:
        """Where this app's keys live, for the help: each place's bindings and notes."""
        return [
            HelpPlace(
                "Run diff: the frames of A and B, the rest of the report below",
                [*bindings_of(cls), *bindings_of(Screen), *bindings_of(FramesTable)],
                [("frames", "matched by function, file and first line; ● cache hits")],
            ),
            HelpPlace(
                "A frame's compiles (enter on a frame)",
                [*bindings_of(FrameScreen, inherited=False), *bindings_of(PairsTable)],
                [
                    ("pairs", "A's and B's compiles in their order in the frame"),
                    ("one run only", "diffed against the compile it replaced in that run"),
                ],
            ),
            HelpPlace("Compile diff (enter on a pair)", bindings_of(PairDiffView)),
            HelpPlace(
                "Scrolling (where no pane below binds the key)", bindings_of(ScrollableContainer)
            ),
            HelpPlace("Viewer", [*bindings_of(CodeView), *bindings_of(SearchBox, inherited=False)]),
            HelpPlace("Help", bindings_of(HelpScreen)),
        ]
