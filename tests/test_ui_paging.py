"""A frame with thousands of compiles: children come in pages, goto still finds any of them."""

from __future__ import annotations

import json
from pathlib import Path

from ui_helpers import item_of, obj_of, ready, sync
from waits import until

from tcview.model.objects import Compile
from tcview.ui.app import TcviewApp
from tcview.ui.tree import PAGE

PREFIX = "V1121 05:00:00.000000 7 torch/_dynamo/convert_frame.py:1] "


def _trace(tmp_path: Path, compiles: int) -> Path:
    lines = [PREFIX + json.dumps({"str": ["/work/train.py", 1]})]
    for i in range(compiles):
        ids = {"frame_id": 0, "frame_compile_id": i, "attempt": 0}
        stack = {"stack": [{"line": 3, "name": "step", "filename": 1}]}
        lines.append(PREFIX + json.dumps({"dynamo_start": stack, **ids}))
    path = tmp_path / "dedicated_log_torch_trace_many.log"
    path.write_text("\n".join(lines) + "\n")
    return path


@sync
async def test_children_are_paged_and_goto_reaches_any(tmp_path: Path) -> None:
    total = PAGE * 2 + 37
    app = TcviewApp(str(_trace(tmp_path, total)))
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        tree = app.main_tree
        frame = next(n for n in tree.root.children if item_of(n).kind == "frame")
        tree.ensure_loaded(frame)
        frame.expand()
        await until(
            pilot, lambda: len(frame.children) == PAGE + 1, seen=lambda: len(frame.children)
        )
        assert item_of(frame.children[-1]).kind == "page"
        assert f"{total - PAGE} more" in str(frame.children[-1].label)
        tree.select_node(frame.children[-1])
        await until(
            pilot, lambda: len(frame.children) == 2 * PAGE + 1, seen=lambda: len(frame.children)
        )
        assert app.browser.goto(f"0/{total - 1}") is None
        await until(
            pilot,
            lambda: obj_of(tree.cursor_node, Compile).id_text == f"0/{total - 1}",
            seen=lambda: tree.cursor_node,
        )
        assert item_of(frame.children[-1]).kind != "page"
