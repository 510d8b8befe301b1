"""The waits of the tests fail when their condition never comes, saying what they last saw."""

from __future__ import annotations

import threading

import pytest
from ui_helpers import CPU_SAMPLE, ready, sync
from waits import holds, stays, until, wait_until

import tcview.ingest.load
from tcview.ingest.session import ModelSession
from tcview.ui.app import TcviewApp


@pytest.mark.unit
def test_wait_until_fails_with_what_it_last_saw() -> None:
    seen = iter(range(1000))
    with pytest.raises(AssertionError, match=r"not within 0.2s: the counter: last saw 0"):
        wait_until(lambda: next(seen) < 0, 0.2, "the counter", seen=lambda: 0)
    assert wait_until(lambda: "yes", 0.2) == "yes"


@pytest.mark.unit
def test_stays_fails_as_soon_as_it_stops_holding() -> None:
    values = iter([True, True, False, True])
    with pytest.raises(AssertionError, match="stopped holding: alive: last saw False"):
        stays(lambda: next(values), 10.0, "alive")
    stays(lambda: True, 0.1)


def test_ready_fails_when_the_load_never_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    """A load that stalls: `ready` must not go on as if the app were loaded."""
    go_on = threading.Event()
    progress = ModelSession._progress

    def stalling(self: ModelSession, done: int, total: int) -> None:
        progress(self, done, total)
        go_on.wait(30)

    monkeypatch.setattr(tcview.ingest.load, "CHUNK", 64 << 10)
    monkeypatch.setattr(ModelSession, "_progress", stalling)

    @sync
    async def browse() -> None:
        app = TcviewApp(str(CPU_SAMPLE))
        async with app.run_test(size=(100, 30)) as pilot:
            try:
                with pytest.raises(AssertionError, match="finish loading: .*finished=False"):
                    await ready(app, pilot, limit=0.5)
                with pytest.raises(AssertionError, match="not within 0.2s"):
                    await until(pilot, lambda: app.model_session.finished, 0.2)
                await holds(pilot, lambda: not app.model_session.finished, 0.2)
            finally:
                go_on.set()
            await ready(app, pilot)

    browse()
