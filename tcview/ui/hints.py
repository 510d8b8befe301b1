"""The keys that texts name (the overview's "b for all", its line of keys, run mode's toasts),
by binding id, so that a hint says the key the screen binds.

The browser hands the overview its own keys (`BrowserBase.key_names`: its bindings, run mode's
and a user keymap's included); `DEFAULT_KEYS` are `tcview open`'s, for a text made without a
screen (`tcview summary`'s tests, say). tests/test_ui_keys.py checks they are the bindings'.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TypeAlias

from textual.binding import Binding

KeyNames: TypeAlias = Mapping[str, str]  # binding id -> the key as the footer shows it

DEFAULT_KEYS: dict[str, str] = {
    "app.help": "?",
    "app.palette": "ctrl+p",
    "app.rank-filter": "#",
    "app.provenance": "i",
    "app.diff": "d",
    "view.findings": "w",
    "view.breaks": "b",
    "view.recompiles": "r",
    "view.kernels": "K",
    "view.profile": "M",
    "view.time": "t",
    "view.errors": "E",
}
# The overview's last line: the keys it names, and what they open.
OVERVIEW_KEYS = (
    ("app.help", "help"),
    ("view.breaks", "breaks"),
    ("view.recompiles", "recompiles"),
    ("view.kernels", "kernels"),
    ("view.time", "time"),
    ("app.provenance", "provenance"),
    ("app.diff", "diff"),
    ("app.palette", "jump"),
)


def key_names(bindings: Iterable[Binding], display: Callable[[Binding], str]) -> KeyNames:
    """Each binding id's key as `display` shows it (the app's `get_key_display`), the first
    binding of an id winning."""
    out: dict[str, str] = {}
    for binding in bindings:
        if binding.id and binding.id not in out:
            out[binding.id] = display(binding)
    return out


def key_of(keys: KeyNames | None, binding_id: str) -> str:
    """The key of `binding_id` in `keys`, else `tcview open`'s."""
    return (keys or {}).get(binding_id) or DEFAULT_KEYS[binding_id]


def overview_hint(keys: KeyNames | None) -> str:
    """``? help · b breaks · r recompiles · …``: the overview's line of keys."""
    return " · ".join(f"{key_of(keys, i)} {what}" for i, what in OVERVIEW_KEYS)
