"""The `?` overlay: every key, and what each view answers."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS = [
    (
        "Anywhere",
        [
            ("q", "quit"),
            ("?", "this help"),
            ("ctrl+p", "jump to a compile id, kernel or file"),
            ("tab / shift+tab", "next / previous pane"),
            ("escape", "back to the tree (from a view or the search box)"),
        ],
    ),
    (
        "Views",
        [
            ("b", "graph breaks: de-duplicated, with counts, reason, hints, location"),
            ("r", "recompiles: per frame, each compile and the guard that failed"),
            ("K", "kernels: every kernel; type to filter by name or kind"),
            ("f", "failures"),
            ("t", "compile time: per compile and per phase"),
            ("o", "other output: text-log lines and unparsed lines"),
            ("enter", "in a view: jump to the compile, or show the kernel source"),
        ],
    ),
    (
        "Tree",
        [
            ("↑ ↓  j k", "move"),
            ("→ l / ← h", "expand / collapse (or go to parent)"),
            ("enter / space", "expand, or open the item in the viewer"),
            ("g / G", "first / last"),
            ("p", "preview as you move, or only on enter (the default over SSH)"),
            ("mouse", "click to select, wheel to scroll"),
        ],
    ),
    (
        "Viewer",
        [
            ("↑ ↓  j k", "scroll a line"),
            ("← → h l", "scroll sideways (long lines)"),
            ("pgup pgdn space", "scroll a page"),
            ("g / G", "top / bottom"),
            ("/", "search (case-insensitive unless the text has capitals)"),
            ("n / N", "next / previous match"),
        ],
    ),
    (
        "Live (--follow, tcview open -, tcview run)",
        [
            ("F", "keep the newest compile selected, or leave the view where it is"),
            ("new", "marks items that arrived since you opened; gone once visited"),
        ],
    ),
    (
        "Run (tcview run)",
        [
            ("R", "the job's output: beside the browser, full screen, hidden"),
            ("x", "stop the job: SIGINT, then SIGTERM, then SIGKILL (x again: now)"),
            ("q", "while the job runs: asks, then stops it and quits"),
            ("r", "after the job ended: rerun it into a new run directory"),
            ("c", "recompiles view (r reruns here)"),
            ("output", "stderr lines are orange; scroll up to pause, G to follow"),
        ],
    ),
    (
        "Status bar",
        [
            ("left", "job status (tcview run), static or live, indexing progress, path"),
            ("right", "compiles · breaks · recompiles · kernels, as `tcview summary --json`"),
        ],
    ),
]


def help_text() -> Text:
    text = Text()
    text.append("tcview keys\n", style="bold")
    for section, rows in KEYS:
        text.append(f"\n{section}\n", style="bold underline")
        for key, what in rows:
            text.append(f"  {key:<18}", style="bold cyan")
            text.append(f"{what}\n")
    text.append("\nStatus marks: ", style="dim")
    for mark, what, style in (
        ("✓", "ok", "green"),
        ("✂", "graph break", "yellow"),
        ("↻", "recompile", "cyan"),
        ("✗", "failed", "red"),
        ("●", "cache hit", "blue"),
    ):
        text.append(f"{mark} {what}  ", style=style)
    text.append("\n\nPress escape, q or ? to close.", style="dim")
    return text


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,q,question_mark", "dismiss", "Close"),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(help_text())

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)
