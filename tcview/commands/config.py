"""The user's config: ``$XDG_CONFIG_HOME/tcview/config.toml`` (``~/.config`` without it), or
the file ``$TCVIEW_CONFIG`` names. It holds the keys, ``[keys]``: binding id = keys
(docs/guide/keys.md).

The command reads it once, before the app starts, and checks all of it there: a mistake is
said on stderr, naming the file and the line, and tcview exits 2 rather than start with some
keys silently not where the user put them. The app gets the checked keymap in its options.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # the same parser, before it joined the standard library
    import tomli as tomllib

from tcview.text.safe import safe_line

CONFIG_ENV = "TCVIEW_CONFIG"
KEYS = "keys"  # the one section tcview reads


class ConfigError(Exception):
    """A config tcview will not start with: `lines` say what is wrong, one problem each."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


def config_path(env: Mapping[str, str] = os.environ) -> tuple[Path, bool]:
    """The config file, and whether the user named it ($TCVIEW_CONFIG): a file named so must
    exist; the default one need not."""
    named = env.get(CONFIG_ENV)
    if named:
        return Path(named).expanduser(), True
    base = env.get("XDG_CONFIG_HOME", "")
    # The XDG spec: a relative $XDG_CONFIG_HOME is invalid and ignored.
    root = (
        Path(base) if os.path.isabs(base) else Path(env.get("HOME") or "~").expanduser() / ".config"
    )
    return root / "tcview" / "config.toml", False


def keymap_or_say(command: str) -> dict[str, str] | None:
    """The user's keymap for an app `command` (`tcview open`…) starts with; None when the
    config is wrong, said on stderr (the command exits 2 before any app starts)."""
    try:
        return read_keymap()
    except ConfigError as exc:
        for line in exc.lines:
            print(f"{command}: {safe_line(line)}", file=sys.stderr)
        print(f"{command}: the keys and their ids: docs/guide/keys.md", file=sys.stderr)
        return None


def read_keymap(env: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The user's keymap (binding id -> keys), checked; empty without a config. Raises
    ConfigError naming the file and the line of each mistake."""
    path, named = config_path(env)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if named:
            raise ConfigError([f"{path}: no such file (${CONFIG_ENV} names it)"]) from None
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([f"{path}: cannot read it: {exc}"]) from None
    return parse_keymap(text, str(path))


def parse_keymap(text: str, where: str) -> dict[str, str]:
    """The keymap of a config's `text` (`where`: its path, for the messages)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        # "... (at line 3, column 5)": said as path:line, where editors jump to
        found = re.search(r"\s*\(at line (\d+), column \d+\)$", message)
        if found:
            message = f"{found.group(1)}: {message[: found.start()]}"
        raise ConfigError([f"{where}:{message} (TOML syntax)"]) from None
    lines = [
        f"{_at(where, _line_of(text, section, header=True))}: [{safe_line(section)}]: no such"
        f" section (tcview reads [{KEYS}])"
        for section in data
        if section != KEYS
    ]
    keys = data.get(KEYS, {})
    if not isinstance(keys, dict):
        lines.append(f"{_at(where, _line_of(text, KEYS))}: {KEYS} must be a table, [{KEYS}]")
        keys = {}
    keymap = dict(_flat(keys))
    if not keymap:
        if lines:
            raise ConfigError(lines)
        return {}
    # Imported here: it imports every UI module, which only a config with keys needs.
    from tcview.ui.keymap import effective, problems

    lines += [
        f"{_at(where, _line_of(text, problem.id))}: [{KEYS}] {safe_line(problem.id)}:"
        f" {safe_line(problem.message)}"
        for problem in problems(keymap)
    ]
    if lines:
        raise ConfigError(lines)
    return effective({i: str(v) for i, v in keymap.items()})


def _flat(table: Mapping[str, object], prefix: str = "") -> Iterator[tuple[str, object]]:
    """A table's entries by dotted name: TOML reads ``view.recompiles = "R"`` (and
    ``[keys.view]``) as nested tables, and an id has dots."""
    for name, value in table.items():
        if isinstance(value, dict):
            yield from _flat(value, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", value


_HEADER = re.compile(r"^\s*\[\s*([^\]]*?)\s*\]")
_ENTRY = re.compile(r"^\s*([^=#]+?)\s*=")


def _unquoted(name: str) -> str:
    return ".".join(part.strip().strip("\"'") for part in name.split("."))


def _at(where: str, line: int | None) -> str:
    return f"{where}:{line}" if line else where


def _line_of(text: str, name: str, header: bool = False) -> int | None:
    """The line where `text` sets `name` in [keys] (an id; with `header`, where a section
    begins), or None when it cannot tell."""
    section = ""
    for number, line in enumerate(text.splitlines(), 1):
        found = _HEADER.match(line)
        if found:
            section = _unquoted(found.group(1))
            if header and section.split(".")[0] == name:
                return number
            continue
        entry = _ENTRY.match(line)
        if entry is None:
            continue
        full = _unquoted(f"{section}.{entry.group(1)}" if section else entry.group(1))
        if header and full.split(".")[0] == name:
            return number
        if not header and (full == f"{KEYS}.{name}" or (name == KEYS and full == KEYS)):
            return number
    return None
