"""Many ranks: parallel index against the serial one and tlparse --all-ranks-html.

    python tests/benchmarks/bench_ranks.py [--ranks 1024] [--size-mb 5] [--dir DIR]
        [--tl-ranks 128] [--tl-size-mb 1.64] [--tl-dir DIR] [--workers N] [--repeat 3]
        [--source DIR] [--save-templates DIR] [--no-tlparse] [--cache] [--out FILE]

Two directories of rank files (tests/rankdir.py: the shared archive's multi-rank traces, or
--source, or the repo's samples, repeated with frame ids shifted and ranks renumbered), built
in a temporary folder unless --dir/--tl-dir name existing ones:

- the big one, --ranks files of about --size-mb each (1,024 x 5 MB): ``tcview summary --json``
  with one process (TCVIEW_JOBS=1) and with --workers processes (default: every core), both
  without the index cache, byte for byte the same JSON; the first screen (the app under Pilot
  when Textual is installed, else the app's own loading code path: `load_source` with hooks in
  a thread, timed to the first file in the model); with --cache a first open and a reopen;
- the small one, --tl-ranks files (128, about 210 MB): the same two summaries and
  ``tlparse DIR --all-ranks-html -o OUT --no-browser --overwrite`` (when installed), in turn.

Each run is a fresh process, --repeat times. When the model has a divergence pass (summary
--json has ``divergence``), the summaries include it.

Time is wall time; memory is the peak, over the run, of the summed RSS (and PSS: shared pages
counted once) of the process and all its descendants, sampled from /proc every 20 ms, and the
largest single process's RSS. Prints a table and one JSON line of medians.
"""

from __future__ import annotations

import argparse
import importlib.util
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

from conftest import TCVIEW_CLI  # noqa: E402
from rankdir import SHARED_RANK_DIRS, build, templates  # noqa: E402

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


# ---------------------------------------------------------------- the first screen


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
            while app.browser.first_frame_at is None:
                await pilot.pause(0.001)
            out["first_frame_s"] = app.browser.first_frame_at - t0
            tree = app.query_one(TraceTree)
            while not tree.root.children:
                await pilot.pause(0.005)
            out["first_tree_rows_s"] = time.monotonic() - t0
            model = app.model
            out["files_at_first_rows"] = float(len(model.files)) if model is not None else 0.0
            while app.browser.loaded_at is None:
                await pilot.pause(0.05)
            out["index_complete_s"] = app.browser.loaded_at - t0
        return out

    print(json.dumps({"method": "pilot", **asyncio.run(run())}))


def load_child(path: str) -> None:
    """Without Textual: the app's loading path (`load_source` with hooks, in a thread, the
    model published at once); times to the published model, to the
    first file in it (what the tree's first rows show) and to the end of the index."""
    from tcview.ingest.load import Hooks
    from tcview.ingest.source import load_source

    t0 = time.monotonic()
    out: dict[str, Any] = {"method": "load_source"}
    seen = threading.Event()

    def progress(done: int, total: int) -> None:
        if not seen.is_set():
            out["first_tree_rows_s"] = time.monotonic() - t0
            seen.set()

    def publish(model: Any) -> None:
        out["first_frame_s"] = time.monotonic() - t0

    hooks = Hooks(progress=progress, publish=publish)
    loader = threading.Thread(target=lambda: out.update(model=load_source(path, hooks=hooks)))
    loader.start()
    loader.join()
    out["index_complete_s"] = time.monotonic() - t0
    model = out.pop("model")
    out["files"] = len(model.files)
    print(json.dumps(out))


# ---------------------------------------------------------------- main


def make_dir(where: Path | None, tmp: Path, name: str, ranks: int, mb: float, src: Any) -> Path:
    rank_dir = where or tmp / name
    if not rank_dir.exists() or not any(rank_dir.iterdir()):
        t = time.perf_counter()
        build(rank_dir, ranks, int(mb * (1 << 20)), src())
        print(f"built {rank_dir} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    return rank_dir


def save_templates(dest: Path, source: Path | None) -> None:
    """Copy the rank traces the directories are built from into `dest` (to carry them to a
    machine without the shared archive; then pass --source DEST)."""
    from conftest import unpack_shared

    shared = unpack_shared()
    if shared is None and source is None:
        raise SystemExit("no shared archive here: nothing to save")
    base = source or shared
    assert base is not None
    for rel in SHARED_RANK_DIRS if source is None else ("",):
        for p in sorted((base / rel).glob("dedicated_log_torch_trace*.log")):
            if p.stat().st_size > 0:
                out = dest / rel.replace("/", "__") / p.name
                out.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(p, out)
    print(f"saved {sum(1 for _ in dest.rglob('*.log'))} rank traces in {dest}", file=sys.stderr)


def main() -> None:
    cores = os.cpu_count() or 1
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--size-mb", type=float, default=5.0, help="size of each big rank file")
    ap.add_argument("--dir", "--keep", type=Path, help="build the big directory here, or reuse")
    ap.add_argument("--tl-ranks", type=int, default=128)
    ap.add_argument("--tl-size-mb", type=float, default=1.64)
    ap.add_argument("--tl-dir", type=Path, help="build the tlparse directory here, or reuse")
    ap.add_argument("--workers", type=int, default=cores, help="worker processes (all cores)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--source", type=Path, help="rank traces to build from")
    ap.add_argument("--save-templates", type=Path, help="copy the rank traces here and stop")
    ap.add_argument("--no-tlparse", action="store_true")
    ap.add_argument("--tlparse-big", action="store_true", help="tlparse on the big one too")
    ap.add_argument("--cache", action="store_true", help="time a first open and a reopen")
    ap.add_argument("--no-big", action="store_true", help="only the tlparse comparison")
    ap.add_argument("--out", type=Path, help="write the results as JSON here")
    ap.add_argument("--child-ui", help=argparse.SUPPRESS)
    ap.add_argument("--child-load", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_ui:
        ui_child(args.child_ui)
        return
    if args.child_load:
        load_child(args.child_load)
        return
    if args.save_templates:
        save_templates(args.save_templates, args.source)
        return

    found: list[Path] = []

    def sources() -> list[Path]:
        if not found:
            shared = None
            if args.source is None:
                try:
                    from conftest import unpack_shared

                    shared = unpack_shared()
                except ImportError:  # no pytest: the samples
                    shared = None
            found.extend(templates(shared, args.source or REPO / "sample_traces"))
            print(f"templates: {len(found)} rank traces", file=sys.stderr)
        return found

    tl = None if args.no_tlparse else shutil.which("tlparse")
    textual = importlib.util.find_spec("textual") is not None
    tc = [*TCVIEW_CLI, "summary", "--json", "-q"]
    no_cache = {"TCVIEW_NO_CACHE": "1"}
    serial_env = {**no_cache, "TCVIEW_JOBS": "1"}
    par_env = {**no_cache, "TCVIEW_JOBS": str(args.workers)}
    tmp = Path(tempfile.mkdtemp(prefix="tcview-bench-ranks-"))
    result: dict[str, Any] = {
        "cores": cores,
        "workers": args.workers,
        "python": sys.version.split()[0],
        "textual": textual,
        "tlparse": tl,
        "repeat": args.repeat,
    }
    try:
        small = make_dir(args.tl_dir, tmp, "small", args.tl_ranks, args.tl_size_mb, sources)
        dirs = {"small": small}
        if not args.no_big:
            big = dirs["big"] = make_dir(args.dir, tmp, "big", args.ranks, args.size_mb, sources)
        for label, rank_dir in dirs.items():
            files = sorted(rank_dir.glob("dedicated_log_torch_trace*.log"))
            total = sum(p.stat().st_size for p in files)
            result[f"{label}_ranks"] = len(files)
            result[f"{label}_mb"] = round(total / 1e6)
            print(f"{label}: {len(files)} rank files, {total / 1e6:.0f} MB", file=sys.stderr)
        runs: dict[str, list[dict[str, Any]]] = {}

        def add(name: str, run: dict[str, Any]) -> dict[str, Any]:
            runs.setdefault(name, []).append(run)
            print(f"  {name}: {run['s']:.2f} s, {run['rss_mb']:.0f} MB", file=sys.stderr)
            return run

        def tlparse(rank_dir: Path) -> dict[str, Any]:
            assert tl is not None
            cmd = [tl, str(rank_dir), "--all-ranks-html", "-o", str(tmp / "tl_out")]
            return measure([*cmd, "--no-browser", "--overwrite"])

        def big_round(n: int) -> None:
            one = add("big_serial", measure([*tc, str(big)], serial_env))
            par = add("big_parallel", measure([*tc, str(big)], par_env))
            if one["stdout"] != par["stdout"]:
                raise SystemExit("the parallel summary differs from the serial one")
            child = "--child-ui" if textual else "--child-load"
            first = measure([sys.executable, str(HERE), child, str(big)], par_env)
            first.update(json.loads(first["stdout"]))
            add("big_first_screen", first)
            if tl and args.tlparse_big:
                add("big_tlparse", tlparse(big))
            if args.cache:
                cache = tmp / "cache"
                shutil.rmtree(cache, ignore_errors=True)
                env = {"TCVIEW_CACHE_DIR": str(cache), "TCVIEW_NO_CACHE": ""}
                add("big_cache_first", measure([*tc, str(big)], env))
                again = add("big_cache_reopen", measure([*tc, str(big)], env))
                if again["stdout"] != one["stdout"]:
                    raise SystemExit("the summary from the cache differs")

        for n in range(args.repeat):
            print(f"round {n + 1}/{args.repeat}", file=sys.stderr)
            if not args.no_big:
                big_round(n)
            one = add("small_serial", measure([*tc, str(small)], serial_env))
            par = add("small_parallel", measure([*tc, str(small)], par_env))
            if one["stdout"] != par["stdout"]:
                raise SystemExit("the parallel summary differs from the serial one (small)")
            result["divergence_included"] = "divergence" in json.loads(par["stdout"])
            if tl:
                add("small_tlparse", tlparse(small))

        def med(name: str, key: str) -> float:
            return statistics.median(r[key] for r in runs[name])

        print(
            f"\n{'run':18} {'time s':>8} {'peak RSS MB':>12} {'peak PSS MB':>12}"
            f" {'largest MB':>11} {'procs':>6}"
        )
        for name in runs:
            print(
                f"{name:18} {med(name, 's'):8.2f} {med(name, 'rss_mb'):12.0f}"
                f" {med(name, 'pss_mb'):12.0f} {med(name, 'single_mb'):11.0f}"
                f" {med(name, 'procs'):6.0f}"
            )
            result[f"{name}_s"] = round(med(name, "s"), 3)
            result[f"{name}_rss_mb"] = round(med(name, "rss_mb"))
            result[f"{name}_pss_mb"] = round(med(name, "pss_mb"))
        result["load_avg"] = os.getloadavg()[0]
        for label in dirs:
            result[f"{label}_speedup"] = round(
                result[f"{label}_serial_s"] / result[f"{label}_parallel_s"], 2
            )
            if f"{label}_tlparse" in runs:
                tl_s = result[f"{label}_tlparse_s"]
                result[f"{label}_vs_tlparse"] = round(tl_s / result[f"{label}_parallel_s"], 1)
                result[f"{label}_vs_tlparse_serial"] = round(tl_s / result[f"{label}_serial_s"], 1)
        if "big_cache_reopen" in runs:
            result["reopen_speedup"] = round(
                result["big_cache_first_s"] / result["big_cache_reopen_s"], 1
            )
        big_line = ""
        if "big_first_screen" in runs:
            for key in ("first_frame_s", "first_tree_rows_s", "index_complete_s"):
                result[f"first_screen_{key}"] = round(med("big_first_screen", key), 3)
            result["first_screen_method"] = runs["big_first_screen"][0]["method"]
            big_line = (
                f"  {result['big_ranks']} ranks, {result['big_mb']} MB: serial"
                f" {result['big_serial_s']:.2f} s, parallel {result['big_parallel_s']:.2f} s"
                f" ({result['big_speedup']}x), peak RSS of the process tree"
                f" {result['big_parallel_rss_mb']} MB (PSS {result['big_parallel_pss_mb']} MB),"
                f" first tree rows {result['first_screen_first_tree_rows_s']:.2f} s"
                f" (through {result['first_screen_method']})\n"
            )
        print(json.dumps(result))
        print(
            f"\nmeasured on {cores} cores ({args.workers} workers), Python {result['python']}:\n"
            + big_line
            + f"  {result['small_ranks']} ranks, {result['small_mb']} MB: parallel"
            f" {result['small_parallel_s']:.2f} s, {result['small_parallel_rss_mb']} MB;"
            + (
                f" tlparse --all-ranks-html {result['small_tlparse_s']:.2f} s,"
                f" {result['small_tlparse_rss_mb']} MB: {result['small_vs_tlparse']}x faster"
                if "small_tlparse" in runs
                else " tlparse not installed: not compared"
            )
            + f"; divergence {'included' if result['divergence_included'] else 'not built'}",
            file=sys.stderr,
        )
        if args.out:
            args.out.write_text(json.dumps(result, indent=1) + "\n")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
