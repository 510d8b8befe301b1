"""The UI thread never reads trace bytes: a live input growing while the user goes through
the views, every read of a trace file recorded with its thread."""

from __future__ import annotations

import threading
import time
import traceback
from pathlib import Path

import pytest
from conftest import SAMPLES
from ui_helpers import ready, sync

from tcview.ingest.payloads import PayloadStore
from tcview.ingest.replay import replay
from tcview.ui.app import TcviewApp
from tcview.ui.options import OpenOptions

KEYS = ["b", "escape", "r", "escape", "K", "escape", "f", "escape", "t", "escape", "o"]
KEYS += ["escape", "w", "escape", "down", "down", "enter", "down", "enter", "escape", "?"]


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
        done = threading.Event()

        def write() -> None:
            replay(source, live / "run", speed_mb_s=1, seed=5, max_chunk=8 << 10)
            done.set()

        threading.Thread(target=write, daemon=True).start()
        deadline = time.monotonic() + 30
        keys = iter(KEYS * 3)
        while time.monotonic() < deadline and not done.is_set():
            key = next(keys, None)
            if key is not None:
                await pilot.press(key)
            await pilot.pause(0.05)
        assert done.is_set()
        for key in KEYS:  # the whole trace in: every view once more
            await pilot.press(key)
            await pilot.pause(0.05)
    assert on_ui == [], on_ui[0]
