"""TORCH_LOGS text parsing speed and memory on a big capture built from real ones.

    python tests/benchmarks/bench_textlog.py [--size-mb 200] [--source DIR] [--keep FILE]

Builds a capture of at least --size-mb by repeating the real captures (``torch_logs*.txt`` of
the shared GPU and CPU runs, or the small fixture when ../shared is absent), with the pid of
every prefixed line shifted per copy so that each copy adds new processes and compiles. Then
runs `tcview summary --json FILE` and `tcview summary --json - < FILE` in fresh processes and
prints wall time, MB/s and peak RSS (ru_maxrss of the child), and checks the counts against
the independent counter of tests/textref.py times the number of copies.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve()
REPO = HERE.parents[2]
sys.path.insert(0, str(REPO / "tests"))

from conftest import TCVIEW_CLI  # noqa: E402

PID = re.compile(rb"^((?:\[rank\d+\]:)?[A-Z]\d{4} \d\d:\d\d:\d\d\.\d+ +)(\d+) ", re.M)
FOUR = ("compiles", "graph_breaks", "recompiles", "kernels")


def source_files(source: Path | None) -> list[Path]:
    if source is not None:
        return sorted(source.rglob("torch_logs*.txt"))
    from conftest import FIXTURES, unpack_shared

    root = unpack_shared()
    if root is None:
        return [FIXTURES / "torch_logs_small.txt"]
    return sorted(
        p
        for group in ("h200-torch2.11", "cpu-torch2.13")
        for p in (root / group).rglob("torch_logs*.txt")
    )


def _shift_pid(shift: int) -> Callable[[re.Match[bytes]], bytes]:
    return lambda m: m.group(1) + str(int(m.group(2)) + shift).encode() + b" "


def build(out: Path, files: list[Path], size: int) -> tuple[int, int, bytes]:
    """Repeat `files` into `out` with shifted pids; returns bytes, copies and one copy."""
    blob = b"".join(f.read_bytes().rstrip(b"\n") + b"\n" for f in files)
    written = 0
    copies = 0
    with open(out, "wb") as fh:
        while written < size:
            shift = copies * 1_000_000
            data = PID.sub(_shift_pid(shift), blob)
            fh.write(data)
            written += len(data)
            copies += 1
    return written, copies, blob


def measure(cmd: list[str], stdin: Path | None = None) -> tuple[float, float, str]:
    """Wall seconds, peak RSS in MB and stdout of one command run in a fresh child."""
    script = (
        "import resource, subprocess, sys, time, json\n"
        "src = open(sys.argv[1], 'rb') if sys.argv[1] else None\n"
        "t = time.perf_counter()\n"
        "p = subprocess.run(sys.argv[2:], stdin=src, stdout=subprocess.PIPE, "
        "stderr=subprocess.DEVNULL)\n"
        "dt = time.perf_counter() - t\n"
        "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
        "print(json.dumps([dt, rss, p.returncode, p.stdout.decode(errors='replace')]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(stdin or ""), *cmd],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    dt, rss, rc, stdout = json.loads(out.stdout)
    if rc != 0:
        raise SystemExit(f"{' '.join(cmd)} failed with exit {rc}")
    return dt, rss, stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=int, default=200)
    ap.add_argument("--source", type=Path)
    ap.add_argument("--keep", type=Path, help="write the capture here and keep it")
    args = ap.parse_args()
    from textref import count_text

    files = source_files(args.source)
    with tempfile.TemporaryDirectory(prefix="tcview-bench-text-") as tmp:
        path = args.keep or Path(tmp) / "torch_logs_big.txt"
        size, copies, blob = build(path, files, args.size_mb << 20)
        expected = {k: v * copies for k, v in count_text(blob).items()}
        mb = size / 1e6
        print(f"capture: {mb:.1f} MB, {copies} copies of {len(files)} real captures")
        tcview = [*TCVIEW_CLI, "summary", "--json", "-q"]
        results = {}
        for label, cmd, stdin in (
            ("file", [*tcview, str(path)], None),
            ("stdin", [*tcview, "-"], path),
        ):
            dt, rss, stdout = measure(cmd, stdin)
            counts = json.loads(stdout)
            results[label] = {k: counts[k] for k in FOUR}
            print(
                f"tcview summary --json {label:5}: {dt:7.2f} s  {mb / dt:7.1f} MB/s  "
                f"peak RSS {rss:7.1f} MB"
            )
        print(f"counts: {results['file']}")
        ok = results["file"] == results["stdin"] == expected
        print("counts equal the independent counter and stdin equals file:", ok)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
