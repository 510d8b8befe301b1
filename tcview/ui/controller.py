"""Where the browser is and what it shows, as plain state: no widget, no Textual.

The browser screen (browser.py) asks `BrowserController` what a key or a message leads to and
draws what it says. It keeps the panes on the back stack (the tree and its reader at the
bottom; a view, a compile diff, two ranks compared or the global search above), the item the
reader shows, the targets still to reveal (--goto, a search hit's line), the rank filter, the
compile marked for a diff, and which keys mean something now. So the navigation is tested on
a real model without an app (tests/test_ui_controller.py).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from typing import Literal, TypeAlias

from tcview.analysis.diff import predecessor
from tcview.model.objects import Compile, Frame, Kernel, Model, Record
from tcview.model.ranks import RankSet, ranks_label
from tcview.report.items import ShowError, goto_failure, locate
from tcview.report.search import Hit
from tcview.ui.items import Item

Target: TypeAlias = Compile | Frame | Kernel | Record  # what the tree can reveal
Severity: TypeAlias = Literal["information", "warning", "error"]


@dataclass(frozen=True)
class Note:
    """What to tell the user (a notification)."""

    message: str
    severity: Severity = "information"


@dataclass(frozen=True)
class LineMark:
    """A global search's match to mark: where (a line of the artifact shown, or of a file's
    other output: `display`), and how (its pattern and the query's label)."""

    line: int
    pattern: re.Pattern[str]
    label: str
    display: str = ""


# The panes. One is shown at a time; each is its own object, so that a view shown twice on
# the stack (say, after a diff) is two panes.


@dataclass(eq=False)
class TreePane:
    """The tree and the reader: the bottom of the back stack."""


@dataclass(eq=False)
class ViewPane:
    """A view, by the name its key opens (breaks, kernels, other...); the Other view `at` a
    search hit's line."""

    name: str
    at: LineMark | None = None


@dataclass(eq=False)
class DiffPane:
    """Compile `a` against compile `b`."""

    a: Compile
    b: Compile


@dataclass(eq=False)
class ComparePane:
    """Two ranks' compiles side by side."""

    left: int
    right: int


@dataclass(eq=False)
class SearchPane:
    """The global search: one for the session, so that its results stay between visits."""


Pane: TypeAlias = TreePane | ViewPane | DiffPane | ComparePane | SearchPane


class BrowserController:
    """The browser's navigation and selection.

    `stack`: the panes, the one shown last (the tree first, always there). A view's key opens
    it over the tree, or in place of the pane shown; escape closes the pane shown; going to an
    item in the tree closes them all.
    """

    def __init__(self, goto: str | None = None, follow: bool = False, preview: bool = True):
        """`goto`: an item to go to once the model is read; `follow`: the input is live (the
        follow key means something); `preview`: show the item the tree's cursor is on as it
        moves (else on enter)."""
        self.tree = TreePane()
        self.search = SearchPane()
        self.stack: list[Pane] = [self.tree]
        self.goto_target = goto
        self.follow = follow
        self.follow_newest = False  # keep the newest compile selected (live)
        self.newest: Compile | None = None  # the newest compile revealed so far
        self.auto_preview = preview
        self.rank_filter: RankSet = None  # the ranks picked with `#` (None: all)
        self.diff_mark: Compile | None = None  # the compile marked with `m`
        # The item the reader shows (the root: the overview), the kernel picked last (a graph
        # marks its nodes), and the object whose provenance the reader shows (`i` again goes
        # back to the item).
        self.shown_item: Item | None = None
        self.picked_kernel: Kernel | None = None
        self.provenance_of: object = None
        # The tree's cursor is still where the start put it (the first row): a highlight there
        # keeps the overview.
        self.cursor_placed = False
        # A global search's hit being opened: its object and the match to mark there, until
        # its document is shown.
        self.pending_hit: tuple[object, LineMark] | None = None
        # What the model's counts said last: which keys mean something (Errors, Ranks, Export).
        self.errors = 0
        self.ranks = 0
        self.export = False

    # ------------------------------------------------------------ panes

    @property
    def shown(self) -> Pane:
        """The pane shown now."""
        return self.stack[-1]

    @property
    def at_tree(self) -> bool:
        return len(self.stack) == 1

    def open_view(self, name: str) -> bool:
        """The view `name`: over the tree, or in place of the pane shown; False when that view
        is what is shown already."""
        top = self.shown
        if isinstance(top, ViewPane) and top.name == name:
            return False
        pane = ViewPane(name)
        if self.at_tree:
            self.stack.append(pane)
        else:
            self.stack[-1] = pane
        return True

    def open_search(self) -> bool:
        """The global search, over the tree (the views close); False when it is shown."""
        if self.shown is self.search:
            return False
        self.close_views()
        self.stack.append(self.search)
        return True

    def open_lines(self, at: LineMark) -> ViewPane:
        """The Other view at a search hit's line, over the tree (the views close)."""
        self.close_views()
        pane = ViewPane("other", at)
        self.stack.append(pane)
        return pane

    def compare(self, left: int, right: int) -> ComparePane:
        """Two ranks side by side, over the pane shown (escape: back to it)."""
        pane = ComparePane(left, right)
        self.stack.append(pane)
        return pane

    def back(self) -> bool:
        """Close the pane shown: the one under it shows again. False at the tree."""
        if self.at_tree:
            return False
        self.stack.pop()
        return True

    def close_views(self) -> bool:
        """Back to the tree; False when it is shown already."""
        if self.at_tree:
            return False
        del self.stack[1:]
        return True

    # ------------------------------------------------------------ what the reader shows

    def show(self, item: Item | None) -> bool:
        """`item` is to be shown (the cursor moved, enter); False when it is shown already."""
        if item is None or item is self.shown_item:
            return False
        self.shown_item = item
        self.provenance_of = None
        if isinstance(item.obj, Kernel):
            self.picked_kernel = item.obj
        return True

    def show_again(self, item: Item) -> bool:
        """`item` is to be shown, even if it is shown already (a reveal, a search hit)."""
        self.shown_item = None
        return self.show(item)

    def start(self, root: Item | None) -> None:
        """The reader shows the overview (`root`: the tree's root), until an item is picked;
        unless an item is shown already."""
        if self.shown_item is None:
            self.shown_item = root

    def new_source(self) -> None:
        """Another source is shown (a rerun's directory): nothing of the old one is shown."""
        self.shown_item = None
        self.newest = None

    def toggle_preview(self) -> Note:
        """`p`: show the item under the cursor as it moves, or only on enter."""
        self.auto_preview = not self.auto_preview
        return Note("preview as you move" if self.auto_preview else "preview on enter")

    @property
    def overview_shown(self) -> bool:
        """The reader shows the overview (no item picked since the start)."""
        return self.shown_item is not None and self.shown_item.kind == "root"

    def place_cursor(self) -> None:
        """The cursor was put on the first row at the start: the overview stays."""
        self.cursor_placed = True

    def cursor_moved(self) -> None:
        """The cursor was moved to an item on purpose (a reveal): its highlight shows it."""
        self.cursor_placed = False

    def highlighted(self, line: int) -> bool:
        """The tree's cursor is on `line`: whether that is the user's move (the first row,
        highlighted at the start, or again as the tree grew in place, is not)."""
        if self.cursor_placed:
            if line == 0:
                return False
            self.cursor_placed = False
        return True

    def shown_object(self) -> object:
        """The model object the reader shows (None: the overview, or nothing)."""
        item = self.shown_item
        return item.obj if item is not None and item.kind != "root" else None

    def shown_compile(self) -> Compile | None:
        """The compile of what the reader shows: itself, a kernel's or an artifact's."""
        obj = self.shown_object()
        if isinstance(obj, Compile):
            return obj
        if isinstance(obj, (Kernel, Record)):
            return obj.compile
        return None

    def provenance(self) -> Kernel | Compile | Record | Item | None:
        """What `i` shows: the provenance of the kernel, compile or artifact shown (returned:
        build it); the item itself when its provenance is shown already (returned: show it
        again); None when the reader shows nothing of the kind (open the Provenance view)."""
        obj = self.shown_object()
        if not isinstance(obj, (Kernel, Compile, Record)):
            return None
        item = self.shown_item
        if self.provenance_of is obj and item is not None:
            self.provenance_of = None
            return item
        self.provenance_of = obj
        return obj

    # ------------------------------------------------------------ marks and diffs

    def mark(self) -> Note:
        """`m`: mark the compile shown (again: unmark it), for `d` on another."""
        comp = self.shown_compile()
        if comp is None:
            return Note("pick a compile to mark it", "warning")
        if self.diff_mark is comp:
            self.diff_mark = None
            return Note(f"{comp.id_label} is no longer marked")
        self.diff_mark = comp
        return Note(f"marked {comp.id_label}: d on another compile diffs the two")

    def diff(self) -> DiffPane | Note:
        """`d`: the compile shown against the marked one, else against the compile it
        replaced; the diff opens over the pane shown. A note when there is nothing to diff."""
        comp = self.shown_compile()
        if comp is None:
            return Note("pick a compile to diff", "warning")
        mark = self.diff_mark
        other = mark if mark is not None and mark is not comp else predecessor(comp)
        if other is None:
            return Note(
                f"{comp.id_label} replaced no compile: m marks one to diff it with", "warning"
            )
        pane = DiffPane(other, comp)
        self.stack.append(pane)
        return pane

    # ------------------------------------------------------------ targets

    def locate(self, model: Model, target: str) -> Target | str:
        """The item `target` names (`tcview show`'s grammar), else why not."""
        try:
            return locate(model, target)
        except ShowError as exc:
            return goto_failure(target, exc)

    def open_hit(
        self, hit: Hit, pattern: re.Pattern[str], label: str, model: Model | None
    ) -> Kernel | Record | None:
        """A global search hit to open: its kernel (a line inside one) or artifact, to reveal,
        the views closed, its match marked once it is shown. None for a line of other output:
        the Other view opens at it."""
        mark = LineMark(hit.line, pattern, label)
        if hit.record is None:
            display = hit.source.display if hit.source is not None else ""
            if hit.source is None and model is not None:
                logs = [m for m in (model, model.text) if m is not None and m.root == hit.path]
                display = logs[0].display if logs else model.display
            self.open_lines(replace(mark, display=display))
            return None
        target = hit.kernel if hit.kernel is not None else hit.record
        self.expect_hit(target, mark)
        self.close_views()
        return target

    def expect_hit(self, obj: object, mark: LineMark) -> None:
        """A search hit in `obj` is being opened: its match is marked once `obj` is shown."""
        self.pending_hit = (obj, mark)

    def hit_in(self, obj: object) -> LineMark | None:
        """The match to mark now that `obj` is shown, if a hit in it was being opened."""
        pending = self.pending_hit
        if pending is None or pending[0] is not obj:
            return None
        self.pending_hit = None
        return pending[1]

    def toggle_follow(self) -> Note:
        """`F`: keep the newest compile selected, or leave the view where it is."""
        self.follow_newest = not self.follow_newest
        self.newest = None
        return Note("following the newest compile" if self.follow_newest else "view stays put")

    def newest_compile(self, model: Model | None) -> Compile | None:
        """While following the newest: the model's newest compile, when it is not the one
        revealed last (None: nothing to do)."""
        compiles = model.compiles if model is not None else []
        newest = compiles[-1] if compiles else None
        if newest is None or newest is self.newest:
            return None
        self.newest = newest
        return newest

    # ------------------------------------------------------------ ranks

    def filter_ranks(self, ranks: RankSet) -> Note:
        """Show only `ranks` (None: all) from now on."""
        self.rank_filter = ranks
        return Note("all ranks shown" if ranks is None else f"showing {ranks_label(ranks)} only")

    def hidden_rank(self, obj: Target) -> int | None:
        """The rank of `obj` when the rank filter hides it."""
        if self.rank_filter is None:
            return None
        if isinstance(obj, (Compile, Frame)):
            rank = obj.file.rank
        elif isinstance(obj, Kernel):
            rank = obj.output.source.rank
        else:
            rank = obj.source.rank
        return rank if rank not in self.rank_filter else None

    # ------------------------------------------------------------ keys

    def counted(self, errors: int, ranks: int, export: bool) -> bool:
        """The model's counts now (errors, ranks, a torch.export trace); True when that
        changes which keys mean something."""
        changed = (errors, ranks, export) != (self.errors, self.ranks, self.export)
        self.errors, self.ranks, self.export = errors, ranks, export
        return changed

    def allows(self, action: str, parameters: tuple[object, ...]) -> bool:
        """Whether a browser key means something now (and shows in the footer)."""
        if action == "toggle_follow":
            return self.follow  # only when following
        if action == "view" and parameters == ("errors",):
            return self.errors > 0  # the run crashed
        if (action == "view" and parameters == ("ranks",)) or action == "filter_ranks":
            return self.ranks > 1 or self.rank_filter is not None
        if action == "view" and parameters == ("export",):
            return self.export  # a torch.export trace
        return True


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
