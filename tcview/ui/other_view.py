"""The Other view (`o`): the lines of the input that are not trace records (text-log lines,
unparsed lines), each file's path said once; a global search's hit in them opens it at its
line."""

from __future__ import annotations

import re
from collections.abc import Hashable
from dataclasses import dataclass

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from tcview.ingest.session import ModelSession
from tcview.model.objects import (
    Model,
)
from tcview.model.ranks import (
    RankSet,
)
from tcview.run.bench import KernelTime
from tcview.ui.content import (
    Document,
)
from tcview.ui.pane import BrowserPane
from tcview.ui.reader import Reader

# ---------------------------------------------------------------- other output


OTHER_LIMIT = 100_000


@dataclass
class OtherLines:
    """The other output of one file: its path said once, then its lines (number, text)."""

    display: str
    what: str  # "unparsed lines", "lines that are not log messages"
    lines: list[tuple[int, str]]


def other_output(model: Model) -> list[OtherLines]:
    """Unparsed lines and text-log output, file by file, at most OTHER_LIMIT lines in all
    (read from disk)."""
    out: list[OtherLines] = []
    left = OTHER_LIMIT
    for tf in list(model.files):
        unparsed = tf.unparsed[:left]
        if not unparsed:
            continue
        lines = [
            (lineno, tf.line_at(offset, 1 << 16).decode("utf-8", "replace"))
            for offset, lineno in unparsed
        ]
        out.append(OtherLines(tf.display, "unparsed lines", lines))
        left -= len(lines)
    for log in (model, model.text):
        if log is None or not log.other or left <= 0:
            continue
        other = log.other
        lines = [(other[i].lineno, other[i].text) for i in range(min(len(other), left))]
        out.append(OtherLines(log.display, "lines that are not log messages", lines))
        left -= len(lines)
    return out


def other_doc(groups: list[OtherLines]) -> tuple[Document, dict[tuple[str, int], int]]:
    """The Other view's text: each file's path once, then its lines, numbered as in the
    file; and where each (path, line number) is in it."""
    lines: list[str] = []
    where: dict[tuple[str, int], int] = {}
    width = max((len(str(n)) for g in groups for n, _ in g.lines[-1:]), default=1)
    for group in groups:
        if lines:
            lines.append("")
        lines.append(f"{group.display} · {len(group.lines)} {group.what}")
        for lineno, text in group.lines:
            where.setdefault((group.display, lineno), len(lines))
            lines.append(f"  {lineno:>{width}}  {text}")
    doc = Document("other output", lines or ["(none: every line was parsed)"], numbered=False)
    return doc, where


class OtherView(BrowserPane):
    BINDINGS = [Binding("escape", "close", "Back to tree", id="view.close")]
    AUTO_FOCUS = "Reader CodeView"

    def __init__(
        self,
        session: ModelSession,
        ranks: RankSet = None,
        times: dict[Hashable, KernelTime] | None = None,
        target: tuple[str, int, re.Pattern[str], str] | None = None,
    ) -> None:
        """`target`: (path, line number, pattern, label): go to that line of that file,
        marking a global search's matches (the other output is every rank's: `ranks` and
        `times` are for a view's common signature)."""
        super().__init__()
        self.session = session
        self.target = target

    def compose(self) -> ComposeResult:
        yield Static(id="view-head", classes="view-head")
        yield Reader(id="other-reader")

    def on_mount(self) -> None:
        self.query_one("#view-head", Static).update(Text("Other output  reading…", style="dim"))
        self._load()

    @work(thread=True, group="other", exclusive=True, exit_on_error=False, description="other")
    def _load(self) -> None:
        """Read the lines off the UI thread (they come from disk, one read each)."""
        model = self.session.model
        groups: list[OtherLines] = []
        if model is not None:
            groups = other_output(model)
        self.app.call_from_thread(self._show, groups)

    def _show(self, groups: list[OtherLines]) -> None:
        total = sum(len(g.lines) for g in groups)
        head = Text.assemble(
            ("Other output", "bold"),
            "  ",
            (
                f"{total} lines that are not trace records (log lines, unparsed lines)"
                " · / search · esc: back",
                "dim",
            ),
        )
        self.query_one("#view-head", Static).update(head)
        doc, where = other_doc(groups)
        reader = self.query_one(Reader)
        reader.show(doc)
        if self.target is not None:
            display, lineno, pattern, label = self.target
            index = where.get((display, lineno), -1)
            reader.viewer.mark(pattern, label, index + doc.first_lineno)
