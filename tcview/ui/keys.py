"""The keys: the app's (quit, help, the palette, Textual's own) and the browser screen's, with
ids (a binding's id names it for the help's tests, run mode's keymap, `run_pane.run_mode`, and
the user's keymap, docs/guide/keys.md; its tooltip is its line in the help, `?`).

An id is a promise to users: their config names it. Renaming one breaks their keymaps, so an id
stays as it is once released; docs/guide/keys.md lists them all (`python -m tcview.ui.keymap`).

The browser's keys are its screen's (browser.BrowserScreen): they work wherever the browser
shows a pane, and a pane's own keys (a view's escape, j, k...) come before them. Quit and help
lead the browser's footer as they lead the app's keys: the screen declares them too, as the
app's actions.
"""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TypeAlias

from textual.app import App
from textual.binding import Binding, InvalidBinding
from textual.keys import KEY_NAME_REPLACEMENTS, KEY_TO_UNICODE_NAME, Keys

from tcview.ui.bench import BENCH_BINDINGS

# Textual's own app keys (ctrl+q quits, ctrl+c says how), with ids like every tcview key.
TEXTUAL_BINDINGS = [
    replace(
        binding, id=f"textual.{binding.action.replace('_', '-')}", action=f"app.{binding.action}"
    )
    for binding in App.BINDINGS
    if isinstance(binding, Binding)
]
QUIT = Binding("q", "app.quit", "Quit", id="app.quit", tooltip="quit (tcview run: asks first)")
HELP = Binding(
    "question_mark", "app.help", "Help", key_display="?", id="app.help", tooltip="this help"
)
# Declared here (Textual adds the same binding otherwise) to give it an id and help text.
PALETTE = Binding(
    App.COMMAND_PALETTE_BINDING,
    "command_palette",
    "palette",
    show=False,
    priority=True,
    id="app.palette",
    tooltip="jump to a compile id, kernel or file",
)
# The keys of every tcview app that browses a trace: on every screen.
APP_BINDINGS = [QUIT, HELP, PALETTE, *TEXTUAL_BINDINGS]
# The browser's keys, in footer order. A binding's tooltip is its line in the help (`?`).
BROWSE_BINDINGS = [
    HELP,
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
    Binding(
        "M",
        "view('profile')",
        "Profile",
        show=False,  # the overview names it when a profile is joined
        id="view.profile",
        tooltip="profile (--profile): every kernel measured, Triton, extern and eager, longest"
        " first, with its compile and user line",
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
]


# ---------------------------------------------------------------- the user's keymap

Keymap: TypeAlias = Mapping[str, str]  # binding id -> its keys, comma-separated, normalized

MODIFIERS = ("ctrl", "shift", "alt", "meta", "super", "hyper")
# The key names Textual sends: its `Keys` (escape, f1, pageup...) without a modifier, and the
# names it gives punctuation (question_mark, slash...). A name outside these never arrives, so
# a binding to it would silently never fire.
KEY_NAMES = frozenset(
    {k.value for k in Keys if "+" not in k.value and k.value.isidentifier()}
    | set(KEY_TO_UNICODE_NAME)
    | set(KEY_NAME_REPLACEMENTS.values())
)


def split_keys(keys: str) -> list[str]:
    """`keys` (``"f, F,?"``) as Textual binds them (``["f", "F", "question_mark"]``): one
    key each, a character by its name. Raises ValueError for an empty key (``"a,,b"``)."""
    try:
        return [b.key for b in Binding.make_bindings([Binding(keys, "")])]
    except InvalidBinding as exc:
        raise ValueError(f"an empty key in {keys!r}") from exc


def key_problem(key: str) -> str | None:
    """Why Textual could never deliver `key` (one key, as `split_keys` gives it), or None."""
    *modifiers, base = key.split("+")
    for modifier in modifiers:
        if modifier not in MODIFIERS:
            return f"{modifier!r} in {key!r} is no modifier (one of {', '.join(MODIFIERS)})"
    if len(base) == 1:
        return None if base.isprintable() and not base.isspace() else f"{key!r} is no key"
    if base in KEY_NAMES:
        return None
    try:  # what Textual calls a character it has no short name for: its Unicode name
        char = unicodedata.lookup(base.replace("_", " ").upper())
        if len(char) == 1 and char.isprintable():  # not a control character's alias (ESCAPE)
            return None
    except KeyError:
        pass
    close = difflib.get_close_matches(base, sorted(KEY_NAMES), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"{key!r} is no key Textual knows{hint}"


def remap(bindings: Iterable[Binding], keymap: Keymap) -> list[Binding]:
    """`bindings` (one key each) under `keymap`, as Textual's keymap binds them: a binding whose
    id the keymap names has its keys instead of its own (and its own key display no more)."""
    out: list[Binding] = []
    done: set[str] = set()
    for binding in bindings:
        keys = keymap.get(binding.id) if binding.id else None
        if keys is None:
            out.append(binding)
        elif binding.id not in done:
            done.add(binding.id or "")
            out.extend(binding.with_key(key, key_display=None) for key in split_keys(keys))
    return out


def key_now(binding: Binding, keymap: Keymap) -> Binding:
    """`binding` under the key it has now: a class's binding (its default key) whose id the
    keymap moved shows the keymap's first key; one Textual already moved stays as it is."""
    keys = keymap.get(binding.id) if binding.id else None
    if keys is None:
        return binding
    moved = split_keys(keys)
    return binding if binding.key in moved else binding.with_key(moved[0], key_display=None)
