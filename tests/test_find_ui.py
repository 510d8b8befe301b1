"""Global search in the app (Pilot): S and the palette, results by compile as they stream in,
Enter opens the artifact at the line (the kernel, for a line inside one), regex, case."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES
from textual.command import CommandPalette
from textual.widgets.tree import TreeNode
from ui_helpers import (
    CPU_SAMPLE,
    GPU_SAMPLE,
    palette_lists,
    pane,
    ready,
    settle,
    shown_as,
    sync,
    viewer_shown,
)
from waits import until

from tcview.analysis.kernels import OUTPUT_CODES
from tcview.ingest.source import load_source
from tcview.model.objects import Compile, Kernel, Record
from tcview.report.search import Hit, Query, search
from tcview.ui.app import TcviewApp
from tcview.ui.finder import ResultsTree, SearchView
from tcview.ui.reader import Reader
from tcview.ui.views import OtherView

SIZE = (120, 40)


async def _search(app: TcviewApp, pilot: Any, text: str) -> SearchView:
    await pilot.press("S")
    await until(pilot, lambda: isinstance(pane(app), SearchView), seen=lambda: pane(app))
    screen = shown_as(app, SearchView)
    assert app.focused is screen.query_one("#global-query")
    await pilot.press(*text)
    await pilot.press("enter")
    await until(pilot, lambda: screen.finished, what="the search to finish")
    return screen


def _compile_of(leaf: TreeNode[Hit | None]) -> Compile:
    """The compile of a result leaf's hit."""
    assert leaf.data is not None and leaf.data.compile is not None, leaf
    return leaf.data.compile


def _leaves(screen: SearchView) -> list[Any]:
    tree = screen.query_one(ResultsTree)
    return [leaf.data for group in tree.root.children for leaf in group.children]


def _unique_kernel_line(path: Path) -> tuple[Kernel, str, int]:
    """A line that only one kernel's source has (and nothing else in the input)."""
    model = load_source(str(path))
    for kernel in model.kernels:
        code = OUTPUT_CODES.get(kernel.output)
        lines, span = code.lines, code.span_of(kernel)
        assert span is not None
        for number in range(span.start + 2, span.end):
            text = lines[number].strip()
            if len(text) < 12 or "tl." not in text and "=" not in text:
                continue
            hits = list(search(model, Query(text)))
            if len(hits) == 1 and hits[0].kernel is not None:
                return kernel, text, number + 1
    raise AssertionError("no line unique to one kernel")


@sync
async def test_search_jumps_to_the_kernel_line() -> None:
    trace = GPU_SAMPLE / "trace"
    kernel, text, line = _unique_kernel_line(trace)
    app = TcviewApp(str(trace))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        screen = await _search(app, pilot, text)
        hits = _leaves(screen)
        assert len(hits) == 1 and hits[0].kernel.name == kernel.name and hits[0].line == line
        state = str(screen.query_one("#global-state").render())
        assert state.startswith("1 matching lines in 1 groups")
        assert screen.first_at is not None and screen.first_at < 1.0
        group = screen.query_one(ResultsTree).root.children[0]
        assert kernel.compile is not None
        assert str(group.label).startswith(kernel.compile.id_label)
        await pilot.press("down", "enter")  # to the results, open the first
        await settle(app, pilot)
        assert len(app.screen_stack) == 1 and pane(app).id == "browse"
        viewer = viewer_shown(app)
        assert viewer.doc.title.startswith(f"kernel {kernel.name}")
        assert app.focused is viewer
        index = viewer.doc.index_of(line)
        assert viewer.matches[viewer.match_index][0] == index, "the match on the line is current"
        assert any(text in row for row in viewer.visible_text())
        assert str(viewer.border_subtitle).startswith(f"/{text}: 1/1")
        node = app.main_tree.cursor_node
        assert node is not None and node.data is not None and isinstance(node.data.obj, Kernel)
        assert node.data.obj.name == kernel.name, "the tree shows it too"
        await pilot.press("S")  # the results are still there
        await until(pilot, lambda: pane(app) is screen, seen=lambda: pane(app))
        assert len(_leaves(screen)) == 1


@sync
async def test_results_are_grouped_by_compile_and_open_records_at_their_line() -> None:
    app = TcviewApp(str(CPU_SAMPLE / "trace"))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        screen = await _search(app, pilot, "torch.sin")
        hits = _leaves(screen)
        model = app.model
        assert model is not None
        expected = list(search(model, Query("torch.sin")))
        assert sorted((h.offset, h.line) for h in hits) == [(h.offset, h.line) for h in expected]
        tree = screen.query_one(ResultsTree)
        groups = [str(g.label).split("  ")[0] for g in tree.root.children]
        assert len(groups) == len(set(groups)) > 1, "one group per compile"
        for g in tree.root.children:
            ids = {_compile_of(leaf).id_label for leaf in g.children}
            assert len(ids) == 1
        graph = next(
            h for h in hits if h.record is not None and h.record.label == "dynamo_output_graph"
        )
        tree.focus()
        tree.select_node(next(n for g in tree.root.children for n in g.children if n.data is graph))
        await settle(app, pilot)
        viewer = viewer_shown(app)
        assert viewer.doc.title.startswith("Dynamo graph")
        line, start, end = viewer.matches[viewer.match_index]
        assert line == graph.line - 1
        assert viewer.doc.plain(line)[start:end].lower() == "torch.sin"


@sync
async def test_regex_toggle_and_smart_case() -> None:
    app = TcviewApp(str(GPU_SAMPLE / "trace"))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        screen = await _search(app, pilot, r"tmp\d+ = tl\.where")
        assert _leaves(screen) == []
        assert "no match" in str(screen.query_one("#global-state").render())
        await pilot.press("ctrl+r")  # regex: searched again
        await until(pilot, lambda: screen.finished, what="the search to finish")
        hits = _leaves(screen)
        assert hits and all("tl.where" in h.text for h in hits)
        screen.start("GRAPHMODULE")
        await settle(app, pilot)
        assert _leaves(screen) == []
        screen.start("graphmodule")
        await settle(app, pilot)
        assert len(_leaves(screen)) > 3


@sync
async def test_palette_searches_everything() -> None:
    app = TcviewApp(str(GPU_SAMPLE / "trace"))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await pilot.press("ctrl+p")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette), seen=lambda: app.screen)
        await pilot.press(*"XBLOCK")
        await palette_lists(app, pilot, "Search everything", last=True)
        await pilot.press("end", "enter")  # the last entry: search everything for it
        await settle(app, pilot)
        screen = shown_as(app, SearchView)
        await until(pilot, lambda: screen.finished, what="the search to finish")
        assert _leaves(screen) and all("XBLOCK" in h.text for h in _leaves(screen))


@sync
async def test_other_output_opens_the_other_view_at_the_line() -> None:
    capture = FIXTURES / "torch_logs_small.txt"
    app = TcviewApp(str(capture))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        screen = await _search(app, pilot, "converting a tensor")
        hits = _leaves(screen)
        assert [(h.artifact, h.line) for h in hits] == [("other output", 139)]
        await pilot.press("down", "enter")
        await settle(app, pilot)
        viewer = shown_as(app, OtherView).query_one(Reader).viewer
        line, start, end = viewer.matches[viewer.match_index]
        assert app.model is not None
        # the file's path once, above its lines; the line found is 139
        assert viewer.doc.plain(0).startswith(f"{app.model.display} · 3 lines")
        assert viewer.doc.plain(line).startswith("  139  ")
        assert viewer.doc.plain(line)[start:end] == "Converting a tensor"


@sync
async def test_a_run_directory_s_log_hits_open_without_the_tree() -> None:
    app = TcviewApp(str(CPU_SAMPLE))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        screen = await _search(app, pilot, "Recompiling function")
        hits = _leaves(screen)
        assert hits and all(isinstance(h.record, Record) for h in hits)
        await pilot.press("down", "enter")
        await settle(app, pilot)
        viewer = viewer_shown(app)
        line, start, end = viewer.matches[viewer.match_index]
        assert viewer.doc.plain(line)[start:end] == "Recompiling function"


@pytest.mark.unit
def test_result_labels_show_trace_text_literally() -> None:
    from tcview.ui.finder import hit_label

    model = load_source(str(FIXTURES / "hostile" / "escapes.log"))
    hits = list(search(model, Query("pwned")))
    assert hits
    for hit in hits:
        label = hit_label(hit)
        assert "\x1b" not in label.plain and "\x07" not in label.plain
        assert "␛]0;PWNED TITLE␇" in label.plain or "PWNED" in label.plain
        marked = [s for s in label.spans if "yellow" in str(s.style)]
        assert marked and all(label.plain[s.start : s.end].lower() == "pwned" for s in marked)
    markup = load_source(str(FIXTURES / "hostile" / "markup.log"))
    hit = next(iter(search(markup, Query("[bold red]not bold"))))
    assert "[bold red]not bold[/]" in hit_label(hit).plain
