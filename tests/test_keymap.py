"""The user's keymap (docs/guide/keys.md): read from ~/.config/tcview/config.toml (or
$XDG_CONFIG_HOME, or $TCVIEW_CONFIG), checked before the app starts (a mistake: exit 2, the
file and line on stderr), and applied: the new key works, the old one does not, and the help,
the footer and the overview's hints say the new key.

Each test names its tier: the module holds all three."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import REPO, TCVIEW_CLI
from ui_helpers import CPU_SAMPLE, pane, ready, screen_text, settle, sync
from waits import until

from tcview.commands.config import ConfigError, config_path, parse_keymap, read_keymap
from tcview.ui.app import TcviewApp
from tcview.ui.help import HelpScreen, help_rows
from tcview.ui.keymap import effective, id_table, problems, with_table
from tcview.ui.options import OpenOptions

PAGE = REPO / "docs" / "guide" / "keys.md"


def _write(root: Path, text: str) -> Path:
    path = root / "tcview" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _app_with_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: str) -> TcviewApp:
    """The app on the CPU sample with `config` as the user's config file, read as the command
    reads it."""
    _write(tmp_path, config)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("TCVIEW_CONFIG", raising=False)
    return TcviewApp(OpenOptions(str(CPU_SAMPLE), keymap=read_keymap()))


def _errors(text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_keymap(text, "cfg.toml")
    return caught.value.lines


@pytest.mark.unit
def test_the_page_lists_every_binding_id_as_the_bindings_say() -> None:
    """docs/guide/keys.md's table is the bindings' (`python -m tcview.ui.keymap
    docs/guide/keys.md` remakes it)."""
    page = PAGE.read_text(encoding="utf-8")
    assert with_table(page) == page, "stale: run python -m tcview.ui.keymap docs/guide/keys.md"
    for binding_id in ("view.recompiles", "app.help", "tree.down", "run.rerun", "diff.quit"):
        assert f"| `{binding_id}` |" in page
    assert len({entry.id for entry in id_table()}) == len(id_table())


@pytest.mark.unit
def test_the_config_is_found_where_xdg_says(tmp_path: Path) -> None:
    home = {"HOME": str(tmp_path)}
    assert config_path(home) == (tmp_path / ".config" / "tcview" / "config.toml", False)
    xdg = {**home, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    assert config_path(xdg) == (tmp_path / "xdg" / "tcview" / "config.toml", False)
    relative = {**home, "XDG_CONFIG_HOME": "rel"}  # the XDG spec: ignored
    assert config_path(relative)[0] == tmp_path / ".config" / "tcview" / "config.toml"
    named = {**xdg, "TCVIEW_CONFIG": str(tmp_path / "k.toml")}
    assert config_path(named) == (tmp_path / "k.toml", True)


@pytest.mark.unit
def test_no_config_is_no_keymap_but_a_named_one_must_exist(tmp_path: Path) -> None:
    assert read_keymap({"HOME": str(tmp_path)}) == {}
    with pytest.raises(ConfigError, match="no such file"):
        read_keymap({"HOME": str(tmp_path), "TCVIEW_CONFIG": str(tmp_path / "none.toml")})


@pytest.mark.unit
def test_ids_with_dots_are_read_bare_quoted_or_as_a_table(tmp_path: Path) -> None:
    _write(
        tmp_path,
        '[keys]\nview.recompiles = "c"\n"view.findings" = "w, W"\n[keys.app]\nhelp = "h"\n',
    )
    keymap = read_keymap({"HOME": "/nowhere", "XDG_CONFIG_HOME": str(tmp_path)})
    assert keymap == {"view.recompiles": "c", "view.findings": "w,W", "app.help": "h"}


@pytest.mark.unit
def test_an_unknown_id_names_its_line_and_the_closest_id() -> None:
    (line,) = _errors('[keys]\n\nrecompiles = "c"\n')
    assert line.startswith("cfg.toml:3: [keys] recompiles: no key binding has this id")
    assert line.endswith("did you mean view.recompiles?")
    (line,) = _errors('[keys]\nview.recompile = "c"\n')
    assert line.startswith("cfg.toml:2:") and line.endswith("did you mean view.recompiles?")


@pytest.mark.unit
@pytest.mark.parametrize(
    ("keys", "said"),
    [
        ("ctrl+foo", "'ctrl+foo' is no key Textual knows"),
        ("Escape", "did you mean 'escape'?"),
        ("cmd+x", "'cmd' in 'cmd+x' is no modifier"),
        ("c,,d", "an empty key"),
        (" ", "no key given"),
    ],
)
def test_a_key_textual_cannot_deliver_is_refused(keys: str, said: str) -> None:
    (line,) = _errors(f'[keys]\nview.time = "{keys}"\n')
    assert line.startswith("cfg.toml:2: [keys] view.time: ") and said in line


@pytest.mark.unit
def test_a_value_that_is_no_string_is_refused() -> None:
    (line,) = _errors("[keys]\nview.time = 3\n")
    assert (
        line == 'cfg.toml:2: [keys] view.time: the keys must be a string, like "R" or "f,F", not 3'
    )


@pytest.mark.unit
def test_a_toml_mistake_names_its_line() -> None:
    (line,) = _errors('[keys]\nview.time = "t"\nview.breaks "b"\n')
    assert line.startswith("cfg.toml:3: ") and line.endswith("(TOML syntax)")


@pytest.mark.unit
def test_only_the_keys_section_is_read() -> None:
    (line,) = _errors('[keys]\nview.time = "T"\n\n[colours]\nred = "x"\n')
    assert line == "cfg.toml:4: [colours]: no such section (tcview reads [keys])"


@pytest.mark.unit
def test_a_key_given_to_two_actions_of_one_place_is_refused() -> None:
    (line,) = _errors('[keys]\nview.breaks = "q"\n')
    assert line.startswith("cfg.toml:2: [keys] view.breaks: 'q' already does app.quit")
    (line,) = _errors('[keys]\nview.breaks = "z"\nview.time = "z"\n')
    assert "'z' already does view." in line
    (line,) = _errors('[keys.tree]\nopen = "space"\n')  # Textual's own binding of the tree
    assert line.startswith("cfg.toml:2: [keys] tree.open: 'space' already does tree.toggle")


@pytest.mark.unit
def test_keys_may_be_swapped_and_may_repeat_in_another_place() -> None:
    assert problems({"view.breaks": "r", "view.recompiles": "b"}) == []
    assert problems({"view.recompiles": "j"}) == []  # the tree's j is the tree's, first


@pytest.mark.unit
def test_a_binding_that_shares_its_key_on_purpose_moves_with_it() -> None:
    """The rerun key says "stop it first" while the job runs (run.rerun-busy): it follows."""
    assert effective({"run.rerun": "z"}) == {"run.rerun": "z", "run.rerun-busy": "z"}
    assert problems({"run.rerun": "z", "run.rerun-busy": "z"}) == []


@pytest.mark.e2e
def test_a_bad_config_stops_tcview_open_before_the_app(tmp_path: Path) -> None:
    _write(tmp_path / ".config", '[keys]\nrecompiles = "c"\n')
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
    env.pop("XDG_CONFIG_HOME", None)
    env.pop("TCVIEW_CONFIG", None)
    done = subprocess.run(
        [*TCVIEW_CLI, "open", str(CPU_SAMPLE)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    config = tmp_path / ".config" / "tcview" / "config.toml"
    assert f"tcview open: {config}:2: [keys] recompiles:" in done.stderr
    assert "needs a terminal" not in done.stderr  # said before anything else is tried
    assert done.stdout == ""


@pytest.mark.app
@sync
async def test_a_moved_key_works_and_shows_and_its_old_key_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = _app_with_keys(tmp_path, monkeypatch, '[keys]\nview.recompiles = "c,C"\napp.help = "H"\n')
    async with app.run_test(size=(160, 90)) as pilot:  # tall: the overview's last line shows
        await ready(app, pilot)
        text = screen_text(app)
        assert "H help · b breaks · c recompiles" in text, "the overview's hint"
        assert "c Recompiles" in text and "r Recompiles" not in text, "the footer"
        await pilot.press("r")
        await settle(app, pilot)
        assert type(pane(app)).__name__ != "RecompilesView", "the old key still works"
        await pilot.press("c")
        await until(pilot, lambda: type(pane(app)).__name__ == "RecompilesView", what="c")
        await pilot.press("escape")
        await settle(app, pilot)
        await pilot.press("question_mark")
        await settle(app, pilot)
        assert not isinstance(app.screen, HelpScreen), "the old help key still works"
        await pilot.press("H")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help")
        rows = {
            row.text: row.keys
            for _place, rows in help_rows(app.help_places_now(), app.get_key_display)
            for row in rows
        }
        assert rows["recompiles: per frame, each compile and the guard that failed"] == ["c", "C"]
        assert rows["this help"] == ["H"]
        assert re.search(r"\sc C\s+recompiles: per frame", screen_text(app)), "the help's row"


@pytest.mark.app
@sync
async def test_a_views_head_names_the_keys_it_has_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one-line help in a view's head names its keys as the keymap moved them."""
    app = _app_with_keys(
        tmp_path, monkeypatch, '[keys]\ntime.sort = "o"\nview.close = "backspace"\n'
    )
    async with app.run_test(size=(160, 40)) as pilot:
        await ready(app, pilot)
        await pilot.press("t")
        await until(pilot, lambda: type(pane(app)).__name__ == "TimeView", what="t")
        await settle(app, pilot)
        text = screen_text(app)
        assert "o: sort by time / by order" in text and "s: sort" not in text
        assert "⌫: back" in text and "esc: back" not in text
