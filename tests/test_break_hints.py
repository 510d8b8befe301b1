"""A graph break's hints come from its message: Dynamo's own traceback after the message ends
in the exception, whose text repeats every hint, and must not make them appear twice."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES
from textual.widgets import DataTable
from ui_helpers import pane, ready, settle, sync

from tcview.model.facts import parse_graph_break
from tcview.ui.app import TcviewApp
from tcview.ui.reader import Reader
from tcview.ui.views import BreaksView

# The payload of a real dynamo_graph_break_reason artifact (h200-torch2.11/gpt_train).
PAYLOAD = FIXTURES / "graph_break_gpt_train.txt"
HINT = "Remove the `torch._dynamo.graph_break()` call."


@pytest.mark.unit
def test_each_hint_is_parsed_once() -> None:
    text = PAYLOAD.read_text()
    assert text.count(f"Hint: {HINT}") == 2  # the message, and the exception at the end
    parsed = parse_graph_break(text)
    assert parsed.hints == [HINT]
    assert parsed.explanation == "User-inserted graph break. Message: None"
    assert parsed.url.endswith("/gb/gb0025.html")
    assert [s.split(" in ")[-1].split("  |")[0] for s in parsed.user_stack] == [
        "<module>",
        "opt_step",
        "wrapper",
        "_use_grad",
    ]


@sync
async def test_break_detail_shows_each_hint_once(shared_traces: Path) -> None:
    app = TcviewApp(str(shared_traces / "h200-torch2.11" / "gpt_train" / "trace"))
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await pilot.press("b")
        await settle(app, pilot)
        view = pane(app)
        assert isinstance(view, BreaksView) and len(view.objects) > 1
        for row in range(len(view.objects)):
            view.query_one("#view-table", DataTable).move_cursor(row=row)
            await settle(app, pilot)
            doc = view.query_one(Reader).viewer.doc
            assert doc.styled is not None
            hints = [t.plain for t in doc.styled if t.plain.startswith("hint ")]
            assert hints and len(hints) == len(set(hints)), hints
