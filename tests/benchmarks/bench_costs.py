"""What the work-sharing constants of tcview/ingest/parallel.py stand for, measured again.

    python tests/benchmarks/bench_costs.py FILE [RANKS_DIR] [--repeat 5]

FILE (bench_index.py's trace, 160 MB at least): forty 4 MB ranges read here (`feed_range`),
prescanned and pickled as a worker sends them, unpickled and applied (`apply_lines`), each the
minimum over the repeats, and their ratios to the read: `PRESCAN_COST` and `APPLY_COST`.
RANKS_DIR (bench_ranks.py's directory): 64 files indexed here, their snapshots encoded and
restored, and the ratios to the index: `ENCODE_COST` and `RESTORE_COST`.
"""

from __future__ import annotations

import argparse
import pickle
import time
from pathlib import Path

from tcview.ingest import snapshot
from tcview.ingest.index import TraceSet
from tcview.ingest.load import Hooks
from tcview.ingest.parallel import RANGE_BYTES
from tcview.ingest.tracefile import boundaries, prescan

RANGES = 40
FILES = 64


def range_costs(path: Path) -> tuple[float, float, float, float]:
    """Seconds for the ranges: read here, prescanned and pickled, unpickled, applied."""
    size = RANGES * RANGE_BYTES
    cuts = boundaries(path, [size * k // RANGES for k in range(1, RANGES + 1)], path.stat().st_size)
    ranges = list(zip([0, *cuts[:-1]], cuts, strict=True))
    here = TraceSet(path).add_file(path)
    t = time.perf_counter()
    for lo, hi in ranges:
        here.feed_range(Hooks(), lo, hi)
    read = time.perf_counter() - t
    t = time.perf_counter()
    blobs = [pickle.dumps(prescan(path, lo, hi), 5) for lo, hi in ranges]
    prescanned = time.perf_counter() - t
    t = time.perf_counter()
    results = [pickle.loads(b) for b in blobs]
    unpickled = time.perf_counter() - t
    applied_to = TraceSet(path).add_file(path)
    t = time.perf_counter()
    for lines in results:
        applied_to.apply_lines(lines)
    return read, prescanned, unpickled, time.perf_counter() - t


def file_costs(files: list[Path]) -> tuple[float, float, float]:
    """Seconds for the files: indexed, their snapshots encoded, restored."""
    indexed = encoded = restored = 0.0
    bodies = []
    for path in files:
        tf = TraceSet(path).add_file(path)
        t = time.perf_counter()
        tf.feed_from(Hooks())
        t1 = time.perf_counter()
        bodies.append((path, snapshot.encode(tf, tf.builder.facts), tf.pos))
        encoded += time.perf_counter() - t1
        indexed += t1 - t
    shared = snapshot.Shared()
    for path, body, size in bodies:
        tf = TraceSet(path).new_file(path)
        t = time.perf_counter()
        snapshot.restore(tf, body, size, shared)
        restored += time.perf_counter() - t
    return indexed, encoded, restored


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", type=Path)
    ap.add_argument("ranks", type=Path, nargs="?")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    runs = [range_costs(args.file) for _ in range(args.repeat)]
    read, pre, unpickled, applied = (min(r[i] for r in runs) for i in range(4))
    ms = 1000
    print(
        f"{RANGES} ranges: read here {read * ms:.0f} ms, prescanned and pickled {pre * ms:.0f} "
        f"ms, unpickled {unpickled * ms:.0f} ms, applied {applied * ms:.0f} ms: "
        f"PRESCAN_COST {pre / read:.2f}, APPLY_COST {(unpickled + applied) / read:.2f}"
    )
    if args.ranks is not None:
        files = sorted(args.ranks.glob("*.log"))[:FILES]
        done = [file_costs(files) for _ in range(args.repeat)]
        indexed, encoded, restored = (min(d[i] for d in done) for i in range(3))
        print(
            f"{len(files)} files: indexed {indexed / len(files) * ms:.2f} ms a file, "
            f"ENCODE_COST {encoded / indexed:.2f}, RESTORE_COST {restored / indexed:.2f}"
        )


if __name__ == "__main__":
    main()
