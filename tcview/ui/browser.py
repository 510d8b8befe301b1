"""The browser screen: the tree on the left, the viewer on the right, the views on keys.

It owns the model session (the model, its lock and its loader), the tree, the reader and the
redraws; what the views and dialogs ask of it comes up as messages, which the app hands to it.
Views get what they read (the session, the rank filter, the benchmarks' times) when they open.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol, TypeAlias

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult, SuspendNotSupported
from textual.containers import Horizontal
from textual.css.query import NoMatches
from textual.reactive import reactive
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Footer, Tree
from textual.worker import get_current_worker

from tcview.analysis.diff import predecessor
from tcview.analysis.export import is_export
from tcview.analysis.findings import Finding, findings
from tcview.analysis.paths import Location, PathMap, locations_of
from tcview.analysis.provenance import (
    POST_GRAD_GRAPHS,
    PRE_GRAD_GRAPHS,
    graph_lines_of,
    kernel_provenance,
)
from tcview.analysis.recompiles import recompile_budget
from tcview.ingest.session import ModelSession
from tcview.ingest.tracefile import LOCATED_KINDS
from tcview.model.objects import OUTPUT_CODE_KINDS, Compile, Frame, Kernel, LogSource, Model, Record
from tcview.model.ranks import RankSet, counts_in, ranks_label, ranks_of
from tcview.report.detail import (
    compile_detail,
    digest_namesakes,
    frame_detail,
    kernel_detail,
    provenance_detail,
)
from tcview.report.items import ShowError, goto_failure, locate
from tcview.report.search import Hit
from tcview.report.stacks import read_stacks
from tcview.report.summary import InputState, counts_line, input_state
from tcview.run.bench import KernelTime
from tcview.text.safe import safe_line
from tcview.ui.bench import Bencher, with_bench
from tcview.ui.content import (
    Document,
    Marked,
    detail_doc,
    lit,
    model_summary,
    record_doc,
    styled_doc,
)
from tcview.ui.diffview import CompileDiffView
from tcview.ui.editor import editor_call
from tcview.ui.finder import SearchScreen
from tcview.ui.findings_view import FindingsView
from tcview.ui.messages import BenchFinished, JobMoved, JobRestarted, ModelMoved
from tcview.ui.ranks_view import CompareView, Picked, RankDialog, RanksView, labels_of
from tcview.ui.reader import Reader
from tcview.ui.status import StatusBar
from tcview.ui.take import OSC52_SAFE, LocationPicker, SaveScreen, Taken, copy_text, write_text
from tcview.ui.tree import Item, TraceTree
from tcview.ui.viewer import CodeView
from tcview.ui.views import VIEWS, KernelsView, OtherView, TableView

ViewClass: TypeAlias = type[TableView[Any]] | type[OtherView]
ALL_VIEWS: dict[str, ViewClass] = {**VIEWS, "ranks": RanksView, "findings": FindingsView}

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


Target: TypeAlias = Compile | Frame | Kernel | Record  # what the tree can reveal


def doc_for(
    item: Item,
    model: Model | None,
    source: str,
    picked: Kernel | None = None,
    bench: Callable[[Kernel], KernelTime | None] = lambda kernel: None,
    found: list[Finding] | None = None,
) -> Document:
    """What the pane shows for a tree item; `picked`: the kernel whose nodes a graph marks;
    `bench` gives a kernel's benchmark, if any; `found`: the findings, for the overview."""
    obj = item.obj
    if isinstance(obj, Compile):
        return detail_doc(compile_detail(obj, model))
    if isinstance(obj, Frame):
        return detail_doc(frame_detail(obj))
    if isinstance(obj, Record):
        return record_doc(obj, marked_nodes(obj, picked))
    if isinstance(obj, Kernel):
        return detail_doc(with_bench(kernel_detail(obj, model), bench(obj)))
    if isinstance(obj, list) or (item.kind == "others" and isinstance(obj, LogSource)):
        records = obj if isinstance(obj, list) else [r for r in obj.records if r.key is None]
        lines = [Text(f"{len(records)} records", style="bold")]
        if not isinstance(obj, list):
            # Located, never listed: said, so that an empty list does not look like a loss.
            unlisted = [f"{k} {obj.kinds[k]:,}" for k in LOCATED_KINDS if obj.kinds.get(k)]
            if unlisted:
                said = "in this file, located, never listed: " + " · ".join(unlisted)
                lines.append(Text(said, style="dim"))
        lines.append(Text(""))
        for rec in records[:2000]:
            lines.append(lit(f"line {rec.lineno:>8}  {rec.label}  {rec.compile_text}"))
        return styled_doc("records", lines)
    if isinstance(obj, LogSource):
        return styled_doc(obj.display, file_summary(obj))
    summary = model.summary_counts() if model is not None else {}
    return overview_doc(model, source, summary, found=found)


def marked_nodes(rec: Record, kernel: Kernel | None) -> Marked | None:
    """The lines of a pre- or post-grad graph that define the picked kernel's nodes."""
    if kernel is None or kernel.compile is None or rec.compile is not kernel.compile:
        return None
    if rec.label not in (*PRE_GRAD_GRAPHS, *POST_GRAD_GRAPHS):
        return None
    unit, kp = kernel_provenance(kernel)
    if unit is None or kp is None:
        return None
    nodes = kp.post_grad if rec is unit.post_graph else kp.pre_grad if rec is unit.pre_graph else []
    lines = graph_lines_of(rec, nodes)
    return Marked(kernel.name, tuple(lines)) if lines else None


def provenance_doc(model: Model | None, obj: object) -> Document:
    """What `i` shows: a kernel's provenance, or a compile's (each kernel's user lines)."""
    if isinstance(obj, Record) and obj.compile is not None:
        obj = obj.compile
    if not isinstance(obj, (Kernel, Compile)):
        return styled_doc("provenance", [lit("pick a kernel or a compile", "dim")])
    return detail_doc(provenance_detail(obj, model))


def overview_doc(
    model: Model | None,
    source: str,
    summary: dict[str, Any],
    state: InputState | None = None,
    error: str = "",
    ranks: RankSet = None,
    found: list[Finding] | None = None,
) -> Document:
    """The right-hand pane when no item is picked: the counts of `summary` (the snapshot the
    status bar shows), and what the input holds (waiting, nothing found, could not read)."""
    source = "stdin" if source == "-" else source
    if error:
        lines = [lit(source, "bold"), lit(f"could not read: {error}", "bold red")]
        return styled_doc(source, lines)
    if model is None:
        lines = [lit(source, "bold"), Text("indexing…"), Text(counts_line(summary), style="bold")]
        return styled_doc(source, lines)
    return styled_doc(source, model_summary(model, source, summary, state, ranks, found))


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


class Job(Protocol):
    """What a job run alongside the browser adds to it (`tcview run`): the status bar's first
    part, and whether more input may come."""

    def status_text(self) -> str: ...

    def running(self) -> bool: ...


class BrowserScreen(Screen[None]):
    """The tree, the reader and the status bar over one model session; the views on top."""

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
        path_map: PathMap | None = None,
        no_exec: bool = False,
        python: str | None = None,
        panes: Iterable[Widget] = (),
        job: Job | None = None,
        profile: str | None = None,
    ) -> None:
        """`panes`: widgets below the tree and the reader (the job's output in `tcview run`);
        `job`: the job whose status leads the status bar; `profile`: a torch.profiler trace to
        join (--profile)."""
        self.profile_arg = profile
        super().__init__()
        # The bench key: runs a trace's output code only after a yes, never with --no-exec.
        self.bencher = Bencher(self, python, no_exec)
        self.path_map = path_map or PathMap()
        self.panes = list(panes)
        self.job = job
        # A global search's hit being opened: (object, pattern, label, line) until its
        # document is shown, then the viewer marks the line.
        self._pending_mark: tuple[object, re.Pattern[str], str, int] | None = None
        self._search_screen: SearchScreen | None = None
        self.source_path = path
        self.goto_target = goto
        self.follow = follow or path == "-"
        self.follow_newest = False
        self.poll = poll
        self.auto_preview = preview_as_you_move()
        self.session = ModelSession(
            path,
            follow=self.follow,
            model=None if self.follow else model,
            poll=poll,
            stdin_fd=stdin_fd,
            on_update=self.model_moved,
            profile=profile,
        )
        self._newest: Compile | None = None
        self._records_shown = 0
        self._input_state: InputState | None = None
        self._status_state: tuple[object, ...] = ()
        self._errors_shown = 0  # errors in the last counts snapshot
        self._ranks_shown = 0  # ranks in the last counts snapshot
        self.rank_filter: RankSet = None  # the ranks picked with `#` (None: all)
        self._export = False  # the input is a torch.export trace (the Export key shows)
        self._findings: list[Finding] | None = None  # made once the model is read
        self._found_at = 0.0  # when the findings of a live input may be made again
        self._find_timer: Timer | None = None
        # Live inputs: the frame closest to its recompile limit, for the status bar.
        self._budget = ""
        # The kernel picked last (a graph marks its nodes), the compile marked for a diff,
        # and the object whose provenance the pane shows (`i` again goes back).
        self.picked_kernel: Kernel | None = None
        self.diff_mark: Compile | None = None
        self._provenance_of: object = None
        self._versions: tuple[int, ...] = ()
        self._show_timer: Timer | None = None
        self._indexing = False  # the session's first read is still going
        self._live_timer: Timer | None = None  # a redraw held back by LIVE_GAP or INDEX_GAP
        self._live_at = 0.0
        self._tree_due = 0.0  # while indexing: when the tree may be redrawn again (TREE_GAP)
        self._tree_timer: Timer | None = None  # …then redrawn, should no more progress come
        self._redraw_s = 0.0  # what the last redraw from the model took
        self._last_item: Item | None = None
        # The cursor is still where _first_row put it: highlights there keep the overview.
        self._cursor_placed = False
        self.loaded_at: float | None = None
        self.first_frame_at: float | None = None
        self.started_at = time.monotonic()

    @property
    def model(self) -> Model | None:
        return self.session.model

    @property
    def main_tree(self) -> TraceTree:
        return self.query_one(TraceTree)

    # ------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            yield TraceTree(id="tree")
            yield Reader(id="reader")
        yield from self.panes
        yield StatusBar(id="status")
        yield Footer()

    def on_mount(self) -> None:
        tree = self.main_tree
        tree.model_lock = self.session.lock
        tree.stable = self.follow
        tree.border_title = "compiles"
        tree.focus()
        self._last_item = tree.root.data  # the overview, until an item is picked
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

    def _profile_written(self) -> None:
        """A profile appeared or changed: the kernels view, if shown, joins it."""
        if self.session.profile_written() and isinstance(self.app.screen, KernelsView):
            self.app.screen.reload()

    def _first_frame(self) -> None:
        self.first_frame_at = time.monotonic()

    @work(thread=True, group="findings", exclusive=True, exit_on_error=False, description="find")
    def _find(self) -> None:
        """The findings and the recompiles' stacks, made once the model is read (they read
        payloads: off the UI thread); the overview then leads with them."""
        model = self.model
        if model is None:
            return
        if self.follow:
            with self.session.lock:  # the model grows under the follower
                found = findings(model)
                read_stacks(model)  # the overview's stack tree reads none on the UI thread
        else:
            found = findings(model)  # a finished one-shot model no longer changes
            read_stacks(model)
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._findings_ready, found)

    def _find_again(self) -> None:
        self._find_timer = None
        self._found_at = time.monotonic() + FIND_GAP
        self._find()

    def _findings_ready(self, found: list[Finding]) -> None:
        self._findings = found
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
            poll=self.poll,
            on_update=self.model_moved,
            profile=self.profile_arg,
        )
        self.close_views()
        self._forget_search()
        tree = self.main_tree
        tree.model_lock = self.session.lock
        tree.mark_new = False  # what the new source has at first is not "new"
        tree.new_keys.clear()
        with self.session.lock:
            tree.set_model(self.model)
        self._versions = ()
        self._findings = None
        self._budget = ""
        self._last_item = None
        self._newest = None
        self.loaded_at = None
        self._indexing = True
        self._tree_due = 0.0
        self._drop_held_tree()
        self._index()
        self.app.refresh_bindings()
        self.refresh_counts()
        self.update_status()

    def close_views(self) -> None:
        """Back to this screen: close every view above it."""
        while len(self.app.screen_stack) > 1 and self.app.screen is not self:
            self.app.pop_screen()

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
            if self.follow_newest:
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
        with self.session.lock:
            compiles = self.model.compiles if self.model is not None else []
            newest = compiles[-1] if compiles else None
        if newest is not None and newest is not self._newest:
            self._newest = newest
            self.reveal("compile", newest)

    def allows(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The app's check_action for the browser's keys: some show only when they mean
        something."""
        if action == "toggle_follow" and not self.follow:
            return False  # only meaningful, and only in the footer, when following
        if action == "view" and parameters == ("errors",):
            return self._errors_shown > 0  # in the footer only when the run crashed
        if (action == "view" and parameters == ("ranks",)) or action == "filter_ranks":
            return self._ranks_shown > 1 or self.rank_filter is not None
        if action == "view" and parameters == ("export",):
            return self._export  # in the footer only for a torch.export trace
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
        self.update_status()

    @on(JobMoved)
    def _job_moved(self, message: JobMoved) -> None:
        message.stop()
        if message.ended:
            self.refresh_counts()
        self.app.refresh_bindings()
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
        self._find()
        self._warm_up()
        tree = self.main_tree
        with self.session.lock:  # the first read's last rows (not marked as new)
            self._versions = self.session.versions()  # (refresh_model: nothing new since)
            self._status_state = self._status_of(self._versions)  # (counts: drawn below)
            if tree.root.data is None or tree.root.data.obj is not self.model:
                tree.set_model(self.model)
            else:
                tree.refresh_model()
        tree.mark_new = self.follow  # from now on, what arrives is marked as new
        if self._last_item is None:
            self._last_item = tree.root.data
        self.refresh_counts()
        self.update_status()
        if self.session.error:
            self.notify(
                markup=False,
                message=safe_line(self.session.error),
                title="could not read",
                severity="error",
            )
        if self.goto_target:
            failure = self._goto(self.goto_target)
            if failure is not None:
                self.notify(markup=False, message=safe_line(failure), severity="warning")
            self.goto_target = None
        self._first_row()

    def _first_row(self) -> None:
        """Put the cursor on the first row (so that ↓ goes to the second), without showing it:
        the overview stays until the user moves."""
        tree = self.main_tree
        if tree.cursor_line >= 0 or tree.last_line < 0:
            return
        self._cursor_placed = True
        tree.cursor_line = 0

    def refresh_model(self) -> None:
        """Pick up what the model gained since the last call; the tree grows in place."""
        model = self.model
        tree = self.main_tree
        if model is None:
            self.update_status()
            return
        with self.session.lock:
            versions = self.session.versions()
            changed = versions != self._versions
            if changed:
                self._versions = versions
                if tree.root.data is None or tree.root.data.obj is not model:
                    tree.set_model(model)
                else:
                    tree.refresh_model()
        # The counts walk every compile: only when something moved.
        state = self._status_of(versions)
        if changed or state != self._status_state:
            self._status_state = state
            self.refresh_counts()
            self.update_status()
        # A one-shot load goes to its item once loaded (`_loaded`): read part way, an id that
        # two ranks share would be found in the first rank only.
        if self.goto_target and self.session.follow and self._goto(self.goto_target) is None:
            self.goto_target = None
        self._first_row()

    def _status_of(self, versions: tuple[int, ...]) -> tuple[object, ...]:
        """What the counts and status bar show depend on (the session's lock held)."""
        return (versions, len(self.session.notices), self.session.finished)

    @property
    def overview_shown(self) -> bool:
        """The reader shows the overview (no item picked since the start)."""
        return self._last_item is not None and self._last_item.kind == "root"

    def awaits_input(self) -> bool:
        """Whether more input may come (follow mode; a job that still runs): an empty input
        is then "waiting"."""
        return self.job.running() if self.job is not None else self.follow

    def refresh_counts(self) -> None:
        """The status bar's counts and, when it is shown, the overview: from one snapshot of
        the model, updated in the same refresh so that they never disagree."""
        model = self.model
        overview = self.overview_shown
        session = self.session
        with self.session.lock:
            summary = model.summary_counts() if model is not None else {}
            ranks = len(ranks_of(model)) if model is not None else 0
            picked = self.rank_filter
            counts = counts_in(model, picked) if model is not None and picked is not None else None
            done = session.finished
            state = input_state(model, self.source_path, self.awaits_input(), done)
            doc = None
            if overview:
                error = session.error if done and session.error else ""
                doc = overview_doc(
                    model, self.source_path, summary, state, error, picked, self._findings
                )
            export = model is not None and is_export(model)
            budget = recompile_budget(model) if model is not None and self.follow else None
        self._budget = budget.text() if budget is not None else ""
        self._records_shown = summary.get("records", 0)
        self._input_state = state
        self.status_right = counts_line(counts if counts is not None else summary)
        errors = summary.get("errors", 0)
        if errors != self._errors_shown or ranks != self._ranks_shown or export != self._export:
            self._errors_shown = errors
            self._ranks_shown = ranks
            self._export = export
            # The Errors, Ranks and Export keys show once they mean something.
            self.app.refresh_bindings()
        if doc is not None:
            self.workers.cancel_group(self, "content")  # an older item must not replace it
            self._show_doc(doc, keep_position=True)

    def update_status(self) -> None:
        """The status bar's left part: the job's status (tcview run), then the mode and
        progress first: the path is what gets cut on a narrow terminal."""
        parts = [self.job.status_text()] if self.job is not None else []
        parts.append("live" if self.follow else "static")
        if self.follow_newest:
            parts.append("following newest")
        notices = self.session.notices
        if notices:
            parts.append(notices[-1])
        if self._input_state is not None:
            parts.append(self._input_state.brief)
        if self.rank_filter is not None:
            parts.append(f"{ranks_label(self.rank_filter)} of {self._ranks_shown}")
        elif self._ranks_shown > 1:
            parts.append(f"{self._ranks_shown} ranks")
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

    @on(Tree.NodeHighlighted, "#tree")
    def _highlighted(self, event: Tree.NodeHighlighted[Item]) -> None:
        # The event's own tree: it may come while the app closes, its screens already gone.
        tree = event.node.tree
        if self._cursor_placed:
            # The first row, highlighted at start (perhaps again, as the tree grew in place):
            # the overview stays until the cursor leaves it.
            if tree.cursor_line == 0:
                return
            self._cursor_placed = False
        if self._show_timer is not None:
            self._show_timer.stop()
        item = event.node.data
        if isinstance(tree, TraceTree):
            tree.unmark(event.node)
        if self.auto_preview:
            self._show_timer = self.set_timer(0.04, lambda: self._show_now(item))

    @on(Tree.NodeSelected, "#tree")
    def _selected(self, event: Tree.NodeSelected[Item]) -> None:
        if not event.node.allow_expand:
            self._show_now(event.node.data)
            self.query_one("#reader", Reader).viewer.focus()
        elif not self.auto_preview or self.overview_shown:
            self._show_now(event.node.data)  # also the first row, highlighted but not yet shown

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
        self._provenance_of = None
        if isinstance(item.obj, Kernel):
            self.picked_kernel = item.obj
        if item.kind == "root":
            self.refresh_counts()  # the overview comes with the counts it shows
        else:
            self._build_doc(item)

    @work(thread=True, group="content", exclusive=True, exit_on_error=False, description="show")
    def _build_doc(self, item: Item) -> None:
        try:
            if isinstance(item.obj, Kernel) and self.model is not None:
                digest_namesakes(self.model, item.obj, self.session.lock)
            with self.session.lock:
                doc = doc_for(
                    item,
                    self.model,
                    self.source_path,
                    self.picked_kernel,
                    self.bencher.time_of,
                    self._findings,
                )
        except Exception as exc:  # noqa: BLE001 - a broken record must not end the app
            doc = styled_doc("error", [lit(f"could not show this item: {exc!r}", "red")])
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._show_doc, doc, False, item)

    def _show_doc(
        self, doc: Document, keep_position: bool = False, item: Item | None = None
    ) -> None:
        reader = self.query_one("#reader", Reader)
        reader.show(doc, keep_position)
        mark = self._pending_mark
        if mark is not None and item is not None and item.obj is mark[0]:
            self._pending_mark = None
            _obj, pattern, label, line = mark
            reader.viewer.mark(pattern, label, line)
            reader.viewer.focus()

    def show_item(self, item: Item) -> None:
        """Show now, bypassing the highlight debounce."""
        self._last_item = None
        self._show_now(item)

    def show_source(self, source: LogSource) -> None:
        """Select a trace file (or log) in the tree and show it."""
        tree = self.main_tree
        node = tree.node_showing(source)
        if node is not None and node.data is not None:
            tree.reveal_node(node)
            self.show_item(node.data)

    # ------------------------------------------------------------ navigation

    def _goto(self, target: str) -> str | None:
        """Reveal the item `target` names (`tcview show`'s grammar); else why not."""
        if self.model is None:
            return f"--goto {target}: nothing loaded"
        try:
            with self.session.lock:
                obj = locate(self.model, target)
        except ShowError as exc:
            return goto_failure(target, exc)
        self.reveal(type(obj).__name__.lower(), obj)
        return None

    def reveal(self, kind: str, obj: Target) -> bool:
        """Select a compile, kernel or record in the tree and show it."""
        tree = self.main_tree
        with self.session.lock:
            node = tree.reveal(obj, kind)
        if node is None:
            hidden = self._hidden_rank(obj)
            if hidden is not None:
                self.notify(
                    markup=False,
                    message=f"rank {hidden} is not shown: # picks the ranks shown",
                    severity="warning",
                )
            return False
        self._cursor_placed = False
        self.close_views()
        tree.reveal_node(node)
        if node.data is not None:
            self.show_item(node.data)
        tree.focus()
        return True

    def _hidden_rank(self, obj: Target) -> int | None:
        """The rank of `obj` when the rank filter hides it."""
        if self.rank_filter is None:
            return None
        if isinstance(obj, Compile):
            rank = obj.file.rank
        elif isinstance(obj, Kernel):
            rank = obj.output.source.rank
        elif isinstance(obj, Frame):
            rank = obj.file.rank
        else:
            rank = obj.source.rank
        return rank if rank not in self.rank_filter else None

    def action_filter_ranks(self) -> None:
        model = self.model
        if model is None:
            return
        with self.session.lock:
            labels = labels_of(model)
        self.app.push_screen(
            RankDialog("Show only these ranks", labels, self.rank_filter), self._picked_ranks
        )

    def _picked_ranks(self, picked: Picked | None) -> None:
        if picked is not None:
            self.set_rank_filter(picked.ranks)

    def set_rank_filter(self, ranks: RankSet) -> None:
        """Show only `ranks` (None: all) in the tree, the views and the status bar's counts."""
        self.rank_filter = ranks
        tree = self.main_tree
        tree.ranks = ranks
        tree.border_title = "compiles" if ranks is None else f"compiles · {ranks_label(ranks)}"
        with self.session.lock:
            tree.refresh_model()
        self.refresh_counts()
        self.update_status()
        self.app.refresh_bindings()
        for screen in self.app.screen_stack:
            if isinstance(screen, TableView) and not isinstance(screen, CompareView):
                screen.ranks = ranks
                screen.reload()
        self.notify(
            markup=False,
            message="all ranks shown" if ranks is None else f"showing {ranks_label(ranks)} only",
        )

    # ------------------------------------------------------------ views

    def action_view(self, name: str) -> None:
        view_cls = ALL_VIEWS[name]
        if self.app.screen is not self:
            if isinstance(self.app.screen, view_cls):
                return
            self.app.switch_screen(self.view(view_cls))
        else:
            self.app.push_screen(self.view(view_cls))

    def view(self, view_cls: ViewClass) -> TableView[Any] | OtherView:
        """A view on this session, with the rank filter and the benchmarks' times."""
        return view_cls(self.session, self.rank_filter, self.bencher.times)

    def action_back(self) -> None:
        if self.app.screen is not self:
            self.app.pop_screen()
        else:
            self.main_tree.focus()

    # ------------------------------------------------------------ provenance and diffs

    def _shown_object(self) -> object:
        item = self._last_item
        return item.obj if item is not None and item.kind != "root" else None

    def action_provenance(self) -> None:
        """A kernel's (or compile's) provenance in the pane; again: the item itself."""
        obj = self._shown_object()
        if not isinstance(obj, (Kernel, Compile, Record)):
            self.action_view("provenance")
            return
        item = self._last_item
        if self._provenance_of is obj and item is not None:
            self.show_item(item)
            return
        self._provenance_of = obj
        self._build_provenance(obj)

    @work(thread=True, group="content", exclusive=True, exit_on_error=False, description="why")
    def _build_provenance(self, obj: Kernel | Compile | Record) -> None:
        try:
            doc = provenance_doc(self.model, obj)
        except Exception as exc:  # noqa: BLE001 - a broken artifact must not end the app
            doc = styled_doc("error", [lit(f"could not read the provenance: {exc!r}", "red")])
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._show_doc, doc)

    def _shown_compile(self) -> Compile | None:
        obj = self._shown_object()
        if isinstance(obj, Compile):
            return obj
        if isinstance(obj, (Kernel, Record)):
            return obj.compile
        return None

    def action_mark(self) -> None:
        comp = self._shown_compile()
        if comp is None:
            self.notify(markup=False, message="pick a compile to mark it", severity="warning")
            return
        if self.diff_mark is comp:
            self.diff_mark = None
            self.notify(markup=False, message=f"{comp.id_label} is no longer marked")
            return
        self.diff_mark = comp
        self.notify(
            markup=False, message=f"marked {comp.id_label}: d on another compile diffs the two"
        )

    def action_diff(self) -> None:
        comp = self._shown_compile()
        if comp is None:
            self.notify(markup=False, message="pick a compile to diff", severity="warning")
            return
        mark = self.diff_mark
        other = mark if mark is not None and mark is not comp else predecessor(comp)
        if other is None:
            self.notify(
                markup=False,
                message=f"{comp.id_label} replaced no compile: m marks one to diff it with",
                severity="warning",
            )
            return
        self.app.push_screen(CompileDiffView(other, comp))

    # ------------------------------------------------------------ bench

    def action_bench(self) -> None:
        self.bencher.start(self.bench_target(), self.session)

    def bench_target(self) -> Compile | Kernel | Record | None:
        """What the bench key benchmarks: the kernels view's highlighted kernel, the time
        view's compile, or the tree's compile, output code or kernel."""
        screen = self.app.screen
        if isinstance(screen, TableView):
            return screen.bench_target()
        if screen is not self:
            return None
        node = self.main_tree.cursor_node
        obj = node.data.obj if node is not None and node.data is not None else None
        if isinstance(obj, (Compile, Kernel)):
            return obj
        if isinstance(obj, Record) and obj.kind in OUTPUT_CODE_KINDS:
            return obj
        return None

    @on(BenchFinished)
    def _bench_finished(self, message: BenchFinished) -> None:
        """A benchmark ended (the bencher posts here): show its result where the user is;
        the kernels view shows the times in a column."""
        message.stop()
        doc = message.doc
        screen = self.app.screen
        if isinstance(screen, TableView):
            screen.reload()
        reader = self._reader()
        if reader is not None:
            reader.show(doc)

    def _reader(self) -> Reader | None:
        readers = list(self.app.screen.query(Reader))
        return readers[0] if readers else None

    def action_search(self) -> None:
        reader = self._reader()
        if reader is not None:
            reader.open_search()

    # ------------------------------------------------------------ global search

    def action_global_search(self, text: str = "") -> None:
        """Show the global search (its last results stay); with `text`, search for it."""
        screen = self._search_screen
        if screen is None:
            screen = self._search_screen = SearchScreen(self.session)
            self.app.install_screen(screen, "global-search")
        if self.app.screen is not screen:
            self.close_views()
            self.app.push_screen(screen)  # its query line takes the focus (AUTO_FOCUS)
        elif not text:
            screen.focus_query()
        if text:
            screen.start(text)

    def _forget_search(self) -> None:
        screen = self._search_screen
        if screen is not None:
            screen.cancel()
            self._search_screen = None
            self.app.uninstall_screen(screen)

    def open_hit(self, hit: Hit, pattern: re.Pattern[str], label: str) -> None:
        """Show a hit's artifact (its kernel, for a line inside one) at the matching line."""
        if hit.record is None:
            self._open_other(hit, pattern, label)
            return
        target: Kernel | Record = hit.kernel if hit.kernel is not None else hit.record
        self._pending_mark = (target, pattern, label, hit.line)
        self.close_views()
        if isinstance(target, Kernel):
            item = Item("kernel", target, ("kernel", id(target)))
        else:
            item = Item("record", target, ("record", id(target)))
        if not self.reveal(item.kind, target):
            # Not in the tree (a run directory's TORCH_LOGS text): shown all the same.
            self.show_item(item)

    def _open_other(self, hit: Hit, pattern: re.Pattern[str], label: str) -> None:
        """Other output and unparsed lines: the Other view, at the line."""
        model = self.model
        display = hit.source.display if hit.source is not None else ""
        if hit.source is None and model is not None:
            logs = [m for m in (model, model.text) if m is not None and m.root == hit.path]
            display = logs[0].display if logs else model.display
        self.close_views()
        target = (display, hit.line, pattern, label)
        self.app.push_screen(OtherView(self.session, target=target))

    # ------------------------------------------------------------ take it with you

    def selected_object(self) -> object | None:
        """What `y`, `Y` and `e` act on: the row of a view, the hit of the global search,
        the tree's item, or (the viewer focused) the item it shows."""
        screen = self.app.screen
        if isinstance(screen, TableView):
            return screen.selected()
        if isinstance(screen, SearchScreen):
            hit = screen.selected()
            if hit is None:
                return None
            return hit.kernel or hit.record
        if screen is not self:
            return None
        if isinstance(self.focused, CodeView):
            item = self._last_item
        else:
            node = self.main_tree.cursor_node
            item = node.data if node is not None else None
        return item.obj if item is not None else None

    # y, Y and e read the item (a payload, from disk) in a worker: the UI goes on meanwhile.

    def action_copy(self) -> None:
        self._take(self.selected_object(), self._copy)

    def action_save(self) -> None:
        self._take(self.selected_object(), self._save)

    @work(thread=True, group="take", exclusive=True, exit_on_error=False, description="take")
    def _take(self, obj: object, then: Callable[[Taken], None]) -> None:
        problem = ""
        try:
            with self.session.lock:
                taken = copy_text(obj, self.model)
        except OSError as exc:
            taken, problem = None, f"could not read it: {exc}"
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._took, taken, problem, then)

    def _took(self, taken: Taken | None, problem: str, then: Callable[[Taken], None]) -> None:
        """The item's text (else the text the focused viewer shows) to `then`."""
        if problem:
            self.notify(markup=False, message=problem, severity="error")
            return
        if taken is None:
            focused = self.app.focused
            viewer = focused if isinstance(focused, CodeView) else None
            if viewer is None:
                reader = self._reader()
                viewer = reader.viewer if reader is not None else None
            if viewer is not None and viewer.doc.count:
                doc = viewer.doc
                text = "\n".join(doc.plain(i) for i in range(doc.count))
                taken = Taken(doc.title or "text shown", text, doc.title or "tcview")
        if taken is None or not taken.text:
            self.notify(markup=False, message="nothing to copy here", severity="warning")
            return
        then(taken)

    def _copy(self, taken: Taken) -> None:
        self.app.copy_to_clipboard(taken.text)
        note = (
            " (long: some terminals drop clipboard sequences this long; Y saves to a file)"
            if taken.size > OSC52_SAFE
            else ""
        )
        self.notify(
            markup=False,
            message=f"copied {taken.size} bytes ({safe_line(taken.what)}) to the clipboard"
            f" (OSC 52){note}",
        )

    def _save(self, taken: Taken) -> None:
        def save(path: str | None) -> None:
            if path is None:
                return
            try:
                size = write_text(path, taken.text)
            except OSError as exc:
                self.notify(
                    markup=False,
                    message=f"could not save {safe_line(path)}: {exc.strerror or exc}",
                    severity="error",
                )
                return
            self.notify(
                markup=False,
                message=f"saved {size} bytes ({safe_line(taken.what)}) to {safe_line(path)}",
            )

        self.app.push_screen(SaveScreen(taken, self.model), save)

    def action_edit(self) -> None:
        self._locate(self.selected_object(), isinstance(self.app.focused, CodeView))

    @work(thread=True, group="take", exclusive=True, exit_on_error=False, description="locate")
    def _locate(self, obj: object, in_viewer: bool) -> None:
        try:
            with self.session.lock:
                locations = locations_of(obj)
        except OSError:
            locations = []
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._located, locations, in_viewer)

    def _located(self, locations: list[Location], in_viewer: bool) -> None:
        if not locations:
            self.notify(markup=False, message="no source location here", severity="warning")
            return
        if len(locations) == 1 or not in_viewer:
            self.open_location(locations[0])
            return
        self.app.push_screen(
            LocationPicker(locations),
            lambda loc: self.open_location(loc) if loc is not None else None,
        )

    def open_location(self, location: Location) -> None:
        """Run the editor at the location (the app suspended meanwhile), if the file is here."""
        call = editor_call(location, self.path_map)
        if not call.argv:
            self.notify(markup=False, message=safe_line(call.problem), severity="warning")
            return
        app = self.app
        try:
            try:
                with app.suspend():
                    result = subprocess.run(call.argv, check=False)
            except SuspendNotSupported:
                if not app.is_headless:
                    self.notify(
                        markup=False,
                        message="this terminal cannot hand itself to an editor",
                        severity="error",
                    )
                    return
                # Headless (tests): no terminal to hand over; the editor runs as it is.
                result = subprocess.run(call.argv, check=False, stdin=subprocess.DEVNULL)
        except OSError as exc:
            self.notify(
                markup=False,
                message=f"could not run {safe_line(call.argv[0])}: {exc.strerror or exc}",
                severity="error",
            )
            return
        if result.returncode:
            self.notify(
                markup=False,
                message=f"{safe_line(call.argv[0])} exited with {result.returncode}",
                severity="warning",
            )


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
