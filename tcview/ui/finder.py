"""Global search (`S`): every payload of the trace and its TORCH_LOGS text.

A worker runs the model's search engine (tcview.report.search: region by region, as bytes) and
hands hits over in batches: it appends them to a list and posts `HitsFound`, a message that a
newer one replaces while it waits, so a burst of hits costs one redraw. Results are grouped by
compile; Enter on one opens its artifact (or kernel) at the matching line.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Hashable

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.timer import Timer
from textual.widgets import Input, Static, Tree
from textual.widgets.tree import TreeNode

from tcview.ingest.session import ModelSession
from tcview.model.keys import stable_key
from tcview.model.objects import Compile, Model
from tcview.report.search import SKIPPED_NOTE, Hit, Query, QueryError, Search, place_of
from tcview.text.safe import safe_line
from tcview.ui.messages import Merging, OpenHit
from tcview.ui.pane import BrowserPane

MAX_RESULTS = 2000  # matching lines listed; the search stops there (grep prints all)
# Batches reach the screen at most every POST_GAP seconds, then, once many hits are listed
# (each batch rebuilds the list's lines), every SLOW_GAP.
POST_GAP = 0.05
SLOW_GAP = 0.25
SLOW_AFTER = 500
MATCH_STYLE = "bold black on yellow"


class HitsFound(Merging):
    """The search worker has hits waiting (or finished): the view takes what is there."""


def hit_label(hit: Hit) -> Text:
    """``output code › kernel x · 57: text``, the matches marked, every piece literal."""
    label = Text.assemble(
        (safe_line(hit.where), "cyan"),
        (" · ", "dim"),
        ("header" if hit.line == 0 and hit.record is not None else str(hit.line), "green"),
        (": ", "dim"),
    )
    text = hit.text
    spans = hit.spans
    lead = len(text) - len(text.lstrip(" \t"))
    if spans and spans[0][0] < lead:
        lead = spans[0][0]
    pos = lead
    for start, end in spans:
        label.append(safe_line(text[pos:start]))
        label.append(safe_line(text[start:end]), style=MATCH_STYLE)
        pos = end
    label.append(safe_line(text[pos:]))
    return label


def group_of(hit: Hit) -> tuple[Hashable, Compile | None]:
    comp = hit.compile
    if comp is not None:
        return stable_key(comp), comp
    if hit.source is not None:
        return stable_key(hit.source), None
    return ("other", str(hit.path)), None


def group_label(hit: Hit, model: Model, count: int) -> Text:
    comp = hit.compile
    place = place_of(hit, model)
    head = f"{place} " if place else ""
    if comp is not None:
        text = Text.assemble((safe_line(f"{head}{comp.id_label}"), "bold"))
        frame = comp.frame
        if frame is not None:
            # One labelling for a trace's compile and the log's (whose frames have no name).
            text.append(f"  frame {frame.id_label}", style="dim")
            if frame.label != f"frame {frame.id_text}":
                text.append(" · ", style="dim")
                text.append(safe_line(frame.label), style="dim")
    elif hit.source is not None:
        text = Text(safe_line(f"{head}{hit.source.display} · records without a compile id"))
    else:
        text = Text(safe_line(f"{head}other output (not log messages)"))
    text.append(f"  {count}", style="yellow")
    return text


class ResultsTree(Tree[Hit | None]):
    BINDINGS = [
        Binding(
            "enter",
            "select_cursor",
            "Open",
            show=False,
            id="results.open",
            tooltip="open the artifact at the matching line (a kernel's line: the kernel)",
        ),
        Binding("j", "cursor_down", "Down", show=False, id="results.down", tooltip="next"),
        Binding("k", "cursor_up", "Up", show=False, id="results.up", tooltip="previous"),
    ]

    def get_label_width(self, node: TreeNode[Hit | None]) -> int:
        # Tree renders every label to measure it, at each rebuild of its lines (each batch of
        # hits); the labels are Text already: their cell length is the width.
        label = node.label
        return label.cell_len if isinstance(label, Text) else len(label)


class SearchView(BrowserPane):
    """The global search: a query line, the state of the search, the results by compile. A
    pane of the browser, kept while the session lasts: S shows its results again."""

    AUTO_FOCUS = "#global-query"
    BINDINGS = [
        Binding(
            "escape",
            "close",
            "Back",
            id="global.close",
            tooltip="back (the results stay: S shows them again)",
        ),
        Binding(
            "ctrl+r",
            "toggle_regex",
            "Regex",
            id="global.regex",
            tooltip="plain text or a regular expression (smart case either way)",
        ),
        Binding(
            "down",
            "to_results",
            "Results",
            show=False,
            id="global.results",
            tooltip="from the query to the results",
        ),
    ]

    def __init__(self, session: ModelSession) -> None:
        super().__init__()
        self.session = session
        self.regex = False
        self.query_: Query | None = None
        self.text_pattern: re.Pattern[str] | None = None
        self.search: Search | None = None
        self.model: Model | None = None
        self.started = 0.0
        self.first_at: float | None = None  # seconds from Enter to the first result shown
        self.done_at: float | None = None
        self.shown = 0
        self._pending: list[Hit] = []
        self._lock = threading.Lock()
        self._groups: dict[Hashable, tuple[TreeNode[Hit | None], int]] = {}
        self._ended: Search | None = None  # the last search whose worker ran to its end
        self._ticker: Timer | None = None
        self._initial: str | None = None  # a query given before the pane was mounted
        self.partial = False  # the search started while the input was still being indexed

    def compose(self) -> ComposeResult:
        yield Static(id="global-head", classes="view-head")
        yield Input(placeholder=self._placeholder(), id="global-query")
        yield Static(id="global-state")
        tree: ResultsTree = ResultsTree("results", id="global-results")
        tree.show_root = False
        yield tree

    def on_mount(self) -> None:
        self._head()
        # A query given before the pane was mounted (the palette, S with a text).
        if self._initial is not None:
            text, self._initial = self._initial, None
            self.start(text)

    def focus_query(self) -> None:
        self.query_one("#global-query", Input).focus()

    def _placeholder(self) -> str:
        kind = "regular expression" if self.regex else "text"
        return f"search every payload for {kind}: enter searches · ctrl+r: text or regex"

    def _head(self) -> None:
        mode = "regex" if self.regex else "plain text"
        head = Text.assemble(
            ("Search everything", "bold"),
            "  ",
            (f"{mode} · smart case (capitals: exact case) · ", "dim"),
            ("graphs, guards, code, kernels, breaks, metrics, artifacts, TORCH_LOGS text", "dim"),
            "\n",
            (SKIPPED_NOTE, "dim italic"),
        )
        self.query_one("#global-head", Static).update(head)

    def action_toggle_regex(self) -> None:
        self.regex = not self.regex
        box = self.query_one("#global-query", Input)
        box.placeholder = self._placeholder()
        self._head()
        if box.value:
            self.start(box.value)

    def action_to_results(self) -> None:
        # At once (widget.focus() waits a turn): an Enter typed right after goes to the list.
        self.screen.set_focus(self.query_one(ResultsTree))

    @on(Input.Submitted, "#global-query")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.start(event.value)

    def start(self, text: str, regex: bool | None = None) -> None:
        """Search for `text` (a regex when `regex`, else as the toggle says)."""
        if not self.is_mounted:
            self._initial = text  # searched once the pane is up
            if regex is not None:
                self.regex = regex
            return
        if regex is not None and regex != self.regex:
            self.regex = regex
            self._head()
        box = self.query_one("#global-query", Input)
        if box.value != text:
            box.value = text
        self.cancel()
        tree = self.query_one(ResultsTree)
        tree.clear()
        self._groups.clear()
        with self._lock:
            self._pending = []
        self.shown = 0
        self.first_at = self.done_at = None
        self.search = None
        model = self.session.model
        self.model = model
        if not text or model is None:
            self._state(Text("type a query, then enter" if model else "nothing loaded yet"))
            return
        query = Query(text, regex=self.regex)
        try:
            self.text_pattern = query.text_pattern()
            search = Search(model, query, limit=MAX_RESULTS)
            self.partial = not self.session.finished
        except QueryError as exc:
            self._state(Text(safe_line(str(exc)), style="bold red"))
            return
        self.query_ = query
        with self._lock:
            self.search = search  # hits of an older search are dropped from now on
        self.started = time.monotonic()
        self._state(self._progress())
        if self._ticker is not None:
            self._ticker.stop()
        self._ticker = self.set_interval(0.25, self._tick)
        self._run(search)

    def cancel(self) -> None:
        if self.search is not None:
            self.search.cancel()

    def on_unmount(self) -> None:
        self.cancel()

    @work(thread=True, group="global-search", exclusive=True, exit_on_error=False)
    def _run(self, search: Search) -> None:
        last = 0.0
        for hit in search.run():
            with self._lock:
                if search is not self.search:
                    return  # a newer search replaced this one
                self._pending.append(hit)
            now = time.monotonic()
            if now - last >= (POST_GAP if search.hits < SLOW_AFTER else SLOW_GAP):
                last = now
                self.post_message(HitsFound())
        with self._lock:
            self._ended = search
        self.post_message(HitsFound())

    @on(HitsFound)
    def _take(self) -> None:
        search = self.search
        with self._lock:
            hits, self._pending = self._pending, []
            ended = search is not None and self._ended is search
        if search is None:
            return
        if hits and self.first_at is None:
            self.first_at = time.monotonic() - self.started
        self._add(hits)
        if ended:
            self._finish()
        else:
            self._state(self._progress())

    def _add(self, hits: list[Hit]) -> None:
        model = self.model
        if not hits or model is None:
            return
        tree = self.query_one(ResultsTree)
        touched: dict[Hashable, Hit] = {}
        for hit in hits:
            key, _comp = group_of(hit)
            node, count = self._groups.get(key, (None, 0))
            if node is None:
                node = tree.root.add(group_label(hit, model, 1), data=None, expand=True)
            node.add_leaf(hit_label(hit), data=hit)
            self._groups[key] = (node, count + 1)
            touched[key] = hit
        for key, hit in touched.items():
            node, count = self._groups[key]
            node.set_label(group_label(hit, model, count))
        self.shown += len(hits)
        if tree.cursor_line < 0 and tree.last_line >= 0:
            tree.cursor_line = 1 if tree.last_line >= 1 else 0

    def _progress(self) -> Text:
        search = self.search
        if search is None:
            return Text("")
        pct = 100 * search.done / search.total if search.total else 100
        return Text(
            f"searching… {self.shown} matching lines in {len(self._groups)} groups · "
            f"{pct:.0f}% of {search.total / 1e6:.0f} MB",
            style="yellow",
        )

    def _tick(self) -> None:
        if self.search is not None and self.done_at is None:
            self._state(self._progress())

    def _finish(self) -> None:
        search = self.search
        if search is None or self.done_at is not None:
            return
        self.done_at = time.monotonic() - self.started
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None
        label = self.query_.label if self.query_ is not None else ""
        if search.stopped and search.hits >= MAX_RESULTS:
            tail = f" · stopped at {MAX_RESULTS} lines: refine the query"
        elif search.stopped:
            tail = " · stopped"
        else:
            tail = ""
        style = "green" if self.shown else "yellow"
        text = Text(
            f"{self.shown} matching lines in {len(self._groups)} groups for "
            f"{safe_line(label)} · {self.done_at:.2f} s{tail}",
            style=style,
        )
        if self.partial:
            text.append(" · searched what was indexed so far: enter again for the rest")
        if search.problems:
            text.append(" · " + safe_line("; ".join(search.problems)), style="red")
        if not self.shown:
            text.append(" · no match", style="bold yellow")
        self._state(text)

    def _state(self, text: Text) -> None:
        self.query_one("#global-state", Static).update(text)

    @property
    def finished(self) -> bool:
        return self.done_at is not None

    def selected(self) -> Hit | None:
        node = self.query_one(ResultsTree).cursor_node
        return node.data if node is not None else None

    @on(Tree.NodeSelected, "#global-results")
    def _open(self, event: Tree.NodeSelected[Hit | None]) -> None:
        hit = event.node.data
        if hit is None or self.text_pattern is None or self.query_ is None:
            return
        self.post_message(OpenHit(hit, self.text_pattern, self.query_.label))
