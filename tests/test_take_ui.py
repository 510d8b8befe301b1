"""Take it with you (Pilot): `y` copies the item (what each kind gives), `Y` saves it (never
into the trace directory, never over a file without asking), `e` opens its source line in
$EDITOR (a recording script here; `App.suspend` needs a terminal, so headless it just runs)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable, Input
from ui_helpers import CPU_SAMPLE, GPU_SAMPLE, SAMPLES, ready, settle, shown_as, sync, viewer_shown

from tcview.analysis.kernels import OUTPUT_CODES
from tcview.analysis.paths import PathMap
from tcview.model.objects import Kernel, LogSource, Record
from tcview.report.detail import compile_detail, render_text
from tcview.ui.app import TcviewApp
from tcview.ui.options import OpenOptions
from tcview.ui.take import LocationPicker, SaveScreen, kernel_source
from tcview.ui.views import BreaksView, KernelsView

SIZE = (120, 40)
# Where the CPU sample was recorded: its stack frames and break locations name this path.
RECORDED_AT = "/work/main/sample_traces"


def _select(app: TcviewApp, kind: str, obj: Any) -> None:
    assert app.browser.reveal(kind, obj)
    app.main_tree.focus()


def _notices(app: TcviewApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


@sync
async def test_y_in_the_kernels_view_copies_the_kernel_source() -> None:
    app = TcviewApp(str(GPU_SAMPLE / "trace"))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await pilot.press("K")
        await settle(app, pilot)
        view = shown_as(app, KernelsView)
        view.query_one(DataTable).focus()
        await pilot.press("down")
        await settle(app, pilot)
        group = view.selected()
        assert group is not None
        await pilot.press("y")
        assert app.clipboard == kernel_source(group.first)
        assert f"kernel {group.first.name} source" in _notices(app)[-1]


@sync
async def test_y_copies_what_each_item_is() -> None:
    app = TcviewApp(str(GPU_SAMPLE / "trace"))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        model = app.model
        assert model is not None
        kernel = model.kernels[1]
        _select(app, "kernel", kernel)
        await settle(app, pilot)
        await pilot.press("y")
        code = OUTPUT_CODES.get(kernel.output)
        span = code.span_of(kernel)
        assert span is not None
        source = "\n".join(code.lines[span.first : span.end + 1])
        assert app.clipboard == source == kernel_source(kernel)
        assert f"\n{kernel.name} = async_compile.triton(" in f"\n{source}"
        assert source.endswith("''', device_str='cuda')")
        assert (
            f"copied {len(source.encode())} bytes (kernel {kernel.name} source)"
            in _notices(app)[-1]
        )

        for label in ("dynamo_output_graph", "dynamo_cpp_guards_str", "inductor_output_code"):
            rec = model.records_of(label)[0]
            _select(app, "record", rec)
            await pilot.press("y")
            assert app.clipboard == rec.payload(), label

        comp = model.compiles[0]
        _select(app, "compile", comp)
        await pilot.press("y")
        assert app.clipboard == render_text(compile_detail(comp, model))
        assert app.clipboard.startswith(f"compile {comp.id_label}")

        frame = comp.frame
        assert frame is not None
        node = app.main_tree.node_showing(frame)
        app.main_tree.move_cursor(node)
        await pilot.press("y")
        assert app.clipboard.split("\n")[1:] == [
            f"  {sf.filename}:{sf.line} in {sf.name}" for sf in frame.stack
        ]

        metrics = model.records_of("compilation_metrics")[0]  # header only: its JSON
        _select(app, "record", metrics)
        await pilot.press("y")
        assert isinstance(metrics.meta, dict)
        assert json.loads(app.clipboard)["co_name"] == metrics.meta["co_name"]


@sync
async def test_y_on_a_break_copies_reason_and_location() -> None:
    app = TcviewApp(str(CPU_SAMPLE / "trace"))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        assert app.model is not None
        gb = app.model.breaks[0]
        _select(app, "record", gb.record)
        await pilot.press("y")
        text = app.clipboard
        assert text.split("\n")[:2] == [gb.reason, f"  at {gb.location}"]
        assert "user stack (most recent call last):" in text
        await pilot.press("b")
        await settle(app, pilot)
        shown_as(app, BreaksView)
        await pilot.press("y")
        assert app.clipboard == text, "the breaks view's row copies the same"
        # the viewer focused: what it shows is taken when the item gives nothing of its own
        await pilot.press("escape")
        app.main_tree.focus()
        node = app.main_tree.root.children[-1]  # records without a compile id
        app.main_tree.move_cursor(node)
        assert node.data is not None and isinstance(node.data.obj, LogSource)
        app.browser.show_item(node.data)
        await settle(app, pilot)
        viewer_shown(app).focus()
        await pilot.press("y")
        others = [r for r in node.data.obj.records if r.key is None]
        assert app.clipboard.split("\n")[0] == f"{len(others)} records"


@sync
async def test_Y_saves_asks_before_overwriting_and_refuses_the_trace_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = tmp_path / "trace"
    shutil.copytree(GPU_SAMPLE / "trace", trace)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    app = TcviewApp(str(trace))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        assert app.model is not None
        kernel = app.model.kernels[0]
        _select(app, "kernel", kernel)
        await pilot.press("Y")
        await settle(app, pilot)
        assert isinstance(app.screen, SaveScreen)
        box = app.screen.query_one("#save-path", Input)
        assert box.value == str(work / f"{kernel.name}.py")
        await pilot.press("enter")
        await settle(app, pilot)
        saved = work / f"{kernel.name}.py"
        assert saved.read_text() == kernel_source(kernel)
        assert f"saved {saved.stat().st_size} bytes" in _notices(app)[-1]
        assert str(saved) in _notices(app)[-1]

        saved.write_text("mine")
        await pilot.press("Y")
        await settle(app, pilot)
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, SaveScreen), "it exists: asks first"
        assert "exists" in str(app.screen.query_one("#save-note").render())
        assert saved.read_text() == "mine"
        await pilot.press("enter")  # again: overwrite
        await settle(app, pilot)
        assert saved.read_text() == kernel_source(kernel)

        before = sorted(p.name for p in trace.iterdir())
        await pilot.press("Y")
        await settle(app, pilot)
        box = app.screen.query_one("#save-path", Input)
        box.value = str(trace / "kernel.py")
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, SaveScreen)
        assert "trace directory" in str(app.screen.query_one("#save-note").render())
        await pilot.press("escape")
        assert sorted(p.name for p in trace.iterdir()) == before


def _recorder(tmp_path: Path) -> tuple[Path, Path]:
    """An editor that writes its arguments (one per line) and exits."""
    out = tmp_path / "argv.txt"
    script = tmp_path / "editor.sh"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {out}\n')
    script.chmod(0o755)
    return script, out


@sync
async def test_e_on_a_break_location_runs_the_editor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script, argv = _recorder(tmp_path)
    monkeypatch.setenv("EDITOR", str(script))
    monkeypatch.delenv("VISUAL", raising=False)
    paths = PathMap.parse([f"{RECORDED_AT}={SAMPLES}"])
    app = TcviewApp(OpenOptions(str(CPU_SAMPLE / "trace"), path_map=paths))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        assert app.model is not None
        gb = app.model.breaks[0]
        path, _, line = gb.location.rpartition(":")
        local = str(SAMPLES / path.removeprefix(RECORDED_AT + "/"))
        assert os.path.isfile(local)
        await pilot.press("b")
        await settle(app, pilot)
        await pilot.press("e")
        await settle(app, pilot)
        assert argv.read_text().split("\n")[:2] == [f"+{line}", local]

        argv.unlink()
        _select(app, "record", gb.record)  # the break in the tree: the same location
        await pilot.press("e")
        assert argv.read_text().split("\n")[:2] == [f"+{line}", local]

        # In the viewer: every location of the item (its stack too), to pick from.
        comp = gb.compile
        _select(app, "compile", comp)
        node = app.main_tree.cursor_node
        assert node is not None and node.data is not None
        app.browser.show_item(node.data)
        await settle(app, pilot)
        viewer_shown(app).focus()
        await pilot.press("e")
        await settle(app, pilot)
        assert isinstance(app.screen, LocationPicker)
        picked = app.screen.locations
        assert [loc.label for loc in picked] == ["graph break", "user code: scale_shift"]
        await pilot.press("down", "enter")
        await settle(app, pilot)
        assert app.screen is app.screen_stack[0]
        assert argv.read_text().split("\n")[:2] == [f"+{picked[1].line}", local]


@sync
async def test_e_says_when_the_file_is_not_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script, argv = _recorder(tmp_path)
    monkeypatch.setenv("VISUAL", str(script))
    app = TcviewApp(str(GPU_SAMPLE / "trace"))  # recorded under /workspace/examples
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        assert app.model is not None
        comp = app.model.compiles[0]
        _select(app, "compile", comp)
        await pilot.press("e")
        await settle(app, pilot)
        assert not argv.exists()
        note = _notices(app)[-1]
        assert note.startswith("not on this machine: /workspace/examples/tinyblock.py")
        assert "--map-path" in note
    # mapped to a checkout that has the file: opened there
    checkout = tmp_path / "src"
    checkout.mkdir()
    (checkout / "tinyblock.py").write_text("x = 1\n" * 40)
    app = TcviewApp(
        OpenOptions(
            str(GPU_SAMPLE / "trace"), path_map=PathMap.parse([f"/workspace/examples={checkout}"])
        )
    )
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        assert app.model is not None
        comp = app.model.compiles[0]
        _select(app, "compile", comp)
        await pilot.press("e")
        await settle(app, pilot)
        assert comp.frame is not None
        user = comp.frame.user_frame
        assert user is not None
        assert argv.read_text().split("\n")[:2] == [f"+{user.line}", str(checkout / "tinyblock.py")]


@pytest.mark.unit
def test_path_map_longest_prefix_and_boundaries() -> None:
    paths = PathMap.parse(["/workspace=/a", "/workspace/deep=/b", "/ws=~/c"])
    assert paths.local("/workspace/x.py") == "/a/x.py"
    assert paths.local("/workspace/deep/y.py") == "/b/y.py"
    assert paths.local("/workspace2/z.py") == "/workspace2/z.py"
    assert paths.local("/ws/q.py") == os.path.expanduser("~/c/q.py")
    with pytest.raises(ValueError):
        PathMap.parse(["nothing"])


@pytest.mark.unit
def test_editor_argv_has_no_shell_and_no_option_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tcview.analysis.paths import Location
    from tcview.ui.editor import editor_call

    target = tmp_path / "-rf.py"
    target.write_text("")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VISUAL", "code -w")
    call = editor_call(Location("-rf.py", 3, "x"))
    assert call.argv == ["code", "-w", "+3", str(target)]
    assert call.argv[-1].startswith("/")
    monkeypatch.delenv("VISUAL")
    monkeypatch.delenv("EDITOR", raising=False)
    assert editor_call(Location(str(target), 1, "x")).argv[0] == "vi"


@pytest.mark.unit
def test_copied_kinds_of_model_objects() -> None:
    from tcview.ingest.source import load_source
    from tcview.ui.take import Taken, copy_text

    def taken(obj: object) -> Taken:
        got = copy_text(obj)
        assert got is not None, obj
        return got

    model = load_source(str(CPU_SAMPLE))
    assert isinstance(model.kernels[0], Kernel)
    assert taken(model.kernels[0]).name.endswith(".py")
    rec = model.records_of("dynamo_output_graph")[0]
    assert isinstance(rec, Record) and taken(rec).text == rec.payload()
    assert taken(model.grouped_breaks()[0]).what == "graph break"
    assert copy_text(object()) is None


@pytest.mark.e2e
def test_map_path_on_the_command_line() -> None:
    import subprocess

    from conftest import REPO, TCVIEW_CLI

    from tcview.commands.cli import build_parser

    args = build_parser().parse_args(["run", "--map-path", "/a=/b", "--map-path", "/c=/d", "x.py"])
    assert args.map_path == ["/a=/b", "/c=/d"]
    args = build_parser().parse_args(["open", "--map-path", "/w=/x", "DIR"])
    assert PathMap.parse(args.map_path).local("/w/f.py") == "/x/f.py"
    for command in ("open", "run"):
        out = subprocess.run(
            [*TCVIEW_CLI, command, "--map-path", "nonsense", "x.py"],
            capture_output=True,
            text=True,
            cwd=REPO,
        )
        assert out.returncode == 2 and "--map-path wants FROM=TO" in out.stderr, out.stderr
