"""Diff reports: a compile diff and a run diff as tagged lines (what the panes show and
``tcview diff`` prints). Each line is (style tag, text, marked character spans)."""

from __future__ import annotations

import os
from collections.abc import Sequence

from tcview.analysis.cache_misses import GRAPH_COMPONENT, CacheKeyChange
from tcview.analysis.compiletime import compile_seconds, time_note
from tcview.analysis.diff import (
    ADDED,
    CHANGED,
    DIFF_LIMIT,
    GONE,
    NEW,
    REMOVED,
    RENAMED,
    SAME,
    CompileDiff,
    DiffLine,
    GuardChange,
    KeyChange,
    char_marks,
    diff_counts,
)
from tcview.analysis.rundiff import CountChange, RunDiff
from tcview.model.facts import short_guard

# A line of a diff report: (style tag, text, marked character spans). Tags: "title",
# "heading", "field", "dim", "warn", "ok", "fold", and the statuses (SAME, ADDED, REMOVED,
# CHANGED, NEW, GONE, RENAMED, MOVED) for lines that are one.
Row = tuple[str, str, list[tuple[int, int]]]
LIST_LIMIT = 500  # rows of one list in a report


def secs(seconds: float | None) -> str:
    """``1.25s``, ``38ms``, ``12µs``; ``-`` for none."""
    if seconds is None:
        return "-"
    if seconds >= 1:
        return f"{seconds:.2f}s"
    return f"{seconds * 1000:.0f}ms" if seconds >= 0.001 else f"{seconds * 1e6:.0f}µs"


def pct(a: float, b: float) -> str:
    """B's change from A, ``  (+12%)`` ("" when A is 0)."""
    if a <= 0:
        return ""
    return f"  ({(b - a) / a * 100:+.0f}%)"


def _arrow(a: float, b: float) -> str:
    return f"{a:g}" if a == b else f"{a:g} → {b:g}"


def _diff_rows(lines: Sequence[DiffLine], limit: int = DIFF_LIMIT) -> list[Row]:
    tags = {" ": SAME, "-": REMOVED, "+": ADDED, "…": "fold"}
    out: list[Row] = []
    for line in lines[:limit]:
        if line.op == "…":
            out.append(("fold", f"  ⋯ {line.text}", []))
            continue
        no = line.a_no if line.op == "-" else line.b_no
        prefix = f"{line.op} {'' if no is None else no:>5} "
        marks = [(s + len(prefix), e + len(prefix)) for s, e in line.marks]
        out.append((tags[line.op], prefix + line.text, marks))
    if len(lines) > limit:
        out.append(("dim", f"  … {len(lines) - limit} more diff lines", []))
    return out


def guard_rows(changes: Sequence[GuardChange], all_guards: bool = False) -> list[Row]:
    out: list[Row] = []
    for c in changes:
        if c.status == SAME and not all_guards:
            continue
        if c.status == CHANGED and c.a is not None and c.b is not None:
            ma, mb = char_marks(c.a.text, c.b.text)
            out.append((REMOVED, f"  - {c.a.text}", [(s + 4, e + 4) for s, e in ma]))
            out.append((ADDED, f"  + {c.b.text}", [(s + 4, e + 4) for s, e in mb]))
            continue
        sign = {SAME: " ", ADDED: "+", REMOVED: "-"}[c.status]
        out.append((c.status, f"  {sign} {c.guard.text}", []))
    return out


VALUE_WIDTH = 60  # characters of a cache key component's value shown on each side


def _window(a: str, b: str) -> tuple[str, str]:
    """Two long values cut to where they start to differ (``TensorMetadata(…`` is the same
    for every tensor: what tells two apart comes later), ``…`` where cut."""
    if max(len(a), len(b)) <= VALUE_WIDTH:
        return a, b
    same = len(os.path.commonprefix([a, b]))
    start = max(0, min(same - 12, max(len(a), len(b)) - VALUE_WIDTH))

    def cut(v: str) -> str:
        part = v[start : start + VALUE_WIDTH]
        return ("…" if start else "") + part + ("…" if start + VALUE_WIDTH < len(v) else "")

    return cut(a), cut(b)


def _component_change(change: CacheKeyChange, name: str) -> str:
    """``inductor_config[fallback_random] False → True``, long values cut where they differ;
    the graph's code by the component's name alone."""
    a, b = change.texts.get(name, (None, None))
    if name == GRAPH_COMPONENT or (a is None and b is None):
        return name
    a, b = _window(a if a is not None else "(none)", b if b is not None else "(none)")
    return f"{name} {a} → {b}"


def cache_key_rows(changes: Sequence[KeyChange]) -> list[Row]:
    """One row per component: its name, then its value in A → in B, what differs marked."""
    width = min(max((len(c.name) for c in changes), default=0), 48)
    out: list[Row] = []
    for c in changes[:LIST_LIMIT]:
        head = f"  {c.name:<{width}}  "
        if c.name == GRAPH_COMPONENT:
            out.append((CHANGED, head + "the graph's code (its diff: the graphs below)", []))
            continue
        va, vb = _window(c.a if c.a is not None else "(none)", c.b if c.b is not None else "(none)")
        ma, mb = char_marks(va, vb)
        at = len(head) + len(va) + 3
        marks = [(s + len(head), e + len(head)) for s, e in ma] + [(s + at, e + at) for s, e in mb]
        out.append((CHANGED, f"{head}{va} → {vb}", marks))
    if len(changes) > LIST_LIMIT:
        out.append(("dim", f"  … {len(changes) - LIST_LIMIT} more", []))
    return out


def compile_diff_lines(d: CompileDiff, names: tuple[str, str] | None = None) -> list[Row]:
    """The compile diff as report lines: what the pane shows. `names`: what to call the two
    compiles (``A 0/1``, ``B 0/1`` for compiles of two runs); their ids by default."""
    a, b = d.a, d.b
    na, nb = names or (a.id_label, b.id_label)
    out: list[Row] = [("title", f"compile {na} → {nb}", [])]
    fa, fb = (c.frame.label if c.frame is not None else "" for c in (a, b))
    if fa != fb:  # two compiles of different functions: name both
        out.append(("field", f"frames    {fa or '?'} → {fb or '?'}", []))
    elif fb:
        out.append(("field", f"frame     {fb}", []))
    out.append(("field", f"status    {a.status_text} → {b.status_text}", []))
    ta, tb = compile_seconds(a), compile_seconds(b)
    if ta is not None or tb is not None:
        note = time_note([a, b])
        note = f"  ({note})" if note else ""
        out.append(("field", f"time      {secs(ta)} → {secs(tb)}{pct(ta or 0, tb or 0)}{note}", []))
    # The cache key first: a setting that differs (a config) is why the same graph compiled
    # again, and neither the guards nor the graphs below show it.
    if d.cache_keys is not None:
        out.append(("", "", []))
        caches = sorted({cache for c in d.cache_keys for cache in c.caches})
        if d.cache_keys:
            out.append(
                (
                    "heading",
                    f"cache key: {len(d.cache_keys)} component(s) differ ({', '.join(caches)})",
                    [],
                )
            )
            out.extend(cache_key_rows(d.cache_keys))
        else:
            out.append(("field", "cache key: the same", []))
    if d.reasons:
        out.append(("", "", []))
        out.append(("heading", f"why {nb} was compiled (the guard that failed)", []))
        out.extend(("warn", f"  • {short_guard(r)}", []) for r in d.reasons)
    out.append(("", "", []))
    counts = d.guard_counts
    if d.guards is None:
        sides = list(zip((na, nb), (a, b), d.guards_logged, strict=True))
        logged = [name for name, _, yes in sides if yes]
        why = " · ".join(f"{name}: {c.status}" for name, c, yes in sides if not yes)
        if logged:
            out.append(("heading", f"guards: only {logged[0]} logged its guards ({why})", []))
        else:
            out.append(("heading", "guards: neither compile logged its guards", []))
    else:
        out.append(
            (
                "heading",
                f"guards: {counts[CHANGED]} changed, {counts[ADDED]} added, "
                f"{counts[REMOVED]} removed, {counts[SAME]} same",
                [],
            )
        )
        # Said, so that nothing leaves the list unannounced.
        hidden = sum(1 for c in d.guards if c.renumbered)
        if hidden:
            out.append(
                (
                    "dim",
                    f"  {hidden} of the same hidden: they differ only in object ids, addresses"
                    " or renumbered globals",
                    [],
                )
            )
        deciding = [c for c in d.guards if c.decides]
        rest = [c for c in d.guards if not c.decides]
        if deciding:
            out.append(("dim", "  on the input whose guard failed:", []))
            out.extend(guard_rows(deciding))
            if any(c.status != SAME for c in rest):
                out.append(("dim", "  the others:", []))
        rows = guard_rows(rest)
        out.extend(rows if rows or deciding else [("dim", "  (the same guards)", [])])
    kc = d.kernel_counts
    out.append(("", "", []))
    out.append(
        (
            "heading",
            f"kernels: {kc[CHANGED]} changed, {kc[NEW]} new, {kc[GONE]} gone, "
            f"{kc[RENAMED]} renamed, {kc[SAME]} same",
            [],
        )
    )
    for k in d.kernels:
        if k.status == RENAMED and k.a is not None:
            out.append((RENAMED, f"  renamed  {k.a.name} → {k.name}  {k.kind}", []))
        else:
            out.append((k.status, f"  {k.status:<8} {k.name}  {k.kind}", []))
    if d.times:
        out.append(("", "", []))
        out.append(("heading", "compile time", []))
        for label, ta, tb in d.times:
            out.append(
                ("field", f"  {label:<28}{secs(ta):>9} → {secs(tb):<9}{pct(ta or 0, tb or 0)}", [])
            )
    for g in d.graphs:
        removed, added = diff_counts(g.lines)
        out.append(("", "", []))
        if not g.in_a or not g.in_b:
            where = nb if g.in_b else na
            out.append(("heading", f"{g.label}: only in {where}", []))
        else:
            out.append(("heading", f"{g.label}: {removed} line(s) removed, {added} added", []))
        out.extend(_diff_rows(g.lines))
    return out


def run_diff_lines(d: RunDiff, frames: bool = True) -> list[Row]:
    """The run diff as report lines: what ``tcview diff`` prints and its app shows below its
    list of frames (without `frames`, the report's own list of them)."""
    out: list[Row] = [("title", f"tcview diff  A: {d.a_label}  →  B: {d.b_label}", [])]
    c = d.counts()
    if not d.changed:
        out.append(("ok", "no change (compile times aside)", []))
    else:
        parts = [f"{v} {k.replace('_', ' ')}" for k, v in c.items() if v]
        # Changes without a count of their own (`RunDiff.counts` is what --fail-on reads):
        # named, so that "changed:" never stands alone.
        if d.cache_keys:
            parts.append(f"{len(d.cache_keys)} cache key(s)")
        if not parts:
            parts.append("cache results")
        out.append(("warn", "changed: " + ", ".join(parts), []))
    out.append(("", "", []))
    out.append(("heading", f"{'':<16}{'A':>10}{'B':>10}", []))
    for key, (a, b) in d.totals.items():
        if key == "compile_time_s":
            row = f"{'compile time':<16}{secs(a):>10}{secs(b):>10}{pct(a, b)}"
            if d.time_note:
                row += f"  ({d.time_note})"
        else:
            row = f"{key.replace('_', ' '):<16}{a:>10g}{b:>10g}"
        out.append(("field" if a == b else CHANGED, row, []))

    def section(title: str, rows: list[Row]) -> None:
        out.append(("", "", []))
        out.append(("heading", title, []))
        out.extend(rows[:LIST_LIMIT] or [("dim", "  (none)", [])])
        if len(rows) > LIST_LIMIT:
            out.append(("dim", f"  … {len(rows) - LIST_LIMIT} more", []))

    frame_rows: list[Row] = []
    for f in d.frames if frames else ():
        sa, sb = f.a, f.b
        text = (
            f"  {f.status:<8} {f.sig.text}  compiles {_arrow(sa.compiles, sb.compiles)}"
            f" · recompiles {_arrow(sa.recompiles, sb.recompiles)}"
            f" · breaks {_arrow(sa.breaks, sb.breaks)}"
        )
        ta, tb = (side.time_s if side.compiles else None for side in (sa, sb))  # None: no frame
        change = pct(ta, tb) if ta is not None and tb is not None else ""
        text += f" · time {secs(ta)} → {secs(tb)}{change}"
        if sa.failures or sb.failures:
            text += f" · failures {_arrow(sa.failures, sb.failures)}"
        if sa.cache_hits or sb.cache_hits:
            text += f" · cache hits {_arrow(sa.cache_hits, sb.cache_hits)}"
        frame_rows.append((f.status, text, []))
    if frames:
        section("frames (matched by function, file and first line)", frame_rows)

    def counted(items: Sequence[CountChange]) -> list[Row]:
        rows: list[Row] = []
        for item in sorted(items, key=lambda i: i.status == SAME):
            where = f"{item.where}" + (f" (was {item.a_where})" if item.a_where else "")
            rows.append(
                (
                    item.status,
                    f"  {item.status:<8} {_arrow(item.a, item.b)}×  {where}  {item.what}",
                    [],
                )
            )
        return rows

    findings_rows: list[Row] = [
        *[(NEW, f"  new      {f.severity:<8} {f.title}", []) for f in d.new_findings],
        *[(GONE, f"  gone     {f.severity:<8} {f.title}", []) for f in d.gone_findings],
    ]
    section("findings new in B or gone from it", findings_rows)
    if d.cache_keys:
        section(
            "cache misses in B of graphs A had cached (the key components that changed)",
            [
                (
                    CHANGED,
                    f"  {c.cache:<12} {c.frame} {c.a_compile} → {c.b_compile}: "
                    + ", ".join(_component_change(c, name) for name in c.changed),
                    [],
                )
                for c in d.cache_keys
            ],
        )
    section("graph breaks (by cause and location)", counted(d.breaks))
    section("recompile reasons (the guard that failed, per frame)", counted(d.recompile_reasons))
    section("failures", counted(d.failures))
    if d.errors:
        section("errors", counted(d.errors))
    kernels: list[Row] = []
    for k in d.kernels:
        if k.status == SAME:
            continue
        if k.status == RENAMED and k.a is not None:
            kernels.append((RENAMED, f"  renamed  {k.a.name} → {k.name}  {k.kind}", []))
        else:
            kernels.append((k.status, f"  {k.status:<8} {k.name}  {k.kind}", []))
    same = sum(1 for k in d.kernels if k.status == SAME)
    kernels.append(("dim", f"  {same} kernel(s) the same", []))
    section("kernels (by name and kind; changed: another source)", kernels)
    section(
        "compile time by phase (summed over compiles)",
        [
            ("field", f"  {label:<28}{secs(a):>9} → {secs(b):<9}{pct(a, b)}", [])
            for label, (a, b) in d.phases.items()
        ],
    )
    section(
        "cache",
        [
            (SAME if a == b else CHANGED, f"  {key:<24}{a:>6} → {b}", [])
            for key, (a, b) in d.cache.items()
        ],
    )
    return out
