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

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingsMap
from textual.containers import VerticalScroll
from textual.dom import DOMNode
from textual.screen import ModalScreen
from textual.widgets import Static

from tcview.analysis.cudagraphs import CUDAGRAPH_STATES, CudaGraphs
from tcview.model.objects import MARKS, STATUSES
from tcview.ui.content import cudagraphs_text, mark_text

KEY_WIDTH = 14


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


def help_text(places: Sequence[HelpPlace], key_display: Callable[[Binding], str]) -> Text:
    text = Text()
    text.append("tcview keys\n", style="bold")
    for place, rows in help_rows(places, key_display):
        if not rows and not place.notes:
            continue
        text.append(f"\n{place.title}\n", style="bold underline")
        for row in rows:
            text.append(f"  {' '.join(row.keys):<{KEY_WIDTH}}", style="bold cyan")
            text.append(f"{row.text}\n")
        for what, explanation in place.notes:
            text.append(f"  {what:<{KEY_WIDTH}}", style="cyan")
            text.append(f"{explanation}\n")
    text.append_text(legend())
    text.append("\n\nPress escape, q or ? to close.", style="dim")
    return text


def legend() -> Text:
    """What the tree's marks mean: from the table the tree draws with (`content.MARK_TABLE`)."""
    text = Text()
    for title, marks in (
        ("\nStatus: ", [mark_text(s) for s in STATUSES]),
        ("\nBeside it: ", [mark_text(m) for m in MARKS]),
        ("\nCUDA graphs: ", [cudagraphs_text(CudaGraphs(s)) for s in CUDAGRAPH_STATES]),
    ):
        text.append(title, style="dim")
        for mark in marks:
            text.append_text(mark)
            text.append("  ")
    return text


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,q,question_mark", "close", "Close", id="help.close", tooltip="close"),
    ]

    def __init__(self, places: Sequence[HelpPlace]) -> None:
        super().__init__()
        self.places = places

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(help_text(self.places, self.app.get_key_display))

    def action_close(self) -> None:
        self.dismiss(None)
