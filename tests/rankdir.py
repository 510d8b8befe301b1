"""Build a directory of N rank trace files from real multi-rank traces (for bench_ranks.py and
the many-rank tests).

Each rank file repeats one template (a real rank's trace: the shared archive's ddp2,
i_ranks_* and tlparse-corpus multi-rank traces, or the repo's samples) until it reaches the
wanted size. On every repetition the frame ids are shifted, so each copy adds new frames and
compiles. The rank is rewritten consistently: the file name
(``dedicated_log_torch_trace_rank_<N>_<rand>.log``), the ``"rank": K`` keys and the ``[rankK]:``
prefixes of the headers. Only header lines are rewritten: payloads keep their md5.
"""

from __future__ import annotations

import random
import re
import string
from pathlib import Path

FRAME_ID = re.compile(rb'"frame_id": (\d+)')
RANK_KEY = re.compile(rb'"rank": \d+')
RANK_PREFIX = re.compile(rb"^\[rank\d+\]:")
# The shared archive's rank traces (relative to its traces/ folder).
SHARED_RANK_DIRS = (
    "h200-torch2.11/ddp2/trace",
    "cpu-torch2.13/i_ranks_env/trace",
    "cpu-torch2.13/i_ranks_gloo/trace",
    "tlparse-corpus/collectives_parity",
    "tlparse-corpus/graph_exec_order_tests",
    "tlparse-corpus/multi_rank_messy_input",
    "tlparse-corpus/multi_rank_runtime",
    "tlparse-corpus/multi_rank_schedule",
)


def templates(shared: Path | None, fallback: Path) -> list[Path]:
    """The rank traces to build from: the shared archive's, else the trace files under
    `fallback` (the repo's sample_traces)."""
    found: list[Path] = []
    if shared is not None:
        for rel in SHARED_RANK_DIRS:
            found += sorted(
                p
                for p in (shared / rel).glob("dedicated_log_torch_trace*.log")
                if p.stat().st_size > 0
            )
    if not found:
        found = sorted(p for p in fallback.rglob("dedicated_log_torch_trace*.log"))
    return found


class Template:
    """A trace split into header lines (rewritten per copy) and payload runs (kept)."""

    def __init__(self, data: bytes) -> None:
        if not data.endswith(b"\n"):
            data += b"\n"
        self.parts: list[tuple[bool, bytes]] = []  # (is a header line, bytes)
        run: list[bytes] = []
        for line in data.split(b"\n")[:-1]:
            if line.startswith(b"\t") or not line.strip():
                run.append(line + b"\n")
                continue
            if run:
                self.parts.append((False, b"".join(run)))
                run = []
            self.parts.append((True, line + b"\n"))
        if run:
            self.parts.append((False, b"".join(run)))
        ids = [int(m.group(1)) for h, b in self.parts if h for m in FRAME_ID.finditer(b)]
        self.step = 1 + max(ids, default=0)
        self.size = len(data)

    def copy(self, rank: int, shift: int) -> bytes:
        key = b'"rank": %d' % rank
        prefix = b"[rank%d]:" % rank

        def frame(m: re.Match[bytes]) -> bytes:
            return b'"frame_id": %d' % (int(m.group(1)) + shift)

        out = []
        for is_header, blob in self.parts:
            if is_header:
                blob = FRAME_ID.sub(frame, blob) if shift else blob
                blob = RANK_KEY.sub(key, blob)
                blob = RANK_PREFIX.sub(prefix, blob)
            out.append(blob)
        return b"".join(out)


def rank_name(rank: int, seed: int) -> str:
    rng = random.Random(seed * 1_000_003 + rank)
    rand = "".join(rng.choice(string.ascii_lowercase + string.digits + "_") for _ in range(8))
    return f"dedicated_log_torch_trace_rank_{rank}_{rand}.log"


def build(out: Path, ranks: int, size: int, sources: list[Path], seed: int = 0) -> int:
    """Write `ranks` rank files of at least `size` bytes each into `out`; returns bytes."""
    out.mkdir(parents=True, exist_ok=True)
    temps = [Template(p.read_bytes()) for p in sources]
    total = 0
    for rank in range(ranks):
        t = temps[rank % len(temps)]
        with open(out / rank_name(rank, seed), "wb") as fh:
            written, copy = 0, 0
            while written < size or copy == 0:
                data = t.copy(rank, copy * t.step)
                fh.write(data)
                written += len(data)
                copy += 1
        total += written
    return total
