"""Exports for other tools: a Chrome trace (Perfetto, chrome://tracing) of the compile-time
chromium events, and a Markdown report to paste into a GitHub issue.

The Chrome trace is written as it is read: one event at a time from the trace files (by the
offsets the index kept), so a gigabyte trace needs no more memory than its index. Each trace
file is one process: pid = its rank (or its position among the files, when a file has no
rank or ranks repeat), named by ``process_name`` metadata. A ``B``/``E`` pair (matched by name,
innermost first, per (pid, tid), as `Compile.phases` does) becomes one complete ``X`` event
with ``ts`` and ``dur``; instants and other events are kept; a ``B`` or ``E`` without its
partner is kept as it is.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from tcview.ingest.tracefile import TraceFile, loads
from tcview.model.objects import Model

_READ = 4096  # first read of one event (most are a few hundred bytes)


def chromium_events(tf: TraceFile) -> Iterator[dict[str, Any]]:
    """The Chrome trace events of a trace file's chromium_event records, in file order."""
    size = tf.pos - tf.pending_bytes
    offsets = tf.chromium_offsets()
    if not offsets:
        return
    fd = os.open(tf.path, os.O_RDONLY)
    try:
        for offset in offsets:
            want = _READ
            while True:
                raw = os.pread(fd, min(want, max(0, size - offset)), offset)
                first = raw.find(b"\n")
                cut = raw.find(b"\n", first + 1) if first >= 0 else -1
                while cut >= 0 and raw[cut + 1 : cut + 2] == b"\t":
                    cut = raw.find(b"\n", cut + 1)
                at_end = offset + len(raw) >= size
                # A line end at the window's edge: the next line (a payload line?) is unseen.
                if first >= 0 and ((0 <= cut < len(raw) - 1) or at_end):
                    break
                if at_end or want > (64 << 20):
                    break
                want *= 4
            if first < 0:
                continue
            body = raw[first + 1 : cut if cut >= 0 else len(raw)]
            lines = [ln[1:] for ln in body.split(b"\n") if ln.startswith(b"\t")]
            value = loads(b"\n".join(lines))
            if isinstance(value, dict):
                yield value
    finally:
        os.close(fd)


@dataclass
class PerfettoStats:
    processes: int = 0
    complete: int = 0  # X events made from B/E pairs
    instants: int = 0
    unmatched: int = 0  # B or E events without their partner (kept as they are)
    other: int = 0  # events of other phases (kept)
    pids: dict[int, str] = field(default_factory=dict)


def process_ids(model: Model) -> list[tuple[TraceFile, int, str]]:
    """Each trace file with its pid in the export and its process name."""
    files = [f for f in model.files if isinstance(f, TraceFile)]
    ranks = [f.rank for f in files]
    by_rank = all(r is not None for r in ranks) and len(set(ranks)) == len(ranks)
    out = []
    for i, tf in enumerate(files):
        if by_rank and tf.rank is not None:
            out.append((tf, tf.rank, f"rank {tf.rank}"))
        else:
            who = f"rank {tf.rank} · " if tf.rank is not None else ""
            out.append((tf, i, f"{who}{tf.display}"))
    return out


def write_perfetto(model: Model, out: IO[str]) -> PerfettoStats:
    """Write the model's chromium events to `out` as one Chrome trace JSON object."""
    stats = PerfettoStats()
    out.write('{"displayTimeUnit": "ms", "traceEvents": [\n')
    first = True

    def put(event: dict[str, Any]) -> None:
        nonlocal first
        if not first:
            out.write(",\n")
        out.write(json.dumps(event, ensure_ascii=False, default=str))
        first = False

    for tf, pid, name in process_ids(model):
        stats.processes += 1
        stats.pids[pid] = name
        put({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}})
        put(
            {
                "ph": "M",
                "name": "process_sort_index",
                "pid": pid,
                "tid": 0,
                "args": {"sort_index": pid},
            }
        )
        open_: dict[Any, list[dict[str, Any]]] = {}  # tid -> B events not yet ended
        for event in chromium_events(tf):
            event = dict(event, pid=pid)
            ph = event.get("ph")
            tid = event.get("tid", 0)
            if ph == "B":
                open_.setdefault(tid, []).append(event)
                continue
            if ph == "E":
                begun = _pop_begin(open_.get(tid, []), event.get("name"))
                if begun is None:
                    stats.unmatched += 1
                    put(event)
                    continue
                put(_complete(begun, event))
                stats.complete += 1
                continue
            if ph in ("i", "I"):
                stats.instants += 1
            else:
                stats.other += 1
            put(event)
        for stack in open_.values():
            for begun in stack:
                stats.unmatched += 1
                put(begun)
    out.write("\n]}\n")
    return stats


def _pop_begin(stack: list[dict[str, Any]], name: object) -> dict[str, Any] | None:
    for i in range(len(stack) - 1, -1, -1):
        if stack[i].get("name") == name:
            return stack.pop(i)
    return None


def _complete(begin: dict[str, Any], end: dict[str, Any]) -> dict[str, Any]:
    event = dict(begin, ph="X")
    ts, ts_end = begin.get("ts"), end.get("ts")
    if isinstance(ts, (int, float)) and isinstance(ts_end, (int, float)):
        event["dur"] = max(0.0, ts_end - ts)
    else:
        event["dur"] = 0
    args = end.get("args")
    if isinstance(args, dict) and args:
        merged = dict(begin.get("args") or {}) if isinstance(begin.get("args"), dict) else {}
        merged.update(args)
        event["args"] = merged
    return event
