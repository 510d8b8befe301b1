"""The UI thread never reads trace bytes: a live input growing while the user goes through
the views, every read of a trace file recorded with its thread."""

from __future__ import annotations

import threading
import traceback
from pathlib import Path

import pytest
from conftest import SAMPLES
from ui_helpers import browse_while_growing, ready, sync

from tcview.ingest.payloads import PayloadStore
from tcview.ui.app import TcviewApp
from tcview.ui.options import OpenOptions


@sync
async def test_no_trace_read_on_the_ui_thread_while_a_live_trace_grows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    main = threading.main_thread()
    on_ui: list[str] = []
    real = PayloadStore.read

    def read(self: PayloadStore, start: int, end: int) -> bytes:
        if threading.current_thread() is main:
            on_ui.append("".join(traceback.format_stack(limit=12)))
        return real(self, start, end)

    monkeypatch.setattr(PayloadStore, "read", read)
    source = SAMPLES / "cpu_breaks_recompiles" / "trace"
    live = tmp_path / "live"
    app = TcviewApp(OpenOptions(str(live), follow=True))
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        assert await browse_while_growing(pilot, source, live)
    assert on_ui == [], on_ui[0]
