"""What the status bar and the overview show, made from one version of the model by a worker.

The browser asks (`Asked`: the version and what the user has picked); a worker `count`s,
caching what depends on the version alone with it (model/derived.py); the browser shows the
result (`Counted`) when it comes. The UI thread never walks the model's compiles.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tcview.analysis.export import is_export
from tcview.analysis.findings import Finding
from tcview.analysis.profile import RuntimeJoin
from tcview.analysis.recompiles import recompile_budget
from tcview.model.derived import derived
from tcview.model.objects import Model
from tcview.model.ranks import RankSet, counts_in, ranks_of
from tcview.report.summary import InputState, input_state
from tcview.ui.content import Document
from tcview.ui.docs import overview_doc
from tcview.ui.hints import KeyNames


@dataclass(frozen=True)
class Asked:
    """What the counts are made from: a version, and the state of the screen asking."""

    model: Model | None
    overview: bool  # the overview is shown: make its document too
    ranks: RankSet  # the rank filter
    finished: bool  # the first read is done
    error: str  # what the read failed with, once finished
    live: bool  # more input may come
    found: list[Finding] | None  # the findings the overview leads with
    notices: tuple[str, ...] = ()  # what the loader says about the input, as of this version
    keys: KeyNames | None = None  # the screen's keys, which the overview's hints name


@dataclass(frozen=True)
class Counted:
    summary: dict[str, Any]
    counts: dict[str, int] | None  # over the rank filter's ranks
    ranks: int
    export: bool
    budget: str  # the recompile budget's words (follow mode), or ""
    state: InputState | None
    overview: Document | None
    notices: tuple[str, ...] = ()  # shown with the rest: the status never mixes two versions


def count(
    asked: Asked,
    source: str,
    follow: bool,
    measured: Callable[[Model], RuntimeJoin | None] | None = None,
) -> Counted:
    """The counts of `asked.model` (call it in a worker); `measured`: the profile joined to a
    version (`ModelSession.measured`), which the overview then leads with."""
    model = asked.model
    if model is None:
        state = input_state(None, source, asked.live, asked.finished)
        empty = overview_doc(
            None, source, {}, state, asked.error, asked.ranks, asked.found, asked.keys
        )
        return Counted(
            {}, None, 0, False, "", state, empty if asked.overview else None, asked.notices
        )
    summary: dict[str, Any] = derived(model, "summary", model.summary_counts)
    picked = asked.ranks
    counts = derived(model, ("counts", picked), lambda: counts_in(model, picked))
    state = input_state(model, source, asked.live, asked.finished)
    budget = derived(model, "budget", lambda: recompile_budget(model)) if follow else None
    doc: Document | None = None
    if asked.overview:
        join = measured(model) if measured is not None else None
        doc = overview_doc(
            model, source, summary, state, asked.error, picked, asked.found, asked.keys, join
        )
    return Counted(
        summary,
        counts if picked is not None else None,
        derived(model, "ranks", lambda: len(ranks_of(model))),
        derived(model, "export", lambda: is_export(model)),
        budget.text() if budget is not None else "",
        state,
        doc,
        asked.notices,
    )


__all__ = ["Asked", "Counted", "count"]
