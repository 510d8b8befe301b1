"""CPU used by an idle followed app: process CPU seconds over N seconds of nothing happening.

    python tests/benchmarks/bench_idle.py [--seconds 10] [--source DIR]

Opens a followed copy of a real trace in a headless app (Textual's Pilot), waits until it is
indexed, then measures the process's CPU time while nothing is written and no key is pressed.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
REPO = HERE.parents[2]
sys.path.insert(0, str(REPO))

SOURCE = REPO / "sample_traces" / "cpu_breaks_recompiles" / "trace"


async def idle_cpu(source: Path, seconds: float) -> tuple[float, float]:
    from tcview.ui.app import TcviewApp
    from tcview.ui.options import OpenOptions

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "trace"
        shutil.copytree(source, root)
        app = TcviewApp(OpenOptions(str(root), follow=True))
        async with app.run_test(size=(120, 40)) as pilot:
            while app.browser.loaded_at is None:
                await pilot.pause(0.05)
            await pilot.pause(1.0)
            cpu0, wall0 = time.process_time(), time.monotonic()
            await asyncio.sleep(seconds)
            return time.process_time() - cpu0, time.monotonic() - wall0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--source", type=Path, default=SOURCE)
    args = ap.parse_args()
    cpu, wall = asyncio.run(idle_cpu(args.source, args.seconds))
    print(
        f"idle followed app: {cpu:.2f} CPU s over {wall:.1f} s ({100 * cpu / wall:.1f}% of a core)"
    )


if __name__ == "__main__":
    main()
