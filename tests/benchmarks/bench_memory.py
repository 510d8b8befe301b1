"""Peak memory on a ~2 GB trace: indexing and browsing must stay under 300 MB RSS.

    python tests/benchmarks/bench_memory.py [--size-mb 2048] [--source DIR] [--keep FILE]
                                            [--tracemalloc]

Builds the trace with bench_index.build() (real GPU records repeated, frame ids renumbered)
in a temporary folder that is deleted afterwards, then measures, each in a fresh child process
(peak RSS = ru_maxrss of that child):

1. `tcview summary --json` (the full index);
2. browsing: the Textual app headless (run_test + Pilot): wait for indexing, expand frames,
   open the kernels view and a few kernels from it, open output codes and kernels in the tree,
   page through a viewer.

With --tracemalloc (or when browsing goes over the limit) the browsing child is run again
under tracemalloc and prints the allocation sites that hold the most memory at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
REPO = HERE.parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(HERE.parent))

from bench_index import measure  # noqa: E402
from conftest import TCVIEW_CLI  # noqa: E402
from ui_helpers import ready  # noqa: E402

LIMIT_MB = 300
SIZE = (120, 40)


# ---------------------------------------------------------------- the browsing child


async def _browse(path: str, trace_malloc: bool) -> dict[str, Any]:
    from ui_helpers import settle

    from tcview.ui.app import TcviewApp

    steps: dict[str, float] = {}
    start = time.perf_counter()
    app = TcviewApp(path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot, limit=1200.0)
        steps["indexed"] = time.perf_counter() - start

        tree = app.main_tree
        for node in list(tree.root.children)[:50]:
            node.expand()
            await pilot.pause(0.01)
        await settle(app, pilot)
        steps["frames expanded"] = time.perf_counter() - start

        await pilot.press("K")
        await settle(app, pilot)
        for _ in range(5):
            for _ in range(7):
                await pilot.press("down")
            await pilot.press("enter")  # the kernel's source
            await settle(app, pilot)
        await pilot.press("escape")
        await settle(app, pilot)
        steps["kernels view"] = time.perf_counter() - start

        assert app.model is not None
        kernels = list(app.model.kernels)
        picks = [kernels[i * (len(kernels) - 1) // 5] for i in range(6)] if kernels else []
        for kernel in picks:
            app.browser.reveal("kernel", kernel)
            await settle(app, pilot)
            await pilot.press("h")  # up to the output code that holds the kernel
            await settle(app, pilot)
        steps["output codes and kernels"] = time.perf_counter() - start

        await pilot.press("tab")
        for _ in range(40):
            await pilot.press("pagedown")
        await pilot.press("end")
        await pilot.press("home")
        await settle(app, pilot)
        steps["paged"] = time.perf_counter() - start
        assert app.model is not None
        counts = app.model.counts()
        result: dict[str, Any] = {"steps": steps, "kernels": len(kernels), "counts": counts}
        if trace_malloc:  # while the app and its model are still alive
            result["top"] = _top_allocations()
    return result


def browse_child(path: str, trace_malloc: bool) -> None:
    """Run in the child: browse, then print one JSON line."""
    if trace_malloc:
        import tracemalloc

        tracemalloc.start(8)
    result = asyncio.run(_browse(path, trace_malloc))
    result["self_maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))


def _top_allocations(count: int = 15) -> list[str]:
    import gc
    import tracemalloc

    gc.collect()
    snapshot = tracemalloc.take_snapshot().filter_traces(
        [tracemalloc.Filter(False, tracemalloc.__file__)]
    )
    total = sum(s.size for s in snapshot.statistics("filename"))
    lines = [f"traced total {total / 2**20:.1f} MB; by file:"]
    for stat in snapshot.statistics("filename")[:8]:
        lines.append(f"{stat.size / 2**20:7.1f} MB {stat.count:8d} blocks  {stat.traceback[0]}")
    lines.append("by allocation site (most recent call first):")
    for stat in snapshot.statistics("traceback")[:count]:
        frames = [f"{Path(f.filename).name}:{f.lineno}" for f in reversed(stat.traceback[-4:])]
        lines.append(f"{stat.size / 2**20:7.1f} MB {stat.count:8d} blocks  {' <- '.join(frames)}")
    return lines


# ---------------------------------------------------------------- the parent


def _browse_cmd(trace: Path, trace_malloc: bool) -> list[str]:
    cmd = [sys.executable, str(HERE), "--browse-child", str(trace)]
    return [*cmd, "--tracemalloc"] if trace_malloc else cmd


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=2048)
    ap.add_argument("--source", type=Path)
    ap.add_argument("--keep", type=Path, help="write the trace here and keep it")
    ap.add_argument("--tracemalloc", action="store_true", help="also show what holds memory")
    ap.add_argument("--browse-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.browse_child:
        browse_child(args.browse_child, args.tracemalloc)
        return

    from bench_index import build, source_files

    tmp = Path(tempfile.mkdtemp(prefix="tcview-mem-"))
    try:
        trace = args.keep or tmp / "dedicated_log_torch_trace_mem.log"
        t0 = time.perf_counter()
        if not trace.exists():
            build(trace, source_files(args.source), args.size_mb << 20)
        mb = trace.stat().st_size / (1 << 20)
        print(f"trace: {trace} ({mb:.0f} MB, built in {time.perf_counter() - t0:.0f} s)")

        rows: list[tuple[str, float, float]] = []
        cli = list(TCVIEW_CLI)
        dt, rss, out = measure([*cli, "summary", "--json", "-q", str(trace)])
        counts = json.loads(out)
        rows.append(("summary --json (index)", dt, rss))
        dt, rss, out = measure(_browse_cmd(trace, False))
        browse = json.loads(out.strip().splitlines()[-1])
        rows.append(("browse (headless app)", dt, rss))

        print(f"\n{'step':26} {'time s':>8} {'peak RSS MB':>12} {'limit':>6}")
        for name, t, r in rows:
            verdict = "ok" if r < LIMIT_MB else "OVER"
            print(f"{name:26} {t:8.1f} {r:12.0f} {verdict:>6}")
        keys = ("records", "frames", "compiles", "output_codes", "kernels")
        print("\ncounts:", {k: counts.get(k) for k in keys})
        print("browse steps (s since start):", {k: round(v, 1) for k, v in browse["steps"].items()})

        if args.tracemalloc or rows[-1][2] >= LIMIT_MB:
            _, rss, out = measure(_browse_cmd(trace, True))
            traced = json.loads(out.strip().splitlines()[-1])
            print(
                f"\nbrowse under tracemalloc (peak RSS {rss:.0f} MB), largest holders at the end:"
            )
            print("\n".join(traced["top"]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    main()
