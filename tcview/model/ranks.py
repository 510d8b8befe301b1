"""Ranks: which ranks an input has, how a set of ranks is written ("ranks 0–3, 5"), how a user
picks some ("1", "0,2", "0-3"), and which rank each fact comes from.

A fact's rank is its source's (`LogSource.rank`: the file name's ``rank_N``, else the records'
``rank`` field or ``[rankN]:`` prefix). Sources without a rank belong to no rank: a filter on
ranks leaves them out.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from typing import TypeAlias

from tcview.model.objects import (
    CacheEvent,
    Compile,
    Error,
    Failure,
    Frame,
    GraphBreak,
    Kernel,
    LogSource,
    Model,
)

# The ranks a user picked; None: every rank (and the sources without one).
RankSet: TypeAlias = frozenset[int] | None
Fact: TypeAlias = GraphBreak | Failure | Kernel | Compile | Frame | CacheEvent

_PART = re.compile(r"^(\d+)(?:-(\d+))?$")


def ranks_of(model: Model) -> list[int]:
    """The ranks of the model's sources, sorted."""
    return sorted({f.rank for f in list(model.files) if f.rank is not None})


# Parts (ranks or runs of ranks) a label shows before it leaves the rest out (``…``).
LABEL_PARTS = 8


def ranks_text(ranks: Iterable[int], limit: int | None = None) -> str:
    """``0–3, 5``: runs of three or more consecutive ranks joined by a dash; with `limit`,
    at most that many parts: ``1, 3, 5, …, 127``."""
    values = sorted(set(ranks))
    parts: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        if j - i >= 2:
            parts.append(f"{values[i]}–{values[j]}")
        else:
            parts.extend(str(v) for v in values[i : j + 1])
        i = j + 1
    if limit is not None and len(parts) > limit:
        parts = [*parts[: limit - 1], "…", parts[-1]]
    return ", ".join(parts)


def ranks_label(ranks: Collection[int]) -> str:
    """``rank 1``, ``ranks 0–3, 5``; many: ``64 ranks (1, 3, 5, 7, 9, 11, 13, …, 127)``."""
    text = ranks_text(ranks, LABEL_PARTS)
    if "…" in text:
        return f"{len(set(ranks))} ranks ({text})"
    return f"{'rank' if len(ranks) == 1 else 'ranks'} {text}"


def parse_ranks(text: str, known: Collection[int] | None = None) -> RankSet:
    """The ranks a user typed: ``1``, ``0,2``, ``0-3``, ``0 2 5-7`` (``rank``/``ranks`` may lead).
    Empty: None (every rank). ValueError says what is wrong, or which ranks `known` lacks."""
    body = text.strip().lower()
    for word in ("ranks", "rank"):
        if body.startswith(word):
            body = body[len(word) :]
            break
    body = re.sub(r"\s*[-–]\s*", "-", body)
    items = [p for p in re.split(r"[,\s]+", body) if p]
    if not items:
        return None
    out: set[int] = set()
    for item in items:
        m = _PART.match(item)
        if m is None:
            raise ValueError(f"not a rank or range of ranks: {item!r} (e.g. 1, 0,2 or 0-3)")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo:
            raise ValueError(f"range {item!r} runs backwards")
        if hi - lo > 1_000_000:
            raise ValueError(f"range {item!r} is too long")
        out.update(range(lo, hi + 1))
    if known is not None:
        missing = sorted(out - set(known))
        if missing:
            raise ValueError(
                f"no {ranks_label(missing)} in this input (it has {ranks_text(known) or 'none'})"
            )
    return frozenset(out)


def source_of(fact: Fact) -> LogSource | None:
    """The log source a fact was read from."""
    if isinstance(fact, (Compile, Frame)):
        return fact.file
    if isinstance(fact, Kernel):
        return fact.output.source
    if isinstance(fact, CacheEvent):
        return fact.record.source
    if fact.record is not None:
        return fact.record.source
    return fact.compile.file if fact.compile is not None else None


def rank_of(fact: Fact | Error) -> int | None:
    if isinstance(fact, Error):
        return fact.rank
    source = source_of(fact)
    return source.rank if source is not None else None


def wanted(ranks: RankSet, fact: Fact | Error) -> bool:
    """Whether a filter on `ranks` keeps the fact."""
    return ranks is None or rank_of(fact) in ranks


def counts_in(model: Model, ranks: RankSet) -> dict[str, int]:
    """The status bar's four counts (`Model.counts`) over the sources of `ranks`."""
    if ranks is None:
        return model.counts()
    files = [f for f in list(model.files) if f.rank in ranks]
    return {
        "compiles": sum(len(f.compiles) for f in files),
        "graph_breaks": sum(1 for gb in list(model.breaks) if wanted(ranks, gb)),
        "recompiles": sum(1 for f in files for k in f.compiles if k.is_recompile),
        "kernels": sum(len(f.kernels) for f in files),
    }
