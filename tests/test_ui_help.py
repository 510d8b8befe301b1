"""The help (`?`) is generated from the bindings: every key that works is in it, each binding
has an id, and run mode's keys are the browser's bindings under a keymap."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path
from typing import Any

import pytest
from textual.binding import Binding
from textual.dom import DOMNode
from textual.widgets import Input
from ui_helpers import CPU_SAMPLE, ready, sync
from waits import until

import tcview.ui
from tcview.run.session import Launcher
from tcview.run.spec import PythonInfo, RunOptions, build_spec
from tcview.ui.app import BrowserApp, TcviewApp
from tcview.ui.browser import BrowserScreen
from tcview.ui.help import HelpRow, help_rows
from tcview.ui.keys import BROWSE_BINDINGS
from tcview.ui.reader import Reader
from tcview.ui.run_app import RunApp, RunScreen
from tcview.ui.run_pane import RUN_KEYMAP

SIZE = (120, 40)


def ui_classes() -> list[type[DOMNode]]:
    """Every widget, screen and app class tcview defines."""
    out = []
    for info in pkgutil.iter_modules(tcview.ui.__path__):
        module = importlib.import_module(f"tcview.ui.{info.name}")
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, DOMNode)
                and value.__module__ == module.__name__
            ):
                out.append(value)
    return out


def test_every_binding_has_an_id() -> None:
    classes = ui_classes()
    assert {"TcviewApp", "RunApp", "TraceTree", "CodeView", "TableView"} <= {
        c.__name__ for c in classes
    }
    actions: dict[str, str] = {}
    for cls in classes:
        for binding in vars(cls).get("BINDINGS", []):
            assert isinstance(binding, Binding), (cls, binding)
            assert binding.id, f"{cls.__name__}: {binding.key} -> {binding.action} has no id"
            # One id, one action (the same binding may be shared, e.g. the scroll keys).
            assert actions.setdefault(binding.id, binding.action) == binding.action, binding.id


def test_run_mode_is_the_browser_under_a_keymap() -> None:
    """Run mode keeps every browser binding (by id); only the keymap's keys change."""
    assert {b.id for b in BrowserScreen.BINDINGS if isinstance(b, Binding)} >= {
        b.id for b in BROWSE_BINDINGS
    }
    run = {b.id: b for b in RunScreen.BINDINGS if isinstance(b, Binding)}
    for binding in BROWSE_BINDINGS:
        assert binding.id is not None and binding.id in run, binding.id
        expected = RUN_KEYMAP.get(binding.id, binding.key)
        assert run[binding.id].key == expected and run[binding.id].action == binding.action
    # One meaning per key (issue 40): r opens Recompiles in run mode too; u reruns.
    assert run["view.recompiles"].key == "r" and run["run.rerun"].key == "u"
    assert run["run.stop"].key == "x" and run["run.output"].key == "R"


@pytest.mark.parametrize("app", [TcviewApp, RunApp], ids=lambda a: a.__name__)
def test_no_key_does_two_things(app: type[BrowserApp]) -> None:
    """An app's keys (its own and its browser screen's) are its own: no two actions share one
    (a browser key must not shadow run mode's `x` stop, say), except run mode's `u`, which says
    why it cannot rerun yet."""
    actions: dict[str, set[str]] = {}
    for binding in [*app.BINDINGS, *app.SCREEN.BINDINGS]:
        assert isinstance(binding, Binding)
        for key in binding.key.split(","):
            actions.setdefault(key.strip(), set()).add(binding.action)
    shared = {key: acts for key, acts in actions.items() if len(acts) > 1}
    allowed = {"u": {"rerun", "rerun_busy"}} if app is RunApp else {}
    assert shared == allowed


def _rows(app: BrowserApp) -> list[HelpRow]:
    return [row for _, rows in help_rows(app.help_places(), app.get_key_display) for row in rows]


def _missing(app: BrowserApp, rows: list[HelpRow]) -> list[str]:
    """The bindings active now (focused widget, screen, app) that the help does not list."""
    missing = []
    for key, active in app.screen.active_bindings.items():
        binding = active.binding
        if binding.system:
            continue
        if isinstance(active.node, Input) and binding.id is None:
            continue  # an input's editing keys: the help says "the usual editing keys"
        shown = app.get_key_display(binding)
        if not any(binding in r.bindings and shown in r.keys and r.text for r in rows):
            missing.append(f"{type(active.node).__name__}: {key} -> {binding.action}")
    return missing


async def _missing_everywhere(app: BrowserApp, pilot: Any, rows: list[HelpRow]) -> set[str]:
    """Focus every widget the user can focus on the current screen (its focus chain: the
    pane shown, not those under it), and collect what is missing."""
    missing = set(_missing(app, rows))
    for widget in list(app.screen.focus_chain):
        widget.focus()
        await pilot.pause()
        missing.update(_missing(app, rows))
    return missing


async def _walk_browser(app: BrowserApp, pilot: Any, rows: list[HelpRow], views: str) -> set[str]:
    missing = await _missing_everywhere(app, pilot, rows)
    app.screen_stack[0].query_one(Reader).open_search()
    await pilot.pause()
    missing.update(await _missing_everywhere(app, pilot, rows))
    await pilot.press("escape")
    for key in views:
        app.main_tree.focus()
        await pilot.press(key)
        await ready(app, pilot)
        missing.update(await _missing_everywhere(app, pilot, rows))
        await pilot.press("escape")
    app.main_tree.focus()
    await pilot.press("question_mark")
    assert type(app.screen).__name__ == "HelpScreen"
    missing.update(await _missing_everywhere(app, pilot, rows))
    await pilot.press("escape")
    return missing


@pytest.mark.app
@sync
async def test_help_lists_every_key_that_works() -> None:
    app = TcviewApp(str(CPU_SAMPLE))
    rows = _rows(app)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        missing = await _walk_browser(app, pilot, rows, "brKftoS")
        app.main_tree.focus()
        await pilot.press("Y")  # the save dialog
        missing.update(await _missing_everywhere(app, pilot, rows))
        await pilot.press("escape")
    assert not missing, sorted(missing)


@pytest.mark.e2e
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="runs a job")
@sync
async def test_run_mode_help_lists_every_key_that_works(tmp_path: Path) -> None:
    flag = tmp_path / "flag"
    job = (
        "import pathlib, sys, time\nwhile not pathlib.Path(sys.argv[1]).exists(): time.sleep(0.05)"
    )
    spec = build_spec(["--", sys.executable, "-c", job, str(flag)])
    launcher = Launcher(spec, RunOptions(run_dir=tmp_path / "D", grace_s=1.0))
    launcher.python_info = PythonInfo(spec.python)  # the job needs no torch
    session = launcher.start()
    app = RunApp(launcher, session)
    rows = _rows(app)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        missing = await _walk_browser(app, pilot, rows, "brKfto")
        await pilot.press("q")  # the job runs: asks first
        assert type(app.screen).__name__ == "ConfirmStop"
        missing.update(await _missing_everywhere(app, pilot, rows))
        await pilot.press("n")
        assert isinstance(app.browser, RunScreen)
        app.browser.action_output()  # the output pane, full screen and focused
        missing.update(await _missing_everywhere(app, pilot, rows))
        flag.touch()
        await until(
            pilot,
            lambda: session.done and "u" in app.screen.active_bindings,
            what="the job to end and u (rerun) to be bound",
            seen=lambda: (session.done, sorted(app.screen.active_bindings)),
        )
        missing.update(await _missing_everywhere(app, pilot, rows))  # u reruns now
        await pilot.press("q")
    assert not missing, sorted(missing)


def test_every_mark_the_tree_draws_is_in_the_help() -> None:
    """The help's legend comes from the table the tree draws with: every status, mark and
    CUDA graphs symbol a tree row can show is there, with its word."""
    from tcview.analysis.cudagraphs import CUDAGRAPH_STATES, CudaGraphs
    from tcview.model.objects import MARKS, STATUSES
    from tcview.ui.content import cudagraphs_text, mark_text
    from tcview.ui.help import help_text

    legend = help_text([], lambda binding: binding.key).plain
    drawn = [mark_text(name) for name in (*STATUSES, *MARKS)]
    drawn += [cudagraphs_text(CudaGraphs(state)) for state in CUDAGRAPH_STATES]
    for text in drawn:
        assert text.plain and text.plain in legend, text.plain
