"""The tcview app: the global keys and the help, over the browser screen.

The browser screen (browser.py) owns the model session, the tree, the reader and the views;
the app holds the keys that work everywhere (the browser's included: `b` opens the breaks view
from any view) and hands them, and the messages views and dialogs post up, to the browser.
`BrowserApp` is that part alone, over a browser screen it is given: `TcviewApp` (`tcview open`)
composes one over its input; run_app.RunApp (`tcview run`) composes one over the job's run
directory, with the job's pane in it.
"""

from __future__ import annotations

from dataclasses import replace

from textual import events, on
from textual.app import App
from textual.binding import Binding
from textual.containers import ScrollableContainer
from textual.reactive import reactive
from textual.screen import Screen

from tcview.analysis.paths import PathMap
from tcview.ingest.session import ModelSession
from tcview.model.objects import Model
from tcview.ui.bench import BENCH_BINDINGS, BenchDialog, CancelBenchDialog
from tcview.ui.browser import BrowserScreen
from tcview.ui.diffview import CompileDiffView
from tcview.ui.finder import ResultsTree, SearchScreen
from tcview.ui.help import HelpPlace, HelpScreen, bindings_of, spelled
from tcview.ui.messages import OpenHit, RanksPicked, Reveal, SearchAll, ShowSource
from tcview.ui.palette import TraceCommands
from tcview.ui.ranks_view import RankDialog, RanksView
from tcview.ui.reader import SearchBox
from tcview.ui.take import LocationPicker, SaveScreen
from tcview.ui.tree import TraceTree
from tcview.ui.viewer import CodeView
from tcview.ui.views import KernelsView, OtherView, ProvenanceView, TableView, TimeView, ViewTable

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
        "w",
        "view('findings')",
        "Findings",
        show=False,  # the overview leads with them and names the key
        id="view.findings",
        tooltip="findings: what went wrong, worst first; enter goes to a finding's evidence",
    ),
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
        "E",
        "view('errors')",
        "Errors",
        id="view.errors",
        tooltip="errors: the run crashed (uncaught tracebacks per rank, a non-zero exit code)",
    ),
    Binding(
        "t",
        "view('time')",
        "Time",
        id="view.time",
        tooltip="compile time: per compile and per phase",
    ),
    Binding(
        "a",
        "view('ranks')",
        "Ranks",
        id="view.ranks",
        tooltip="ranks: which compiled differently, and where it began",
    ),
    Binding(
        "number_sign",
        "filter_ranks",
        "Pick ranks",
        key_display="#",
        show=False,  # the footer is full; the Ranks view and the help name it
        id="app.rank-filter",
        tooltip="show only some ranks: 1, 0,2, 0-3 (empty: all)",
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
        "X",
        "view('export')",
        "Export",
        id="view.export",
        tooltip="export: the draft-export report (guards, data-dependent errors, fake kernels)",
    ),
    Binding(
        "i",
        "provenance",
        "Provenance",
        id="app.provenance",
        tooltip="provenance: a kernel's FX nodes and user lines (again: back); elsewhere, "
        "every user line and the kernels that implement it",
    ),
    Binding(
        "P",
        "view('provenance')",
        "Lines",
        show=False,
        id="view.provenance",
        tooltip="provenance view: user lines (or FX nodes, N) and their kernels",
    ),
    Binding(
        "d",
        "diff",
        "Diff",
        show=False,
        id="app.diff",
        tooltip="diff this compile with the marked one, else with the compile it replaced",
    ),
    Binding(
        "m",
        "mark",
        "Mark",
        show=False,
        id="app.mark",
        tooltip="mark this compile: d on another compile diffs the two",
    ),
    Binding(
        "S",
        "global_search",
        "Search all",
        show=False,
        id="app.global-search",
        tooltip="search every payload of the trace and its TORCH_LOGS text",
    ),
    Binding(
        "y",
        "copy",
        "Copy",
        show=False,
        id="app.copy",
        tooltip="copy the item (kernel source, graph, guards, break, stack, detail) to the"
        " clipboard: OSC 52, works over ssh and tmux",
    ),
    Binding(
        "Y",
        "save",
        "Save",
        show=False,
        id="app.save",
        tooltip="save the item to a file (asks where; never into the trace directory)",
    ),
    Binding(
        "e",
        "edit",
        "Edit",
        show=False,
        id="app.edit",
        tooltip="open the item's source line in $VISUAL/$EDITOR (in the viewer: pick from its"
        " stack)",
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
    *BENCH_BINDINGS,
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


class BrowserApp(App[int]):
    """The keys that work everywhere, handed to `browser`, the messages it gets from below,
    and the help: what `tcview open` and `tcview run` share. It makes no screen of its own."""

    CSS_PATH = "app.tcss"
    TITLE = "tcview"
    ENABLE_COMMAND_PALETTE = True
    COMMANDS = App.COMMANDS | {TraceCommands}

    BINDINGS = [QUIT, *BROWSE_BINDINGS, *TEXTUAL_BINDINGS]

    # What every screen's StatusBar shows: the browser's status, mirrored.
    status_left: reactive[str] = reactive("")
    status_right: reactive[str] = reactive("")

    def __init__(self, browser: BrowserScreen) -> None:
        super().__init__()
        self.animation_level = "none"
        self.browser = browser

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
        """The browser's tree, also while a view's screen is on top."""
        return self.browser.main_tree

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.browser.allows(action, parameters)

    def get_key_display(self, binding: Binding) -> str:
        """Modifiers spelled one way everywhere (footer, help, texts): ``ctrl+p`` as
        ``shift+tab``, never Textual's ``^p``."""
        return spelled(super().get_key_display(binding), binding)

    def on_key(self, event: events.Key) -> None:
        """The rank keys are off on a trace of one rank (no binding took the key): say why."""
        if event.key in ("a", "number_sign") and not self.browser.allows("filter_ranks", ()):
            self.notify("one rank in this trace: no ranks to compare (a) or pick (#)", markup=False)

    # ------------------------------------------------------------ messages up

    @on(Reveal)
    def _reveal(self, message: Reveal) -> None:
        self.browser.reveal(message.kind, message.obj)

    @on(ShowSource)
    def _show_source(self, message: ShowSource) -> None:
        self.browser.show_source(message.source)

    @on(OpenHit)
    def _open_hit(self, message: OpenHit) -> None:
        self.browser.open_hit(message.hit, message.pattern, message.label)

    @on(SearchAll)
    def _search_all(self, message: SearchAll) -> None:
        self.browser.action_global_search(message.text)

    @on(RanksPicked)
    def _ranks_picked(self, message: RanksPicked) -> None:
        self.browser.set_rank_filter(message.ranks)

    # ------------------------------------------------------------ the browser's keys, anywhere

    def action_view(self, name: str) -> None:
        self.browser.action_view(name)

    async def action_back(self) -> None:
        self.browser.action_back()

    def action_filter_ranks(self) -> None:
        self.browser.action_filter_ranks()

    def action_search(self) -> None:
        self.browser.action_search()

    def action_global_search(self, text: str = "") -> None:
        self.browser.action_global_search(text)

    def action_provenance(self) -> None:
        self.browser.action_provenance()

    def action_diff(self) -> None:
        self.browser.action_diff()

    def action_mark(self) -> None:
        self.browser.action_mark()

    def action_bench(self) -> None:
        self.browser.action_bench()

    def action_copy(self) -> None:
        self.browser.action_copy()

    def action_save(self) -> None:
        self.browser.action_save()

    def action_edit(self) -> None:
        self.browser.action_edit()

    def action_toggle_follow(self) -> None:
        self.browser.action_toggle_follow()

    def action_toggle_preview(self) -> None:
        self.browser.action_toggle_preview()

    # ------------------------------------------------------------ help

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
                "Views (b r K f t a o X P, and d: a compile diff)",
                [
                    *bindings_of(TableView),
                    *bindings_of(ViewTable),
                    *bindings_of(KernelsView, inherited=False),
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
            ),
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
                [*bindings_of(SearchScreen, inherited=False), *bindings_of(ResultsTree)],
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


class TcviewApp(BrowserApp):
    """The browser over one input (`tcview open`)."""

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
        profile: str | None = None,
    ) -> None:
        super().__init__(
            BrowserScreen(
                path,
                goto=goto,
                follow=follow,
                model=model,
                poll=poll,
                stdin_fd=stdin_fd,
                path_map=path_map,
                no_exec=no_exec,
                python=python,
                profile=profile,
            )
        )
