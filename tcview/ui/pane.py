"""The browser screen's panes: the base of the views, the compile diff and the global search
(`BrowserPane`), and the switcher that shows one of them at a time over the tree's pane.

The switcher focuses a pane's `AUTO_FOCUS` when it first shows it, as Textual does for a
screen. A pane owns its keys (its BINDINGS, and its widgets'); the browser's keys work under
them. Escape on a pane posts `ClosePane` up: the browser shows the pane under it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import ContentSwitcher

from tcview.ui.controller import Pane, SearchPane, TreePane
from tcview.ui.messages import ClosePane


class BrowserPane(Vertical):
    """A pane of the browser screen."""

    AUTO_FOCUS = "*"  # what the browser focuses in the pane when it shows it

    def first_focus(self) -> Widget | None:
        """The widget to focus when the pane is shown (None: nothing focusable yet)."""
        return next((w for w in self.query(self.AUTO_FOCUS) if w.focusable), None)

    def action_close(self) -> None:
        self.post_message(ClosePane(self))


class PaneSwitcher(ContentSwitcher):
    """The browser's panes, one shown: the tree's (`browse`) under the others.

    `show` shows the controller's top pane: its widget made (`make`) and mounted the first
    time, focused where the user was in it (else at its AUTO_FOCUS); the widgets of the panes
    that closed go (the global search's stays: its results last the session).
    """

    def __init__(self, browse: Widget, make: Callable[[Pane], BrowserPane]) -> None:
        super().__init__(browse, id="panes", initial=browse.id)
        self.browse = browse
        self.make = make
        self._widgets: list[tuple[Pane, BrowserPane]] = []
        self._ids = itertools.count(1)
        self._focus_memory: dict[Widget, Widget] = {}

    def widget_of(self, pane: Pane) -> Widget | None:
        """The widget of `pane`, if it has one (the tree's pane: `browse`)."""
        if isinstance(pane, TreePane):
            return self.browse
        return next((w for p, w in self._widgets if p is pane), None)

    def views(self) -> list[BrowserPane]:
        """The widgets of the panes over the tree, shown or not."""
        return [w for _, w in self._widgets]

    async def open(self, stack: list[Pane]) -> None:
        """Show the top of `stack`, made and mounted first when it is new."""
        pane = stack[-1]
        if self.widget_of(pane) is None:
            widget = self.make(pane)
            widget.id = f"pane-{next(self._ids)}"
            widget.display = False  # until it is shown in place of the one shown
            self._widgets.append((pane, widget))
            await self.mount(widget)
        self.show(stack)

    def show(self, stack: list[Pane]) -> None:
        """Show the top of `stack` (mounted already); drop the widgets of the panes that
        are no longer on it."""
        widget = self.widget_of(stack[-1])
        assert widget is not None, stack[-1]
        screen = self.screen
        old = self.visible_content
        focused = screen.focused
        hidden = old if old is not widget else None
        if focused is not None and hidden is not None and hidden in focused.ancestors:
            self._focus_memory[hidden] = focused  # restored when it shows again
        self.current = widget.id
        self._drop(stack)
        remembered = self._focus_memory.pop(widget, None)
        if remembered is not None and remembered.is_attached and remembered.focusable:
            screen.set_focus(remembered)
        elif isinstance(widget, BrowserPane):
            screen.set_focus(widget.first_focus())
        else:
            screen.set_focus(next((w for w in widget.query("*") if w.focusable), None))

    def _drop(self, stack: list[Pane]) -> None:
        kept = []
        for pane, widget in self._widgets:
            if isinstance(pane, SearchPane) or any(p is pane for p in stack):
                kept.append((pane, widget))
            else:
                self.forget(widget)
        self._widgets = kept

    def forget(self, widget: BrowserPane) -> None:
        """Remove a pane's widget (the global search's, for a new source)."""
        self._widgets = [(p, w) for p, w in self._widgets if w is not widget]
        self._focus_memory.pop(widget, None)
        widget.remove()
