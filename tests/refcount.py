"""An independent, deliberately naive reference counter for `summary --json` keys.

It reads whole files line by line with none of the engine's code, so the tests compare two
implementations of the definitions in docs/reference/summary-json.md.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

PREFIX = re.compile(r"^(\[rank(\d+)\]:)?[A-Z]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [^\]]*?:\d+\] ")
CTX = {
    "frame_id",
    "frame_compile_id",
    "attempt",
    "compiled_autograd_id",
    "rank",
    "has_payload",
    "stack",
    "subgraph_name",
}
KERNEL = re.compile(r"^([A-Za-z_]\w*) = async_compile\.(\w+)\(")


def count_file(path: Path) -> dict:
    text = path.read_bytes().decode("utf-8", "replace")
    c: dict = dict(
        records=0,
        unparsed_lines=0,
        graph_breaks=0,
        failures=0,
        output_codes=0,
        kernels=0,
        hit=0,
        miss=0,
        bypass=0,
    )
    compiles, frames, ranks = set(), set(), set()
    failed, empty = set(), set()  # compiles with a fail_type / graph_op_count 0, null, absent
    m = re.search(r"rank_(\d+)", path.name)
    if m:
        ranks.add(int(m.group(1)))
    in_output = False
    episode = 1  # a dynamo_start (attempt 0 or none) of an id started in this episode: +1
    started: set = set()
    for line in text.split("\n"):
        if line.startswith("\t"):
            if in_output:
                km = KERNEL.match(line[1:])
                if km and km.group(2) != "wait":
                    c["kernels"] += 1
            continue
        if not line.strip():
            continue
        pm = PREFIX.match(line)
        obj = None
        if pm:
            try:
                obj = json.loads(line[pm.end() :])
            except (ValueError, RecursionError):
                obj = None
                pm = None
        if pm is None:
            c["unparsed_lines"] += 1
            in_output = False
            continue
        c["records"] += 1
        if pm.group(2):
            ranks.add(int(pm.group(2)))
        in_output = False
        if not isinstance(obj, dict):
            continue
        kind = next((k for k in obj if k not in CTX), None)
        if isinstance(obj.get("rank"), int):
            ranks.add(obj["rank"])
        if "frame_id" in obj or "compiled_autograd_id" in obj:
            ca, fid, fc = (
                obj.get("compiled_autograd_id"),
                obj.get("frame_id"),
                obj.get("frame_compile_id"),
            )
            ident = (repr(ca), repr(fid), repr(fc))
            if kind == "dynamo_start" and obj.get("attempt", 0) in (0, None):
                if ident in started:
                    episode += 1
                    started = set()
                started.add(ident)
            compiles.add((episode, *ident, isinstance(fc, int) and fc > 0))
            if kind == "compilation_metrics" and isinstance(obj[kind], dict):
                metrics = obj[kind]
                if metrics.get("fail_type"):
                    failed.add((episode, *ident))
                if metrics.get("graph_op_count") is None or metrics.get("graph_op_count") == 0:
                    empty.add((episode, *ident))
            if fid is not None:
                frames.add((episode, repr(ca), repr(fid)))
        meta = obj.get(kind) if kind else None
        if kind == "inductor_output_code":
            c["output_codes"] += 1
            in_output = True
        elif kind == "compilation_metrics" and isinstance(meta, dict) and meta.get("fail_type"):
            c["failures"] += 1
        elif kind == "artifact" and isinstance(meta, dict):
            name = meta.get("name")
            if name == "dynamo_graph_break_reason":
                c["graph_breaks"] += 1
            for r in ("hit", "miss", "bypass"):
                if name == f"fx_graph_cache_{r}":
                    c[r] += 1
    c["compiles"] = len(compiles)
    c["empty_graphs"] = len(empty - failed)
    c["frames"] = len(frames)
    c["recompiles"] = sum(1 for k in compiles if k[-1])
    c["ranks"] = ranks
    return c


def count(paths: list[Path]) -> dict:
    total: dict = {"files": len(paths)}
    ranks: set = set()
    for p in paths:
        for k, v in count_file(p).items():
            if k == "ranks":
                ranks |= v
            else:
                total[k] = total.get(k, 0) + v
    total["ranks"] = sorted(ranks)
    total["fx_graph_cache"] = {r: total.pop(r, 0) for r in ("hit", "miss", "bypass")}
    return total
