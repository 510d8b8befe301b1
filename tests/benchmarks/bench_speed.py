"""The speed goals (docs/performance.md) side by side in one run: one big file, its reopen, and 128 ranks.

    python tests/benchmarks/bench_speed.py [--dir DIR] [--size-mb 500] [--repeat 3]
        [--ranks 128] [--rank-mb 1.64] [--out FILE]

In DIR (a temporary folder unless given; kept when given, the inputs reused), builds
`trace.log` as bench_index.py builds its trace (from single-GPU jobs' traces, so that
`tlparse -p` reads every record; `--with-rank-files` as runs A to O were built) and `ranks/`
as bench_ranks.py builds its small directory. The index cache is DIR/.cache/tcview: the file
sits in the folder that holds the cache directory, as `~/trace.log` beside `~/.cache/tcview`
does. Byte-code caching is on (the children run without PYTHONDONTWRITEBYTECODE), as users
have it. Each round, each a fresh
process, in this order:

1. `tcview summary --json --no-cache FILE` as users run it (split into ranges over the idle
   cores, if any), with one process (TCVIEW_JOBS=1), and split over every core whatever the
   load (TCVIEW_JOBS=cores): the same JSON;
2. `tlparse FILE -p`; after the rounds, the records it read of each kind (raw.jsonl, and
   chromium_events.json for the chromium events) against tcview's (tlparse folds the string
   table's `str` records into one line), and its compilation_metrics against tcview's compiles;
3. the first open with the cache emptied (the index entry and the report written), then the
   reopen (the kept report), then a reopen without the kept report (the index entry restored,
   the report made again, as `tcview open` does): the same JSON;
4. `tcview summary --json --no-cache ranks/` (divergence included), then
   `tlparse ranks/ --all-ranks-html`.

Each command's peak resident memory is that of its largest process (ru_maxrss from `wait4`:
tcview's loading process, which waits for its workers and its findings child; tlparse's one
process), taken at no cost to the timing. Linux starts a child's ru_maxrss at its parent's
peak at the moment the child starts (the high-water mark survives fork and exec), so the inputs
are built in a child of their own and this process stays small. Its own peak before the first
round and after the last, the floor under the figures, is printed and kept in the JSON
(`runner_peak_mb`). Prints each round, the medians with the ratios, the load average before
each round, and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
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
sys.path.insert(0, str(HERE.parent))

import bench_index  # noqa: E402
from conftest import TCVIEW_CLI  # noqa: E402
from rankdir import build as build_ranks  # noqa: E402
from rankdir import templates  # noqa: E402

COMPILE_DIR = re.compile(r"^-_\d+_\d+_\d+$")  # tlparse: one folder a compile id
# raw.jsonl's keys besides a record's kind (tlparse adds the glog prefix's fields)
TLPARSE_FIELDS = frozenset(
    {"attempt", "frame_id", "frame_compile_id", "compiled_autograd_id", "rank", "has_payload"}
    | {"lineno", "pathname", "thread", "timestamp", "payload_filename"}
)
KINDS_CHILD = (
    "import json, sys\n"
    "from collections import Counter\n"
    "from tcview.ingest.source import load_source\n"
    "kinds = Counter()\n"
    "for f in load_source(sys.argv[1], cache=False).files:\n"
    "    kinds.update(f.kinds)\n"
    "print(json.dumps(kinds))\n"
)


def tlparse_kinds(out: Path) -> dict[str, int]:
    """The records `tlparse -p` read, by kind: raw.jsonl (one line a record, the string table
    one line) and chromium_events.json (the chromium events, which raw.jsonl leaves out)."""
    kinds: dict[str, int] = {}
    with open(out / "raw.jsonl", "rb") as fh:
        for line in fh:
            rest = [k for k in json.loads(line) if k not in TLPARSE_FIELDS]
            if len(rest) == 2 and "stack" in rest:  # a kind with a stack beside it
                rest.remove("stack")
            kind = rest[0] if len(rest) == 1 else repr(sorted(rest))
            kinds[kind] = kinds.get(kind, 0) + 1
    events = json.loads((out / "chromium_events.json").read_bytes())
    if events:
        kinds["chromium_event"] = len(events)
    return kinds


TLPARSE_STATS = re.compile(r"Stats \{([^}]*)\}")


def same_counts(trace: Path, tl_out: Path, env: dict[str, str], stderr: str) -> dict[str, Any]:
    """tcview's records of each kind against those tlparse wrote (see tlparse_kinds), and
    against those it says it read (`stderr`'s "Stats { ok: N, other_rank: M, … }": a record
    of a rank other than the first it saw is skipped)."""
    found = TLPARSE_STATS.search(stderr)
    stats: dict[str, int] = {}
    for field in found[1].split(",") if found else []:
        name, _, value = field.partition(":")
        stats[name.strip()] = int(value)
    child = subprocess.run(
        [sys.executable, "-c", KINDS_CHILD, str(trace)],
        env=env,
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    )
    ours: dict[str, int] = json.loads(child.stdout)
    theirs = tlparse_kinds(tl_out)
    strings = ours.pop("str", 0)  # (tlparse: one string_table line)
    if theirs.get("string_table") == 1 and strings:
        del theirs["string_table"]
    differ = {
        k: [ours.get(k, 0), theirs.get(k, 0)]
        for k in sorted(set(ours) | set(theirs))
        if ours.get(k, 0) != theirs.get(k, 0)
    }
    records = sum(ours.values())  # (without the `str` records)
    if stats.get("ok") != records:
        differ["records read (tlparse's ok)"] = [records, stats.get("ok", 0)]
    return {
        "kinds": len(ours),
        "records": records,
        "str_records": strings,
        "compilation_metrics": theirs.get("compilation_metrics", 0),
        "tlparse_stats": stats,
        "equal": not differ,
        "differ": differ,
    }


def timed(
    cmd: list[str], env: dict[str, str], errors: list[str] | None = None
) -> tuple[float, str, float]:
    """Wall seconds, stdout, and the peak resident memory in MB of the command's largest
    process: the kernel's ru_maxrss over the process and the children it waited for (tcview's
    workers and its findings child; tlparse is one process). Output goes to files, not pipes,
    so that the process is waited for here, with its usage. `errors` gets its stderr."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=REPO)
        _pid, status, usage = os.wait4(proc.pid, 0)
        dt = time.perf_counter() - t
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            raise SystemExit(
                f"{' '.join(cmd[:5])} failed ({proc.returncode}):\n{err.read()[-3000:]!r}"
            )
        if errors is not None:
            err.seek(0)
            errors.append(err.read().decode(errors="replace"))
        out.seek(0)
        return dt, out.read().decode(errors="replace"), usage.ru_maxrss / 1024  # (KB on Linux)


def _own_peak_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def build_inputs(trace: Path, ranks: Path, args: argparse.Namespace) -> None:
    if not trace.exists():
        files = bench_index.source_files(None, args.with_rank_files)
        bench_index.build(trace, files, args.size_mb << 20)
    if not ranks.exists():
        from conftest import unpack_shared

        build_ranks(
            ranks,
            args.ranks,
            int(args.rank_mb * (1 << 20)),
            templates(unpack_shared(), REPO / "sample_traces"),
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", type=Path)
    ap.add_argument("--size-mb", type=int, default=500)
    ap.add_argument("--ranks", type=int, default=128)
    ap.add_argument("--rank-mb", type=float, default=1.64)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--with-rank-files", action="store_true", help="as runs A to O were built")
    ap.add_argument("--build-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()

    work = args.dir or Path(tempfile.mkdtemp(prefix="tcview-bench-speed-"))
    work.mkdir(parents=True, exist_ok=True)
    trace = work / "trace.log"
    ranks = work / "ranks"
    cache = work / ".cache" / "tcview"
    if args.build_only:
        build_inputs(trace, ranks, args)
        return
    if not trace.exists() or not ranks.exists():
        sizes = ["--size-mb", str(args.size_mb), "--ranks", str(args.ranks)]
        sizes += ["--rank-mb", str(args.rank_mb)]
        sizes += ["--with-rank-files"] if args.with_rank_files else []
        build = [sys.executable, str(HERE), "--build-only", "--dir", str(work), *sizes]
        subprocess.run(build, check=True)
    first_floor = _own_peak_mb()
    tl = shutil.which("tlparse")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    env["TCVIEW_CACHE_DIR"] = str(cache)
    env.pop("TCVIEW_JOBS", None)
    env.pop("TCVIEW_NO_CACHE", None)
    tc = [*TCVIEW_CLI, "summary", "--json", "-q"]
    rows: dict[str, list[float]] = {}
    memory: dict[str, list[float]] = {}  # peak RSS (MB) of the largest process
    facts: dict[str, Any] = {"cores": os.cpu_count(), "file_mb": trace.stat().st_size >> 20}
    loads = []

    def add(name: str, value: float, mb: float) -> None:
        rows.setdefault(name, []).append(value)
        memory.setdefault(name, []).append(mb)

    for r in range(args.repeat):
        loads.append(os.getloadavg()[0])
        dt, out, mb = timed([*tc, "--no-cache", str(trace)], env)
        add("file: tcview", dt, mb)
        dt1, out1, mb = timed([*tc, "--no-cache", str(trace)], {**env, "TCVIEW_JOBS": "1"})
        add("file: tcview, one process", dt1, mb)
        cores = str(os.cpu_count() or 1)
        dt2, out2, mb = timed([*tc, "--no-cache", str(trace)], {**env, "TCVIEW_JOBS": cores})
        add("file: tcview, split forced", dt2, mb)
        assert out1 == out == out2, "one process and a split disagree"
        counts = json.loads(out)
        if tl:
            tl_out = work / "tl"
            tl_err: list[str] = []
            dt, _, mb = timed(
                [tl, str(trace), "-p", "-o", str(tl_out), "--no-browser", "--overwrite"],
                env,
                tl_err,
            )
            add("file: tlparse -p", dt, mb)
            facts["tlparse_compile_dirs"] = sum(
                1 for p in tl_out.iterdir() if p.is_dir() and COMPILE_DIR.match(p.name)
            )
        facts["counts"] = {
            k: counts[k] for k in ("records", "compiles", "recompiles", "kernels", "ranks")
        }
        shutil.rmtree(cache, ignore_errors=True)
        dt, first, mb = timed([*tc, str(trace)], env)
        add("file: first open (cache written)", dt, mb)
        dt, again, mb = timed([*tc, str(trace)], env)
        add("file: reopen", dt, mb)
        shutil.rmtree(cache / "results")  # what `tcview open` reads: the index alone
        dt, indexed, mb = timed([*tc, str(trace)], env)
        add("file: reopen from the index alone", dt, mb)
        assert first == again == indexed == out, "the reopen differs"
        dt, rout, mb = timed([*tc, "--no-cache", str(ranks)], env)
        add("128 ranks: tcview", dt, mb)
        facts["divergence"] = "divergence" in json.loads(rout)
        if tl:
            dt, _, mb = timed(
                [
                    tl,
                    str(ranks),
                    "--all-ranks-html",
                    "-o",
                    str(work / "tlr"),
                    "--no-browser",
                    "--overwrite",
                ],
                env,
            )
            add("128 ranks: tlparse --all-ranks-html", dt, mb)
        print(
            f"round {r + 1} (load {loads[-1]:.2f}): "
            + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in rows.items()),
            flush=True,
        )

    med = {k: statistics.median(v) for k, v in rows.items()}
    print(
        f"\nmedians of {args.repeat} (load average before each round: {', '.join(f'{x:.2f}' for x in loads)})"
    )
    for k, v in med.items():
        print(f"  {k:40} {v:7.2f} s   ({', '.join(f'{x:.2f}' for x in rows[k])})")
    peak = {k: statistics.median(v) for k, v in memory.items()}
    floor = [first_floor, _own_peak_mb()]
    facts["runner_peak_mb"] = floor
    print("peak RSS of the largest process, medians (MB; a command's figure starts from this")
    print(
        f"runner's own peak when it starts: {floor[0]:.0f} MB before the rounds, {floor[1]:.0f} after)"
    )
    for k, v in peak.items():
        print(f"  {k:40} {v:7.0f} MB  ({', '.join(f'{x:.0f}' for x in memory[k])})")
    ratios = {}
    if "file: tlparse -p" in med:
        ratios["file vs tlparse -p"] = med["file: tlparse -p"] / med["file: tcview"]
    ratios["reopen vs first open"] = med["file: first open (cache written)"] / med["file: reopen"]
    if "128 ranks: tlparse --all-ranks-html" in med:
        ratios["128 ranks vs tlparse"] = (
            med["128 ranks: tlparse --all-ranks-html"] / med["128 ranks: tcview"]
        )
    ratios["file: split forced vs one process"] = (
        med["file: tcview, one process"] / med["file: tcview, split forced"]
    )
    if "file: tlparse -p" in peak:
        ratios["file memory: tlparse -p / tcview"] = peak["file: tlparse -p"] / peak["file: tcview"]
    if "128 ranks: tlparse --all-ranks-html" in peak:
        ratios["128 ranks memory: tlparse / tcview"] = (
            peak["128 ranks: tlparse --all-ranks-html"] / peak["128 ranks: tcview"]
        )
    for k, x in ratios.items():
        print(f"  {k:40} x{x:.1f}")
    if tl:
        same = same_counts(trace, work / "tl", env, tl_err[-1])
        facts["tlparse_counts"] = same
        print(
            f"  counts: tcview {same['records']} records of {same['kinds']} kinds (and "
            f"{same['str_records']} `str`: tlparse's string table), "
            f"{facts['counts']['compiles']} compiles; tlparse -p "
            + (
                f"read as many of each kind, {same['compilation_metrics']} compilation_metrics"
                if same["equal"]
                else f"other counts (tcview, tlparse): {same['differ']}"
            )
        )
    print("  " + json.dumps(facts))
    line = json.dumps(
        {
            "medians": med,
            "rounds": rows,
            "peak_rss_mb": peak,
            "ratios": ratios,
            "loads": loads,
            **facts,
        }
    )
    print(line)
    if args.out:
        args.out.write_text(line + "\n")
    if args.dir is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
