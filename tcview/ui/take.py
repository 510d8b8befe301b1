"""Take an item with you: `y` copies it (OSC 52, through ssh and tmux), `Y` saves it to a
file, `e` opens its source location in $EDITOR.

What an item gives (`copy_text`): a kernel its source, a record its payload (a graph, the
guards, an output code), a graph break its reason with location, hints and user stack, a
frame its stack, a failure or an error its message and stack, a compile its detail text.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from tcview.analysis.kernels import OUTPUT_CODES, KernelGroup
from tcview.analysis.paths import Location, inside_trace
from tcview.model.objects import (
    BreakGroup,
    Compile,
    Error,
    Failure,
    Frame,
    GraphBreak,
    Kernel,
    Model,
    Record,
)
from tcview.report.detail import compile_detail, record_name, render_text
from tcview.text.safe import safe_line

# Clipboard sequences this long are dropped by some terminals (the notice says so).
OSC52_SAFE = 100_000
_NAME_JUNK = re.compile(r"[^A-Za-z0-9._-]+")


class Taken:
    """Text to copy or save, what it is (for the notice), and a file name for it."""

    def __init__(self, what: str, text: str, name: str, suffix: str = ".txt") -> None:
        self.what = what
        self.text = text
        self.name = (_NAME_JUNK.sub("_", name).strip("._") or "tcview")[:80] + suffix

    @property
    def size(self) -> int:
        return len(self.text.encode("utf-8"))


def break_text(gb: GraphBreak) -> str:
    lines = [gb.reason]
    if gb.location:
        lines.append(f"  at {gb.location}")
    if gb.explanation:
        lines.append(f"  why: {gb.explanation}")
    lines.extend(f"  hint: {hint}" for hint in gb.hints)
    if gb.url:
        lines.append(f"  more: {gb.url}")
    if gb.user_stack:
        lines.append("user stack (most recent call last):")
        lines.extend(f"  {entry}" for entry in gb.user_stack)
    return "\n".join(lines)


def frame_stack(frame: Frame) -> str:
    lines = [f"frame {frame.id_label}: {frame.label}"]
    lines.extend(f"  {sf.filename}:{sf.line} in {sf.name}" for sf in frame.stack)
    return "\n".join(lines)


def failure_text(f: Failure) -> str:
    lines = [f"{f.fail_type}: {f.reason}"]
    if f.location:
        lines.append(f"  at {f.location}")
    if f.record is not None and isinstance(f.record.meta, dict):
        trace = f.record.meta.get("exception_stack_trace")
        if trace:
            lines.append("exception stack:")
            lines.append("\n".join(map(str, trace)) if isinstance(trace, list) else str(trace))
    return "\n".join(lines)


def error_text(e: Error) -> str:
    if e.text:
        return e.text
    lines = [e.headline, *(f"  {entry}" for entry in e.stack)]
    return "\n".join(lines)


def record_text(rec: Record) -> str:
    if rec.md5 or rec.end > rec.hdr_end:
        return rec.payload()
    return json.dumps(rec.full_meta(), indent=2, ensure_ascii=False, default=repr)


def kernel_source(kernel: Kernel) -> str:
    """The kernel's source as the viewer shows it: its header comment, then its definition
    to the line that closes it; empty when its output code does not hold it."""
    code = OUTPUT_CODES.get(kernel.output)
    span = code.span_of(kernel)
    return "\n".join(code.lines[span.first : span.end + 1]) if span is not None else ""


def copy_text(obj: object, model: Model | None = None) -> Taken | None:
    """What `y` copies for an item (None: nothing of its own; the caller may take the text
    shown instead). `model` adds what a compile's detail says from the rest of the input."""
    if isinstance(obj, KernelGroup):  # a row of the kernels view: its kernels share a source
        obj = obj.first
    if isinstance(obj, Kernel):
        return Taken(f"kernel {obj.name} source", kernel_source(obj), obj.name, ".py")
    if isinstance(obj, BreakGroup):
        obj = obj.first
    if isinstance(obj, GraphBreak):
        where = obj.compile.id_text if obj.compile is not None else ""
        return Taken("graph break", break_text(obj), f"graph_break_{where}")
    if isinstance(obj, Record):
        comp = obj.compile
        brk = next((b for b in comp.breaks if b.record is obj), None) if comp else None
        if brk is not None:
            return copy_text(brk, model)
        name = record_name(obj)
        code = obj.kind in ("inductor_output_code", "output_code") or name.endswith("graph")
        return Taken(
            name, record_text(obj), f"{name}_{obj.compile_text}", ".py" if code else ".txt"
        )
    if isinstance(obj, Compile):
        text = render_text(compile_detail(obj, model))
        return Taken(f"compile {obj.id_label} detail", text, f"compile_{obj.id_text}")
    if isinstance(obj, Frame):
        return Taken(f"stack of frame {obj.id_label}", frame_stack(obj), f"frame_{obj.id_text}")
    if isinstance(obj, Failure):
        return Taken(f"failure {obj.fail_type}", failure_text(obj), f"failure_{obj.fail_type}")
    if isinstance(obj, Error):
        return Taken(f"error {obj.error_type}", error_text(obj), f"error_{obj.error_type}")
    return None


def default_save_path(taken: Taken, model: Model | None) -> str:
    """A name in the current directory, or in the home directory when that is the trace's."""
    here = Path.cwd()
    if model is not None and inside_trace(here / taken.name, model) is not None:
        here = Path.home()
    return str(here / taken.name)


class SaveScreen(ModalScreen[str | None]):
    """Ask where to save (Y): refuses the trace directory, asks before overwriting."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="save.cancel", tooltip="do not save")]

    def __init__(self, taken: Taken, model: Model | None) -> None:
        super().__init__()
        self.taken = taken
        self.model = model
        self._confirmed = ""  # a path that exists, once the user said overwrite

    def compose(self) -> ComposeResult:
        with Vertical(id="save-box"):
            yield Static(
                Text.assemble(
                    ("save ", "bold"),
                    Text(safe_line(self.taken.what)),
                    (f"  ({self.taken.size} bytes) to:", "dim"),
                )
            )
            yield Input(default_save_path(self.taken, self.model), id="save-path")
            yield Static(Text("enter saves · escape cancels", style="dim"), id="save-note")

    def _say(self, text: str, style: str = "bold red") -> None:
        self.query_one("#save-note", Static).update(Text(safe_line(text), style=style))

    @on(Input.Submitted, "#save-path")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        raw = event.value.strip()
        if not raw:
            self._say("give a file name")
            return
        path = os.path.abspath(os.path.expanduser(raw))
        if self.model is not None:
            inside = inside_trace(path, self.model)
            if inside is not None:
                self._say(f"{inside} is the trace directory: tcview never writes there")
                return
        if os.path.isdir(path):
            self._say(f"{path} is a directory: give a file name")
            return
        if not os.path.isdir(os.path.dirname(path)):
            self._say(f"no such directory: {os.path.dirname(path)}")
            return
        if os.path.exists(path) and self._confirmed != path:
            self._confirmed = path
            self._say(f"{path} exists: enter again to overwrite it", "bold yellow")
            return
        self.dismiss(path)

    def action_cancel(self) -> None:
        self.dismiss(None)


class LocationPicker(ModalScreen[Location | None]):
    """Pick one of an item's source locations (its stack) to open in the editor."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="locations.cancel", tooltip="open nothing"),
    ]

    def __init__(self, locations: list[Location]) -> None:
        super().__init__()
        self.locations = locations

    def compose(self) -> ComposeResult:
        with Vertical(id="locations-box"):
            yield Static(Text("open in $EDITOR: enter opens · escape cancels", style="bold"))
            yield OptionList(
                *(
                    Option(
                        Text.assemble(
                            Text(safe_line(loc.text)), "  ", Text(safe_line(loc.label), "dim")
                        )
                    )
                    for loc in self.locations
                ),
                id="locations",
            )

    @on(OptionList.OptionSelected, "#locations")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.locations[event.option_index])

    def action_cancel(self) -> None:
        self.dismiss(None)


def write_text(path: str, text: str) -> int:
    """Write `text` to `path` (UTF-8); returns the bytes written."""
    data = text.encode("utf-8")
    with open(path, "wb") as fh:
        fh.write(data)
    return len(data)
