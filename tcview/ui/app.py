"""The tcview browser: tree on the left, viewer on the right, views on keys."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import replace
from threading import RLock
from typing import TypeAlias

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, ScrollableContainer
from textual.css.query import NoMatches
from textual.reactive import reactive
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Tree
from textual.worker import get_current_worker

from ..safe import safe_line
from ..trace import LogSource, Model
from ..trace.compile_id import parse_compile_id
from ..trace.model import Compile, Frame, Kernel, Record
from ..trace.summary import counts_line
from .content import (
    Document,
    compile_summary,
    frame_summary,
    fusion_of,
    kernel_doc,
    lit,
    model_summary,
    record_doc,
    styled_doc,
)
from .help import HelpPlace, HelpScreen, bindings_of
from .loader import FollowLoader, Loader
from .palette import TraceCommands
from .reader import Reader, SearchBox
from .status import StatusBar
from .tree import Item, TraceTree
from .viewer import CodeView
from .views import VIEWS, OtherView, TableView, TimeView, ViewTable

TICK = 0.2  # seconds between model refreshes while indexing
LIVE_TICK = 0.1  # follow mode: at most ten redraws a second, however fast the data moves


Target: TypeAlias = Compile | Kernel | Record  # what the tree can reveal


def resolve_target(model: Model, target: str) -> tuple[str, Compile | Kernel] | None:
    """A compile id (0/1, [0/1], !0/1/0) or a kernel name -> (kind, object)."""
    target = target.strip()
    parsed = parse_compile_id(target)
    if parsed is not None:
        key = parsed[0]
        for tf in list(model.files):
            comp = tf.compiles.get(key)
            if comp is not None:
                return "compile", comp
    kernels = list(model.kernels)
    for k in kernels:
        if k.name == target:
            return "kernel", k
    low = target.lower()
    for k in kernels:
        if low in k.name.lower():
            return "kernel", k
    return None


def doc_for(item: Item, model: Model | None, source: str) -> Document:
    obj = item.obj
    if isinstance(obj, Compile):
        return styled_doc(f"compile {obj.id_text}", compile_summary(obj, fusion_of(model, obj)))
    if isinstance(obj, Frame):
        return styled_doc(f"frame {obj.label}", frame_summary(obj))
    if isinstance(obj, Record):
        return record_doc(obj)
    if isinstance(obj, Kernel):
        return kernel_doc(obj)
    if isinstance(obj, list) or (item.kind == "others" and isinstance(obj, LogSource)):
        records = obj if isinstance(obj, list) else [r for r in obj.records if r.key is None]
        lines = [Text(f"{len(records)} records", style="bold"), Text("")]
        for rec in records[:2000]:
            lines.append(lit(f"line {rec.lineno:>8}  {rec.label}  {rec.compile_text}"))
        return styled_doc("records", lines)
    if isinstance(obj, LogSource):
        return styled_doc(obj.display, file_summary(obj))
    if model is None:
        return styled_doc("", [Text("indexing…")])
    return styled_doc(source, model_summary(model, source))


def file_summary(tf: LogSource) -> list[Text]:
    out = [lit(tf.display, "bold"), lit(f"path      {tf.path}")]
    out.append(lit(f"records   {len(tf.records)}   compiles {len(tf.compiles)}"))
    out.append(lit(f"unparsed  {len(tf.unparsed)} lines"))
    for problem in tf.problems[:20]:
        out.append(lit(f"problem   {problem}", "red"))
    kinds = tf.kinds
    if kinds:
        out.append(Text(""))
        out.append(Text("record kinds", style="bold underline"))
        for kind, n in kinds.most_common():
            out.append(lit(f"  {n:>8}  {kind}"))
    return out


# Textual's own app keys (ctrl+q quits, ctrl+c says how), with ids like every tcview key.
TEXTUAL_BINDINGS = [
    replace(binding, id=f"textual.{binding.action.replace('_', '-')}")
    for binding in App.BINDINGS
    if isinstance(binding, Binding)
]
QUIT = Binding("q", "quit", "Quit", id="app.quit", tooltip="quit (tcview run: asks first)")
# The browser's keys, in footer order. A binding's tooltip is its line in the help (`?`).
BROWSE_BINDINGS = [
    Binding("question_mark", "help", "Help", key_display="?", id="app.help", tooltip="this help"),
    Binding(
        "b",
        "view('breaks')",
        "Breaks",
        id="view.breaks",
        tooltip="graph breaks, de-duplicated: counts, reason, hints, location",
    ),
    Binding(
        "r",
        "view('recompiles')",
        "Recompiles",
        id="view.recompiles",
        tooltip="recompiles: per frame, each compile and the guard that failed",
    ),
    Binding(
        "K",
        "view('kernels')",
        "Kernels",
        id="view.kernels",
        tooltip="kernels: every kernel; type to filter by name or kind",
    ),
    Binding("f", "view('failures')", "Failures", id="view.failures", tooltip="failures"),
    Binding(
        "t",
        "view('time')",
        "Time",
        id="view.time",
        tooltip="compile time: per compile and per phase",
    ),
    Binding(
        "o",
        "view('other')",
        "Other",
        id="view.other",
        tooltip="other output: text-log lines and unparsed lines",
    ),
    Binding(
        "slash",
        "search",
        "Search",
        key_display="/",
        id="app.search",
        tooltip="search the text shown (ignores case unless you type capitals)",
    ),
    Binding(
        "escape",
        "back",
        "Back",
        show=False,
        id="app.back",
        tooltip="back to the tree (from a view or the search box)",
    ),
    Binding(
        "F",
        "toggle_follow",
        "Follow newest",
        id="app.follow",
        tooltip="live: keep the newest compile selected, or the view where it is",
    ),
    Binding(
        "p",
        "toggle_preview",
        "Preview",
        show=False,
        id="app.preview",
        tooltip="preview as you move, or only on enter (the default over SSH)",
    ),
    # Declared here (Textual adds the same binding otherwise) to give it an id and help text.
    Binding(
        App.COMMAND_PALETTE_BINDING,
        "command_palette",
        "palette",
        show=False,
        priority=True,
        id="app.palette",
        tooltip="jump to a compile id, kernel or file",
    ),
]


class TcviewApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "tcview"
    ENABLE_COMMAND_PALETTE = True
    COMMANDS = App.COMMANDS | {TraceCommands}

    BINDINGS = [QUIT, *BROWSE_BINDINGS, *TEXTUAL_BINDINGS]

    status_left: reactive[str] = reactive("")
    status_right: reactive[str] = reactive("")

    def __init__(
        self,
        path: str,
        goto: str | None = None,
        follow: bool = False,
        model: Model | None = None,
        poll: bool = False,
        stdin_fd: int | None = None,
    ) -> None:
        super().__init__()
        self.animation_level = "none"
        self.source_path = path
        self.goto_target = goto
        self.follow = follow or path == "-"
        self.follow_newest = False
        self.poll = poll
        self.auto_preview = preview_as_you_move()
        self.loader: Loader | FollowLoader = (
            FollowLoader(path, poll=poll, stdin_fd=stdin_fd) if self.follow else Loader(path, model)
        )
        self._newest: Compile | None = None
        self._records_shown = 0
        self._status_state: tuple = ()
        self._versions: tuple = ()
        self._show_timer: Timer | None = None
        self._ticker: Timer | None = None
        self._last_item: Item | None = None
        self.loaded_at: float | None = None
        self.first_frame_at: float | None = None
        self.started_at = time.monotonic()

    @property
    def model(self) -> Model | None:
        return self.loader.model

    @property
    def lock(self) -> RLock:
        return self.loader.lock

    @property
    def main_tree(self) -> TraceTree:
        """The tree of the main screen, also while a view's screen is on top."""
        return self.screen_stack[0].query_one(TraceTree)

    # ------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            yield TraceTree(id="tree")
            yield Reader(id="reader")
        yield StatusBar(id="status")
        yield Footer()

    def on_mount(self) -> None:
        tree = self.main_tree
        tree.stable = self.follow
        tree.border_title = "compiles"
        tree.focus()
        self._update_status()
        if self.loader.finished:
            self._model_ready()
        else:
            self._index()
            self._ticker = self.set_interval(TICK, self._tick)
        if self.follow:
            self.set_interval(LIVE_TICK, self._live_tick)
        self.call_after_refresh(self._first_frame)
        self._warm_up()

    @work(thread=True, group="warm", exit_on_error=False, description="warm up")
    def _warm_up(self) -> None:
        """Import the lexers now, so the first highlighted item does not wait for them."""
        from .viewer import highlight_line

        for language in ("python", "cpp", "json"):
            highlight_line("x = 1", language)

    def _first_frame(self) -> None:
        self.first_frame_at = time.monotonic()

    @work(thread=True, group="index", exit_on_error=False, description="index")
    def _index(self) -> None:
        self.loader.run()

    def _tick(self) -> None:
        self.refresh_model()
        if self.loader.finished:
            if self._ticker is not None:
                self._ticker.stop()
            self._model_ready()

    def switch_source(self, path: str) -> None:
        """Show another source from now on (e.g. a rerun's directory): a new loader, tree
        and status; the old loader stops in the background."""
        old = self.loader
        old.cancelled = True
        threading.Thread(target=old.stop, name="tcview-loader-stop", daemon=True).start()
        if self._ticker is not None:
            self._ticker.stop()
        self.source_path = path
        self.loader = FollowLoader(path, poll=self.poll) if self.follow else Loader(path)
        while len(self.screen_stack) > 1:
            self.pop_screen()
        tree = self.main_tree
        tree.mark_new = False  # what the new source has at first is not "new"
        tree.new_keys.clear()
        with self.lock:
            tree.set_model(self.model)
        self._versions = ()
        self._last_item = None
        self._newest = None
        self.loaded_at = None
        self._index()
        self._ticker = self.set_interval(TICK, self._tick)
        self.refresh_bindings()
        self._update_status()

    def _live_tick(self) -> None:
        if not self.loader.finished or not self.screen_stack:
            return
        try:
            self.refresh_model()
            if self.follow_newest:
                self._select_newest()
        except NoMatches:
            pass  # shutting down: the main screen is already gone

    def _select_newest(self) -> None:
        with self.lock:
            compiles = self.model.compiles if self.model is not None else []
            newest = compiles[-1] if compiles else None
        if newest is not None and newest is not self._newest:
            self._newest = newest
            self.reveal("compile", newest)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "toggle_follow" and not self.follow:
            return False  # only meaningful, and only in the footer, when following
        return True

    def action_toggle_follow(self) -> None:
        self.follow_newest = not self.follow_newest
        self._newest = None
        if self.follow_newest:
            self._select_newest()
        self.notify(
            markup=False,
            message="following the newest compile" if self.follow_newest else "view stays put",
        )
        self._update_status()

    def records_shown(self) -> int:
        """Records in the model as the status bar last showed it (for benchmarks)."""
        return self._records_shown

    def _model_ready(self) -> None:
        self.loaded_at = time.monotonic()
        self.main_tree.mark_new = self.follow  # from now on, what arrives is marked as new
        tree = self.main_tree
        with self.lock:
            if tree.root.data is None or tree.root.data.obj is not self.model:
                tree.set_model(self.model)
            else:
                tree.refresh_model()
        self._update_status()
        if self.loader.error:
            self.notify(
                markup=False,
                message=safe_line(self.loader.error),
                title="could not read",
                severity="error",
            )
        if self.goto_target:
            if not self._goto(self.goto_target):
                self.notify(
                    markup=False,
                    message=f"--goto {safe_line(self.goto_target)}: not found",
                    severity="warning",
                )
            self.goto_target = None
        elif tree.cursor_line < 0 or self._last_item is None:
            self._show_now(tree.root.data)

    def refresh_model(self) -> None:
        """Pick up what the model gained since the last call; the tree grows in place."""
        model = self.model
        tree = self.main_tree
        if model is None:
            self._update_status()
            return
        with self.lock:
            text = model.text
            versions = (
                id(model),
                model.version,
                len(model.files),
                sum(f.version for f in model.files),
                text.version if text is not None else 0,
            )
            changed = versions != self._versions
            if changed:
                self._versions = versions
                if tree.root.data is None or tree.root.data.obj is not model:
                    tree.set_model(model)
                else:
                    tree.refresh_model()
        # The counts walk every compile: only when something moved (a live tick is 10 Hz).
        state = (versions, len(self.loader.notices), self.loader.finished)
        if changed or state != self._status_state:
            self._status_state = state
            self._update_status()
        if self.goto_target and self._goto(self.goto_target):
            self.goto_target = None

    def _update_status(self) -> None:
        # Mode and progress first: the path is what gets cut on a narrow terminal.
        parts = ["live" if self.follow else "static"]
        if self.follow_newest:
            parts.append("following newest")
        notices = self.loader.notices
        if notices:
            parts.append(notices[-1])
        loader = self.loader
        if not loader.finished:
            if loader.total:
                parts.append(
                    f"indexing {100 * loader.fraction:.0f}%"
                    f" ({loader.done / 1e6:.0f}/{loader.total / 1e6:.0f} MB)"
                )
            else:
                parts.append("indexing…")
        elif loader.error:
            parts.append("error")
        parts.append(self.source_path)
        left = " · ".join(parts)
        self.status_left = safe_line(left)
        model = self.model
        if model is not None:
            with self.lock:
                counts = model.counts()
                self._records_shown = sum(sum(f.kinds.values()) for f in model.files)
            self.status_right = counts_line(counts)
        else:
            self.status_right = counts_line({})

    # ------------------------------------------------------------ showing items

    @on(Tree.NodeHighlighted, "#tree")
    def _highlighted(self, event: Tree.NodeHighlighted[Item]) -> None:
        if self._show_timer is not None:
            self._show_timer.stop()
        item = event.node.data
        self.main_tree.unmark(event.node)
        if self.auto_preview:
            self._show_timer = self.set_timer(0.04, lambda: self._show_now(item))

    @on(Tree.NodeSelected, "#tree")
    def _selected(self, event: Tree.NodeSelected[Item]) -> None:
        if not event.node.allow_expand:
            self._show_now(event.node.data)
            self.screen_stack[0].query_one("#reader", Reader).viewer.focus()
        elif not self.auto_preview:
            self._show_now(event.node.data)

    def action_toggle_preview(self) -> None:
        self.auto_preview = not self.auto_preview
        if self.auto_preview:
            node = self.main_tree.cursor_node
            if node is not None:
                self._show_now(node.data)
        self.notify(
            markup=False, message="preview as you move" if self.auto_preview else "preview on enter"
        )

    def _show_now(self, item: Item | None) -> None:
        if item is None or item is self._last_item:
            return
        self._last_item = item
        self._build_doc(item)

    @work(thread=True, group="content", exclusive=True, exit_on_error=False, description="show")
    def _build_doc(self, item: Item) -> None:
        try:
            with self.lock:
                doc = doc_for(item, self.model, self.source_path)
        except Exception as exc:  # noqa: BLE001 - a broken record must not end the app
            doc = styled_doc("error", [lit(f"could not show this item: {exc!r}", "red")])
        if not get_current_worker().is_cancelled:
            self.call_from_thread(self._show_doc, doc)

    def _show_doc(self, doc: Document) -> None:
        self.screen_stack[0].query_one("#reader", Reader).show(doc)

    def show_item(self, item: Item) -> None:
        """Show now, bypassing the highlight debounce."""
        self._last_item = None
        self._show_now(item)

    # ------------------------------------------------------------ navigation

    def _goto(self, target: str) -> bool:
        with self.lock:
            found = resolve_target(self.model, target) if self.model is not None else None
        if found is None:
            return False
        self.reveal(*found)
        return True

    def reveal(self, kind: str, obj: Target) -> bool:
        """Select a compile, kernel or record in the tree and show it."""
        tree = self.main_tree
        with self.lock:
            node = tree.reveal(obj, kind)
        if node is None:
            return False
        while len(self.screen_stack) > 1:
            self.pop_screen()
        tree.reveal_node(node)
        if node.data is not None:
            self.show_item(node.data)
        tree.focus()
        return True

    def action_view(self, name: str) -> None:
        screen_cls = VIEWS[name]
        if len(self.screen_stack) > 1:
            current = self.screen
            if isinstance(current, screen_cls):
                return
            self.switch_screen(screen_cls())
        else:
            self.push_screen(screen_cls())

    async def action_back(self) -> None:
        if len(self.screen_stack) > 1:
            self.pop_screen()
        else:
            self.main_tree.focus()

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.help_places()))

    @classmethod
    def help_places(cls) -> list[HelpPlace]:
        """Where this app's keys live, for the help: each place's bindings and notes."""
        return [
            HelpPlace(
                "Anywhere",
                [*bindings_of(cls), *bindings_of(Screen)],
                [("mouse", "click to select, wheel to scroll")],
            ),
            HelpPlace(
                "Scrolling (where no pane below binds the key)", bindings_of(ScrollableContainer)
            ),
            HelpPlace(
                "Tree",
                bindings_of(TraceTree),
                [("new", "live: marks what arrived since you opened; gone once visited")],
            ),
            HelpPlace(
                "Viewer",
                [*bindings_of(CodeView), *bindings_of(SearchBox, inherited=False)],
                [("search box", "enter finds; the usual editing keys")],
            ),
            HelpPlace(
                "Views (b r K f t o)",
                [
                    *bindings_of(TableView),
                    *bindings_of(ViewTable),
                    *bindings_of(TimeView, inherited=False),
                    *bindings_of(OtherView, inherited=False),
                ],
                [("kernels view", "type to filter by name or kind; ↓ to the list")],
            ),
            HelpPlace(
                "Status bar",
                [],
                [
                    ("left", "job status (tcview run), static or live, indexing progress, path"),
                    ("right", "compiles · breaks · recompiles · kernels, as `tcview summary`"),
                ],
            ),
            HelpPlace("Help", bindings_of(HelpScreen)),
        ]

    def _reader(self) -> Reader | None:
        readers = list(self.screen.query(Reader))
        return readers[0] if readers else None

    def action_search(self) -> None:
        reader = self._reader()
        if reader is not None:
            reader.open_search()

    def on_unmount(self) -> None:
        self.loader.stop()


def preview_as_you_move() -> bool:
    """Show the highlighted item as the cursor moves, except over SSH.

    A preview repaints a page of highlighted code (10-15 KB of terminal output); over SSH
    the viewer waits for Enter instead, so that a tree move costs well under 5 KB.
    TCVIEW_PREVIEW=auto or =enter overrides; `p` toggles.
    """
    setting = os.environ.get("TCVIEW_PREVIEW", "")
    if setting in ("auto", "enter"):
        return setting == "auto"
    return not (os.environ.get("SSH_CONNECTION") or os.environ.get("SSH_TTY"))
