"""Ranks: the rank filter's dialog, the Ranks view (which ranks compiled differently, and where
it began) and two ranks compared side by side. The comparing is `trace.divergence`'s."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, SelectionList, Static
from textual.widgets.selection_list import Selection

from tcview.analysis.divergence import (
    ASPECTS,
    CHECKS,
    Divergence,
    Pair,
    RankSteps,
    Step,
    align,
    analyze,
    combine,
    describe_groups,
)
from tcview.ingest.session import ModelSession
from tcview.model.compile_id import parse_compile_id
from tcview.model.objects import Compile, Model
from tcview.model.ranks import LABEL_PARTS, RankSet, parse_ranks, ranks_label, ranks_text
from tcview.report.detail import compile_detail, fmt_seconds
from tcview.run.bench import KernelTime
from tcview.ui.content import STATUS_MARK, STATUS_STYLE, Document, detail_lines, lit, styled_doc
from tcview.ui.messages import ClosePane, CompareRanks, RanksPicked
from tcview.ui.table_view import Row, TableView


@dataclass(frozen=True)
class Picked:
    """What a `RankDialog` returns: the ranks picked (None: all)."""

    ranks: RankSet


class RankDialog(ModalScreen[Picked | None]):
    """Pick ranks: type them (``1``, ``0,2``, ``0-3``) or tick them in the list; enter applies,
    an empty line means every rank, escape cancels."""

    BINDINGS = [
        Binding("enter", "apply", "Apply", priority=True, id="ranks.apply", tooltip="apply"),
        Binding("escape", "cancel", "Cancel", id="ranks.cancel", tooltip="cancel"),
    ]

    def __init__(
        self,
        title: str,
        labels: dict[int, str],
        initial: RankSet = None,
        exactly: int | None = None,
    ) -> None:
        super().__init__()
        self.title_text = title
        self.labels = labels  # rank -> what its list line says
        self.initial = initial
        self.exactly = exactly  # how many ranks must be picked (None: any number, or none)
        self._syncing = False

    def compose(self) -> ComposeResult:
        with Vertical(id="rank-dialog"):
            yield Static(Text(self.title_text, style="bold"))
            hint = "ranks: 1 · 0,2 · 0-3" + ("" if self.exactly else " · empty: all ranks")
            box = Input(
                value=ranks_text(self.initial) if self.initial else "",
                placeholder=hint,
                id="rank-input",
            )
            box.cursor_blink = False  # a steady cursor: no redraw twice a second (over SSH)
            yield box
            yield Static(id="rank-error")
            picked = self.initial or frozenset()
            yield SelectionList[int](
                *(
                    Selection(label, rank, rank in picked)
                    for rank, label in sorted(self.labels.items())
                ),
                id="rank-list",
            )
            yield Static(
                Text("enter applies · space ticks a rank in the list · esc cancels", style="dim")
            )

    def on_mount(self) -> None:
        self.query_one("#rank-input", Input).focus()

    def _parse(self) -> RankSet:
        text = self.query_one("#rank-input", Input).value
        ranks = parse_ranks(text, self.labels)
        if self.exactly is not None and len(ranks or ()) != self.exactly:
            raise ValueError(f"pick {self.exactly} ranks (e.g. 0 1)")
        return ranks

    def _error(self, message: str) -> None:
        self.query_one("#rank-error", Static).update(lit(message, "bold red"))

    @on(Input.Changed, "#rank-input")
    def _typed(self, event: Input.Changed) -> None:
        if self._syncing:
            return
        try:
            ranks = parse_ranks(event.value, self.labels)
        except ValueError as exc:
            self._error(str(exc))
            return
        self._error("")
        chosen = self.query_one("#rank-list", SelectionList)
        self._syncing = True
        try:
            chosen.deselect_all()
            for rank in ranks or ():
                chosen.select(rank)
        finally:
            self._syncing = False

    @on(SelectionList.SelectedChanged, "#rank-list")
    def _ticked(self, event: SelectionList.SelectedChanged) -> None:
        if self._syncing:
            return
        chosen: list[int] = list(event.selection_list.selected)
        self._syncing = True
        try:
            self.query_one("#rank-input", Input).value = ranks_text(chosen)
        finally:
            self._syncing = False
        self._error("")

    def action_apply(self) -> None:
        # Enter is a priority key: it can arrive before the input has handled the keys typed
        # just before it (one terminal write: `1⏎`). Applying from the input's own queue
        # comes after them.
        self.query_one("#rank-input", Input).call_later(self._apply)

    def _apply(self) -> None:
        try:
            ranks = self._parse()
        except ValueError as exc:
            self._error(str(exc))
            return
        self.dismiss(Picked(ranks))

    def action_cancel(self) -> None:
        self.dismiss(None)


def rank_labels(div: Divergence) -> dict[int, str]:
    """A dialog's list lines: each rank and what it compiled."""
    return {
        r.rank: f"rank {r.rank}  ·  {r.compiles} compiles, {r.breaks} breaks, "
        f"{r.recompiles} recompiles"
        for r in div.ranks
    }


def labels_of(model: Model) -> dict[int, str]:
    """The rank filter's list lines: each rank and its counts (from the index, no disk reads)."""
    compiles: dict[int, int] = {}
    for source in list(model.files):
        if source.rank is not None:
            compiles[source.rank] = compiles.get(source.rank, 0) + len(source.compiles)
    return {rank: f"rank {rank}  ·  {n} compiles" for rank, n in compiles.items()}


def compile_of(rank: RankSteps, step: Step) -> Compile | None:
    """The compile a step stands for, in its rank's sources."""
    parsed = parse_compile_id(step.id)
    if parsed is None:
        return None
    for source in rank.files:
        comp = source.compiles.get(parsed[0])
        if comp is not None:
            return comp
    return None


def _analysis(model: Model, ranks: RankSet) -> Divergence:
    div = analyze(model)
    if ranks is None:
        return div
    return combine([r for r in div.ranks if r.rank in ranks], div.unranked)


def step_text(step: Step | None) -> Text:
    """A compile in a list of steps: id, status, and the function."""
    if step is None:
        return Text("—", style="dim")
    text = Text.assemble(
        lit(step.id, "bold"),
        " ",
        (STATUS_MARK.get(step.status, "?"), STATUS_STYLE.get(step.status, "")),
    )
    if step.recompile:
        text.append(f" {STATUS_MARK['recompile']}", style=STATUS_STYLE["recompile"])
    if step.frame:
        text.append("  ")
        text.append_text(lit(step.frame[:40], "dim"))
    return text


def step_lines(step: Step, time: float | None) -> list[Text]:
    """What a step holds, one line each (the detail of a compile in the Ranks views)."""
    head = Text.assemble(step_text(step), "  ", (step.status, STATUS_STYLE.get(step.status, "")))
    if time is not None:
        head.append(f"  {fmt_seconds(time)}", style="dim")
    out = [head]
    for aspect, value in _aspect_rows(step):
        if value and aspect not in ("id", "status"):
            out.append(Text.assemble((f"    {_ASPECT_TITLES[aspect]:<12}", "dim"), lit(value)))
    return out


def _aspect_rows(step: Step | None) -> list[tuple[str, str]]:
    """(aspect, value as text) for each of `ASPECTS`."""
    if step is None:
        return [(a, "") for a in ASPECTS]
    values = {
        "id": step.id,
        "frame": step.frame,
        "failure": step.failure,
        "recompile": step.recompile,
        "breaks": "; ".join(step.breaks),
        "status": step.status,
        "cache": "/".join(step.cache),
        "collectives": ", ".join(
            op.rsplit(".", 2)[-2] if "." in op else op for op in step.collectives
        ),
        "tensor_meta": " ".join(d[:8] for d in step.tensor_meta),
    }
    return [(a, values[a]) for a in ASPECTS]


# ---------------------------------------------------------------- the Ranks view


# The checks as the Ranks view's "differs in" column names them.
CHECK_SHORT = {
    "compile_ids": "ids",
    "cache": "cache",
    "breaks": "breaks",
    "tensor_meta": "tensor meta",
    "collectives": "collectives",
    "exec_order": "exec order",
}


class RanksView(TableView[list[int]]):
    """Ranks that behave identically, one row per group; the first divergence in the head; the
    checks and a group's compiles below."""

    TITLE = "Ranks"
    HELP = (
        "{ranks.compare}: compare two ranks · enter: show only these ranks"
        " ({app.rank-filter}: pick any) · {view.close}: back"
    )
    COLUMNS = (
        "ranks",
        "compiles",
        "breaks",
        "recompiles",
        "failures",
        "errors",
        "compile time",
        "cache hit/miss",
        "differs in",
    )
    RANK_COLUMN = False  # its first column is the ranks
    BINDINGS = [
        Binding(
            "c",
            "compare",
            "Compare",
            id="ranks.compare",
            tooltip="compare two ranks side by side: their compiles aligned, differences marked",
        ),
    ]

    def __init__(
        self,
        session: ModelSession,
        ranks: RankSet = None,
        times: dict[Hashable, KernelTime] | None = None,
    ) -> None:
        super().__init__(session, ranks, times)
        self.analysis: Divergence | None = None

    def rows(self, model: Model) -> list[Row[list[int]]]:
        div = self.analysis = _analysis(model, self.ranks)
        ref = max(div.groups, key=len) if div.groups else []
        out: list[Row[list[int]]] = []
        for group in div.groups:
            members = [r for r in div.ranks if r.rank in group]
            first = members[0]
            times = [t for r in members if (t := r.compile_time) is not None]
            time = fmt_seconds(times[0]) if times else "—"
            if len(times) > 1 and max(times) - min(times) >= 0.005:
                time = f"{fmt_seconds(min(times))}–{fmt_seconds(max(times))}"
            cache = f"{first.cache_count('hit')}/{first.cache_count('miss')}"
            if first.cache_count("bypass"):
                cache += f" ({first.cache_count('bypass')} bypass)"
            differs = "—" if group is ref else ", ".join(_differs_in(div, group, ref))
            cells = [
                Text(ranks_text(group, LABEL_PARTS), style="bold magenta"),
                Text(str(first.compiles), justify="right"),
                Text(str(first.breaks), justify="right", style="yellow" if first.breaks else ""),
                Text(
                    str(first.recompiles), justify="right", style="cyan" if first.recompiles else ""
                ),
                Text(str(first.failures), justify="right", style="red" if first.failures else ""),
                Text(str(len(first.errors)), justify="right", style="red" if first.errors else ""),
                Text(time, justify="right"),
                Text(cache, justify="right"),
                lit(differs, "bold yellow" if group is not ref else "dim"),
            ]
            out.append((cells, group))
        return out

    def head(self) -> Text:
        head = super().head()
        div = self.analysis
        if div is None:
            return head
        head.append("\n")
        if len(div.ranks) < 2:
            head.append("fewer than two ranks: nothing to compare", style="dim")
        elif div.first:
            head.append("first divergence: ", style="bold")
            head.append_text(lit(div.first, "bold yellow"))
        else:
            head.append(f"all {len(div.ranks)} ranks compiled alike", style="bold green")
        return head

    def empty_text(self) -> str:
        return "No ranks: the input's files name no rank (rank_N, or a rank field)."

    def detail(self, group: list[int]) -> Document:
        div = self.analysis
        if div is None:
            return styled_doc("ranks", [])
        members = [r for r in div.ranks if r.rank in group]
        first = members[0]
        lines = [
            Text.assemble(
                (ranks_label(group), "bold magenta"),
                (
                    f"  {len(group)} ranks that compiled alike" if len(group) > 1 else "",
                    "dim",
                ),
            )
        ]
        if div.first:
            lines.append(Text.assemble(("first divergence  ", "dim"), lit(div.first, "yellow")))
        lines.append(Text(""))
        lines.append(Text("checks (groups of ranks)", style="bold underline"))
        for check in CHECKS:
            finding = div.findings[check]
            if not finding.recorded:
                value = Text("not in this trace", style="dim")
            elif finding.diverges:
                value = lit(describe_groups(finding.groups), "bold yellow")
            else:
                value = Text("same on every rank", style="green")
            lines.append(Text.assemble((f"  {finding.title:<36}", "dim"), value))
        for error in first.errors:
            lines.append(Text.assemble(("  error ", "dim"), lit(error, "red")))
        lines.append(Text(""))
        lines.append(Text(f"compiles of rank {first.rank}", style="bold underline"))
        for step, time in zip(first.steps, first.times, strict=True):
            lines.extend(step_lines(step, time))
        return styled_doc(ranks_label(group), lines)

    def activate(self, group: list[int]) -> None:
        self.post_message(RanksPicked(frozenset(group)))
        self.post_message(ClosePane(self))  # after it: the view goes once the filter is set

    def action_compare(self) -> None:
        div = self.analysis
        if div is None or len(div.ranks) < 2:
            self.notify("fewer than two ranks: nothing to compare", markup=False)
            return
        pair = div.pair
        if pair is None:
            pair = (div.ranks[0].rank, div.ranks[1].rank)
        self.app.push_screen(
            RankDialog(
                "Compare two ranks side by side",
                rank_labels(div),
                frozenset(pair),
                exactly=2,
            ),
            self._compare,
        )

    def _compare(self, picked: Picked | None) -> None:
        if picked is None or picked.ranks is None:
            return
        left, right = sorted(picked.ranks)
        self.post_message(CompareRanks(left, right))


def _differs_in(div: Divergence, group: Sequence[int], ref: Sequence[int]) -> list[str]:
    """The checks in which a group's ranks differ from the reference group's."""
    out = []
    for check in CHECKS:
        for g in div.findings[check].groups:
            if group[0] in g:
                if ref[0] not in g:
                    out.append(CHECK_SHORT[check])
                break
    mine = div.rank(group[0])
    theirs = div.rank(ref[0])
    if mine is not None and theirs is not None:
        if not out and mine.steps != theirs.steps:
            out.append("compiles")
        if mine.errors != theirs.errors:
            out.append("errors")
    return out


# ---------------------------------------------------------------- two ranks side by side


class CompareView(TableView[Pair]):
    """Two ranks' compile lists aligned by compile id; rows that differ are marked ≠."""

    TITLE = "Compare"
    HELP = "≠: the compiles differ · enter: go to the compile · {view.close}: back"
    RANK_COLUMN = False

    def __init__(self, session: ModelSession, left: int, right: int) -> None:
        super().__init__(session)
        self.left = left
        self.right = right
        self.sides: tuple[RankSteps, RankSteps] | None = None
        self.pairs: list[Pair] = []

    def own_columns(self) -> tuple[str, ...]:
        return ("", f"rank {self.left}", f"rank {self.right}", "differs in")

    def rows(self, model: Model) -> list[Row[Pair]]:
        div = analyze(model)
        left, right = div.rank(self.left), div.rank(self.right)
        if left is None or right is None:
            self.sides, self.pairs = None, []
            return []
        self.sides = (left, right)
        self.pairs = align(left.steps, right.steps)
        out: list[Row[Pair]] = []
        for pair in self.pairs:
            mark = Text("≠", style="bold red") if pair.differs else Text("=", style="dim")
            cells = [
                mark,
                step_text(pair.left),
                step_text(pair.right),
                lit(", ".join(_aspect_names(pair.differs)), "bold yellow"),
            ]
            out.append((cells, pair))
        return out

    def head(self) -> Text:
        head = Text.assemble(
            (f"{self.TITLE} rank {self.left} and rank {self.right}", "bold"),
            "  ",
            (self.help_text(), "dim"),
        )
        if self.sides is not None:
            left, right = self.sides
            differ = sum(1 for p in self.pairs if p.differs)
            head.append("\n")
            head.append(
                f"{left.compiles} and {right.compiles} compiles · {differ} of {len(self.pairs)}"
                " places differ",
                style="bold yellow" if differ else "bold green",
            )
        return head

    def empty_text(self) -> str:
        return f"rank {self.left} or rank {self.right} is not in this input."

    def detail(self, pair: Pair) -> Document:
        left_rows = dict(_aspect_rows(pair.left))
        right_rows = dict(_aspect_rows(pair.right))
        width = max(12, *(len(v) for v in left_rows.values()))
        width = min(width, 60)
        lines = [
            Text.assemble(
                (" " * 15, "dim"),
                (f"rank {self.left}".ljust(width + 2), "bold magenta"),
                (f"rank {self.right}", "bold magenta"),
            )
        ]
        for aspect in ASPECTS:
            differs = aspect in pair.differs
            a, b = left_rows[aspect], right_rows[aspect]
            if not (a or b):
                continue
            style = "bold yellow" if differs else ""
            lines.append(
                Text.assemble(
                    (
                        f"{'≠' if differs else ' '} {_ASPECT_TITLES[aspect]:<12}",
                        "red" if differs else "dim",
                    ),
                    lit((a[:width] or "—").ljust(width + 2), style),
                    lit(b or "—", style),
                )
            )
        comp = self._compile(pair)
        if comp is not None:
            lines.append(Text(""))
            lines.extend(detail_lines(compile_detail(comp, self.model)))
        return styled_doc("compare", lines)

    def _compile(self, pair: Pair) -> Compile | None:
        if self.sides is None:
            return None
        left, right = self.sides
        if pair.left is not None:
            return compile_of(left, pair.left)
        if pair.right is not None:
            return compile_of(right, pair.right)
        return None

    def activate(self, pair: Pair) -> None:
        comp = self._compile(pair)
        if comp is not None:
            self.reveal("compile", comp)


_ASPECT_TITLES = {
    "id": "compile",
    "frame": "function",
    "failure": "failure",
    "recompile": "recompile",
    "breaks": "breaks",
    "status": "status",
    "cache": "cache",
    "collectives": "collectives",
    "tensor_meta": "tensor meta",
}


def _aspect_names(aspects: Sequence[str]) -> list[str]:
    return [_ASPECT_TITLES[a] for a in aspects]
