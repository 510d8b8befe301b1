"""The browser's controller without an app: the back stack of panes, what a key opens over
what, reveal and goto targets, the rank filter, the compile marked for a diff, what the reader
shows, search hits, following the newest compile, and which keys mean something. On real
traces (the repo's CPU sample, a TORCH_LOGS capture, two ranks built from the sample)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import rankdir
from conftest import FIXTURES, SAMPLES

from tcview.ingest.source import load_source
from tcview.model.objects import Compile, Kernel, Model
from tcview.report.search import Query, search
from tcview.ui.controller import (
    BrowserController,
    ComparePane,
    DiffPane,
    Note,
    SearchPane,
    TreePane,
    ViewPane,
)
from tcview.ui.items import Item

CPU_TRACE = SAMPLES / "cpu_breaks_recompiles" / "trace"
GPU_TRACE = SAMPLES / "gpu_tinyblock" / "trace"


@pytest.fixture(scope="module")
def model() -> Model:
    return load_source(str(CPU_TRACE))


def compile_named(model: Model, label: str) -> Compile:
    return next(c for c in model.compiles if c.id_label == label)


def item(obj: Compile | Kernel) -> Item:
    if isinstance(obj, Kernel):
        return Item("kernel", obj, ("kernel", id(obj)))
    return Item("compile", obj, ("compile", id(obj)))


def names(controller: BrowserController) -> list[str]:
    """The back stack, as the panes' kinds (a view by its name)."""
    return [p.name if isinstance(p, ViewPane) else type(p).__name__ for p in controller.stack]


# ---------------------------------------------------------------- the back stack


def test_a_view_opens_over_the_tree_and_another_takes_its_place() -> None:
    c = BrowserController()
    assert c.at_tree and isinstance(c.shown, TreePane)
    assert c.open_view("breaks")
    assert names(c) == ["TreePane", "breaks"]
    assert not c.open_view("breaks"), "its key again: it is shown already"
    assert c.open_view("recompiles")  # from a view: in its place, not over it
    assert names(c) == ["TreePane", "recompiles"]
    assert c.back() and c.at_tree
    assert not c.back(), "escape at the tree: nothing to close"


def test_compare_and_diff_open_over_the_pane_shown_and_escape_goes_back_to_it(
    model: Model,
) -> None:
    c = BrowserController()
    c.open_view("ranks")
    pane = c.compare(0, 1)
    assert isinstance(pane, ComparePane) and (pane.left, pane.right) == (0, 1)
    assert names(c) == ["TreePane", "ranks", "ComparePane"]
    c.show(item(compile_named(model, "0/1")))
    diffed = c.diff()
    assert isinstance(diffed, DiffPane) and c.shown is diffed
    assert names(c) == ["TreePane", "ranks", "ComparePane", "DiffPane"]
    c.back()
    c.back()
    assert names(c) == ["TreePane", "ranks"], "back to the view, not to the tree"
    assert c.close_views() and c.at_tree
    assert not c.close_views()


def test_the_global_search_is_one_pane_for_the_session() -> None:
    c = BrowserController()
    c.open_view("kernels")
    assert c.open_search()
    assert names(c) == ["TreePane", "SearchPane"], "the views close under it"
    search = c.shown
    assert isinstance(search, SearchPane) and not c.open_search()
    c.open_view("breaks")  # a view's key from the search: in its place
    assert names(c) == ["TreePane", "breaks"]
    c.open_search()
    assert c.shown is search, "the same search again: its results stay"


def test_a_view_opened_twice_is_two_panes() -> None:
    c = BrowserController()
    c.open_view("time")
    first = c.shown
    c.back()
    c.open_view("time")
    assert c.shown is not first, "a view opened anew reads the model anew"


# ---------------------------------------------------------------- what the reader shows


def test_an_item_is_shown_once_and_the_first_row_keeps_the_overview(model: Model) -> None:
    c = BrowserController()
    root = Item("root", model, "root")
    c.start(root)
    assert c.overview_shown and c.shown_object() is None
    c.place_cursor()
    assert not c.highlighted(0), "the first row, placed there at the start"
    assert c.highlighted(1)
    assert c.highlighted(0), "the user came back to it: shown"
    comp = item(compile_named(model, "0/0"))
    assert c.show(comp) and not c.show(comp)
    assert c.show_again(comp), "a reveal shows it again"
    assert not c.overview_shown and c.shown_object() is comp.obj
    c.start(root)
    assert c.shown_item is comp, "the overview only while nothing is shown"
    c.new_source()
    assert c.shown_item is None


def test_provenance_toggles_between_an_item_and_its_provenance() -> None:
    gpu = load_source(str(GPU_TRACE))
    kernel = gpu.kernels[0]
    c = BrowserController()
    assert c.provenance() is None, "nothing shown: the Provenance view"
    shown = item(kernel)
    c.show(shown)
    assert c.picked_kernel is kernel
    assert c.provenance() is kernel
    assert c.provenance() is shown, "again: back to the item"
    assert c.provenance() is kernel
    assert c.shown_compile() is kernel.compile


def test_diff_pairs_a_recompile_with_what_it_replaced_or_with_the_marked_one(
    model: Model,
) -> None:
    c = BrowserController()
    assert c.diff() == Note("pick a compile to diff", "warning")
    assert c.mark() == Note("pick a compile to mark it", "warning")
    first, second, third = (compile_named(model, f"0/{i}") for i in range(3))
    c.show(item(first))
    said = c.diff()
    assert isinstance(said, Note) and "0/0 replaced no compile" in said.message
    assert c.at_tree, "nothing to diff: nothing opens"
    assert c.mark().message.startswith("marked 0/0")
    c.show(item(third))
    diffed = c.diff()
    assert isinstance(diffed, DiffPane) and (diffed.a, diffed.b) == (first, third)
    c.back()
    c.show(item(first))
    assert c.mark() == Note("0/0 is no longer marked")
    c.show(item(third))
    diffed = c.diff()
    assert isinstance(diffed, DiffPane) and (diffed.a, diffed.b) == (second, third)


# ---------------------------------------------------------------- targets


def test_goto_targets_are_located_or_said_why_not(model: Model) -> None:
    c = BrowserController(goto="1/0")
    assert c.goto_target == "1/0"
    found = c.locate(model, "1/0")
    assert isinstance(found, Compile) and found.id_text == "1/0"
    kernel_free = c.locate(model, "definitely_not_a_kernel")
    assert isinstance(kernel_free, str)
    assert kernel_free.startswith("--goto definitely_not_a_kernel: not found")


def test_a_search_hit_is_revealed_and_its_match_marked_once_shown(model: Model) -> None:
    hit = next(h for h in search(model, Query("torch.sin")) if h.record is not None)
    pattern = re.compile("torch.sin", re.IGNORECASE)
    c = BrowserController()
    c.open_search()
    target = c.open_hit(hit, pattern, "torch.sin", model)
    assert target is hit.record and c.at_tree, "the search closes: the tree shows it"
    assert c.hit_in(object()) is None, "another item shown first: nothing marked"
    mark = c.hit_in(target)
    assert mark is not None and (mark.line, mark.label) == (hit.line, "torch.sin")
    assert c.hit_in(target) is None, "marked once"


def test_a_hit_in_other_output_opens_the_other_view_at_its_line() -> None:
    capture = load_source(str(FIXTURES / "torch_logs_small.txt"))
    hit = next(iter(search(capture, Query("converting a tensor"))))
    c = BrowserController()
    c.open_search()
    assert c.open_hit(hit, re.compile("converting a tensor", re.I), "x", capture) is None
    shown = c.shown
    assert isinstance(shown, ViewPane) and shown.name == "other"
    assert shown.at is not None and shown.at.line == 139
    assert shown.at.display == capture.display
    assert names(c) == ["TreePane", "other"]


def test_following_the_newest_compile_reveals_each_new_one_once(model: Model) -> None:
    c = BrowserController(follow=True)
    assert c.toggle_follow() == Note("following the newest compile")
    assert c.newest_compile(model) is model.compiles[-1]
    assert c.newest_compile(model) is None, "revealed already"
    assert c.newest_compile(None) is None
    assert c.toggle_follow() == Note("view stays put")
    assert c.toggle_preview() == Note("preview on enter") and not c.auto_preview


# ---------------------------------------------------------------- ranks and keys


def test_the_rank_filter_hides_the_other_ranks(tmp_path: Path) -> None:
    rankdir.build(tmp_path / "trace", 2, 0, sorted(CPU_TRACE.glob("*.log")))
    two = load_source(str(tmp_path / "trace"))
    by_rank = {c.file.rank: c for c in two.compiles}
    assert set(by_rank) == {0, 1}
    c = BrowserController()
    assert c.hidden_rank(by_rank[0]) is None, "no filter: every rank shows"
    assert c.filter_ranks(frozenset({1})) == Note("showing rank 1 only")
    assert c.hidden_rank(by_rank[0]) == 0 and c.hidden_rank(by_rank[1]) is None
    first = by_rank[0]
    kernel = next(k for k in two.kernels if k.output.source.rank == 0)
    assert first.frame is not None and first.records
    for obj in (kernel, first.frame, first.records[0]):
        assert c.hidden_rank(obj) == 0, obj
    assert c.filter_ranks(None) == Note("all ranks shown")
    assert c.hidden_rank(by_rank[0]) is None


def test_keys_mean_something_only_where_they_do() -> None:
    c = BrowserController()
    assert not c.allows("toggle_follow", ()), "static input: nothing to follow"
    assert BrowserController(follow=True).allows("toggle_follow", ())
    assert not c.allows("view", ("errors",)) and not c.allows("view", ("export",))
    assert not c.allows("view", ("ranks",)) and not c.allows("filter_ranks", ())
    assert c.allows("view", ("breaks",))
    assert c.counted(errors=2, ranks=2, export=True), "the keys change"
    assert not c.counted(errors=2, ranks=2, export=True), "the same counts: no change"
    assert c.allows("view", ("errors",)) and c.allows("view", ("export",))
    assert c.allows("view", ("ranks",)) and c.allows("filter_ranks", ())
    c.counted(errors=0, ranks=1, export=False)
    c.filter_ranks(frozenset({0}))
    assert c.allows("filter_ranks", ()), "a filter set: # can clear it"
