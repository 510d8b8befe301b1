"""The pane under the others: the tree and its reader (and, in `tcview run`, the job's output
below them).

It shows what the tree's cursor is on (as the cursor moves, or on enter), an item revealed, a
search hit's match, a provenance; each document is built in a worker. What it shows is the
controller's to decide (controller.BrowserController); the browser gives it the session, the
findings and the benchmarks' times (attributes down). The overview is drawn by the browser,
with the counts it shows: the pane asks for it (`OverviewWanted`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Tree
from textual.widgets.tree import TreeNode
from textual.worker import get_current_worker

from tcview.analysis.findings import Finding
from tcview.ingest.session import ModelSession
from tcview.model.keys import same
from tcview.model.objects import OUTPUT_CODE_KINDS, Compile, Kernel, LogSource, Model, Record
from tcview.model.ranks import RankSet, ranks_label
from tcview.report.detail import digest_namesakes
from tcview.run.bench import KernelTime
from tcview.ui.content import Document, lit, styled_doc
from tcview.ui.controller import BrowserController, Note
from tcview.ui.docs import doc_for, provenance_doc
from tcview.ui.items import Item
from tcview.ui.messages import OverviewWanted
from tcview.ui.reader import Reader
from tcview.ui.tree import TraceTree
from tcview.ui.viewer import CodeView

PREVIEW_DELAY_S = 0.04  # the cursor's moves in a burst show the last item only


class BrowsePane(Vertical):
    """The tree, the reader, and the widgets given below them (`panes`)."""

    def __init__(
        self,
        controller: BrowserController,
        session: ModelSession,
        source_path: str,
        bench_time: Callable[[Kernel], KernelTime | None],
        panes: Iterable[Widget] = (),
    ) -> None:
        """`session`, `source_path`: the browser sets them anew for a new source;
        `bench_time`: a kernel's benchmark, if it has one."""
        super().__init__(id="browse")
        self.controller = controller
        self.session = session
        self.source_path = source_path
        self.bench_time = bench_time
        self.findings: list[Finding] | None = None  # the overview leads with them
        self.panes = list(panes)
        self._show_timer: Timer | None = None

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            yield TraceTree(id="tree")
            yield Reader(id="reader")
        yield from self.panes

    @property
    def trace_tree(self) -> TraceTree:
        return self.query_one(TraceTree)

    @property
    def reader(self) -> Reader:
        return self.query_one("#reader", Reader)

    # ------------------------------------------------------------ the tree's model

    def use_session(self, session: ModelSession, source_path: str) -> None:
        """Show another source's session from now on (a rerun's directory): nothing its tree
        has at first is new."""
        self.session = session
        self.source_path = source_path
        tree = self.trace_tree
        tree.mark_new = False
        tree.new_keys.clear()

    def show_model(self, model: Model | None) -> None:
        """The tree shows `model`: built anew for another input, else grown in place (a newer
        version of the model shown: its nodes are found again by their keys)."""
        tree = self.trace_tree
        shown = tree.model
        if model is None or shown is None or not same(shown, model):
            tree.set_model(model)
        else:
            tree.refresh_model(model)

    def filter_ranks(self, ranks: RankSet) -> None:
        """Only `ranks` (None: all) in the tree."""
        tree = self.trace_tree
        tree.ranks = ranks
        tree.border_title = "compiles" if ranks is None else f"compiles · {ranks_label(ranks)}"
        tree.refresh_model()

    # ------------------------------------------------------------ the tree's cursor

    @on(Tree.NodeHighlighted, "#tree")
    def _highlighted(self, event: Tree.NodeHighlighted[Item]) -> None:
        # The event's own tree: it may come while the app closes, its screens already gone.
        tree = event.node.tree
        if not self.controller.highlighted(tree.cursor_line):
            return  # the first row, placed at the start: the overview stays
        if self._show_timer is not None:
            self._show_timer.stop()
        item = event.node.data
        if isinstance(tree, TraceTree):
            tree.unmark(event.node)
        if self.controller.auto_preview:
            self._show_timer = self.set_timer(PREVIEW_DELAY_S, lambda: self.show_now(item))

    @on(Tree.NodeSelected, "#tree")
    def _selected(self, event: Tree.NodeSelected[Item]) -> None:
        if not event.node.allow_expand:
            self.show_now(event.node.data)
            self.reader.viewer.focus()
        elif not self.controller.auto_preview or self.controller.overview_shown:
            self.show_now(event.node.data)  # also the first row, highlighted but not yet shown

    def toggle_preview(self) -> Note:
        """`p`: preview as the cursor moves (the item under it shown now), or on enter."""
        note = self.controller.toggle_preview()
        if self.controller.auto_preview:
            node = self.trace_tree.cursor_node
            if node is not None:
                self.show_now(node.data)
        return note

    def first_row(self) -> None:
        """Put the cursor on the first row (so that ↓ goes to the second), without showing it:
        the overview stays until the user moves."""
        tree = self.trace_tree
        if tree.cursor_line >= 0 or tree.last_line < 0:
            return
        self.controller.place_cursor()
        tree.cursor_line = 0

    def go_to(self, node: TreeNode[Item]) -> None:
        """Put the cursor on `node` (revealed in the tree), show its item, focus the tree."""
        tree = self.trace_tree
        self.controller.cursor_moved()
        tree.reveal_node(node)
        if node.data is not None:
            self.show_item(node.data)
        tree.focus()

    def show_source(self, source: LogSource) -> None:
        """Select a trace file (or log) in the tree and show it."""
        tree = self.trace_tree
        node = tree.node_showing(source)
        if node is not None and node.data is not None:
            tree.reveal_node(node)
            self.show_item(node.data)

    def selected(self) -> object | None:
        """What `y`, `Y` and `e` act on: the item under the cursor, or (the viewer focused)
        the item it shows."""
        if isinstance(self.screen.focused, CodeView):
            item = self.controller.shown_item
        else:
            node = self.trace_tree.cursor_node
            item = node.data if node is not None else None
        return item.obj if item is not None else None

    def bench_target(self) -> Compile | Kernel | Record | None:
        """What the bench key benchmarks here: the compile, output code or kernel under the
        cursor."""
        node = self.trace_tree.cursor_node
        obj = node.data.obj if node is not None and node.data is not None else None
        if isinstance(obj, (Compile, Kernel)):
            return obj
        if isinstance(obj, Record) and obj.kind in OUTPUT_CODE_KINDS:
            return obj
        return None

    # ------------------------------------------------------------ showing

    def show_now(self, item: Item | None) -> None:
        """Show `item`, unless it is shown already."""
        if item is not None and self.controller.show(item):
            self._display(item)

    def show_item(self, item: Item) -> None:
        """Show now, bypassing the highlight debounce (even if it is shown already)."""
        if self.controller.show_again(item):
            self._display(item)

    def _display(self, item: Item) -> None:
        if item.kind == "root":
            self.post_message(OverviewWanted())  # it comes with the counts it shows
        else:
            self._build_doc(item)

    @work(thread=True, group="content", exclusive=True, exit_on_error=False, description="show")
    def _build_doc(self, item: Item) -> None:
        try:
            if isinstance(item.obj, Kernel) and self.session.model is not None:
                digest_namesakes(self.session.model, item.obj)
            doc = doc_for(
                item,
                self.session.model,
                self.source_path,
                self.controller.picked_kernel,
                self.bench_time,
                self.findings,
            )
        except Exception as exc:  # noqa: BLE001 - a broken record must not end the app
            doc = styled_doc("error", [lit(f"could not show this item: {exc!r}", "red")])
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self.show_doc, doc, False, item)

    def show_doc(
        self, doc: Document, keep_position: bool = False, item: Item | None = None
    ) -> None:
        """Show `doc` (`item`'s: a search hit's match in it is marked and focused)."""
        reader = self.reader
        reader.show(doc, keep_position)
        mark = self.controller.hit_in(item.obj) if item is not None else None
        if mark is not None:
            reader.viewer.mark(mark.pattern, mark.label, mark.line)
            reader.viewer.focus()

    def show_overview(self, doc: Document) -> None:
        """The overview, where the reader was: an older item being built must not replace it."""
        self.workers.cancel_group(self, "content")
        self.show_doc(doc, keep_position=True)

    @work(thread=True, group="content", exclusive=True, exit_on_error=False, description="why")
    def show_provenance(self, obj: Kernel | Compile | Record) -> None:
        """A kernel's (or compile's, or artifact's) provenance, built in a worker."""
        try:
            doc = provenance_doc(self.session.model, obj)
        except Exception as exc:  # noqa: BLE001 - a broken artifact must not end the app
            doc = styled_doc("error", [lit(f"could not read the provenance: {exc!r}", "red")])
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self.show_doc, doc)
