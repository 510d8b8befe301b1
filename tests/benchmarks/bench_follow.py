"""Follow-mode latency: from a complete record written to disk to the record in the model/UI.

    python tests/benchmarks/bench_follow.py [--records 200] [--poll] [--interval 0.25] [--ui]

Appends the records of a real trace one by one (with a pause between them) into a fresh
directory that tcview follows, and timestamps when each one appears: in the model
(the last version the `Follower` published, which the UI reads) or, with --ui, in the app's status-bar counts
(a headless Textual app driven by its Pilot). Prints p50/p95/max in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
REPO = HERE.parents[2]
sys.path.insert(0, str(REPO))

from tcview.ingest.live import Follower  # noqa: E402

SOURCE = REPO / "sample_traces" / "cpu_breaks_recompiles" / "trace"


def records(limit: int) -> list[bytes]:
    """Whole records (header + payload) of a real trace, in order."""
    data = next(SOURCE.iterdir()).read_bytes()
    out: list[bytes] = []
    start = 0
    pos = data.find(b"\nV", 0)
    while pos != -1 and len(out) < limit:
        out.append(data[start : pos + 1])
        start = pos + 1
        pos = data.find(b"\nV", start)
    return out


def percentiles(ms: list[float]) -> str:
    ms = sorted(ms)
    p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
    return f"n={len(ms)} p50={statistics.median(ms):.0f} ms p95={p95:.0f} ms max={ms[-1]:.0f} ms"


def bench_model(recs: list[bytes], poll: bool, interval: float, pause: float) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "trace"
        follower = Follower(str(root), poll=poll, interval=interval)
        follower.start()
        root.mkdir()
        target = root / "dedicated_log_torch_trace_bench.log"
        lat = []
        with open(target, "ab") as fh:
            for rec in recs:
                fh.write(rec)
                fh.flush()
                t0 = time.monotonic()
                want = sum(1 for _ in recs[: recs.index(rec) + 1])
                while _records(follower) < want and time.monotonic() - t0 < 5:
                    time.sleep(0.002)
                lat.append((time.monotonic() - t0) * 1000)
                time.sleep(pause)
        follower.stop()
        return lat


def _records(follower: Follower) -> int:
    """Records in the version readers see (the last one published)."""
    return sum(sum(tf.kinds.values()) for tf in follower.published.files)


async def bench_ui(recs: list[bytes], poll: bool, interval: float, pause: float) -> list[float]:
    from tcview.ui.app import TcviewApp
    from tcview.ui.options import OpenOptions

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "trace"
        root.mkdir()
        target = root / "dedicated_log_torch_trace_bench.log"
        app = TcviewApp(OpenOptions(str(root), follow=True, poll=poll))
        lat = []
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause(0.5)
            with open(target, "ab") as fh:
                for i, rec in enumerate(recs):
                    before = app.status_right
                    fh.write(rec)
                    fh.flush()
                    t0 = time.monotonic()
                    want_records = i + 1
                    while time.monotonic() - t0 < 5:
                        await asyncio.sleep(0.005)
                        if app.browser.records_shown() >= want_records and app.status_right != "":
                            break
                    lat.append((time.monotonic() - t0) * 1000)
                    del before
                    await asyncio.sleep(pause)
        return lat


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=150)
    ap.add_argument("--poll", action="store_true")
    ap.add_argument("--interval", type=float, default=0.25)
    ap.add_argument("--pause", type=float, default=0.03)
    ap.add_argument("--ui", action="store_true")
    args = ap.parse_args()
    recs = records(args.records)
    mode = f"poll {args.interval}s" if args.poll else "inotify"
    if args.ui:
        lat = asyncio.run(bench_ui(recs, args.poll, args.interval, args.pause))
        print(f"UI status bar, {mode}: {percentiles(lat)}")
    else:
        lat = bench_model(recs, args.poll, args.interval, args.pause)
        print(f"model, {mode}: {percentiles(lat)}")


if __name__ == "__main__":
    main()
