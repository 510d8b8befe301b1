"""A CodeView with its search box: `/` opens it, Enter finds, Escape closes."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input

from tcview.text.safe import safe_line
from tcview.ui.content import Document
from tcview.ui.viewer import CodeView


class SearchBox(Input):
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", show=False, id="search.cancel", tooltip="close"),
    ]

    def action_cancel(self) -> None:
        reader = self.parent
        if isinstance(reader, Reader):
            reader.close_search()


class Reader(Vertical):
    def compose(self) -> ComposeResult:
        yield CodeView(classes="viewer")
        yield SearchBox(placeholder="search: Enter to find, Esc to cancel", classes="search")

    def on_mount(self) -> None:
        self.search_box.display = False

    @property
    def viewer(self) -> CodeView:
        return self.query_one(CodeView)

    @property
    def search_box(self) -> SearchBox:
        return self.query_one(SearchBox)

    def show(self, doc: Document, keep_position: bool = False) -> None:
        self.viewer.show(doc, keep_search=True, keep_position=keep_position)

    def open_search(self) -> None:
        box = self.search_box
        box.display = True
        box.value = self.viewer.query_text
        box.focus()

    def close_search(self) -> None:
        self.search_box.display = False
        self.viewer.focus()

    @on(Input.Submitted, "SearchBox")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.close_search()
        if event.value and not self.viewer.search(event.value):
            self.app.notify(
                markup=False,
                message=f"not found: {safe_line(event.value)}",
                severity="warning",
                timeout=2,
            )
