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

    def compose(self) -> ComposeResult:
        yield Static(id="status-left")
        yield Static(id="status-right")

    def on_mount(self) -> None:
        self.watch(self.app, "status_left", self._left)
        self.watch(self.app, "status_right", self._right)

    def _left(self, value: str) -> None:
        self.query_one("#status-left", Static).update(
            Text(value, no_wrap=True, overflow="ellipsis")
        )

    def _right(self, value: str) -> None:
        self.query_one("#status-right", Static).update(Text(value, no_wrap=True))
