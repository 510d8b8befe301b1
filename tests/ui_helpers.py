"""Shared helpers for the UI tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "sample_traces"
GPU_SAMPLE = SAMPLES / "gpu_tinyblock"
CPU_SAMPLE = SAMPLES / "cpu_breaks_recompiles"


async def ready(app: Any, pilot: Any, limit: float = 30.0) -> None:
    """Wait until indexing is done, the tree is built and shown content is on screen."""
    waited = 0.0
    while not (app.loader.finished and app.loaded_at is not None) and waited < limit:
        await pilot.pause(0.05)
        waited += 0.05
    await settle(app, pilot)


async def settle(app: Any, pilot: Any) -> None:
    from textual.worker import WorkerCancelled

    for _ in range(3):
        try:
            await app.workers.wait_for_complete()
        except WorkerCancelled:
            pass  # an exclusive worker replaced by a newer one: that one is what counts
        await pilot.pause(0.06)


def summary_json(path: Path | str) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "tcview.cli", "summary", "--json", "-q", str(path)],
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
