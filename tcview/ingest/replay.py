"""Replay finished trace files into a directory the way a live run writes them.

    python -m tcview.ingest.replay SRC DEST [--speed MB_PER_S] [--seed N] [--max-chunk BYTES]

Files appear late and in a random order, and their bytes arrive in random chunks that cut lines
and payloads anywhere. For tests and demos of follow mode. SRC is a trace directory, a run
directory or one file; DEST is created if needed. A TORCH_LOGS capture (torch_logs.txt) is
replayed too, interleaved with the trace files.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO


@dataclass
class _Stream:
    src: Path
    dest: Path
    data: bytes
    pos: int = 0
    start_at: int = 0  # step at which the file appears


def plan(src: Path, dest: Path) -> list[tuple[Path, Path]]:
    """(source, destination) pairs, keeping the layout below SRC."""
    if src.is_file():
        return [(src, dest / src.name)]
    pairs = []
    for path in sorted(src.rglob("*")):
        if path.is_file() and (
            path.name.startswith("dedicated_log_torch_trace") or path.name.startswith("torch_logs")
        ):
            pairs.append((path, dest / path.relative_to(src)))
    return pairs


def replay(
    src: Path,
    dest: Path,
    speed_mb_s: float = 20.0,
    seed: int = 0,
    max_chunk: int = 64 << 10,
    on_write: Callable[[Path, int], None] | None = None,
) -> float:
    """Write everything; returns the monotonic time of the last write."""
    rng = random.Random(seed)
    streams = [_Stream(s, d, s.read_bytes()) for s, d in plan(src, dest)]
    rng.shuffle(streams)
    for i, stream in enumerate(streams):
        stream.start_at = i * rng.randint(0, 3)
    dest.mkdir(parents=True, exist_ok=True)
    step = 0
    last = time.monotonic()
    handles: dict[Path, BinaryIO] = {}
    budget = speed_mb_s * (1 << 20) if speed_mb_s > 0 else 0.0
    try:
        while any(s.pos < len(s.data) for s in streams):
            live = [s for s in streams if s.start_at <= step and s.pos < len(s.data)]
            step += 1
            if not live:
                continue
            stream = rng.choice(live)
            size = rng.randint(1, max_chunk)
            chunk = stream.data[stream.pos : stream.pos + size]
            fh = handles.get(stream.dest)
            if fh is None:
                stream.dest.parent.mkdir(parents=True, exist_ok=True)
                fh = open(stream.dest, "ab")  # noqa: SIM115 - closed in finally
                handles[stream.dest] = fh
            fh.write(chunk)
            fh.flush()
            stream.pos += len(chunk)
            last = time.monotonic()
            if on_write is not None:
                on_write(stream.dest, stream.pos)
            if budget:
                time.sleep(len(chunk) / budget)
    finally:
        for fh in handles.values():
            fh.close()
    return last


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m tcview.ingest.replay", description=__doc__.split("\n")[0]
    )
    ap.add_argument("src", type=Path)
    ap.add_argument("dest", type=Path)
    ap.add_argument("--speed", type=float, default=5.0, help="MB/s (0: as fast as possible)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-chunk", type=int, default=64 << 10)
    args = ap.parse_args(argv)
    if not args.src.exists():
        print(f"no such file or directory: {args.src}", file=sys.stderr)
        return 2
    if args.dest.exists() and any(args.dest.iterdir()):
        print(f"{args.dest} is not empty", file=sys.stderr)
        return 2
    replay(args.src, args.dest, args.speed, args.seed, args.max_chunk)
    print(f"replayed {args.src} into {args.dest}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    os.umask(0o022)
    sys.exit(main())
