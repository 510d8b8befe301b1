"""Index speed and memory against tlparse on a big trace built from real records.

    python tests/benchmarks/bench_index.py [--size-mb 500] [--source DIR] [--keep FILE]

Builds a trace of at least --size-mb by repeating the records of real GPU traces, with
frame ids renumbered on each repetition so that every copy adds new frames and compiles. The
traces are those of single-GPU jobs. `--with-rank-files` adds the rank files of multi-GPU
jobs, as the traces of runs A to O were built; `tlparse -p` reads one rank of a file, and
skipped 98% of such a trace's records as `other_rank`. Then runs, in this order and on the
same file: `tcview summary --json` (full index) and
`tlparse FILE -p -o DIR --no-browser`, each in a fresh process, and prints wall time, MB/s and
peak RSS (ru_maxrss of the child) with the ratios. tlparse is skipped when it is not installed
(`pip install tlparse`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve()
REPO = HERE.parents[2]
sys.path.insert(0, str(REPO / "tests"))

from conftest import TCVIEW_CLI  # noqa: E402

FRAME_ID = re.compile(rb'"frame_id": (\d+)')
RANK_HEADER = re.compile(rb'^[A-Z]\d{4} [^\n]*\] \{[^\n]*"rank": \d', re.M)


def source_files(source: Path | None, with_rank_files: bool = False) -> list[Path]:
    """The trace files under `source` (the shared archive's H200 traces by default): those of
    single-GPU jobs, whose headers name no rank, unless `with_rank_files`."""
    if source is None:
        from conftest import unpack_shared

        root = unpack_shared()
        source = root / "h200-torch2.11" if root else REPO / "sample_traces"
    files = sorted(source.rglob("dedicated_log_torch_trace*.log"))
    if with_rank_files:
        return files
    return [f for f in files if RANK_HEADER.search(f.read_bytes()) is None]


def _renumber(shift: int) -> Callable[[re.Match[bytes]], bytes]:
    return lambda m: b'"frame_id": ' + str(int(m.group(1)) + shift).encode()


def build(out: Path, files: list[Path], size: int) -> int:
    """Repeat the records of `files` into `out`, renumbering frame ids per copy."""
    blobs = [f.read_bytes() for f in files]
    offset_step = 1 + max((int(m.group(1)) for b in blobs for m in FRAME_ID.finditer(b)), default=0)
    written = 0
    copy = 0
    with open(out, "wb") as fh:
        while written < size:
            for i, blob in enumerate(blobs):
                data = FRAME_ID.sub(_renumber((copy * len(blobs) + i) * offset_step), blob)
                if not data.endswith(b"\n"):
                    data += b"\n"
                fh.write(data)
                written += len(data)
            copy += 1
    return written


def measure(cmd: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS in MB (of the child and its children), stdout of one command."""
    script = (
        "import resource, subprocess, sys, time, json\n"
        "t = time.perf_counter()\n"
        "p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)\n"
        "dt = time.perf_counter() - t\n"
        "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
        "print(json.dumps([dt, rss, p.returncode, p.stdout.decode(errors='replace'),"
        " p.stderr.decode(errors='replace')[-4000:]]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, *cmd], capture_output=True, text=True, cwd=REPO
    )
    dt, rss, rc, stdout, stderr = json.loads(out.stdout)
    if rc != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} failed with exit {rc}:\n{stderr}")
    return dt, rss, stdout


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=500)
    ap.add_argument("--source", type=Path)
    ap.add_argument("--keep", type=Path, help="write the trace here and keep it")
    ap.add_argument("--no-tlparse", action="store_true")
    ap.add_argument("--with-rank-files", action="store_true", help="as runs A to O were built")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="tcview-bench-"))
    try:
        trace = args.keep or tmp / "dedicated_log_torch_trace_bench.log"
        if not trace.exists():
            files = source_files(args.source, args.with_rank_files)
            size = build(trace, files, args.size_mb << 20)
        else:
            size = trace.stat().st_size
        mb = size / (1 << 20)
        print(f"trace: {trace} ({mb:.0f} MB)")
        rows = []
        tc = [*TCVIEW_CLI, "summary", "--json", "-q", "--no-cache", str(trace)]
        dt, rss, out = measure(tc)
        counts = json.loads(out[out.index("{") :]) if out.strip().startswith("{") else {}
        rows.append(("tcview summary --json", dt, rss))
        tl = shutil.which("tlparse")
        if tl and not args.no_tlparse:
            dt2, rss2, _ = measure([tl, str(trace), "-p", "-o", str(tmp / "tl"), "--no-browser"])
            rows.append(("tlparse -p", dt2, rss2))
        print(f"{'tool':24} {'time s':>8} {'MB/s':>8} {'peak RSS MB':>12}")
        for name, t, r in rows:
            print(f"{name:24} {t:8.2f} {mb / t:8.0f} {r:12.0f}")
        if len(rows) == 2:
            print(
                f"tcview is {rows[1][1] / rows[0][1]:.1f}x faster and uses "
                f"{rows[1][2] / rows[0][2]:.1f}x less peak memory"
            )
        if counts:
            keys = ("records", "compiles", "kernels", "graph_breaks", "recompiles")
            print("counts:", {k: counts.get(k) for k in keys})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    main()
