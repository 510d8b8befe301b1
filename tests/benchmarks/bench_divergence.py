"""What the divergence pass costs on a directory of many ranks.

    python tests/benchmarks/bench_divergence.py [--ranks 128] [--size-mb 1.6] [--tlparse]

Builds RANKS rank files from the shared ddp2 run's two rank traces (each repeated, with its
frame ids shifted, to SIZE MB; the rank renumbered in the file name and the ``"rank"`` keys),
then times, in this process: the index (`TraceSet.load`, serial), the per-file signatures
(`file_signature`, what a worker would make), their combination (`combine`), and the whole
`analyze`. With --tlparse, also ``tlparse DIR --all-ranks-html`` on the same directory.
"""

from __future__ import annotations

import argparse
import gc
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conftest import unpack_shared

from tcview.analysis.divergence import analyze, file_signature
from tcview.ingest.index import TraceSet
from tcview.model.objects import JsonValue, LogSource

FRAME_ID = re.compile(rb'"frame_id": (\d+)')
RANK_KEY = re.compile(rb'"rank": \d+')


def _shift_frame_id(shift: int) -> Callable[[re.Match[bytes]], bytes]:
    return lambda m: b'"frame_id": %d' % (int(m.group(1)) + shift)


def build(out: Path, ranks: int, size: int, templates: list[bytes]) -> int:
    """RANKS files of about SIZE bytes; returns the bytes written."""
    total = 0
    for rank in range(ranks):
        data = templates[rank % len(templates)]
        step = 1 + max((int(m.group(1)) for m in FRAME_ID.finditer(data)), default=0)
        parts = []
        written = copy = 0
        while written < size or copy == 0:
            piece = FRAME_ID.sub(_shift_frame_id(copy * step), data)
            piece = RANK_KEY.sub(b'"rank": %d' % rank, piece)
            parts.append(piece)
            written += len(piece)
            copy += 1
        body = b"".join(parts)
        (out / f"dedicated_log_torch_trace_rank_{rank}_bench.log").write_bytes(body)
        total += len(body)
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ranks", type=int, default=128)
    parser.add_argument("--size-mb", type=float, default=1.6)
    parser.add_argument("--tlparse", action="store_true", help="time tlparse too")
    args = parser.parse_args()
    shared = unpack_shared()
    if shared is None:
        print("needs ../shared/traces.tar.xz", file=sys.stderr)
        return 2
    trace = shared / "h200-torch2.11" / "ddp2" / "trace"
    templates = [p.read_bytes() for p in sorted(trace.glob("*.log"))]
    with tempfile.TemporaryDirectory(prefix="tcview-bench-div-") as tmp:
        out = Path(tmp)
        total = build(out, args.ranks, int(args.size_mb * 1e6), templates)
        print(f"{args.ranks} rank files, {total / 1e6:.0f} MB in {out}")
        gc.collect()  # the build's garbage is no part of a real load
        t0 = time.perf_counter()
        ts = TraceSet.load(out)
        t_index = time.perf_counter() - t0
        t0 = time.perf_counter()
        whole = analyze(ts)  # the first call in this process: what `tcview summary` pays
        t_cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        analyze(ts)
        t_warm = time.perf_counter() - t0
        t0 = time.perf_counter()
        signatures: dict[LogSource, dict[str, JsonValue]] = {
            tf: file_signature(tf) for tf in ts.files
        }
        t_sign = time.perf_counter() - t0
        t0 = time.perf_counter()
        div = analyze(ts, lambda tf: signatures[tf])
        t_combine = time.perf_counter() - t0
        assert whole.groups == div.groups
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"index (serial, this process)       {t_index:7.2f} s   peak {rss:.0f} MB")
        print(
            f"analyze, first call                {t_cold * 1000:7.1f} ms"
            f" = {100 * t_cold / t_index:.1f}% of the index"
        )
        print(f"analyze, again                     {t_warm * 1000:7.1f} ms")
        print(
            f"signatures of {len(ts.files)} files as JSON    {t_sign * 1000:7.1f} ms (a worker's part)"
        )
        print(
            f"analyze from those signatures      {t_combine * 1000:7.1f} ms (the loading process's part)"
        )
        print(f"groups: {len(div.groups)}; first: {div.first or '(none)'}")
        if args.tlparse:
            t0 = time.perf_counter()
            subprocess.run(
                ["tlparse", str(out), "--all-ranks-html", "-o", str(out / "tl"), "--no-browser"],
                capture_output=True,
                check=True,
            )
            t_tl = time.perf_counter() - t0
            print(f"tlparse --all-ranks-html           {t_tl:7.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
