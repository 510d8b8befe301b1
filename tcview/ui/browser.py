"""The browser screen: the tree and its reader, and the panes over them (a view, a compile
diff, two ranks compared, the global search), one shown at a time.

It owns the model session (its loader, and the versions of the model it publishes), the
redraws as new versions come, and the panes' widgets. Where the user is and what is shown is its controller's
(controller.BrowserController): a key or a message asks the controller, and the screen draws
what it says. The browser's keys are the screen's (keys.BROWSE_BINDINGS), under each pane's
own; what panes ask of it comes up as messages. Panes get what they read (the session, the
rank filter, the benchmarks' times) when they open.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterable
from typing import Protocol

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.reactive import reactive
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Footer
from textual.worker import get_current_worker

from tcview.analysis.findings import Finding, findings
from tcview.analysis.paths import PathMap
from tcview.ingest.session import ModelSession
from tcview.model.derived import derived
from tcview.model.keys import stable_key
from tcview.model.objects import Compile, Kernel, LogSource, Model, Record
from tcview.model.ranks import RankSet, ranks_label
from tcview.report.search import Hit
from tcview.report.stacks import read_stacks
from tcview.report.summary import InputState, counts_line
from tcview.text.safe import safe_line
from tcview.ui.bench import Bencher
from tcview.ui.browse_pane import BrowsePane
from tcview.ui.controller import (
    BrowserController,
    Note,
    Pane,
    Target,
    preview_as_you_move,
)
from tcview.ui.counting import Asked, Counted, count
from tcview.ui.finder import SearchView
from tcview.ui.hints import KeyNames, key_names
from tcview.ui.items import Item
from tcview.ui.keys import BROWSE_BINDINGS, QUIT
from tcview.ui.messages import (
    BenchFinished,
    ClosePane,
    CompareRanks,
    JobMoved,
    JobRestarted,
    ModelMoved,
    OpenHit,
    OverviewWanted,
    RanksPicked,
    Reveal,
)
from tcview.ui.options import OpenOptions
from tcview.ui.pane import BrowserPane, PaneSwitcher
from tcview.ui.ranks_view import CompareView, Picked, RankDialog, labels_of
from tcview.ui.reader import Reader
from tcview.ui.status import StatusBar
from tcview.ui.table_view import TableView
from tcview.ui.taking import Taker
from tcview.ui.tree import TraceTree
from tcview.ui.viewer import CodeView
from tcview.ui.views import KernelsView, ProfileView, pane_widget

INDEX_GAP = 0.2  # while the first read indexes: its progress at most 5 times a second
# While the first read indexes, the tree, the counts and the overview are redrawn at most this
# often (the first rows at once): each such redraw walks the model and repaints the screen,
# and the UI thread's work holds the loading thread back (the GIL). Redrawn with the progress,
# they made the app read a 541 MB trace in 1.43-1.57 s, and about 1.1 s at this gap, where
# `tcview summary`'s load takes 0.7 s (tests/benchmarks/PROFILE.md, the app's first read).
TREE_GAP = 1.0
# Redraws from a growing model take at most about a tenth of the time: a redraw that took
# 30 ms waits 0.3 s for the next (a big tree would otherwise slow the index it shows).
REDRAW_SHARE = 0.1
LIVE_GAP = 0.05  # follow mode: at most 20 redraws a second, however fast the data moves
PROFILE_POLL_S = 2.0  # follow mode: how often to look for a profile being written
FIND_GAP = 5.0  # follow mode: the findings are made again at most this often (seconds)


class Job(Protocol):
    """What a job run alongside the browser adds to it (`tcview run`): the status bar's first
    part, and whether more input may come."""

    def status_text(self) -> str: ...

    def running(self) -> bool: ...


class BrowserBase(Screen[None]):
    """The tree, the reader and the status bar over one model session; the panes over them.
    Its keys are its subclass's: `BrowserScreen`'s, or run mode's (run_app.RunScreen), which
    are the same actions under another keymap, in another order."""

    status_left: reactive[str] = reactive("")
    status_right: reactive[str] = reactive("")

    def key_names(self) -> KeyNames:
        """The screen's keys (then the app's) by binding id, for the hints that name them."""
        bindings = [*self.BINDINGS, *self.app.BINDINGS]
        return key_names([b for b in bindings if isinstance(b, Binding)], self.app.get_key_display)

    def __init__(
        self, options: OpenOptions, panes: Iterable[Widget] = (), job: Job | None = None
    ) -> None:
        """`panes`: widgets below the tree and the reader (the job's output in `tcview run`);
        `job`: the job whose status leads the status bar."""
        super().__init__()
        self.options = options
        # The bench key: runs a trace's output code only after a yes, never with --no-exec.
        self.bencher = Bencher(self, options.python, options.no_exec)
        self.job = job
        self.source_path = options.path
        self.follow = options.follow or options.path == "-"
        self.controller = BrowserController(options.goto, self.follow, preview_as_you_move())
        self.taker = Taker(self, options.path_map or PathMap(), self._viewer_shown)
        self.session = ModelSession(
            options.path,
            follow=self.follow,
            model=None if self.follow else options.model,
            poll=options.poll,
            stdin_fd=options.stdin_fd,
            on_update=self.model_moved,
            profile=options.profile,
        )
        self.browse = BrowsePane(
            self.controller, self.session, options.path, self.bencher.time_of, panes
        )
        self._records_shown = 0
        self._input_state: InputState | None = None
        self._notices: tuple[str, ...] = ()  # the loader's last notice, with the counts
        self._after_counts = False  # the first read is done: findings once its counts are in
        self._status_state: tuple[object, ...] = ()
        self._findings: list[Finding] | None = None  # made once the model is read
        self._found_at = 0.0  # when the findings of a live input may be made again
        self._find_timer: Timer | None = None
        # Live inputs: the frame closest to its recompile limit, for the status bar.
        self._budget = ""
        self._versions: tuple[int, ...] = ()
        self._indexing = False  # the session's first read is still going
        self._live_timer: Timer | None = None  # a redraw held back by LIVE_GAP or INDEX_GAP
        self._live_at = 0.0
        self._tree_due = 0.0  # while indexing: when the tree may be redrawn again (TREE_GAP)
        self._tree_timer: Timer | None = None  # …then redrawn, should no more progress come
        self._redraw_s = 0.0  # what the last redraw from the model took
        self.loaded_at: float | None = None
        self.first_frame_at: float | None = None
        self.started_at = time.monotonic()

    @property
    def model(self) -> Model | None:
        return self.session.model

    @property
    def main_tree(self) -> TraceTree:
        return self.browse.trace_tree

    # ------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        yield PaneSwitcher(self.browse, self._make_pane)
        yield StatusBar(id="status")
        yield Footer()

    def on_mount(self) -> None:
        tree = self.main_tree
        tree.stable = self.follow
        tree.border_title = "compiles"
        tree.focus()
        self.controller.start(tree.root.data)  # the overview, until an item is picked
        if self.follow:  # a live run may write its profile (`tcview run --profile`) any time
            self.set_interval(PROFILE_POLL_S, self._profile_written)
        if self.session.finished:
            self._model_ready()
        else:
            self.refresh_counts()
            self.update_status()
            self._indexing = True
            self._index()
        self.app.call_after_refresh(self._first_frame)

    def on_unmount(self) -> None:
        self.session.stop()

    @work(thread=True, group="warm", exit_on_error=False, description="warm up")
    def _warm_up(self) -> None:
        """Import the lexers now, so the first highlighted item does not wait for them. Once
        the first read is done: their regexes take the GIL from the loading thread (a 541 MB
        trace ready in 1.04-1.17 s without them alongside, 1.11-1.46 s with them)."""
        from tcview.ui.viewer import highlight_line

        for language in ("python", "cpp", "json"):
            highlight_line("x = 1", language)

    @work(thread=True, group="profile", exclusive=True, exit_on_error=False, description="poll")
    def _profile_written(self) -> None:
        """Whether a profile appeared or changed (its files' stamps: off the UI thread)."""
        if self.session.profile_written():
            self.app.call_from_thread(self._join_profile)

    def _join_profile(self) -> None:
        """A profile was written: the overview and the kernels and profile views, if shown,
        join it."""
        shown = self.shown_pane()
        if isinstance(shown, (KernelsView, ProfileView)):
            shown.reload()
        self.refresh_counts()  # the overview leads with it

    def _first_frame(self) -> None:
        self.first_frame_at = time.monotonic()

    def _say(self, note: Note) -> None:
        self.notify(markup=False, message=note.message, severity=note.severity)

    # ------------------------------------------------------------ panes

    @property
    def switcher(self) -> PaneSwitcher:
        return self.query_one(PaneSwitcher)

    def shown_pane(self) -> Widget:
        """The widget of the pane shown: the tree's (`browse`), a view, the global search..."""
        widget = self.switcher.widget_of(self.controller.shown)
        return widget if widget is not None else self.browse

    def _make_pane(self, pane: Pane) -> BrowserPane:
        return pane_widget(pane, self.session, self.controller.rank_filter, self.bencher.times)

    async def _open_shown(self) -> None:
        """Show the controller's pane, made and mounted first when it is new."""
        await self.switcher.open(self.controller.stack)

    def _present_shown(self) -> None:
        """Show the controller's pane, mounted already (it was under the panes that closed)."""
        self.switcher.show(self.controller.stack)

    def close_views(self) -> None:
        """Back to the tree: close every pane over it."""
        if self.controller.close_views():
            self._present_shown()

    async def action_view(self, name: str) -> None:
        if self.controller.open_view(name):
            await self._open_shown()

    def action_back(self) -> None:
        if self.controller.back():
            self._present_shown()
        else:
            self.main_tree.focus()

    @on(ClosePane)
    def _close_pane(self, message: ClosePane) -> None:
        message.stop()
        if message.pane is self.shown_pane() and self.controller.back():
            self._present_shown()

    @on(CompareRanks)
    async def _compare(self, message: CompareRanks) -> None:
        message.stop()
        self.controller.compare(message.left, message.right)
        await self._open_shown()

    @on(Reveal)
    def _reveal(self, message: Reveal) -> None:
        message.stop()
        self.reveal(message.kind, message.obj)

    @on(RanksPicked)
    def _ranks_picked(self, message: RanksPicked) -> None:
        message.stop()
        self.set_rank_filter(message.ranks)

    @on(OpenHit)
    async def _open_hit(self, message: OpenHit) -> None:
        message.stop()
        await self.open_hit(message.hit, message.pattern, message.label)

    # ------------------------------------------------------------ reading the model

    @work(thread=True, group="findings", exclusive=True, exit_on_error=False, description="find")
    def _find(self) -> None:
        """The findings and the recompiles' stacks, made once the model is read (they read
        payloads: off the UI thread); the overview then leads with them."""
        model = self.model  # a version: nothing changes it while it is read
        if model is None:
            return
        found = derived(model, "findings", lambda: findings(model))
        read_stacks(model)  # the overview's stack tree reads none on the UI thread
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._findings_ready, found)

    def _find_again(self) -> None:
        self._find_timer = None
        self._found_at = time.monotonic() + FIND_GAP
        self._find()

    def _findings_ready(self, found: list[Finding]) -> None:
        self._findings = found
        self.browse.findings = found
        self.refresh_counts()

    @work(thread=True, group="index", exit_on_error=False, description="index")
    def _index(self) -> None:
        self.session.run()
        self.model_moved()  # done: show it now, not at the next tick

    def model_moved(self) -> None:
        """Tell the browser that the model moved; callable from any thread. Bursts merge."""
        self.post_message(ModelMoved())

    @on(ModelMoved)
    def _schedule_redraw(self) -> None:
        if self._indexing and self.session.finished:
            if self._live_timer is not None:
                self._live_timer.stop()
            self._live_refresh()  # the first read is done: show it all now
            return
        if self._live_timer is not None:
            return  # a redraw is already due
        # (While indexing, most redraws show the progress only: cheap.)
        gap = INDEX_GAP if self._indexing else max(LIVE_GAP, self._redraw_s / REDRAW_SHARE)
        wait = self._live_at + gap - time.monotonic()
        if wait > 0:
            self._live_timer = self.set_timer(wait, self._live_refresh)
        else:
            self._live_refresh()

    def switch_source(self, path: str) -> None:
        """Show another source from now on (e.g. a rerun's directory): a new session, tree
        and status; the old session stops in the background."""
        old = self.session
        old.cancelled = True
        threading.Thread(target=old.stop, name="tcview-session-stop", daemon=True).start()
        self.source_path = path
        self.session = ModelSession(
            path,
            follow=self.follow,
            poll=self.options.poll,
            on_update=self.model_moved,
            profile=self.options.profile,
        )
        self.close_views()
        self._forget_search()
        self.browse.use_session(self.session, path)
        self.browse.trace_tree.set_model(self.model)
        self._versions = ()
        self._findings = self.browse.findings = None
        self._budget = ""
        self.controller.new_source()
        self.loaded_at = None
        self._indexing = True
        self._tree_due = 0.0
        self._drop_held_tree()
        self._index()
        self.refresh_bindings()
        self.refresh_counts()
        self.update_status()

    def _live_refresh(self) -> None:
        self._live_timer = None
        self._live_at = time.monotonic()
        if not self.is_attached:
            return
        try:
            if self._indexing and self.session.finished:
                self._indexing = False
                self._model_ready()  # the tree, counts and overview, whole
                self._redraw_s = time.monotonic() - self._live_at
            elif self._indexing and self._live_at < self._tree_due:
                self.update_status()  # the progress now; the rest once due
                if self._tree_timer is None:
                    wait = max(0.001, self._tree_due - self._live_at)
                    self._tree_timer = self.set_timer(wait, self._tree_refresh)
                return  # (nothing new in the tree to select)
            else:
                self.refresh_model()
                self._redraw_s = time.monotonic() - self._live_at
                if self._indexing:
                    if self.main_tree.last_line >= 0:  # (until the first rows: every redraw)
                        gap = max(TREE_GAP, self._redraw_s / REDRAW_SHARE)
                        self._tree_due = self._live_at + gap
                elif self.follow and self.loaded_at is not None and self._find_timer is None:
                    # a live input's findings: made again FIND_GAP after the last time at most
                    # (Textual's timer divides by its interval: never 0.)
                    wait = max(0.001, self._found_at - self._live_at)
                    self._find_timer = self.set_timer(wait, self._find_again)
            if self.controller.follow_newest:
                self._select_newest()
        except NoMatches:
            pass  # shutting down: the widgets are already gone

    def _drop_held_tree(self) -> None:
        if self._tree_timer is not None:
            self._tree_timer.stop()
            self._tree_timer = None

    def _tree_refresh(self) -> None:
        """The tree held back while indexing (TREE_GAP) is due: drawn unless a redraw is."""
        self._tree_timer = None
        if self._live_timer is None and self._indexing:
            self._live_refresh()

    def _select_newest(self) -> None:
        newest = self.controller.newest_compile(self.model)
        if newest is not None:
            self.reveal("compile", newest)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Some keys show only when they mean something (the controller says which)."""
        return self.controller.allows(action, parameters)

    def on_key(self, event: events.Key) -> None:
        """The rank keys are off on a trace of one rank (no binding took the key): say why."""
        if event.key in ("a", "number_sign") and not self.controller.allows("filter_ranks", ()):
            self.notify("one rank in this trace: no ranks to compare (a) or pick (#)", markup=False)

    def action_toggle_follow(self) -> None:
        note = self.controller.toggle_follow()
        if self.controller.follow_newest:
            self._select_newest()
        self._say(note)
        self.update_status()

    @on(JobMoved)
    def _job_moved(self, message: JobMoved) -> None:
        message.stop()
        if message.ended:
            self.refresh_counts()
        self.refresh_bindings()
        self.update_status()

    @on(JobRestarted)
    def _job_restarted(self, message: JobRestarted) -> None:
        message.stop()
        self.switch_source(message.run_dir)

    def records_shown(self) -> int:
        """Records in the model as the status bar last showed it (for benchmarks)."""
        return self._records_shown

    def _model_ready(self) -> None:
        self.loaded_at = time.monotonic()
        self._found_at = self.loaded_at + FIND_GAP
        self._drop_held_tree()
        # The findings and the lexers once the counts are shown: their workers would take
        # the GIL from the one that makes the counts.
        self._after_counts = True
        tree = self.main_tree
        self._versions = self.session.versions()  # (refresh_model: nothing new since)
        self._status_state = self._status_of(self._versions)  # (counts: drawn below)
        self.browse.show_model(self.model)
        tree.mark_new = self.follow  # from now on, what arrives is marked as new
        self.controller.start(tree.root.data)
        self.refresh_counts()
        self.update_status()
        if self.session.error:
            self.notify(
                markup=False,
                message=safe_line(self.session.error),
                title="could not read",
                severity="error",
            )
        target = self.controller.goto_target
        if target:
            failure = self.goto(target)
            if failure is not None:
                self.notify(markup=False, message=safe_line(failure), severity="warning")
            self.controller.goto_target = None
        self.browse.first_row()

    def refresh_model(self) -> None:
        """Pick up what the model gained since the last call; the tree grows in place."""
        model = self.model
        if model is None:
            self.update_status()
            return
        versions = self.session.versions()
        changed = versions != self._versions
        if changed:
            self._versions = versions
            self.browse.show_model(model)
        # The counts walk every compile: only when something moved.
        state = self._status_of(versions)
        if changed or state != self._status_state:
            self._status_state = state
            self.refresh_counts()
            self.update_status()
        # A one-shot load goes to its item once loaded (`_model_ready`): read part way, an id
        # that two ranks share would be found in the first rank only.
        target = self.controller.goto_target
        if target and self.session.follow and self.goto(target) is None:
            self.controller.goto_target = None
        self.browse.first_row()

    def _status_of(self, versions: tuple[int, ...]) -> tuple[object, ...]:
        """What the counts and status bar show depend on."""
        return (versions, len(self.session.notices), self.session.finished)

    def awaits_input(self) -> bool:
        """Whether more input may come (follow mode; a job that still runs): an empty input
        is then "waiting"."""
        return self.job.running() if self.job is not None else self.follow

    def refresh_counts(self) -> None:
        """The status bar's counts and, when it is shown, the overview: made by a worker from
        one version of the model (`_count`), shown together so that they never disagree."""
        session = self.session
        self._count(
            Asked(
                session.model,
                self.controller.overview_shown,
                self.controller.rank_filter,
                session.finished,
                session.error if session.finished and session.error else "",
                self.awaits_input(),
                self._findings,
                tuple(session.notices[-1:]),
                self.key_names(),
            )
        )

    @work(thread=True, group="counts", exclusive=True, exit_on_error=False, description="count")
    def _count(self, asked: Asked) -> None:
        counted = count(asked, self.source_path, self.follow, self.session.measured)
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._counted, counted)

    def _counted(self, counted: Counted) -> None:
        summary = counted.summary
        self._budget = counted.budget
        self._records_shown = summary.get("records", 0)
        self._input_state = counted.state
        self._notices = counted.notices
        self.status_right = counts_line(counted.counts if counted.counts is not None else summary)
        if self.controller.counted(summary.get("errors", 0), counted.ranks, counted.export):
            self.refresh_bindings()  # the Errors, Ranks and Export keys show once they mean it
        if counted.overview is not None and self.controller.overview_shown:
            self.browse.show_overview(counted.overview)
        self.update_status()
        if self._after_counts and self.loaded_at is not None:
            self._after_counts = False
            self._find()
            self._warm_up()

    def update_status(self) -> None:
        """The status bar's left part: the job's status (tcview run), then the mode and
        progress first: the path is what gets cut on a narrow terminal."""
        parts = [self.job.status_text()] if self.job is not None else []
        parts.append("live" if self.follow else "static")
        if self.controller.follow_newest:
            parts.append("following newest")
        notices = self._notices
        if notices:
            parts.append(notices[-1])
        if self._input_state is not None:
            parts.append(self._input_state.brief)
        picked, ranks = self.controller.rank_filter, self.controller.ranks
        if picked is not None:
            parts.append(f"{ranks_label(picked)} of {ranks}")
        elif ranks > 1:
            parts.append(f"{ranks} ranks")
        session = self.session
        if not session.finished:
            if session.total:
                parts.append(
                    f"indexing {100 * session.fraction:.0f}%"
                    f" ({session.done / 1e6:.0f}/{session.total / 1e6:.0f} MB)"
                )
            else:
                parts.append("indexing…")
        elif session.error:
            parts.append("error")
        if self._budget:
            parts.append(self._budget)
        parts.append(self.source_path)
        self.status_left = safe_line(" · ".join(parts))

    # ------------------------------------------------------------ showing items

    @on(OverviewWanted)
    def _overview(self, message: OverviewWanted) -> None:
        message.stop()
        self.refresh_counts()  # the overview comes with the counts it shows

    def action_toggle_preview(self) -> None:
        self._say(self.browse.toggle_preview())

    def show_item(self, item: Item) -> None:
        """Show now, bypassing the highlight debounce (even if it is shown already)."""
        self.browse.show_item(item)

    def show_source(self, source: LogSource) -> None:
        """Select a trace file (or log) in the tree and show it."""
        self.browse.show_source(source)

    # ------------------------------------------------------------ navigation

    def goto(self, target: str) -> str | None:
        """Reveal the item `target` names (`tcview show`'s grammar); else why not."""
        if self.model is None:
            return f"--goto {target}: nothing loaded"
        found = self.controller.locate(self.model, target)
        if isinstance(found, str):
            return found
        self.reveal(type(found).__name__.lower(), found)
        return None

    def reveal(self, kind: str, obj: Target) -> bool:
        """Select a compile, kernel or record in the tree and show it (the panes over the
        tree close)."""
        tree = self.main_tree
        node = tree.reveal(obj, kind)
        if node is None:
            hidden = self.controller.hidden_rank(obj)
            if hidden is not None:
                self.notify(
                    markup=False,
                    message=f"rank {hidden} is not shown: # picks the ranks shown",
                    severity="warning",
                )
            return False
        self.close_views()
        self.browse.go_to(node)
        return True

    def action_filter_ranks(self) -> None:
        model = self.model
        if model is None:
            return
        labels = labels_of(model)
        self.app.push_screen(
            RankDialog("Show only these ranks", labels, self.controller.rank_filter),
            self._picked_ranks,
        )

    def _picked_ranks(self, picked: Picked | None) -> None:
        if picked is not None:
            self.set_rank_filter(picked.ranks)

    def set_rank_filter(self, ranks: RankSet) -> None:
        """Show only `ranks` (None: all) in the tree, the views and the status bar's counts."""
        note = self.controller.filter_ranks(ranks)
        self.browse.filter_ranks(ranks)
        self.refresh_counts()
        self.update_status()
        self.refresh_bindings()
        for widget in self.switcher.views():
            if isinstance(widget, TableView) and not isinstance(widget, CompareView):
                widget.ranks = ranks
                widget.reload()
        self._say(note)

    # ------------------------------------------------------------ provenance and diffs

    async def action_provenance(self) -> None:
        """A kernel's (or compile's) provenance in the reader; again: the item itself."""
        what = self.controller.provenance()
        if what is None:
            await self.action_view("provenance")
        elif isinstance(what, Item):
            self.show_item(what)
        else:
            self.browse.show_provenance(what)

    def action_mark(self) -> None:
        self._say(self.controller.mark())

    async def action_diff(self) -> None:
        diffed = self.controller.diff()
        if isinstance(diffed, Note):
            self._say(diffed)
        else:
            await self._open_shown()

    # ------------------------------------------------------------ bench

    def action_bench(self) -> None:
        self.bencher.start(self.bench_target(), self.session)

    def bench_target(self) -> Compile | Kernel | Record | None:
        """What the bench key benchmarks: the kernels view's highlighted kernel, the time
        view's compile, or the tree's compile, output code or kernel."""
        shown = self.shown_pane()
        if isinstance(shown, (TableView, BrowsePane)):
            return shown.bench_target()
        return None

    @on(BenchFinished)
    def _bench_finished(self, message: BenchFinished) -> None:
        """A benchmark ended (the bencher posts here): show its result where the user is;
        the kernels view shows the times in a column."""
        message.stop()
        shown = self.shown_pane()
        if isinstance(shown, TableView):
            shown.reload()
        reader = self._reader()
        if reader is not None:
            reader.show(message.doc)

    def _reader(self) -> Reader | None:
        """The reader of the pane shown (the tree's, a view's detail), if it has one."""
        readers = list(self.shown_pane().query(Reader))
        return readers[0] if readers else None

    def action_search(self) -> None:
        reader = self._reader()
        if reader is not None:
            reader.open_search()

    # ------------------------------------------------------------ global search

    def _search_view(self) -> SearchView | None:
        view = self.switcher.widget_of(self.controller.search)
        return view if isinstance(view, SearchView) else None

    async def action_global_search(self, text: str = "") -> None:
        """Show the global search (its last results stay); with `text`, search for it."""
        if self.controller.open_search():
            await self._open_shown()  # its query line takes the focus (AUTO_FOCUS)
        view = self._search_view()
        if view is None:
            return
        if not text:
            view.focus_query()
        else:
            view.start(text)

    def _forget_search(self) -> None:
        view = self._search_view()
        if view is not None:
            view.cancel()
            self.switcher.forget(view)

    async def open_hit(self, hit: Hit, pattern: re.Pattern[str], label: str) -> None:
        """Show a hit's artifact (its kernel, for a line inside one) at the matching line."""
        target = self.controller.open_hit(hit, pattern, label, self.model)
        if target is None:
            await self._open_shown()  # other output: the Other view, at the line
            return
        self._present_shown()
        if isinstance(target, Kernel):
            item = Item("kernel", target, stable_key(target))
        else:
            item = Item("record", target, stable_key(target))
        if not self.reveal(item.kind, target):
            self.show_item(item)  # not in the tree (a run directory's TORCH_LOGS text)

    # ------------------------------------------------------------ take it with you

    def selected_object(self) -> object | None:
        """What `y`, `Y` and `e` act on: the row of a view, the hit of the global search,
        the tree's item, or (the viewer focused) the item it shows."""
        shown = self.shown_pane()
        if isinstance(shown, SearchView):
            hit = shown.selected()
            return None if hit is None else hit.kernel or hit.record
        if isinstance(shown, (TableView, BrowsePane)):
            return shown.selected()
        return None

    def _viewer_shown(self) -> CodeView | None:
        """The viewer whose text `y` and `Y` take when the item gives none: the focused one,
        else the one the pane shown has."""
        focused = self.app.focused
        if isinstance(focused, CodeView):
            return focused
        reader = self._reader()
        return reader.viewer if reader is not None else None

    # y, Y and e read the item (a payload, from disk) in a worker: the UI goes on meanwhile.

    def action_copy(self) -> None:
        self.taker.copy(self.selected_object(), self.session)

    def action_save(self) -> None:
        self.taker.save(self.selected_object(), self.session)

    def action_edit(self) -> None:
        in_viewer = isinstance(self.app.focused, CodeView)
        self.taker.edit(self.selected_object(), self.session, in_viewer)


class BrowserScreen(BrowserBase):
    """The browser with its keys (`tcview open`)."""

    BINDINGS = [QUIT, *BROWSE_BINDINGS]
