"""Many ranks: parallel index against the serial one and tlparse --all-ranks-html.

    python tests/benchmarks/bench_ranks.py [--ranks 1024] [--size-mb 5] [--repeat 3]
        [--keep DIR] [--source DIR] [--no-tlparse] [--ui] [--cache]

Builds a directory of --ranks rank files of about --size-mb each (tests/rankdir.py: the shared
archive's multi-rank traces, or the repo's samples without it, repeated with frame ids shifted
and ranks renumbered), then runs, each in a fresh process, --repeat times in turn:

- ``tcview summary --json`` with one process (TCVIEW_JOBS=1) and with a worker per core,
  both without the index cache; their JSON must be byte for byte the same;
- ``tlparse DIR --all-ranks-html -o OUT --no-browser --overwrite`` (when installed);
- with --cache: a first open that fills an empty cache, then a reopen from it;
- with --ui: the app (headless), the time to its first frame and to its first tree rows.

Time is wall time; memory is the peak, over the run, of the summed RSS (and PSS: shared pages
counted once) of the process and all its descendants, sampled from /proc every 20 ms, and the
largest single process's RSS. Prints a table and one JSON line of medians.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
REPO = HERE.parents[2]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

from rankdir import build, templates  # noqa: E402

PAGE = os.sysconf("SC_PAGE_SIZE")


# ---------------------------------------------------------------- measuring a process tree


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        tree.setdefault(ppid, []).append(int(name))
    return tree


def _tree(root: int) -> list[int]:
    tree = _children()
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(tree.get(pid, []))
    return out


def _rss_pss(pid: int) -> tuple[int, int]:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            rss = pss = 0
            for line in fh:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1]) * 1024
            return rss, pss
    except OSError:
        try:
            with open(f"/proc/{pid}/statm") as fh:
                rss = int(fh.read().split()[1]) * PAGE
            return rss, rss
        except OSError:
            return 0, 0


def measure(cmd: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run `cmd` (stdout kept); wall seconds and peak memory of its process tree."""
    peak = {"rss": 0, "pss": 0, "procs": 0, "single": 0}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})},
        cwd=REPO,
    )
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            pids = _tree(proc.pid)
            sizes = [_rss_pss(p) for p in pids]
            peak["rss"] = max(peak["rss"], sum(r for r, _ in sizes))
            peak["pss"] = max(peak["pss"], sum(p for _, p in sizes))
            peak["procs"] = max(peak["procs"], len(pids))
            peak["single"] = max([peak["single"], *(r for r, _ in sizes)])
            done.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    done.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:6])} failed ({proc.returncode}):\n{err.decode()[-3000:]}")
    return {
        "s": wall,
        "rss_mb": peak["rss"] / 1e6,
        "pss_mb": peak["pss"] / 1e6,
        "single_mb": peak["single"] / 1e6,
        "procs": peak["procs"],
        "stdout": out,
    }


# ---------------------------------------------------------------- the UI child


def ui_child(path: str) -> None:
    """Open the app headless on `path`; print the times to the first frame and tree rows."""
    import asyncio

    from tcview.ui.app import TcviewApp
    from tcview.ui.tree import TraceTree

    async def run() -> dict[str, float]:
        t0 = time.monotonic()
        app = TcviewApp(path)
        out: dict[str, float] = {}
        async with app.run_test(size=(120, 40)) as pilot:
            while app.first_frame_at is None:
                await pilot.pause(0.001)
            out["first_frame_s"] = app.first_frame_at - t0
            tree = app.query_one(TraceTree)
            while not tree.root.children:
                await pilot.pause(0.005)
            out["first_tree_rows_s"] = time.monotonic() - t0
            model = app.model
            out["files_at_first_rows"] = float(len(model.files)) if model is not None else 0.0
            while app.loaded_at is None:
                await pilot.pause(0.05)
            out["index_complete_s"] = app.loaded_at - t0
        return out

    print(json.dumps(asyncio.run(run())))


# ---------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--size-mb", type=float, default=5.0, help="size of each rank file")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="build the directory here and keep it")
    ap.add_argument("--source", type=Path, help="rank traces to build from")
    ap.add_argument("--no-tlparse", action="store_true")
    ap.add_argument("--ui", action="store_true", help="time the app's first screen")
    ap.add_argument("--cache", action="store_true", help="time a first open and a reopen")
    ap.add_argument("--child-ui", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_ui:
        ui_child(args.child_ui)
        return

    tmp = Path(tempfile.mkdtemp(prefix="tcview-bench-ranks-"))
    try:
        rank_dir = args.keep or tmp / "ranks"
        if not rank_dir.exists() or not any(rank_dir.iterdir()):
            shared = None
            if args.source is None:
                from conftest import unpack_shared

                shared = unpack_shared()
            found = templates(shared, args.source or REPO / "sample_traces")
            t = time.perf_counter()
            build(rank_dir, args.ranks, int(args.size_mb * (1 << 20)), found)
            print(f"built {rank_dir} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        files = sorted(rank_dir.glob("dedicated_log_torch_trace*.log"))
        total = sum(p.stat().st_size for p in files)
        print(f"{len(files)} rank files, {total / 1e6:.0f} MB in {rank_dir}", file=sys.stderr)

        tc = [sys.executable, "-m", "tcview.cli", "summary", "--json", "-q", str(rank_dir)]
        no_cache = {"TCVIEW_NO_CACHE": "1"}
        runs: dict[str, list[dict[str, Any]]] = {}
        tl = shutil.which("tlparse")
        for _ in range(args.repeat):
            one = measure(tc, {**no_cache, "TCVIEW_JOBS": "1"})
            par = measure(tc, no_cache)
            if one["stdout"] != par["stdout"]:
                raise SystemExit("the parallel summary differs from the serial one")
            runs.setdefault("serial", []).append(one)
            runs.setdefault("parallel", []).append(par)
            if tl and not args.no_tlparse:
                out = tmp / "tl_out"
                cmd = [tl, str(rank_dir), "--all-ranks-html", "-o", str(out), "--no-browser"]
                runs.setdefault("tlparse", []).append(measure([*cmd, "--overwrite"]))
            if args.cache:
                cache = tmp / "cache"
                shutil.rmtree(cache, ignore_errors=True)
                env = {"TCVIEW_CACHE_DIR": str(cache), "TCVIEW_NO_CACHE": ""}
                first = measure(tc, env)
                again = measure(tc, env)
                if again["stdout"] != one["stdout"]:
                    raise SystemExit("the summary from the cache differs")
                runs.setdefault("cache_first", []).append(first)
                runs.setdefault("cache_reopen", []).append(again)
            if args.ui:
                ui = measure(
                    [sys.executable, str(HERE), "--child-ui", str(rank_dir)],
                    {**no_cache},
                )
                ui.update(json.loads(ui["stdout"]))
                runs.setdefault("ui", []).append(ui)

        def med(name: str, key: str) -> float:
            return statistics.median(r[key] for r in runs[name])

        print(
            f"{'run':14} {'time s':>8} {'peak RSS MB':>12} {'peak PSS MB':>12}"
            f" {'largest MB':>11} {'procs':>6}"
        )
        for name in runs:
            print(
                f"{name:14} {med(name, 's'):8.2f} {med(name, 'rss_mb'):12.0f}"
                f" {med(name, 'pss_mb'):12.0f} {med(name, 'single_mb'):11.0f}"
                f" {med(name, 'procs'):6.0f}"
            )
        result: dict[str, Any] = {
            "ranks": len(files),
            "mb": round(total / 1e6),
            "cores": os.cpu_count(),
            "load_avg": os.getloadavg()[0],
            "repeat": args.repeat,
        }
        for name in runs:
            result[f"{name}_s"] = round(med(name, "s"), 3)
            result[f"{name}_rss_mb"] = round(med(name, "rss_mb"))
            result[f"{name}_pss_mb"] = round(med(name, "pss_mb"))
        result["speedup"] = round(result["serial_s"] / result["parallel_s"], 2)
        if "tlparse" in runs:
            result["vs_tlparse"] = round(result["tlparse_s"] / result["parallel_s"], 1)
            result["vs_tlparse_serial"] = round(result["tlparse_s"] / result["serial_s"], 1)
        if "cache_reopen" in runs:
            result["reopen_speedup"] = round(result["cache_first_s"] / result["cache_reopen_s"], 1)
        if "ui" in runs:
            for key in ("first_frame_s", "first_tree_rows_s", "index_complete_s"):
                result[f"ui_{key}"] = round(med("ui", key), 3)
        print(json.dumps(result))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
