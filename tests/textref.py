"""An independent, deliberately naive counter for TORCH_LOGS text, written from the
definition of each count in docs/reference/summary-json.md (recompiles included).

It shares no code with tcview.trace: one regex per line over the whole decoded text.
"""

from __future__ import annotations

import re

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
LINE = re.compile(
    r"^(?:\[rank(\d+)\]:)?[A-Z]\d{4} \d\d:\d\d:\d\d\.\d+ +(\d+) [^\]]*?:\d+\]"
    r"(?: \[(!?[\d/_]+)\])?(?: \[__(\w+)\])? ?(.*)$"
)
KERNEL = re.compile(r"^([A-Za-z_]\w*) = async_compile\.(\w+)\(")
# In a compile id without its attempt, the last "a/b" is frame_id/frame_compile_id.
FRAME_COMPILE_ID = re.compile(r"(\d+)/(\d+)$")
START = "Step 1: torchdynamo start tracing"
BREAKS = (
    "Graph break in user code at",
    "Graph break (user stack suppressed due to duplicate graph break) in user code at",
)


def count_text(data: bytes) -> dict[str, int]:
    """compiles, graph_breaks, recompiles and kernels as docs/reference/summary-json.md defines them.

    A compile is a distinct (rank, pid, episode, compile id without `_N`); a recompile is such a
    compile whose frame_compile_id is above 0, whatever messages mention it. A process's episode
    goes up by one at a "Step 1: torchdynamo start tracing" line whose id (without `_N`) already
    started in its current episode (ids are reused after torch._dynamo.reset()).
    """
    compiles: set[tuple] = set()
    episodes: dict[tuple, int] = {}
    started: dict[tuple, set] = {}
    breaks = kernels = 0
    for line in data.decode("utf-8", "replace").split("\n"):
        m = LINE.match(ANSI.sub("", line).rstrip("\r"))
        if m is None:
            continue
        rank, pid, cid, tag, text = m.groups()
        if cid:
            proc = (rank, pid)
            if tag is None and text.startswith(START) and not re.search(r"_\d+$", cid):
                if cid in started.setdefault(proc, set()):
                    episodes[proc] = episodes.get(proc, 1) + 1
                    started[proc] = set()
                started[proc].add(cid)
            compiles.add((rank, pid, episodes.get(proc, 1), re.sub(r"_\d+$", "", cid)))
        if tag == "graph_breaks" and text.startswith(BREAKS):
            breaks += 1
        elif tag == "output_code":
            km = KERNEL.match(text)
            if km and km.group(2) != "wait":
                kernels += 1
    recompiles = 0
    for _rank, _pid, _episode, cid in compiles:
        m = FRAME_COMPILE_ID.search(cid)
        if m is not None and int(m.group(2)) > 0:
            recompiles += 1
    return {
        "compiles": len(compiles),
        "graph_breaks": breaks,
        "recompiles": recompiles,
        "kernels": kernels,
    }


OTHER_PREFIX = re.compile(r"^(?:\[(?!rank\d)[A-Za-z_][\w-]*\]:)?(?:\[rank(\d+)\]: ?)?")
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(?::.*)?$")
CHAIN = (
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
)


def count_errors(data: bytes) -> int:
    """`errors` of a capture as docs/reference/summary-json.md defines them: tracebacks in the other
    output, read to their exception line (chained ones are one), less those after which the
    same rank (no rank: an unranked process) logs a message with a compile id."""
    open_: dict = {}  # rank -> "stack" | "message" | "chain"
    pending: dict = {}  # rank -> errors not yet known to be caught
    for line in data.decode("utf-8", "replace").split("\n"):
        line = ANSI.sub("", line).rstrip("\r")
        m = LINE.match(line)
        if m is not None:
            rank, cid = m.group(1), m.group(3)
            open_.pop(rank, None)
            if cid:
                pending.pop(rank, None)
            continue
        pm = OTHER_PREFIX.match(line)
        assert pm is not None  # every part of it is optional
        rank, text = pm.group(1), line[pm.end() :]
        state = open_.get(rank)
        if text.startswith("Traceback (most recent call last):"):
            open_[rank] = "chain-stack" if state == "chain" else "stack"
        elif state in ("stack", "chain-stack"):
            if text.strip() and not text[0].isspace() and EXCEPTION_LINE.match(text.rstrip()):
                if state == "stack":
                    pending[rank] = pending.get(rank, 0) + 1
                open_[rank] = "message"
        elif state in ("message", "chain") and text.strip() in CHAIN:
            open_[rank] = "chain"
    return sum(pending.values())
