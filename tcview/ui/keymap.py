"""The user's keymap checked against every key tcview binds: the binding ids there are (with
their default keys and what they do: docs/guide/keys.md is made from `id_table`), what a
keymap gets wrong (`problems`) and the keymap the app is given (`effective`).

It finds the bindings by importing every UI module and reading the classes' BINDINGS, so that
a pane added later is checked and documented without a list to keep. Only the command layer
(which checks a config before the app starts) and the tests import it; the app gets the
checked keymap through its options.

`python -m tcview.ui.keymap docs/guide/keys.md` remakes the page's table.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import pkgutil
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from textual.binding import Binding
from textual.dom import DOMNode
from textual.keys import REPLACED_KEYS, key_to_character

import tcview.ui
from tcview.text.pages import rewrite, with_lines
from tcview.ui.help import STOCK_TEXT, bindings_of
from tcview.ui.keys import key_problem, remap, split_keys


@dataclass(frozen=True)
class Scope:
    """Bindings that are live together, where one key can mean one thing only: one class's
    (what Textual looks a key up in), or an app's with its browser screen's (both answer
    anywhere in the browser, the screen's first)."""

    name: str
    bindings: tuple[Binding, ...]  # one key each


@dataclass(frozen=True)
class BindingId:
    """One binding id as the documentation lists it."""

    id: str
    keys: tuple[str, ...]  # its default keys, as Textual names them
    text: str  # what it does: the help's line


@dataclass(frozen=True)
class Problem:
    """What is wrong with the keymap's entry `id` (the config names its line)."""

    id: str
    message: str


def _ui_classes() -> Iterator[type[DOMNode]]:
    for module in pkgutil.iter_modules(tcview.ui.__path__):
        importlib.import_module(f"{tcview.ui.__name__}.{module.name}")
    seen: set[type[DOMNode]] = set()
    todo: list[type[DOMNode]] = [DOMNode]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in seen:
                seen.add(sub)
                todo.append(sub)
    yield from sorted(
        (c for c in seen if c.__module__.startswith(f"{tcview.ui.__name__}.")),
        key=lambda c: (c.__module__, c.__qualname__),
    )


@functools.cache
def scopes() -> tuple[Scope, ...]:
    """Every scope whose bindings have an id: each UI class, and each browser app with its
    screen (`BrowserApp.SCREEN`)."""
    out: list[Scope] = []
    for cls in _ui_classes():
        bindings = tuple(bindings_of(cls))
        if any(b.id for b in bindings):
            out.append(Scope(cls.__qualname__, bindings))
        screen = getattr(cls, "SCREEN", None)
        if isinstance(screen, type) and issubclass(screen, DOMNode):
            both = (*bindings_of(screen), *bindings)
            name = f"{screen.__qualname__} with {cls.__qualname__}'s keys"
            out.append(Scope(name, both))
    return tuple(out)


@functools.cache
def id_table() -> tuple[BindingId, ...]:
    """Every binding id, sorted, with its default keys and its line in the help."""
    keys: dict[str, list[str]] = {}
    text: dict[str, str] = {}
    for scope in scopes():
        for binding in scope.bindings:
            if binding.id is None:
                continue
            known = keys.setdefault(binding.id, [])
            if binding.key not in known:
                known.append(binding.key)
            if not text.get(binding.id):
                text[binding.id] = binding.tooltip or binding.description
    return tuple(BindingId(i, tuple(keys[i]), text[i]) for i in sorted(keys))


def _who(binding: Binding) -> str:
    """What a binding does, as a key clash names it: its id, else Textual's action."""
    return binding.id or binding.action


def _said(binding: Binding) -> str:
    what = binding.tooltip or binding.description or STOCK_TEXT.get(binding.action, "")
    return f"{_who(binding)} ({what!r})" if what else _who(binding)


def closest_id(name: str) -> str | None:
    """The id a mistyped `name` most likely meant: one it ends (``recompiles`` for
    ``view.recompiles``), else the most alike."""
    ids = [entry.id for entry in id_table()]
    tail = [i for i in ids if i.endswith(f".{name}") or i.endswith(f"-{name}")]
    if tail:
        return tail[0]
    close = difflib.get_close_matches(name, ids, n=1, cutoff=0.5)
    return close[0] if close else None


def normalized(keymap: Mapping[str, str]) -> dict[str, str]:
    """`keymap` with each value as Textual binds it (``"f, ?"`` is ``"f,question_mark"``)."""
    return {i: ",".join(split_keys(keys)) for i, keys in keymap.items()}


def effective(keymap: Mapping[str, str]) -> dict[str, str]:
    """The keymap to give Textual for the user's `keymap` (checked: `problems` found none).

    Textual's keymap unbinds every key a moved binding had, with whatever else shared it. Two
    bindings share a key on purpose (the rerun key, which says "stop first" while the job
    runs), so a binding whose keys are all another's moves with it, and one that shares only
    some of them keeps its own."""
    out = normalized(keymap)
    moved = dict(out)
    for scope in scopes():
        own: dict[str, set[str]] = {}
        for binding in scope.bindings:
            if binding.id:
                own.setdefault(binding.id, set()).add(binding.key)
        for other, its_keys in own.items():
            if other in moved:
                continue
            for mover in own.keys() & moved.keys():
                shared = its_keys & own[mover]
                if shared == its_keys:
                    out.setdefault(other, moved[mover])
                elif shared:
                    out.setdefault(other, ",".join(sorted(its_keys)))
    return out


def problems(keymap: Mapping[str, object]) -> list[Problem]:
    """What is wrong with `keymap` (binding id -> keys, as the config gave them): an id no
    binding has, a value that is no string, a key Textual cannot deliver, a key given to two
    actions of one scope. Clashes are looked for once every entry is sound."""
    known = {entry.id for entry in id_table()}
    out: list[Problem] = []
    sound: dict[str, str] = {}
    for binding_id, value in keymap.items():
        if binding_id not in known:
            guess = closest_id(binding_id)
            hint = f"; did you mean {guess}?" if guess else ""
            out.append(Problem(binding_id, f"no key binding has this id{hint}"))
        elif not isinstance(value, str):
            out.append(
                Problem(
                    binding_id,
                    f'the keys must be a string, like "R" or "f,F", not {value!r}',
                )
            )
        else:
            if not value.strip():
                out.append(Problem(binding_id, "no key given"))
                continue
            try:
                keys = split_keys(value)
            except ValueError as exc:
                out.append(Problem(binding_id, str(exc)))
                continue
            bad = [p for p in map(key_problem, keys) if p]
            out.extend(Problem(binding_id, p) for p in bad)
            if not bad:
                sound[binding_id] = value
    if out:
        return out
    return _clashes(sound)


def _clashes(keymap: Mapping[str, str]) -> list[Problem]:
    """Keys that the keymap gives to two actions of one scope. Bindings that share a key by
    default may go on sharing one (they take turns: `check_action`)."""
    mapping = effective(keymap)
    out: list[Problem] = []
    said: set[tuple[str, frozenset[str]]] = set()
    for scope in scopes():
        before: dict[str, set[str]] = {}
        for binding in scope.bindings:
            before.setdefault(binding.key, set()).add(_who(binding))
        paired = {frozenset((a, b)) for whos in before.values() for a in whos for b in whos}
        after: dict[str, list[Binding]] = {}
        for binding in remap(scope.bindings, mapping):
            after.setdefault(binding.key, []).append(binding)
        for key, bindings in after.items():
            for i, one in enumerate(bindings):
                for two in bindings[i + 1 :]:
                    pair = frozenset((_who(one), _who(two)))
                    if len(pair) < 2 or pair in paired or (key, pair) in said:
                        continue
                    mover = one if one.id in keymap else two
                    if mover.id not in keymap:
                        continue
                    said.add((key, pair))
                    other = two if mover is one else one
                    out.append(
                        Problem(
                            mover.id or "",
                            f"{shown(key)!r} already does {_said(other)} in {scope.name}:"
                            " give that one another key too, or pick another for this one",
                        )
                    )
    return out


def shown(key: str) -> str:
    """A key as a config writes it: a character as itself (``?``), else its name."""
    # slash is Textual's name for solidus, which Unicode knows
    char = key_to_character(REPLACED_KEYS.get(key, key)) if key != "space" else None
    return char if char and char.isprintable() and key != "comma" else key


BEGIN = "<!-- binding ids: made by `python -m tcview.ui.keymap docs/guide/keys.md` -->"
END = "<!-- end of binding ids -->"


def ids_markdown() -> list[str]:
    """The page's table: every binding id, its default keys and what it does."""
    rows = ["| id | default keys | what it does |", "|---|---|---|"]
    for entry in id_table():
        keys = ",".join(shown(k) for k in entry.keys)
        text = entry.text.replace("|", "\\|")
        rows.append(f"| `{entry.id}` | `{keys}` | {text} |")
    return rows


def with_table(page: str) -> str:
    """`page` (docs/guide/keys.md) with the ids' table put between its markers."""
    return with_lines(page, BEGIN, END, ids_markdown())


if __name__ == "__main__":
    rewrite(sys.argv[1:], BEGIN, END, ids_markdown)
