"""Global search speed and memory on a big trace (not a timed test).

    python tests/benchmarks/bench_search.py [--size-mb 500] [--trace FILE] [--keep FILE] [--ui]

Builds a trace of --size-mb from real GPU traces (as bench_index.py does; --trace uses an
existing one), then, in a fresh process: indexes it, and runs each query through the search
engine, timing the first hit and the whole search, with peak RSS (ru_maxrss) after the
index and after all searches. Then `tcview grep` end to end (index + search, output into a
pipe), and with --ui the app: S, the query, Enter, until the first result is on screen and
until the search is done.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
REPO = HERE.parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(REPO / "tests"))

from conftest import TCVIEW_CLI  # noqa: E402

# (label, text, regex): a rare string (once per copy of the source traces), a common one, a
# string found nowhere (every byte read, nothing to map), a regex, one without capitals.
QUERIES = [
    ("kernel line", "tmp6 = tl.full([1, 1], 512, tl.int32)", False),
    ("common", "tl.load", False),
    ("nowhere", "zzq_not_in_any_trace", False),
    ("regex", r"tmp\d+ = tl\.where\(", True),
    ("no capitals (ignore case)", "xblock", False),
]

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from tcview.ingest.source import load_source
from tcview.report.search import Query, Search
rss = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t = time.perf_counter()
model = load_source(sys.argv[2])
out = {"index_s": time.perf_counter() - t, "rss_index_mb": rss(), "queries": []}
for label, text, regex in json.loads(sys.argv[3]):
    search = Search(model, Query(text, regex=regex))
    t = time.perf_counter()
    first = None
    hits = 0
    for _ in search.run():
        if first is None:
            first = time.perf_counter() - t
        hits += 1
    out["queries"].append(
        {"label": label, "text": text, "first_s": first, "all_s": time.perf_counter() - t,
         "hits": hits, "rss_mb": rss()}
    )
print(json.dumps(out))
"""


def engine(trace: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(REPO), str(trace), json.dumps(QUERIES)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout)


def grep(trace: Path, text: str) -> tuple[float, float, int]:
    from bench_index import measure

    dt, rss, out = measure([*TCVIEW_CLI, "grep", text, str(trace)])
    return dt, rss, out.count("\n")


async def ui(trace: Path, text: str) -> tuple[float, float, float, int]:
    from tcview.ui.app import TcviewApp
    from tcview.ui.finder import SearchView

    app = TcviewApp(str(trace))
    async with app.run_test(size=(140, 42)) as pilot:
        t = time.monotonic()
        while app.browser.loaded_at is None:
            await pilot.pause(0.05)
        indexed = time.monotonic() - t
        await pilot.press("S")
        await pilot.pause(0.2)
        screen = app.browser.shown_pane()
        assert isinstance(screen, SearchView)
        await pilot.press(*text)
        await pilot.press("enter")
        while not screen.finished:
            await pilot.pause(0.01)
        return indexed, screen.first_at or -1.0, screen.done_at or -1.0, screen.shown


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=500)
    ap.add_argument("--trace", type=Path, help="an existing trace file to search")
    ap.add_argument("--keep", type=Path, help="write the built trace here and keep it")
    ap.add_argument("--ui", action="store_true", help="also time the app's global search")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="tcview-bench-search-"))
    try:
        trace = args.trace or args.keep or tmp / "dedicated_log_torch_trace_bench.log"
        if not trace.exists():
            from bench_index import build, source_files

            build(trace, source_files(None), args.size_mb << 20)
        mb = trace.stat().st_size / (1 << 20)
        print(f"trace: {trace} ({mb:.0f} MB)")
        result = engine(trace)
        print(
            f"index: {result['index_s']:.2f} s, peak RSS {result['rss_index_mb']:.0f} MB"
            " (the model the search maps hits with)"
        )
        print(
            f"{'query':28} {'hits':>7} {'first hit':>10} {'whole':>8} {'MB/s':>6} {'peak RSS':>9}"
        )
        for q in result["queries"]:
            first = f"{q['first_s'] * 1000:.0f} ms" if q["first_s"] is not None else "-"
            print(
                f"{q['label']:28} {q['hits']:7} {first:>10} {q['all_s']:7.2f}s "
                f"{mb / q['all_s']:6.0f} {q['rss_mb']:8.0f}M"
            )
        dt, rss, lines = grep(trace, QUERIES[0][1])
        print(f"tcview grep (index + search): {dt:.2f} s, {lines} lines, peak RSS {rss:.0f} MB")
        if args.ui:
            for _label, text, _regex in QUERIES[:2]:
                indexed, first_s, done, shown = asyncio.run(ui(trace, text))
                print(
                    f"app (indexed in {indexed:.2f} s): S {text!r} enter: first result on "
                    f"screen {first_s * 1000:.0f} ms, done {done:.2f} s ({shown} lines)"
                )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    main()
