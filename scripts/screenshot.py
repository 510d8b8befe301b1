"""Regenerate docs/screenshot.svg: tcview's own screenshot of a bundled sample trace.

Runs the app headless (Textual's Pilot, as the UI tests do), waits until the trace is read and
the first screen drawn, and saves the screen as SVG. Run from anywhere:

    python scripts/screenshot.py            # writes docs/screenshot.svg
    python scripts/screenshot.py OUT.svg    # elsewhere
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SAMPLE = "sample_traces/cpu_breaks_recompiles"
SIZE = (120, 36)


async def _shoot(out: Path) -> None:
    from textual.worker import WorkerCancelled

    from tcview.ui.app import TcviewApp
    from tcview.ui.options import OpenOptions

    # A relative path, so that the picture holds no home directory.
    app = TcviewApp(OpenOptions(SAMPLE))
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(600):  # 30 s at most
            if app.model_session.finished and app.browser.loaded_at is not None:
                break
            await pilot.pause(0.05)
        else:
            raise SystemExit(f"the app did not finish loading {SAMPLE}")
        for _ in range(3):
            with contextlib.suppress(WorkerCancelled):
                await app.workers.wait_for_complete()
            await pilot.pause(0.1)
        svg = app.export_screenshot(title="tcview")
    out.write_text(svg, encoding="utf-8")


def main(argv: list[str]) -> int:
    out = Path(argv[0]).resolve() if argv else REPO / "docs" / "screenshot.svg"
    os.chdir(REPO)
    os.environ["TCVIEW_NO_CACHE"] = "1"  # the same picture whatever the cache holds
    asyncio.run(_shoot(out))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
