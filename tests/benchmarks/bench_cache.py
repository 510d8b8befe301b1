"""Reopening a trace from the index cache against its first open.

    python tests/benchmarks/bench_cache.py [--trace FILE | --size-mb 500] [--repeat 5] [--out FILE]

On one trace file (--trace, else one of --size-mb built as bench_index.py builds it), each run
a fresh process with a cache of this script's own (TCVIEW_CACHE_DIR in a temporary folder):

- ``tcview summary --json`` without the cache (``--no-cache``);
- the first open: the cache emptied, the file indexed and its entry written;
- the reopen: the same command again, the index restored from the entry.

The three outputs must be byte for byte the same. Each is timed twice: the whole process
(wall time, interpreter start and imports included) and the load alone (`load_source` in a
child that imports first and then times it: without the cache, the first open that writes the
entry, the reopen). Prints medians and one JSON line.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
REPO = HERE.parents[2]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

from conftest import TCVIEW_CLI  # noqa: E402


def load_child(path: str) -> None:
    """Time `load_source` alone (imports done first) and print it with the summary's hash."""
    from tcview.ingest.source import load_source
    from tcview.report.summary import summary_json

    t0 = time.perf_counter()
    model = load_source(path, cache=os.environ.get("TCVIEW_NO_CACHE") != "1")
    took = time.perf_counter() - t0
    text = json.dumps(summary_json(model), indent=2)
    print(json.dumps({"load_s": took, "sha": hashlib.sha256(text.encode()).hexdigest()}))


def run(cmd: list[str], env: dict[str, str]) -> tuple[float, bytes]:
    t0 = time.perf_counter()
    out = subprocess.run(
        cmd, env={**os.environ, **env}, cwd=REPO, capture_output=True, check=True
    ).stdout
    return time.perf_counter() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", type=Path)
    ap.add_argument("--size-mb", type=float, default=500)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--child-load", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_load:
        load_child(args.child_load)
        return
    tmp = Path(tempfile.mkdtemp(prefix="tcview-bench-cache-"))
    try:
        trace = args.trace
        if trace is None:
            from bench_index import build, source_files

            trace = tmp / "dedicated_log_torch_trace_big.log"
            build(trace, source_files(None), int(args.size_mb * (1 << 20)))
        cache = tmp / "cache"
        env = {"TCVIEW_CACHE_DIR": str(cache), "TCVIEW_NO_CACHE": ""}
        cli = [*TCVIEW_CLI, "summary", "--json", "-q"]
        child = [sys.executable, str(HERE), "--child-load", str(trace)]
        times: dict[str, list[float]] = {}
        outputs: set[bytes] = set()
        shas: set[str] = set()

        def note(name: str, seconds: float) -> None:
            times.setdefault(name, []).append(seconds)

        for _ in range(args.repeat):
            s, out = run([*cli, "--no-cache", str(trace)], env)
            note("no_cache", s)
            outputs.add(out)
            shutil.rmtree(cache, ignore_errors=True)
            s, out = run([*cli, str(trace)], env)
            note("first_open", s)
            outputs.add(out)
            s, out = run([*cli, str(trace)], env)
            note("reopen", s)
            outputs.add(out)
            shutil.rmtree(cache, ignore_errors=True)
            for name, e in (
                ("load_no_cache", {"TCVIEW_NO_CACHE": "1"}),
                ("load_first_open", env),
                ("load_reopen", env),
            ):
                s, out = run(child, {**env, **e})
                got = json.loads(out)
                note(name, got["load_s"])
                shas.add(got["sha"])
        if len(outputs) != 1 or len(shas) != 1:
            raise SystemExit("the summaries differ between the runs")
        med = {name: statistics.median(v) for name, v in times.items()}
        size = trace.stat().st_size
        result: dict[str, Any] = {
            "trace_mb": round(size / 1e6),
            "repeat": args.repeat,
            "cores": os.cpu_count(),
            "entry_mb": round(sum(p.stat().st_size for p in cache.rglob("*.idx")) / 1e6, 1),
            **{f"{k}_s": round(v, 3) for k, v in med.items()},
            "reopen_vs_first_open": round(med["first_open"] / med["reopen"], 1),
            "reopen_vs_no_cache": round(med["no_cache"] / med["reopen"], 1),
            "load_reopen_vs_first_open": round(med["load_first_open"] / med["load_reopen"], 1),
            "load_reopen_vs_no_cache": round(med["load_no_cache"] / med["load_reopen"], 1),
            "summary_identical": True,
            "load_avg": os.getloadavg()[0],
        }
        for name, v in med.items():
            print(f"{name:14} {v:7.3f} s   (runs: {', '.join(f'{x:.2f}' for x in times[name])})")
        print(json.dumps(result))
        if args.out:
            args.out.write_text(json.dumps(result, indent=1) + "\n")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
