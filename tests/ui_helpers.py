"""Shared helpers for the UI tests."""

from __future__ import annotations

import contextlib
import html
import json
import re
import subprocess
import threading
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from conftest import REPO, SAMPLES, TCVIEW_CLI
from waits import until

if TYPE_CHECKING:
    from textual.app import App
    from textual.pilot import Pilot
    from textual.widgets.tree import TreeNode

    from tcview.ui.tree import Item
    from tcview.ui.viewer import CodeView

GPU_SAMPLE = SAMPLES / "gpu_tinyblock"
CPU_SAMPLE = SAMPLES / "cpu_breaks_recompiles"


class SnapCompare(Protocol):
    """The function that pytest-textual-snapshot's `snap_compare` fixture gives (its own
    annotation names the first parameter only)."""

    def __call__(
        self,
        app: App[Any],
        press: Iterable[str] = (),
        terminal_size: tuple[int, int] = (80, 24),
        run_before: Callable[[Pilot[Any]], Awaitable[None] | None] | None = None,
    ) -> bool: ...


async def ready(app: Any, pilot: Any, limit: float = 30.0) -> None:
    """Wait until indexing is done, the tree is built and shown content is on screen; fail
    after `limit` seconds, saying how far the load got."""
    await until(
        pilot,
        lambda: app.model_session.finished and app.browser.loaded_at is not None,
        limit,
        "the app to finish loading",
        lambda: (
            f"loader finished={app.model_session.finished}, loaded_at={app.browser.loaded_at},"
            f" status={app.status_left!r}"
        ),
    )
    await settle(app, pilot)


T = TypeVar("T")


def pane(app: Any) -> Any:  # Any: the tests read each pane's own fields
    """The pane the browser shows now: a view, a compile diff, the global search, or the
    tree and its reader (the widget #browse)."""
    return app.browser.shown_pane()


def on_top(app: Any) -> Any:
    """What the user sees on top: a dialog (help, bench, save...) when one is up, else the
    browser's pane shown."""
    return pane(app) if app.screen is app.browser else app.screen


def shown_as(app: Any, kind: type[T]) -> T:
    """The pane the browser shows now, checked to be a `kind` (a view's class, say)."""
    shown = pane(app)
    assert isinstance(shown, kind), shown
    return shown


def viewer_shown(app: Any) -> CodeView:
    """The viewer of the pane shown: the tree's reader, a view's detail, a diff's."""
    from tcview.ui.reader import Reader

    return pane(app).query(Reader).first().viewer


def item_of(node: TreeNode[Item] | None) -> Item:
    """What a tree node stands for; fails when there is no node or it has no item."""
    assert node is not None and node.data is not None, node
    return node.data


def obj_of(node: TreeNode[Item] | None, kind: type[T]) -> T:
    """The model object a tree node stands for, checked to be a `kind`."""
    obj = item_of(node).obj
    assert isinstance(obj, kind), obj
    return obj


def palette_options(app: Any) -> list[str]:
    """The entries the command palette lists now ([] when it is not open)."""
    from textual.command import CommandList, CommandPalette

    if not isinstance(app.screen, CommandPalette):
        return []
    options = app.screen.query_one(CommandList)
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


async def palette_lists(app: Any, pilot: Any, text: str, last: bool = False) -> None:
    """Wait until the command palette lists an entry with `text` (as its last entry, with
    `last`) and its search is over."""

    def listed() -> bool:
        options = palette_options(app)
        return bool(options) and (text in options[-1] if last else any(text in o for o in options))

    await until(
        pilot, listed, what=f"the palette to list {text!r}", seen=lambda: palette_options(app)
    )
    await settle(app, pilot)


async def settle(app: Any, pilot: Any) -> None:
    from textual.worker import WorkerCancelled

    for _ in range(3):
        # An exclusive worker replaced by a newer one: that one is what counts.
        with contextlib.suppress(WorkerCancelled):
            await app.workers.wait_for_complete()
        await pilot.pause(0.06)


# Rich's SVG export: one <text> per run of cells, at x = column * 12.2, clipped to its line.
_SVG_TEXT = re.compile(
    r'<text [^>]*?x="([\d.]+)"[^>]*?clip-path="url\(#[\w-]+-line-(\d+)\)">([^<]*)</text>'
)
_SVG_CELL_WIDTH = 12.2


def screen_text(app: Any) -> str:
    """What the terminal shows now, as plain lines (from Textual's own SVG screenshot)."""
    rows: dict[int, list[tuple[float, str]]] = {}
    for x, row, text in _SVG_TEXT.findall(app.export_screenshot()):
        rows.setdefault(int(row), []).append((float(x), html.unescape(text)))
    assert rows, "no text found in the screenshot: has the SVG format changed?"
    lines = []
    for row in range(app.size.height):
        line = ""
        for x, text in sorted(rows.get(row, [])):
            line = line.ljust(round(x / _SVG_CELL_WIDTH)) + text.replace("\xa0", " ")
        lines.append(line.rstrip("\n").rstrip())
    return "\n".join(lines)


def summary_json(path: Path | str) -> dict:
    out = subprocess.run(
        [*TCVIEW_CLI, "summary", "--json", "-q", str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    return json.loads(out.stdout)


def counts_text(data: dict) -> str:
    return (
        f"compiles {data['compiles']} · breaks {data['graph_breaks']}"
        f" · recompiles {data['recompiles']} · kernels {data['kernels']}"
    )


def sync(fn: Any) -> Any:
    """Run an async test with asyncio (no pytest-asyncio needed)."""
    import asyncio
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return asyncio.run(fn(*args, **kwargs))

    return wrapper


# Every view opened and closed, the tree walked, the help shown: what a user does while a live
# trace grows (the UI-thread tests go through it).
BROWSE_KEYS = ["b", "escape", "r", "escape", "K", "escape", "f", "escape", "t", "escape", "o"]
BROWSE_KEYS += ["escape", "w", "escape", "down", "down", "enter", "down", "enter", "escape", "?"]
BROWSE_KEYS += ["escape", "slash", "escape"]


def replaying(source: Path, dest: Path, speed_mb_s: float, seed: int) -> threading.Event:
    """Replay `source` into `dest` as a live run writes it (8 KiB writes at most), in a thread;
    the event is set once all of it is written."""
    from tcview.ingest.replay import replay

    done = threading.Event()

    def write() -> None:
        replay(source, dest, speed_mb_s=speed_mb_s, seed=seed, max_chunk=8 << 10)
        done.set()

    threading.Thread(target=write, daemon=True).start()
    return done


async def browse_while_growing(pilot: Pilot[Any], source: Path, live: Path) -> bool:
    """Replay `source` into `live` (a followed directory) at 1 MB/s while pressing through
    `BROWSE_KEYS`, then through them once more with the whole trace in; True when the whole
    trace was written within 30 s."""
    import time

    done = replaying(source, live / "run", speed_mb_s=1, seed=5)
    deadline = time.monotonic() + 30
    keys = iter(BROWSE_KEYS * 4)
    while time.monotonic() < deadline and not done.is_set():
        key = next(keys, None)
        if key is not None:
            await pilot.press(key)
        await pilot.pause(0.05)
    for key in BROWSE_KEYS:  # the whole trace in: every view once more
        await pilot.press(key)
        await pilot.pause(0.05)
    return done.is_set()
