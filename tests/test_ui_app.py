"""Pilot tests: navigation, every view, goto, search, palette, growth, literal text."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from textual.command import CommandPalette
from textual.widget import Widget
from textual.widgets import Static
from textual.widgets.tree import TreeNode
from ui_helpers import (
    CPU_SAMPLE,
    GPU_SAMPLE,
    counts_text,
    palette_lists,
    pane,
    ready,
    screen_text,
    settle,
    shown_as,
    summary_json,
    sync,
    viewer_shown,
)
from waits import until

from tcview.model.objects import Compile
from tcview.ui.app import TcviewApp
from tcview.ui.options import OpenOptions
from tcview.ui.status import fit_path
from tcview.ui.tree import Item, TraceTree
from tcview.ui.viewer import CodeView
from tcview.ui.views import (
    BreaksView,
    FailuresView,
    KernelsView,
    OtherView,
    RecompilesView,
    TimeView,
)

SIZE = (120, 40)


def viewer(app: TcviewApp) -> CodeView:
    return viewer_shown(app)


def focused(app: TcviewApp) -> Widget | None:
    """The focused widget, read anew (mypy keeps what an earlier `app.focused is` check said)."""
    return app.focused


def cursor_item(app: TcviewApp) -> Any:  # Any: the tests read each kind's own fields
    node = app.query_one(TraceTree).cursor_node
    return node.data if node is not None else None


def tree_rows(tree: TraceTree) -> list[str]:
    """The labels of the tree's visible rows, top to bottom."""
    rows: list[str] = []

    def walk(node: TreeNode[Item]) -> None:
        for child in node.children:
            rows.append(str(child.label))
            if child.is_expanded:
                walk(child)

    walk(tree.root)
    return rows


# The CPU sample's tree at start: two frames (one with three compiles and graph breaks, one
# resumed after the break that recompiles), then the records outside any compile.
CPU_SAMPLE_TREE = [
    "scale_shift (script.py:11)",
    "0/0",
    "0/1",
    "0/2",
    "torch_dynamo_resume_in_scale_shift",
    "1/0",
    "1/1",
    "records without a compile id",
]


@pytest.mark.e2e
@sync
async def test_status_bar_counts_match_summary() -> None:
    app = TcviewApp(str(GPU_SAMPLE))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        assert app.status_right == counts_text(summary_json(GPU_SAMPLE))
        assert "static" in app.status_left
        assert "indexing" not in app.status_left


@sync
async def test_follow_flag_shows_live() -> None:
    app = TcviewApp(OpenOptions(str(GPU_SAMPLE), follow=True))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        assert app.status_left.startswith("live · ")


@sync
async def test_goto_kernel_shows_def_line() -> None:
    from tcview.ingest.source import load_source

    kernel = load_source(str(GPU_SAMPLE)).kernels[-1]
    app = TcviewApp(OpenOptions(str(GPU_SAMPLE), goto=kernel.name))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        item = cursor_item(app)
        assert item.kind == "kernel" and item.obj.name == kernel.name
        # The detail opens on the kernel's source, at its def; its kind and compile are the
        # first lines above (scroll up), what it fuses and its launch come after the source.
        view = viewer(app)
        lines = view.visible_text()
        assert any(ln.startswith(f"def {kernel.name}(") for ln in lines), lines
        doc = view.doc
        assert doc.plain(0) == f"kernel {kernel.name}  {kernel.kind}"
        assert doc.plain(1).startswith("compile 0/0 · graph inference")
        assert any(t.plain.startswith("  ATen ops") for t in doc.tail)


@sync
async def test_other_view_says_each_log_path_once(fixture_runs: Path) -> None:
    """The Other view of a real H100 run: the TORCH_LOGS file's path once, as the heading of
    its lines (each with its line number), not repeated on every line."""
    run = fixture_runs / "h100_cudagraph_crash"
    app = TcviewApp(str(run))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await pilot.press("o")
        await settle(app, pilot)
        shown_as(app, OtherView)
        await until(pilot, lambda: viewer(app).doc.title == "other output", what="the lines")
        screen = screen_text(app)
        path = str(run / "torch_logs.txt")
        assert screen.count(path) == 1, screen
        lines = viewer(app).visible_text()
        assert lines[0] == f"{path} · 4 lines that are not log messages"
        assert lines[1].startswith("    2  ") and "UserWarning" in lines[1]
        assert lines[3].startswith("  111  ")


@sync
async def test_failure_message_shows_its_line_breaks(fixture_runs: Path) -> None:
    """A real Dynamo failure's message has several lines: the Failures view's pane shows
    them as lines (the ones after the first indented), never as ␤ marks."""
    app = TcviewApp(str(fixture_runs / "h200_breaks" / "trace"))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await pilot.press("f")
        await settle(app, pilot)
        lines = viewer(app).visible_text()
        assert lines[:2] == ["Unsupported", "Failed to trace builtin operator"], lines
        assert lines[2].startswith("    Explanation: Dynamo does not know how to trace")
        assert any(ln.startswith("    Hint: Please report an issue") for ln in lines)
        assert "\u2424" not in screen_text(app)


H100_KERNELS = [
    ("h100_autotune_train", "triton_tem_fused_addmm_gelu_t_0"),
    ("h100_gpt2_profile", "triton_red_fused__log_softmax_prepare_softmax_online_19"),
]


@sync
@pytest.mark.parametrize(("run", "kernel"), H100_KERNELS)
async def test_goto_kernel_shows_its_def_on_the_first_screen(
    fixture_runs: Path, run: str, kernel: str
) -> None:
    """--goto a Triton kernel of a real H100 run at 120x40: its ``def`` line is on the
    first screen, with the status bar's counts (a ~30-row header pushed it off before)."""
    trace = fixture_runs / run
    app = TcviewApp(OpenOptions(str(trace), goto=kernel))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        screen = screen_text(app)
        assert f"def {kernel}(" in screen, screen
        assert counts_text(summary_json(trace)) in screen, screen


@sync
@pytest.mark.parametrize("form", ["{}", "[{}]"])
async def test_goto_compile(form: str) -> None:
    app = TcviewApp(OpenOptions(str(CPU_SAMPLE), goto=form.format("1/0")))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        item = cursor_item(app)
        assert item.kind == "compile" and item.obj.id_text == "1/0"
        assert viewer(app).border_title == "compile 1/0"


@sync
async def test_goto_unknown_notifies() -> None:
    app = TcviewApp(OpenOptions(str(CPU_SAMPLE), goto="definitely_not_a_kernel"))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        assert any("not found" in str(n.message) for n in app._notifications)


@sync
async def test_tree_keys_and_viewer() -> None:
    app = TcviewApp(str(CPU_SAMPLE))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        tree = app.query_one(TraceTree)
        assert focused(app) is tree
        await pilot.press("g")
        assert tree.cursor_line == 0
        await pilot.press("j", "j")
        assert tree.cursor_line == 2
        await pilot.press("k")
        assert tree.cursor_line == 1
        await pilot.press("G")
        assert tree.cursor_line == tree.last_line
        await pilot.press("g", "down")
        await settle(app, pilot)
        item = cursor_item(app)
        assert item.kind == "compile"
        assert viewer(app).border_title == f"compile {item.obj.id_text}"
        # expand the compile, walk to its first artifact, open it with enter
        await pilot.press("right", "down", "enter")
        await settle(app, pilot)
        assert cursor_item(app).kind == "record"
        assert focused(app) is viewer(app)
        await pilot.press("tab")
        assert focused(app) is not viewer(app)
        await pilot.press("shift+tab")
        assert focused(app) is viewer(app)
        await pilot.press("escape")
        assert focused(app) is tree


@sync
async def test_mouse_click_selects() -> None:
    app = TcviewApp(str(CPU_SAMPLE))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        tree = app.query_one(TraceTree)
        await pilot.click(TraceTree, offset=(6, 3))
        await settle(app, pilot)
        assert tree.cursor_line == 2


@sync
async def test_search_n_and_N() -> None:
    from tcview.ingest.source import load_source

    kernel = load_source(str(GPU_SAMPLE)).kernels[0]
    app = TcviewApp(OpenOptions(str(GPU_SAMPLE), goto=kernel.name))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await pilot.press("slash")
        await pilot.press(*"tl.load")
        await pilot.press("enter")
        view = viewer(app)
        assert view.matches, "tl.load must be found in a Triton kernel"
        first = view.match_index
        await pilot.press("n")
        assert view.match_index == (first + 1) % len(view.matches)
        await pilot.press("N")
        assert view.match_index == first
        assert "/tl.load:" in str(view.border_subtitle)
        line = view.matches[view.match_index][0]
        top = view.scroll_offset.y
        assert top <= line < top + view.scrollable_content_region.height


@sync
async def test_viewer_scrolls_sideways_and_pages() -> None:
    app = TcviewApp(OpenOptions(str(GPU_SAMPLE), goto="0/0"))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        tree = app.query_one(TraceTree)
        # open the output code: the longest content of the trace
        assert app.model is not None
        rec = app.model.kernels[0].output
        node = tree.reveal(rec, "record")
        assert node is not None and node.data is not None
        tree.reveal_node(node)
        app.browser.show_item(node.data)
        await settle(app, pilot)
        view = viewer(app)
        view.focus()
        await pilot.press("pagedown")
        assert view.scroll_offset.y > 0
        await pilot.press("right", "right")
        assert view.scroll_offset.x == 8
        await pilot.press("G")
        assert view.scroll_offset.y == view.max_scroll_y
        await pilot.press("g")
        assert view.scroll_offset.y == 0


@pytest.mark.e2e
@sync
@pytest.mark.parametrize(
    ("key", "screen"),
    [
        ("b", BreaksView),
        ("r", RecompilesView),
        ("K", KernelsView),
        ("f", FailuresView),
        ("t", TimeView),
        ("o", OtherView),
    ],
)
async def test_every_view_opens_and_closes(key: str, screen: type) -> None:
    app = TcviewApp(str(CPU_SAMPLE))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await pilot.press(key)
        await settle(app, pilot)
        assert isinstance(pane(app), screen)
        assert app.status_right == counts_text(summary_json(CPU_SAMPLE))
        await pilot.press("escape")
        await settle(app, pilot)
        assert len(app.screen_stack) == 1
        # back on the browser: its tree (not the view's table) is what the screen shows
        assert pane(app).id == "browse" and isinstance(focused(app), TraceTree)
        assert not app.screen.query(screen), "a closed view's widgets go"
        rows = tree_rows(app.screen.query_one(TraceTree))
        assert len(rows) == len(CPU_SAMPLE_TREE), rows
        assert all(want in row for want, row in zip(CPU_SAMPLE_TREE, rows, strict=True)), rows


@sync
async def test_breaks_view_enter_jumps_to_compile() -> None:
    app = TcviewApp(str(CPU_SAMPLE))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await pilot.press("b")
        await settle(app, pilot)
        view = shown_as(app, BreaksView)
        group = view.objects[0]
        assert viewer(app).doc.title.startswith("graph break")
        await pilot.press("enter")
        await settle(app, pilot)
        assert len(app.screen_stack) == 1 and pane(app).id == "browse"
        item = cursor_item(app)
        assert item.kind == "compile" and item.obj is group.first.compile


@sync
async def test_recompiles_view_lists_guards() -> None:
    app = TcviewApp(str(CPU_SAMPLE))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await pilot.press("r")
        await settle(app, pilot)
        view = shown_as(app, RecompilesView)
        comps = [o for o in view.objects if isinstance(o, Compile) and o.recompile is not None]
        assert comps, "the CPU sample recompiles"
        await pilot.press("j")
        await settle(app, pilot)
        await pilot.press("enter")
        await settle(app, pilot)
        assert cursor_item(app).kind == "compile"


@sync
async def test_kernels_view_filters_as_you_type() -> None:
    app = TcviewApp(str(GPU_SAMPLE))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await pilot.press("K")
        await settle(app, pilot)
        view = shown_as(app, KernelsView)
        assert app.model is not None
        total = len(view.objects)
        assert total == app.model.counts()["kernels"]
        await pilot.press(*"persistent")
        await settle(app, pilot)
        assert 0 < len(view.objects) < total
        assert all(k.kind == "persistent" for k in view.objects)
        await pilot.press("down", "enter")
        await settle(app, pilot)
        item = cursor_item(app)
        assert item.kind == "kernel" and item.obj.kind == "persistent"
        assert viewer(app).doc.plain(0) == f"kernel {item.obj.name}  persistent"
        assert f"def {item.obj.name}(" in "\n".join(viewer(app).visible_text())


@sync
async def test_time_view_sorts() -> None:
    app = TcviewApp(str(CPU_SAMPLE))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await pilot.press("t")
        await settle(app, pilot)
        view = shown_as(app, TimeView)
        from tcview.analysis.compiletime import compile_seconds

        times = [compile_seconds(c) or 0 for c in view.objects]
        assert times == sorted(times, reverse=True)
        await pilot.press("s")
        assert [c.order for c in view.objects] != [] and not view.by_time


@sync
async def test_help_overlay() -> None:
    app = TcviewApp(str(CPU_SAMPLE))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await pilot.press("question_mark")
        assert type(app.screen).__name__ == "HelpScreen"
        await pilot.press("escape")
        assert len(app.screen_stack) == 1


@sync
async def test_command_palette_jumps_to_kernel() -> None:
    app = TcviewApp(str(GPU_SAMPLE))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        assert app.model is not None
        name = app.model.kernels[1].name
        await pilot.press("ctrl+p")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette), seen=lambda: app.screen)
        await pilot.press(*name)
        await palette_lists(app, pilot, name)
        await pilot.press("enter")
        await settle(app, pilot)
        item = cursor_item(app)
        assert item.kind == "kernel" and item.obj.name == name


@sync
@pytest.mark.parametrize("keys", [("q",), ("b", "q"), ("t", "q")], ids=["tree", "breaks", "time"])
async def test_quit(keys: tuple[str, ...]) -> None:
    app = TcviewApp(str(CPU_SAMPLE))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await pilot.press(*keys)
        for _ in range(100):
            if not app.is_running:
                break
            await pilot.pause(0.05)
        assert not app.is_running, f"q did not quit from {type(pane(app)).__name__}"
    assert app.return_code == 0


# ---------------------------------------------------------------- growth in place


@pytest.mark.e2e
@sync
async def test_refresh_model_grows_tree_in_place(tmp_path: Path) -> None:
    src = next((GPU_SAMPLE / "trace").glob("dedicated_log_torch_trace*.log"))
    data = src.read_bytes()
    lines = data.split(b"\n")
    cut = len(b"\n".join(lines[: len(lines) // 3])) + 1
    trace = tmp_path / "trace"
    trace.mkdir()
    target = trace / src.name
    target.write_bytes(data[:cut])
    app = TcviewApp(OpenOptions(str(trace), follow=True))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        tree = app.query_one(TraceTree)
        first = tree.root.children[0]
        first.expand()
        await settle(app, pilot)
        # the file grows; follow mode reads the rest
        with open(target, "ab") as fh:
            fh.write(data[cut:])
        expected = counts_text(summary_json(GPU_SAMPLE))
        for _ in range(100):
            await pilot.pause(0.05)
            if app.status_right == expected:
                break
        assert tree.root.children[0] is first and first.is_expanded
        assert app.status_right == counts_text(summary_json(GPU_SAMPLE))


# ---------------------------------------------------------------- literal text


def _record(header: dict, payload: str | None = None) -> str:
    prefix = "V1121 05:35:45.123456 4242 torch/_logging/structured.py:28] "
    if payload is None:
        return prefix + json.dumps(header) + "\n"
    header = dict(header, has_payload=hashlib.md5(payload.encode()).hexdigest())
    body = "".join("\t" + ln + "\n" for ln in payload.split("\n"))
    return prefix + json.dumps(header) + "\n" + body


EVIL = "[bold red]boom[/] [link=http://evil]x[/link] \x1b]0;pwned\x07\x1b[2J\u202e"


def hostile_trace(root: Path) -> Path:
    ids = {"frame_id": 0, "frame_compile_id": 0, "attempt": 0}
    text = _record({"str": ["/work/[b]evil[/b].py", 0]})
    stack = [{"line": 3, "name": EVIL, "filename": 0}]
    text += _record({"dynamo_start": {"stack": stack}, **ids})
    text += _record(
        {"artifact": {"name": "dynamo_graph_break_reason", "encoding": "string"}, **ids},
        f'Graph Break Reason: {EVIL}\nUser code traceback:\n  File "x.py", line 1, in f',
    )
    text += _record(
        {"dynamo_output_graph": {"sizes": {}}, **ids}, f"def forward(self):\n  # {EVIL}"
    )
    trace = root / "trace"
    trace.mkdir()
    (trace / "dedicated_log_torch_trace_evil.log").write_text(text)
    return trace


@sync
async def test_trace_text_is_literal_and_safe(tmp_path: Path) -> None:
    trace = hostile_trace(tmp_path)
    app = TcviewApp(OpenOptions(str(trace), goto="0/0"))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        tree = app.query_one(TraceTree)
        labels = [str(n.label) for n in tree._by_key.values()]
        frame_label = next(lb for lb in labels if "boom" in lb)
        assert "[bold red]boom[/]" in frame_label
        assert "\x1b" not in frame_label and "␛" in frame_label
        assert "<U+202E>" in frame_label
        assert app.model is not None
        rec = next(r for r in app.model.files[0].records if r.kind == "dynamo_output_graph")
        node = tree.reveal(rec, "record")
        assert node is not None and node.data is not None
        tree.reveal_node(node)
        app.browser.show_item(node.data)
        await settle(app, pilot)
        view = viewer(app)
        rendered = "".join(view.render_line(y).text for y in range(view.doc.count))
        assert "[link=http://evil]x[/link]" in rendered
        assert "\x1b" not in rendered and "\x07" not in rendered and "\u202e" not in rendered
        await pilot.press("b")
        await settle(app, pilot)
        rendered = "".join(viewer(app).render_line(y).text for y in range(8))
        assert "[bold red]boom[/]" in rendered and "\x1b" not in rendered


@pytest.mark.unit
def test_samples_exist() -> None:
    assert (GPU_SAMPLE / "trace").is_dir() and (CPU_SAMPLE / "trace").is_dir()


@sync
async def test_lines_styled_as_a_whole_are_drawn_styled() -> None:
    """A line whose style is the Text's own (a detail's section heading: bold, underlined; a
    failure's in red) is drawn so: rich's Text.render leaves out the base style of a Text
    without spans, so the viewer applies it itself."""
    app = TcviewApp(OpenOptions(str(CPU_SAMPLE), goto="0/0"))
    async with app.run_test(size=(120, 60)) as pilot:
        await ready(app, pilot)
        view = viewer(app)
        doc = view.doc
        assert doc.styled is not None
        at = next(i for i in range(doc.count) if doc.plain(i) == "where the time went")
        assert not doc.styled[at].spans and doc.styled[at].style  # styled as a whole
        y = view.row_of(at) - view.scroll_offset.y
        styles = [seg.style for seg in view.render_line(y) if seg.text.strip()]
        assert styles and all(s is not None and s.bold and s.underline for s in styles)


@sync
async def test_goto_before_the_first_layout_leaves_the_tree_unscrolled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A model ready at mount reveals --goto's node in on_mount, before the tree has a size
    (as a loaded machine's first tick can). Scrolling then measures a tree of height 0 and
    leaves it scrolled unless something scrolls it back (a race the snapshots lost under
    load): the reveal must not scroll before the layout, and the cursor ends on the node."""
    from tcview.ingest.source import load_source

    reveal = TraceTree.reveal_node
    seen: list[tuple[int, int]] = []

    def spy(tree: TraceTree, node: TreeNode[Item], select: bool = True) -> None:
        reveal(tree, node, select)
        seen.append((tree.scrollable_content_region.height, tree.scroll_offset.y))

    monkeypatch.setattr(TraceTree, "reveal_node", spy)
    model = load_source(str(CPU_SAMPLE))
    app = TcviewApp(OpenOptions(str(CPU_SAMPLE), goto="1/1", model=model))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        tree = app.main_tree
        assert seen and seen[0][0] == 0, "the goto should run before the first layout here"
        assert seen[0][1] == 0, "revealed before the layout: must not scroll yet"
        assert tree.cursor_node is not None and str(tree.cursor_node.label).startswith("1/1")
        assert tree.scroll_offset.y == 0, "the whole tree fits: nothing should be scrolled"


@pytest.mark.unit
def test_fit_path_cuts_the_path_from_the_left() -> None:
    line = "static · 2 ranks · /a/very/long/directory/name/of/the/run/trace"
    assert fit_path(line, 200) == line
    assert fit_path(line, 40) == "static · 2 ranks · …ame/of/the/run/trace"
    assert len(fit_path(line, 40)) == 40
    assert fit_path(line, 22) == line  # no useful piece fits: the widget's ellipsis cuts it


@sync
async def test_the_status_bars_progress_repaints_its_line_without_a_layout() -> None:
    """The left part changes at each step of an index's progress. It is one line whatever its
    text, so a change repaints that line and asks for no layout of the screen (which repaints
    the tree and the reader: 3 of a 541 MB load's 12–13 layouts were these)."""
    app = TcviewApp(str(CPU_SAMPLE))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        left = app.screen.query_one("#status-left", Static)
        asked: list[bool] = []  # each refresh's `layout`
        refresh = left.refresh

        def recording(*regions: Any, layout: bool = False, **kwargs: Any) -> Widget:
            asked.append(layout)
            return refresh(*regions, layout=layout, **kwargs)

        left.refresh = recording  # type: ignore[method-assign, assignment]
        for percent in (10, 40, 100):
            app.status_left = f"static · indexing {percent}% · {CPU_SAMPLE}"
        await until(pilot, lambda: "indexing 100%" in str(left.render()))
        assert asked and not any(asked), asked
        await settle(app, pilot)
        assert "indexing 100%" in screen_text(app)
        # A line longer than the bar stays one line, cut with an ellipsis.
        app.status_left = "static · " + "a notice too long to fit " * 10 + f"· {CPU_SAMPLE}"
        await settle(app, pilot)
        assert left.size.height == 1
        status_line = screen_text(app).splitlines()[-2]
        assert status_line.lstrip().startswith("static · a notice") and "…" in status_line


@sync
async def test_a_long_path_keeps_its_end_in_the_status_bar(tmp_path: Path) -> None:
    deep = tmp_path / ("run_" + "x" * 150) / "trace"
    shutil.copytree(CPU_SAMPLE / "trace", deep)
    app = TcviewApp(str(deep))
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        left = app.screen.query_one("#status-left", Static)
        shown = str(left.render())
        assert shown.startswith("static · …") and shown.endswith("xxx/trace"), shown
        # Wider counts leave the path less room: it is cut again, still keeping its end.
        width = left.content_size.width
        app.status_right = "compiles 1234567 · breaks 1234567 · recompiles 1234567"
        await until(pilot, lambda: left.content_size.width < width)
        await until(
            pilot,
            lambda: len(str(left.render())) <= left.content_size.width,
            seen=lambda: (str(left.render()), left.content_size.width),
        )
        assert str(left.render()).endswith("xxx/trace")
        assert "static · …" in screen_text(app) and "xxx/trace" in screen_text(app)


@sync
async def test_a_scrolled_documents_scrollbar_shows_where_it_is(
    fixture_runs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kernel's page opens scrolled to its def before its scrollbar is laid out: the bar,
    once there, shows that place (Textual moves a bar only when the scroll moves)."""
    monkeypatch.setenv("TCVIEW_NO_CACHE", "1")
    monkeypatch.chdir(fixture_runs / "h200_breaks")
    app = TcviewApp(OpenOptions("trace", goto="triton_poi_fused_div_0"))
    async with app.run_test(size=(110, 34)) as pilot:
        await ready(app, pilot)
        view = viewer_shown(app)
        assert view.scroll_offset.y > 0 and view.show_vertical_scrollbar
        assert view.vertical_scrollbar.position == view.scroll_offset.y
        # The bar laid out after a scroll (what a slow first layout does): it follows.
        view.show_vertical_scrollbar = False
        view.scroll_to(0, 5, animate=False, immediate=True, force=True)
        view.show_vertical_scrollbar = True
        assert view.scroll_offset.y == 5 and view.vertical_scrollbar.position == 5
