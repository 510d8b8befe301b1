"""The status bar: source and mode on the left, the four counts on the right.

It shows the app's `status_left` and `status_right` reactives, so every screen that yields a
StatusBar shows the same line.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Static


class StatusBar(Horizontal):
    """Source and mode on the left, the four counts on the right."""

    _shown_left = ""

    def compose(self) -> ComposeResult:
        yield Static(id="status-left")
        yield Static(id="status-right")

    def on_mount(self) -> None:
        self.watch(self.app, "status_left", self._left)
        self.watch(self.app, "status_right", self._right)

    def _left(self, value: str) -> None:
        self._shown_left = value
        left = self.query_one("#status-left", Static)
        fitted = fit_path(value, left.content_size.width) if left.content_size.width else value
        # One line (1fr wide, 1 high, cut with an ellipsis: app.tcss) whatever its text: no
        # layout, which would repaint the whole screen at each step of an index's progress.
        # (Text: the trace's path shown literally, never as markup.)
        left.update(Text(fitted), layout=False)

    def on_resize(self) -> None:
        self._refit()

    def _right(self, value: str) -> None:
        self.query_one("#status-right", Static).update(Text(value))
        self._refit()  # the counts' width is the path's room: fitted again once laid out

    def _refit(self) -> None:
        self.call_after_refresh(lambda: self._left(self._shown_left))


def fit_path(line: str, width: int) -> str:
    """The status line with its last part (the path) cut from the left to fit `width`:
    ``static · 2 ranks · …/h200-torch2.11/ddp2``; the mode and progress before it stay."""
    if len(line) <= width or " · " not in line:
        return line
    head, _, path = line.rpartition(" · ")
    room = width - len(head) - len(" · ")
    if room < 8:
        return line  # no room for a useful piece of the path: the ellipsis cuts the line
    return f"{head} · …{path[-(room - 1) :]}"
