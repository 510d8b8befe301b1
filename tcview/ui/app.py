"""The tcview app: the keys of every screen (quit, help, the palette) over the browser screen.

The browser screen (browser.py) owns the model session, the tree, the reader, the panes over
them and its keys; the app holds what works on every screen, mirrors the browser's status for
every status bar, and hands the browser what the palette asks for (its messages come up to the
app). `BrowserApp` is that part alone, over a browser screen it is given: `TcviewApp` (`tcview
open`) composes one over its input; run_app.RunApp (`tcview run`) composes one over the job's
run directory, with the job's pane in it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from textual import on
from textual.app import App
from textual.binding import Binding
from textual.containers import ScrollableContainer
from textual.reactive import reactive
from textual.screen import Screen

from tcview.ingest.session import ModelSession
from tcview.model.objects import Model
from tcview.ui.bench import BenchDialog, CancelBenchDialog
from tcview.ui.browser import BrowserBase, BrowserScreen
from tcview.ui.diffview import CompileDiffView
from tcview.ui.finder import ResultsTree, SearchView
from tcview.ui.help import HelpPlace, HelpScreen, bindings_of, spelled
from tcview.ui.kernels_view import KernelsView
from tcview.ui.keys import APP_BINDINGS, Keymap, key_now, remap
from tcview.ui.messages import Reveal, SearchAll, ShowSource
from tcview.ui.options import OpenOptions
from tcview.ui.other_view import OtherView
from tcview.ui.palette import TraceCommands
from tcview.ui.profile_view import ProfileView
from tcview.ui.provenance_view import ProvenanceView
from tcview.ui.ranks_view import RankDialog, RanksView
from tcview.ui.reader import SearchBox
from tcview.ui.table_view import TableView, ViewTable
from tcview.ui.take import LocationPicker, SaveScreen
from tcview.ui.tree import TraceTree
from tcview.ui.viewer import CodeView
from tcview.ui.views import TimeView


class BrowserApp(App[int]):
    """The keys of every screen, the browser's status for every status bar, the palette's
    picks handed to the browser, and the help: what `tcview open` and `tcview run` share. It
    makes no screen of its own."""

    CSS_PATH = "app.tcss"
    TITLE = "tcview"
    ENABLE_COMMAND_PALETTE = True
    COMMANDS = App.COMMANDS | {TraceCommands}

    BINDINGS = [*APP_BINDINGS]
    SCREEN: ClassVar[type[BrowserBase]] = BrowserScreen  # whose keys the help lists

    # What every screen's StatusBar shows: the browser's status, mirrored.
    status_left: reactive[str] = reactive("")
    status_right: reactive[str] = reactive("")

    def __init__(self, browser: BrowserBase) -> None:
        super().__init__()
        self.animation_level = "none"
        self.browser = browser
        # The user's keys (checked by the command that read them). Textual's keymap moves the
        # bindings of these ids in every screen and widget, those made later included, and
        # unbinds their default keys; the help and the hints, built from the classes'
        # bindings, apply the same keymap (`help_places_now`, `get_key_display`).
        self.user_keymap: Keymap = dict(browser.options.keymap or {})
        if self.user_keymap:
            self.set_keymap(self.user_keymap)

    def get_default_screen(self) -> Screen[None]:
        return self.browser

    def on_mount(self) -> None:
        self.watch(self.browser, "status_left", self._mirror_left)
        self.watch(self.browser, "status_right", self._mirror_right)

    def _mirror_left(self, value: str) -> None:
        self.status_left = value

    def _mirror_right(self, value: str) -> None:
        self.status_right = value

    @property
    def model_session(self) -> ModelSession:
        """The browser's model session (the palette reads the model through it)."""
        return self.browser.session

    @property
    def model(self) -> Model | None:
        return self.browser.model

    @property
    def main_tree(self) -> TraceTree:
        """The browser's tree, also while a dialog is on top."""
        return self.browser.main_tree

    def get_key_display(self, binding: Binding) -> str:
        """Modifiers spelled one way everywhere (footer, help, texts): ``ctrl+p`` as
        ``shift+tab``, never Textual's ``^p``. A class's binding that the user's keymap moved
        shows its new key: the hints name keys from the classes' bindings."""
        binding = key_now(binding, self.user_keymap)
        return spelled(super().get_key_display(binding), binding)

    # ------------------------------------------------------------ the palette's picks

    @on(Reveal)
    def _reveal(self, message: Reveal) -> None:
        self.browser.reveal(message.kind, message.obj)

    @on(ShowSource)
    def _show_source(self, message: ShowSource) -> None:
        self.browser.show_source(message.source)

    @on(SearchAll)
    async def _search_all(self, message: SearchAll) -> None:
        await self.browser.action_global_search(message.text)

    # ------------------------------------------------------------ help

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.help_places_now()))

    def help_places_now(self) -> list[HelpPlace]:
        """`help_places` under the user's keymap: each binding under the keys it has now."""
        return [
            replace(place, bindings=remap(place.bindings, self.user_keymap))
            for place in self.help_places()
        ]

    @classmethod
    def help_places(cls) -> list[HelpPlace]:
        """Where this app's keys live, for the help: each place's bindings and notes."""
        return [
            HelpPlace(
                "Anywhere",
                [
                    *bindings_of(cls.SCREEN, inherited=False),
                    *bindings_of(cls),
                    *bindings_of(Screen),
                ],
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
            views_place(),
            HelpPlace("Picking ranks (# and c)", bindings_of(RankDialog, inherited=False)),
            HelpPlace(
                "Benchmark dialogs (B; B while one runs)",
                [
                    *bindings_of(BenchDialog, inherited=False),
                    *bindings_of(CancelBenchDialog, inherited=False),
                ],
            ),
            HelpPlace(
                "Global search (S)",
                [*bindings_of(SearchView, inherited=False), *bindings_of(ResultsTree)],
                [
                    ("query", "enter searches; results stream in, grouped by compile"),
                    ("not searched", "chromium timing events, the string table, describe_*"),
                ],
            ),
            HelpPlace(
                "Save (Y) and pick a location (e in the viewer)",
                [
                    *bindings_of(SaveScreen, inherited=False),
                    *bindings_of(LocationPicker, inherited=False),
                ],
                [("tmux", "y needs `set -g set-clipboard on` in ~/.tmux.conf")],
            ),
            HelpPlace(
                "Status bar",
                [],
                [
                    (
                        "left",
                        "job status and its GPU use (tcview run; NVML), static or live, ranks"
                        " (those picked with #), indexing progress, path",
                    ),
                    (
                        "right",
                        "compiles · breaks · recompiles · kernels, as `tcview summary` (of the"
                        " ranks picked)",
                    ),
                ],
            ),
            HelpPlace("Help", bindings_of(HelpScreen)),
        ]


def views_place() -> HelpPlace:
    """The help's place for the views' keys (each pane's own, and their tables')."""
    return HelpPlace(
        "Views (b r K M f t a o X P, and d: a compile diff)",
        [
            *bindings_of(TableView),
            *bindings_of(ViewTable),
            *bindings_of(KernelsView, inherited=False),
            *bindings_of(ProfileView, inherited=False),
            *bindings_of(TimeView, inherited=False),
            *bindings_of(RanksView, inherited=False),
            *bindings_of(OtherView, inherited=False),
            *bindings_of(ProvenanceView, inherited=False),
            *bindings_of(CompileDiffView, inherited=False),
        ],
        [
            ("kernels view", "type to filter by name or kind; ↓ to the list"),
            ("ranks view", "enter shows only the ranks of the row"),
        ],
    )


class TcviewApp(BrowserApp):
    """The browser over one input (`tcview open`): a path opens it as `tcview open PATH`."""

    def __init__(self, options: OpenOptions | str) -> None:
        super().__init__(
            BrowserScreen(OpenOptions(options) if isinstance(options, str) else options)
        )
