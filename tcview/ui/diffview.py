"""Diff views: two compiles (a screen of the browser), and two runs (`tcview diff`'s app).

Both show a report of tagged lines (`trace.diff`) in a Reader: only the lines on screen are
drawn, `/` searches. The compile diff is computed in a worker (it reads guards, graphs and
output code from disk).
"""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Static

from tcview.analysis.diff import compile_diff
from tcview.analysis.rundiff import RunDiff
from tcview.model.objects import Compile
from tcview.report.diffreport import compile_diff_lines, run_diff_lines
from tcview.ui.content import rows_doc, tagged_text
from tcview.ui.reader import Reader
from tcview.ui.status import StatusBar


class CompileDiffView(Screen[None]):
    """Compile A against compile B: guards, kernels, times, Dynamo and AOT graph code."""

    BINDINGS = [
        Binding("escape", "close", "Back to tree", id="view.close"),
        Binding(
            "slash",
            "search",
            "Search",
            key_display="/",
            id="diff.search",
            tooltip="search the diff",
        ),
    ]
    AUTO_FOCUS = "Reader CodeView"

    def __init__(self, a: Compile, b: Compile) -> None:
        super().__init__()
        self.a = a
        self.b = b

    def compose(self) -> ComposeResult:
        yield Static(id="view-head", classes="view-head")
        yield Reader(id="diff-reader")
        yield StatusBar()
        yield Footer()

    def on_mount(self) -> None:
        head = Text.assemble(
            ("Compile diff", "bold"),
            "  ",
            (f"{self.a.id_label} → {self.b.id_label}  reading…", "dim"),
        )
        self.query_one("#view-head", Static).update(head)
        self._load()

    @work(thread=True, group="diff", exclusive=True, exit_on_error=False, description="diff")
    def _load(self) -> None:
        try:
            rows = compile_diff_lines(compile_diff(self.a, self.b))
        except (OSError, ValueError) as exc:
            rows = [("warn", f"could not diff: {exc}", [])]
        self.app.call_from_thread(self._show, rows)

    def _show(self, rows: list[tuple[str, str, list[tuple[int, int]]]]) -> None:
        if not self.is_attached:
            return
        head = Text.assemble(
            ("Compile diff", "bold"),
            "  ",
            (
                f"{self.a.id_label} → {self.b.id_label} · red: only in {self.a.id_label},"
                f" green: only in {self.b.id_label}, reversed: what changed in a line"
                " · / search · esc: back",
                "dim",
            ),
        )
        self.query_one("#view-head", Static).update(head)
        self.query_one(Reader).show(rows_doc(f"{self.a.id_label} → {self.b.id_label}", rows))

    def action_close(self) -> None:
        self.app.pop_screen()

    def action_search(self) -> None:
        self.query_one(Reader).open_search()


class DiffApp(App[int]):
    """`tcview diff RUN_A RUN_B` on a terminal: the run diff report, searchable."""

    CSS_PATH = "app.tcss"
    TITLE = "tcview diff"
    BINDINGS = [
        Binding("q", "quit", "Quit", id="diff.quit"),
        Binding("slash", "search", "Search", key_display="/", id="diff.search", tooltip="search"),
    ]

    def __init__(self, diff: RunDiff) -> None:
        super().__init__()
        self.animation_level = "none"
        self.diff = diff

    def compose(self) -> ComposeResult:
        yield Static(id="view-head", classes="view-head")
        yield Reader(id="diff-reader")
        yield Footer()

    def on_mount(self) -> None:
        rows = run_diff_lines(self.diff)
        head = Text.assemble(tagged_text(rows[0][0], rows[0][1]), "\n")
        head.append_text(tagged_text(rows[1][0], rows[1][1]))
        self.query_one("#view-head", Static).update(head)
        self.query_one(Reader).show(rows_doc("run diff", rows[2:]))
        self.query_one(Reader).viewer.focus()

    def action_search(self) -> None:
        self.query_one(Reader).open_search()
