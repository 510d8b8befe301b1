"""Follow mode in the app: the tree grows in place, counts go live, and in a real terminal."""

from __future__ import annotations

import shlex
import shutil
import sys
import time
from pathlib import Path

import pytest
from conftest import SAMPLES
from tmux_helpers import Terminal, need_tmux
from ui_helpers import REPO, counts_text, item_of, ready, summary_json, sync
from waits import until

from tcview.ingest.replay import replay
from tcview.ui.app import TcviewApp
from tcview.ui.options import OpenOptions

SOURCES = [SAMPLES / "gpu_triton_user" / "trace", SAMPLES / "cpu_breaks_recompiles" / "trace"]


def _expected(tmp: Path) -> str:
    done = tmp / "done"
    for i, src in enumerate(SOURCES):
        shutil.copytree(src, done / f"run{i}")
    return counts_text(summary_json(done))


@sync
async def test_tree_grows_in_place_and_counts_go_live(tmp_path: Path) -> None:
    expected = _expected(tmp_path)
    live = tmp_path / "live"
    app = TcviewApp(OpenOptions(str(live), follow=True))
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        assert app.status_left.startswith("live")
        replay(SOURCES[0], live / "run0", speed_mb_s=0, seed=1)
        tree = app.main_tree
        await until(pilot, lambda: tree.root.children, what="the first run in the tree")
        first = [item_of(n).key for n in tree.root.children]
        tree.root.children[0].expand()
        expanded = item_of(tree.root.children[0]).key
        replay(SOURCES[1], live / "run1", speed_mb_s=0, seed=2)
        await until(pilot, lambda: app.status_right == expected, seen=lambda: app.status_right)
        keys = [item_of(n).key for n in tree.root.children]
        assert keys[: len(first)] == first  # grown in place, nothing reordered
        expanded_node = tree.node_for(expanded)
        assert expanded_node is not None and expanded_node.is_expanded
        assert tree.new_keys, "items that arrived are marked as new"
        await pilot.press("F")
        await until(
            pilot,
            lambda: app.browser.controller.follow_newest and "following newest" in app.status_left,
            seen=lambda: (app.browser.controller.follow_newest, app.status_left),
        )
        assert app.model is not None
        newest = app.model.compiles[-1]
        assert item_of(tree.cursor_node).obj is newest


# The counts must follow the writes closely: measured from the last write to the screen.
LAG_LIMIT_S = 1.0


@need_tmux
@pytest.mark.slow
def test_real_terminal_counts_reach_one_shot_numbers(tmp_path: Path) -> None:
    expected = _expected(tmp_path)
    live = tmp_path / "live"  # does not exist yet, as before a job's first compile
    command = (
        f"cd {shlex.quote(str(REPO))} && {shlex.quote(sys.executable)} -m tcview.commands.cli open "
        f"{shlex.quote(str(live))} --follow"
    )
    with Terminal(command, size=(120, 40)) as term:
        term.wait_for("live")
        last = 0.0
        for i, src in enumerate(SOURCES):
            last = replay(src, live / f"run{i}", speed_mb_s=8, seed=i, max_chunk=32 << 10)
        term.wait_for(expected, what=f"the one-shot counts {expected!r}")
        lag = time.monotonic() - last
        assert lag < LAG_LIMIT_S, f"the counts took {lag:.2f} s after the last write"
        term.keys("q")
        assert term.wait_ended(what="q to quit") == 0
