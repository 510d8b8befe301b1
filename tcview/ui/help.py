"""The `?` overlay, generated from the bindings, so it cannot drift from the keys.

The app names the places its keys live (`TcviewApp.help_places`): the app itself, the tree,
the viewer, the views, and in `tcview run` the Run pane. Each binding's line is its tooltip
(else its description), under the key it has now (run mode's keymap included). What no
binding says (mouse, the status bar) is text kept here; the status marks come from the
table the tree draws with.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingsMap
from textual.containers import VerticalScroll
from textual.dom import DOMNode
from textual.screen import ModalScreen
from textual.widgets import Static

from tcview.analysis.cudagraphs import CUDAGRAPH_STATES, CudaGraphs
from tcview.model.objects import MARKS, STATUSES
from tcview.ui.content import STATUS_STYLE, cudagraphs_text, mark_text

KEY_WIDTH = 14

# Textual's own bindings (they have no id) in tcview's words: the help never shows the toolkit's
# labels ("Focus Next", "Toggle"). One that is not here is left out of the help.
STOCK_TEXT = {
    "app.focus_next": "next pane",
    "app.focus_previous": "previous pane",
    "screen.copy_text": "copy the text selected with the mouse",
    "scroll_up": "scroll up",
    "scroll_down": "scroll down",
    "scroll_left": "scroll left",
    "scroll_right": "scroll right",
    "scroll_home": "to the top",
    "scroll_end": "to the end",
    "scroll_top": "to the top",
    "scroll_bottom": "to the end",
    "page_up": "page up",
    "page_down": "page down",
    "page_left": "page left",
    "page_right": "page right",
    "cursor_up": "previous row",
    "cursor_down": "next row",
    "cursor_left": "previous column",
    "cursor_right": "next column",
    "cursor_parent": "to the parent",
    "cursor_parent_next_sibling": "to the parent's next sibling",
    "cursor_previous_sibling": "to the previous sibling",
    "cursor_next_sibling": "to the next sibling",
    "toggle_node": "open or close the node",
    "toggle_expand_all": "open or close the node and all under it",
    "select_cursor": "open the row",
    "quit": "quit",
}


@dataclass(frozen=True)
class HelpPlace:
    """One section of the help: the bindings of one place, and lines no binding gives."""

    title: str
    bindings: Sequence[Binding]
    notes: Sequence[tuple[str, str]] = field(default_factory=tuple)  # (what, explanation)


@dataclass
class HelpRow:
    keys: list[str]  # as shown, e.g. ["↑", "k"]
    text: str
    bindings: list[Binding]  # the bindings this row stands for, one key each


def spelled(shown: str, binding: Binding) -> str:
    """A key as every tcview app shows it (footer, help, texts): modifiers spelled out,
    ``ctrl+p`` as ``shift+tab``, never Textual's ``^p`` (`shown`: Textual's display)."""
    return shown if binding.key_display else shown.replace("^", "ctrl+")


def bindings_of(cls: type[DOMNode], inherited: bool = True) -> list[Binding]:
    """The bindings instances of `cls` get, one key each: a class's BINDINGS replace its
    bases' for the same key (Textual's rule). The class's own come first, then its bases'.
    Without `inherited`, only the bindings `cls` itself declares."""
    classes = [c for c in cls.__mro__ if issubclass(c, DOMNode)]
    if not inherited:
        classes = classes[:1]
    declared = [BindingsMap(vars(c).get("BINDINGS", ())).key_to_bindings for c in classes]
    out: list[Binding] = []
    taken: set[str] = set()
    for keys in declared:  # the class itself first: its keys win
        for key, bindings in keys.items():
            if key not in taken:
                taken.add(key)
                out.extend(bindings)
    return out


def help_rows(
    places: Sequence[HelpPlace], key_display: Callable[[Binding], str]
) -> list[tuple[HelpPlace, list[HelpRow]]]:
    """The rows of each place: one per action, its keys together. A binding listed in an
    earlier place is not repeated (every screen has the Screen's keys, for one)."""
    seen: set[Binding] = set()
    out = []
    for place in places:
        rows: dict[str, HelpRow] = {}
        ours: set[str] = set()  # actions whose text came from a tcview binding (it has an id)
        for binding in place.bindings:
            if binding.system or binding in seen:
                continue
            seen.add(binding)
            text = binding.tooltip or binding.description
            if not binding.id:  # Textual's own: in tcview's words, or not at all
                if binding.action not in STOCK_TEXT:
                    continue
                text = STOCK_TEXT[binding.action]
            row = rows.get(binding.action)
            if row is None:
                row = rows[binding.action] = HelpRow([], text, [])
            elif text and binding.id and binding.action not in ours:
                row.text = text
            if binding.id and text:
                ours.add(binding.action)
            row.bindings.append(binding)
            shown = key_display(binding)
            if shown not in row.keys:
                row.keys.append(shown)
        out.append((place, list(rows.values())))
    return out


HelpLine: TypeAlias = "tuple[Text, Text] | Text"  # (keys, what they do), or a heading


def help_lines(
    places: Sequence[HelpPlace], key_display: Callable[[Binding], str]
) -> list[HelpLine]:
    """The help, line by line: headings, and (keys, what they do) pairs."""
    out: list[HelpLine] = [Text("tcview keys", style="bold")]
    for place, rows in help_rows(places, key_display):
        if not rows and not place.notes:
            continue
        out.append(Text(f"\n{place.title}", style="bold underline"))
        for row in rows:
            out.append((Text(" ".join(row.keys), style="bold cyan"), Text(row.text)))
        for what, explanation in place.notes:
            out.append((Text(what, style="cyan"), Text(explanation)))
    out.append(Text(""))
    out.extend(legend())
    out.append(Text("\nPress escape, q or ? to close.", style="dim"))
    return out


def help_text(places: Sequence[HelpPlace], key_display: Callable[[Binding], str]) -> Text:
    """The help as one text, each description on one line (what tests and searches read)."""
    text = Text()
    for line in help_lines(places, key_display):
        if isinstance(line, Text):
            text.append_text(line)
        else:
            keys, what = line
            text.append("  ")
            text.append_text(keys)
            text.append(" " * max(1, KEY_WIDTH - keys.cell_len))
            text.append_text(what)
        text.append("\n")
    return text


def help_table(places: Sequence[HelpPlace], key_display: Callable[[Binding], str]) -> Group:
    """The help as the overlay shows it: a description that wraps goes on under itself (a
    hanging indent), not under the keys."""
    parts: list[Text | Table] = []
    table: Table | None = None
    for line in help_lines(places, key_display):
        if isinstance(line, Text):
            parts.append(line)
            table = None
            continue
        if table is None:
            table = Table.grid(padding=(0, 1, 0, 0))  # a long key never runs into its text
            table.add_column(width=KEY_WIDTH + 2, no_wrap=True)
            table.add_column(ratio=1)
            parts.append(table)
        keys, what = line
        table.add_row(Text.assemble("  ", keys), what)
    return Group(*parts)


def legend() -> list[tuple[Text, Text]]:
    """What the marks of the tree and the views mean: from the table they draw with
    (`content.MARK_TABLE`)."""
    out = []
    breaks = Text("×3", style=STATUS_STYLE["graph break"])
    breaks.append(" graph breaks in one compile", style="")
    for title, marks in (
        ("Status", [mark_text(s) for s in STATUSES]),
        ("Beside it", [*(mark_text(m) for m in MARKS), breaks]),
        ("CUDA graphs", [cudagraphs_text(CudaGraphs(s)) for s in CUDAGRAPH_STATES]),
    ):
        text = Text()
        for mark in marks:
            if text:
                text.append("  ")
            text.append_text(mark)
        out.append((Text(title, style="bold"), text))
    return out


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,q,question_mark", "close", "Close", id="help.close", tooltip="close"),
    ]

    def __init__(self, places: Sequence[HelpPlace]) -> None:
        super().__init__()
        self.places = places

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(help_table(self.places, self.app.get_key_display))

    def action_close(self) -> None:
        self.dismiss(None)
