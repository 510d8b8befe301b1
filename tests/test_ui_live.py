"""Pilot tests for first contact and live mode: an empty or slow pipe waits and then grows,
the overview and the status bar show one snapshot, the first row starts highlighted, detail
panes wrap, and the app is told about changes instead of polling for them."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, SAMPLES
from rich.text import Text
from textual.worker import NoActiveWorker, get_current_worker
from ui_helpers import (
    CPU_SAMPLE,
    counts_text,
    ready,
    replaying,
    settle,
    shown_as,
    summary_json,
    sync,
    viewer_shown,
)
from waits import holds, until

import tcview.ingest.load
import tcview.ingest.session
import tcview.ui.viewer
from tcview.ingest.session import ModelSession
from tcview.model.objects import Frame, Model
from tcview.run.session import Launcher
from tcview.run.spec import PythonInfo, RunOptions, build_spec
from tcview.ui.app import BrowserApp, TcviewApp
from tcview.ui.browser import TREE_GAP, BrowserScreen
from tcview.ui.options import OpenOptions
from tcview.ui.reader import Reader
from tcview.ui.run_app import RunApp
from tcview.ui.tree import TraceTree
from tcview.ui.views import KernelsView

SIZE = (120, 40)


def slow_chunks(monkeypatch: pytest.MonkeyPatch, chunk: int, seconds: float) -> None:
    """A slow disk: the load reads `chunk` bytes at a time and takes `seconds` more for each.
    A version is published once a PROGRESS_PUBLISH_S, however long a frozen copy takes on this
    machine (a slow one would space them further: session.py PROGRESS_SHARE)."""
    monkeypatch.setattr(tcview.ingest.load, "CHUNK", chunk)
    monkeypatch.setattr(tcview.ingest.session, "PROGRESS_SHARE", float("inf"))
    progress = ModelSession._progress

    def slow(self: ModelSession, done: int, total: int) -> None:
        progress(self, done, total)
        time.sleep(seconds)

    monkeypatch.setattr(ModelSession, "_progress", slow)


CAPTURE = FIXTURES / "torch_logs_small.txt"  # a real TORCH_LOGS capture


def viewer(app: TcviewApp) -> Any:
    return viewer_shown(app)


def doc_text(app: TcviewApp) -> str:
    """The lines of the document the viewer shows, one per line (before wrapping)."""
    doc = viewer(app).doc
    return "\n".join(doc.plain(i) for i in range(doc.count))


def overview_counts(app: BrowserApp) -> str | None:
    """The counts line of the overview, as the main screen's viewer holds it (None: not shown)."""
    doc = app.screen_stack[0].query_one("#reader", Reader).viewer.doc
    if doc.styled is None:
        return None
    return next((t.plain for t in doc.styled if t.plain.startswith("compiles ")), None)


# ---------------------------------------------------------------- 10.1: empty and slow pipes


@pytest.mark.e2e
@sync
async def test_slow_pipe_waits_then_grows_to_the_one_shot_counts() -> None:
    expected = counts_text(summary_json(CAPTURE))
    read_end, write_end = os.pipe()
    app = TcviewApp(OpenOptions("-", stdin_fd=read_end))
    async with app.run_test(size=SIZE) as pilot:
        # nothing has come through the pipe yet
        await until(
            pilot, lambda: "waiting for input" in app.status_left, seen=lambda: app.status_left
        )
        assert "waiting for input on stdin…" in doc_text(app)
        assert app.main_tree.last_line < 0, "no rows before the first log line"
        data = CAPTURE.read_bytes()
        for start in range(0, len(data), 4096):
            os.write(write_end, data[start : start + 4096])
        os.close(write_end)
        assert await until(pilot, lambda: app.status_right == expected), app.status_right
        await until(
            pilot,
            lambda: "waiting" not in app.status_left and overview_counts(app) == expected,
            seen=lambda: (app.status_left, overview_counts(app)),
        )
        # (the counts come from a worker, the tree from the redraw: either may be first)
        assert await until(pilot, lambda: app.main_tree.last_line > 0, what="the tree's rows")


@sync
async def test_a_pipe_without_torch_lines_is_a_valid_state() -> None:
    read_end, write_end = os.pipe()
    app = TcviewApp(OpenOptions("-", stdin_fd=read_end))
    async with app.run_test(size=SIZE) as pilot:
        os.write(write_end, b"hello\n")
        os.close(write_end)
        assert await until(pilot, lambda: "input ended" in app.status_left)
        assert "waiting" not in app.status_left
        zero = "compiles 0 · breaks 0 · recompiles 0 · kernels 0"
        assert overview_counts(app) == app.status_right == zero
        for key in ("b", "K", "o"):  # every view, and the palette, over a run without files
            await pilot.press(key)
            await settle(app, pilot)
            await pilot.press("escape")
        await pilot.press("ctrl+p")
        await settle(app, pilot)
        await pilot.press("escape")
        assert app.is_running


# ---------------------------------------------------------------- 10.2: one snapshot


@pytest.mark.e2e
@sync
async def test_live_overview_and_status_bar_show_the_same_counts(tmp_path: Path) -> None:
    source = SAMPLES / "gpu_triton_user" / "trace"
    expected = counts_text(summary_json(source))
    live = tmp_path / "live"
    app = TcviewApp(OpenOptions(str(live), follow=True))
    seen: set[str] = set()
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        done = replaying(source, live / "run", speed_mb_s=2, seed=3)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (done.is_set() and app.status_right == expected):
            await pilot.pause(0.02)
            assert overview_counts(app) == app.status_right  # at every moment, not just the end
            seen.add(app.status_right)
        assert app.status_right == expected
        assert len(seen) > 2, "the counts moved while the trace was written"


@pytest.mark.e2e
@sync
async def test_overview_counts_move_with_the_status_bar_while_indexing(
    shared_traces: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Index in many small, slow steps, as a big trace would go: long enough (about 3 s) for
    # the tree and counts to be redrawn a few times (TREE_GAP apart) before the end.
    slow_chunks(monkeypatch, 16 << 10, 0.008)
    trace = shared_traces / "h200-torch2.11" / "gpt_train" / "trace"
    app = TcviewApp(str(trace))
    seen: set[str] = set()
    async with app.run_test(size=SIZE) as pilot:
        while not app.model_session.finished:
            await pilot.pause(0.01)
            assert overview_counts(app) == app.status_right
            seen.add(app.status_right)
        await ready(app, pilot)
        assert overview_counts(app) == app.status_right == counts_text(summary_json(trace))
    assert len(seen) > 2, "the counts moved while indexing"


# ---------------------------------------------------------------- 10.6: nothing to show


@sync
@pytest.mark.parametrize(
    ("follow", "said"), [(False, "no trace found in"), (True, "waiting for traces in")]
)
async def test_an_empty_directory_says_so(tmp_path: Path, follow: bool, said: str) -> None:
    app = TcviewApp(OpenOptions(str(tmp_path), follow=follow))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        assert f"{said} {tmp_path}" in doc_text(app)
        assert said.split(" in")[0] in app.status_left


@sync
async def test_a_binary_file_is_reported_not_read_as_text(tmp_path: Path) -> None:
    binary = tmp_path / "model.bin"
    binary.write_bytes(b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 64)
    app = TcviewApp(str(binary))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        shown = doc_text(app)
        assert "not a trace or TORCH_LOGS capture: 16.4 kB, starts with 7f 45 4c 46" in shown
        assert "\x7f" not in shown
        assert app.model is None and app.is_running


# ---------------------------------------------------------------- 10.7: the first row


@sync
async def test_first_row_is_highlighted_and_down_goes_to_the_second(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TCVIEW_PREVIEW", "auto")
    app = TcviewApp(str(CPU_SAMPLE))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        tree = app.query_one(TraceTree)
        assert tree.cursor_line == 0
        assert overview_counts(app) == app.status_right, "the overview stays until a move"
        await pilot.press("down")
        await settle(app, pilot)
        assert tree.cursor_line == 1
        node = tree.get_node_at_line(1)
        second = node.data if node is not None else None
        assert second is not None and viewer(app).doc.title != app.browser.source_path


@sync
async def test_enter_on_the_first_row_shows_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TCVIEW_PREVIEW", "auto")
    app = TcviewApp(str(CPU_SAMPLE))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        node = app.query_one(TraceTree).get_node_at_line(0)
        first = node.data if node is not None else None
        assert first is not None and first.kind == "frame" and isinstance(first.obj, Frame)
        await pilot.press("enter")
        await settle(app, pilot)
        assert viewer(app).doc.title == f"frame {first.obj.label}"


# ---------------------------------------------------------------- 10.10: wrapping


@sync
async def test_detail_panes_wrap_long_lines_and_code_scrolls(shared_traces: Path) -> None:
    trace = shared_traces / "h200-torch2.11" / "gpt_train" / "trace"
    app = TcviewApp(str(trace))
    async with app.run_test(size=(80, 30)) as pilot:
        await ready(app, pilot)
        await pilot.press("b")
        await settle(app, pilot)
        view = viewer(app)
        width = view.scrollable_content_region.width
        long = [t.plain for t in view.doc.styled if t.cell_len > width]
        assert long, "user stack lines are longer than the pane"
        await _assert_wrapped(pilot, view, long)
        await pilot.resize_terminal(100, 30)  # a new width: wrapped again
        await settle(app, pilot)
        await _assert_wrapped(pilot, view, long)
        # Code keeps one row per line and scrolls sideways.
        await pilot.press("escape")
        assert app.model is not None
        rec = next(r for r in app.model.files[0].records if r.kind == "inductor_output_code")
        app.browser.reveal("record", rec)
        await settle(app, pilot)
        view = viewer(app)
        assert view.doc.styled is None and view.virtual_size.height == view.doc.count
        assert view.virtual_size.width > view.scrollable_content_region.width


async def _assert_wrapped(pilot: Any, view: Any, long: list[str]) -> None:
    width = view.scrollable_content_region.width
    rows: list[str] = []
    for top in range(0, view.virtual_size.height, 10):
        view.scroll_to(y=top, animate=False, immediate=True)
        await pilot.pause()
        for y in range(min(10, view.virtual_size.height - top)):
            strip = view.render_line(y)
            assert strip.cell_length <= width
            rows.append(strip.text.strip())
    shown = "".join("".join(rows).split())
    for line in long:  # every character of every long line is on screen, in order
        assert "".join(line.split()) in shown, line


@sync
async def test_overview_key_line_is_whole_at_120_columns() -> None:
    app = TcviewApp(str(CPU_SAMPLE))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        view = viewer(app)
        keys = [i for i in range(view.virtual_size.height) if "ctrl+p" in view.render_line(i).text]
        assert keys and "ctrl+p jump" in view.render_line(keys[0]).text


# ---------------------------------------------------------------- 11.5: told, not polling


def count_redraws(app: TcviewApp) -> list[float]:
    """The times of the app's redraws from the model from now on."""
    calls: list[float] = []
    original = app.browser.refresh_model

    def counting() -> None:
        calls.append(time.monotonic())
        original()

    app.browser.refresh_model = counting  # type: ignore[method-assign]
    return calls


@sync
async def test_an_idle_followed_app_does_not_poll_the_model(tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    shutil.copytree(CPU_SAMPLE / "trace", trace)
    app = TcviewApp(OpenOptions(str(trace), follow=True))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        calls = count_redraws(app)
        await holds(
            pilot,
            lambda: calls == [],
            1.0,
            "nothing changed: nothing to redraw",
            seen=lambda: calls,
        )

        # A burst of updates from another thread becomes one or two redraws.
        def burst_of_updates() -> None:
            for _ in range(200):
                app.browser.model_moved()

        burst = threading.Thread(target=burst_of_updates)
        burst.start()
        burst.join()
        await until(pilot, lambda: calls, what="a redraw after the burst")
        await holds(pilot, lambda: len(calls) <= 3, 0.3, "one or two redraws", seen=lambda: calls)


@sync
async def test_a_redraw_that_finds_nothing_new_after_the_first_read_makes_no_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The counts walk every compile: the first read's end draws them once, and a followed
    input's next redraw that finds nothing new (as a watcher's event can bring) draws none."""
    made: list[int] = []  # the counts made by a redraw right after the first read's end

    def ready_then_redraw(browser: BrowserScreen) -> None:
        model_ready(browser)
        counts = browser.refresh_counts
        counted: list[int] = []
        browser.refresh_counts = lambda: counted.append(1)  # type: ignore[method-assign]
        browser.refresh_model()
        browser.refresh_counts = counts  # type: ignore[method-assign]
        made.append(len(counted))

    model_ready = BrowserScreen._model_ready
    monkeypatch.setattr(BrowserScreen, "_model_ready", ready_then_redraw)
    trace = tmp_path / "trace"
    shutil.copytree(CPU_SAMPLE / "trace", trace)
    app = TcviewApp(OpenOptions(str(trace), follow=True))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await until(pilot, lambda: made, what="the first read's end")
        assert made == [0]
        assert counts_text(summary_json(trace)) == app.status_right


@pytest.mark.e2e
@sync
async def test_an_indexing_app_redraws_when_the_loader_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No polling while a one-shot load indexes: what it read before it stalled is shown
    (the tree and counts once TREE_GAP has passed), then nothing is redrawn until it goes on;
    and the end is shown without waiting for a timer."""
    monkeypatch.setattr(tcview.ingest.load, "CHUNK", 64 << 10)
    stalled, go_on = threading.Event(), threading.Event()
    progress = ModelSession._progress

    def stalling(self: ModelSession, done: int, total: int) -> None:
        progress(self, done, total)
        if done >= 3 * (64 << 10) and not go_on.is_set():
            stalled.set()
            go_on.wait(10)

    monkeypatch.setattr(ModelSession, "_progress", stalling)
    app = TcviewApp(str(CPU_SAMPLE))
    async with app.run_test(size=SIZE) as pilot:
        while not stalled.is_set():
            await pilot.pause(0.02)
        # the last chunk's redraw (INDEX_GAP) is through: shown mid-way
        await until(
            pilot,
            lambda: "indexing" in app.status_left and app.browser.records_shown() > 0,
            seen=lambda: (app.status_left, app.browser.records_shown()),
        )
        # and no redraw of a chunk before the stall is still due
        browser = app.browser
        await until(
            pilot,
            lambda: browser._live_timer is None and browser._tree_timer is None,
            what="no redraw due",
        )
        model = browser.model
        assert model is not None
        read = model.summary_counts()["records"]
        await until(  # all it read before the stall
            pilot,
            lambda: browser.records_shown() == read,
            seen=lambda: (browser.records_shown(), read),
        )
        calls = count_redraws(app)
        await holds(
            pilot,
            lambda: calls == [],
            0.8,
            "the load stalled: nothing to redraw",
            seen=lambda: calls,
        )
        go_on.set()
        await ready(app, pilot)
        assert app.status_right == counts_text(summary_json(CPU_SAMPLE))


@pytest.mark.e2e
@sync
async def test_an_indexing_app_redraws_its_tree_once_a_tree_gap_and_its_progress_more_often(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While a load indexes, the tree, counts and overview are redrawn at most once per
    TREE_GAP (each such redraw walks the model and repaints the screen, and held a 541 MB load
    back by a quarter), while its progress moves in the status bar."""
    slow_chunks(monkeypatch, 64 << 10, 0.1)  # a slow disk: about 27 chunks, 2.7 s
    app = TcviewApp(str(CPU_SAMPLE))
    async with app.run_test(size=SIZE) as pilot:
        browser = app.browser
        redraws: list[float] = []  # while indexing
        original = browser.refresh_model

        def recording() -> None:
            if browser._indexing:
                redraws.append(time.monotonic())
            original()

        browser.refresh_model = recording  # type: ignore[method-assign]
        shown: list[tuple[float, str]] = []  # (when, the progress in the status bar)
        while not browser.session.finished:
            shown += [(time.monotonic(), p) for p in app.status_left.split(" · ") if "%" in p]
            await pilot.pause(0.02)
        await ready(app, pilot)
        assert app.status_right == counts_text(summary_json(CPU_SAMPLE))
    assert len(redraws) >= 2, redraws
    gaps = [b - a for a, b in zip(redraws, redraws[1:], strict=False)]
    assert all(gap >= 0.9 * TREE_GAP for gap in gaps), gaps
    # The progress moved while the tree waited between its first two redraws.
    between = {p for when, p in shown if redraws[0] < when < redraws[1]}
    assert len(between) >= 2, (between, redraws)


@pytest.mark.e2e
@sync
async def test_the_lexers_are_warmed_up_once_the_first_read_is_done(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Importing the lexers takes the GIL from the loading thread: they are warmed up, ahead
    of the first item shown, once the first read is done, not while it indexes."""
    slow_chunks(monkeypatch, 64 << 10, 0.02)
    app = TcviewApp(str(CPU_SAMPLE))
    read: list[bool] = []  # at each of the warm-up's calls: whether the first read was done
    highlight = tcview.ui.viewer.highlight_line

    def recording(text: str, language: str | None) -> Text:
        with contextlib.suppress(NoActiveWorker):
            if get_current_worker().description == "warm up":
                read.append(app.browser.session.finished)
        return highlight(text, language)

    monkeypatch.setattr(tcview.ui.viewer, "highlight_line", recording)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await until(pilot, lambda: len(read) == 3, seen=lambda: read)
    assert read == [True, True, True]


@sync
async def test_kernel_rows_are_built_off_the_ui_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[threading.Thread] = []
    rows = KernelsView.rows

    def recording(self: KernelsView, model: Model) -> Any:
        threads.append(threading.current_thread())
        return rows(self, model)

    monkeypatch.setattr(KernelsView, "rows", recording)
    app = TcviewApp(str(SAMPLES / "gpu_tinyblock"))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await pilot.press("K")
        await settle(app, pilot)
        await pilot.press(*"pointw")
        await settle(app, pilot)
        view = shown_as(app, KernelsView)
        assert len(view.objects) == 2 and all(k.kind == "pointwise" for k in view.objects)
    assert threads and threading.main_thread() not in threads


CHATTY = """\
import pathlib, sys, time
for i in range(50):
    print(f"line {i}", flush=True)
while not pathlib.Path(sys.argv[1]).exists():  # quiet until the test says so
    time.sleep(0.05)
print("bye", flush=True)
"""


@pytest.mark.e2e
@sync
async def test_run_pane_is_told_about_output_and_the_end(tmp_path: Path) -> None:
    job = tmp_path / "job.py"
    job.write_text(CHATTY)
    flag = tmp_path / "flag"
    spec = build_spec(["--", sys.executable, str(job), str(flag)])
    launcher = Launcher(spec, RunOptions(run_dir=tmp_path / "D", grace_s=1.0))
    launcher.python_info = PythonInfo(spec.python)  # no torch needed
    session = launcher.start()
    calls: list[float] = []
    lines_since = session.lines_since

    def counting(seq: int = 0) -> Any:
        calls.append(time.monotonic())
        return lines_since(seq)

    session.lines_since = counting  # type: ignore[method-assign]
    app = RunApp(launcher, session)
    async with app.run_test(size=SIZE) as pilot:
        shown = lambda: [text.plain for _, text in app.job.lines]  # noqa: E731
        assert await until(pilot, lambda: "line 49" in shown())
        # A line delivered while the pane read may have posted once more (`_read_output`):
        # that message, handled now, finds nothing new.
        await settle(app, pilot)
        quiet_from = time.monotonic()
        # the job waits for the flag: no output, nothing to read
        await holds(
            pilot, lambda: [t for t in calls if t > quiet_from] == [], 1.0, seen=lambda: calls
        )
        flag.touch()
        assert await until(pilot, lambda: "exited 0" in app.status_left)
        assert shown()[-1] == "bye"
        assert overview_counts(app) == app.status_right
        await pilot.press("q")
