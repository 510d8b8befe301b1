"""`tcview export --markdown`: a report to paste into a GitHub issue.

GitHub-flavoured Markdown whose numbers are those of `summary --json`. Trace text cannot break
the layout: in prose and table cells, Markdown's punctuation is backslash-escaped (``|`` too)
and ``&`` written as an entity; locations and ids are code spans fenced with more backticks
than they hold; stacks and messages go in fenced code blocks whose fence is longer than any
run of backticks inside. Control characters are made visible (tcview.text.safe).
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable

from tcview.analysis.guard_values import family_of
from tcview.analysis.recompiles import diagnose
from tcview.model.facts import short_guard
from tcview.model.objects import Frame, Model, Recompile
from tcview.report.overview import build_overview
from tcview.report.summary import summary_json
from tcview.text.safe import safe_text

TOP_BREAKS = 20
ROWS = 50  # recompiles, failures, errors listed
STACK_LINES = 40

# Punctuation that could start markup in running text (emphasis, links, HTML, code, tables,
# strikethrough, math, mentions and issue references): escaped with a backslash.
_SPECIAL = re.compile(r"([\\`*_\[\]<>|~$@#])")


def md_text(text: object) -> str:
    """Trace text as inline Markdown: one line, punctuation escaped, nothing interpreted."""
    one_line = " ".join(safe_text(str(text)).split())
    return _SPECIAL.sub(r"\\\1", one_line.replace("&", "&amp;"))


def md_code(text: object, cell: bool = True) -> str:
    """Trace text as an inline code span. In a table `cell`, its pipes are escaped (GFM splits
    cells before it reads code spans); elsewhere a backslash would show."""
    body = " ".join(safe_text(str(text)).split())
    if cell:
        body = body.replace("|", "\\|")
    if not body:
        return ""
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if body.startswith("`") or body.endswith("`") else ""
    return f"{fence}{pad}{body}{pad}{fence}"


def md_block(text: str, lang: str = "text") -> list[str]:
    """Trace text as a fenced code block (any backticks inside stay inside)."""
    body = safe_text(text).replace("\t", "    ")
    longest = max((len(run) for run in re.findall(r"`{3,}", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}{lang}", *body.split("\n"), fence]


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _table(header: list[str], align: list[str], rows: list[list[str]]) -> list[str]:
    return [_row(header), "|" + "|".join(align) + "|", *(_row(r) for r in rows)]


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f} s" if value >= 0.01 else f"{value * 1000:.1f} ms"


def recompile_diagnosis(rc: Recompile) -> str:
    """Why one compile was recompiled, in the recompiles table: its family and the guard that
    failed against the newest earlier compile (each frame's diagnosis, from
    tcview.analysis.recompiles, follows the table)."""
    if not rc.reasons:
        return "the trace does not say which guard failed"
    first = short_guard(rc.reasons[0]) or rc.reasons[0]
    more = f" (and {len(rc.reasons) - 1} against older compiles)" if len(rc.reasons) > 1 else ""
    return f"{family_of(rc.compile)} · guard failed: {first}{more}"


Diagnose = Callable[[Recompile], str]


def _findings(found: list[dict[str, object]]) -> list[str]:
    """The findings of `summary --json`, worst first: severity, title, where, fix."""
    if not found:
        return []
    out = [f"### Findings ({len(found)})", ""]
    for f in found[:ROWS]:
        where = f.get("where")
        at = ""
        if isinstance(where, dict):
            place = f"{where.get('file')}:{where.get('line')}"
            at = "" if place in str(f["title"]) else f" at {md_code(place, cell=False)}"
        out.append(f"- **{f['severity']}**: {md_text(f['title'])}{at}")
        if f.get("fix"):
            out.append(f"  fix: {md_text(f['fix'])}")
    if len(found) > ROWS:
        out.append(f"- … {len(found) - ROWS} more")
    return [*out, ""]


def markdown_report(model: Model, why: Diagnose = recompile_diagnosis) -> str:
    s = summary_json(model)
    out: list[str] = [f"## torch.compile report: {md_code(model.display, cell=False)}", ""]
    errors = model.run_errors()
    if errors:
        out += [f"**The run crashed:** {len(errors)} error(s) (below).", ""]
    out += _findings(s["findings"])
    counts = [
        ("compiles", s["compiles"]),
        ("frames", s["frames"]),
        ("graph breaks", s["graph_breaks"]),
        ("recompiles", s["recompiles"]),
        ("empty graphs", s["empty_graphs"]),
        ("failures", s["failures"]),
        ("errors", s["errors"]),
        ("kernels", s["kernels"]),
        ("output codes", s["output_codes"]),
        ("ranks", ", ".join(map(str, s["ranks"])) or "-"),
        ("files", s["files"]),
    ]
    out += _table(["what", "count"], ["---", "---:"], [[k, str(v)] for k, v in counts])
    cache = s["fx_graph_cache"]
    out += [
        "",
        f"FX graph cache: {cache['hit']} hit, {cache['miss']} miss, {cache['bypass']} bypass."
        f" Kernels by kind: "
        + (", ".join(f"{k} {n}" for k, n in s["kernels_by_kind"].items()) or "none")
        + ".",
    ]
    hurt = {k: v for k, v in s["damage"].items() if v}
    if hurt:
        out += ["", "Damage in the input: " + ", ".join(f"{k} {v}" for k, v in hurt.items())]
    out += _breaks(model, s["graph_breaks"])
    out += _recompiles(model, why)
    out += _failures(model)
    out += _errors(model)
    out += _slowest(model)
    out += ["", "<sub>Made with `tcview export --markdown`.</sub>", ""]
    return "\n".join(out)


def _breaks(model: Model, total: int) -> list[str]:
    groups = model.grouped_breaks()
    if not groups:
        return []
    out = ["", f"### Graph breaks ({total}, {len(groups)} distinct)", ""]
    rows = []
    for g in groups[:TOP_BREAKS]:
        ids = []
        for b in g.breaks:
            if b.compile is not None and b.compile.id_label not in ids:
                ids.append(b.compile.id_label)
        shown = ", ".join(ids[:6]) + (f" +{len(ids) - 6}" if len(ids) > 6 else "")
        rows.append([str(g.count), md_text(g.reason), md_code(g.location or "?"), md_code(shown)])
    out += _table(["count", "reason", "location", "compiles"], ["---:", "---", "---", "---"], rows)
    if len(groups) > TOP_BREAKS:
        out += ["", f"… and {len(groups) - TOP_BREAKS} more distinct breaks."]
    for g in groups[:3]:
        first = g.first
        if not first.user_stack and not first.hints:
            continue
        summary = html.escape(" ".join(safe_text(g.reason).split()))  # HTML: no Markdown here
        out += ["", f"<details><summary>{summary}</summary>", ""]
        for hint in first.hints[:3]:
            out.append(f"- hint: {md_text(hint)}")
        if first.user_stack:
            out += ["", *md_block("\n".join(first.user_stack[-STACK_LINES:]))]
        out += ["", "</details>"]
    return out


def _recompiles(model: Model, why: Diagnose) -> list[str]:
    recompiles = model.recompiles
    if not recompiles:
        return []
    out = ["", f"### Recompiles ({len(recompiles)})", ""]
    rows = []
    for rc in recompiles[:ROWS]:
        frame = rc.compile.frame.label if rc.compile.frame is not None else ""
        rows.append([md_code(rc.compile.id_label), md_text(frame), md_text(why(rc))])
    out += _table(["compile", "frame", "why"], ["---", "---", "---"], rows)
    if len(recompiles) > ROWS:
        out += ["", f"… and {len(recompiles) - ROWS} more."]
    frames: list[Frame] = []
    for rc in recompiles:
        of = rc.compile.frame
        if of is not None and of not in frames:
            frames.append(of)
    if frames:
        out += ["", "Why each frame recompiled (the diagnosis tcview shows):", ""]
        for of in frames[:ROWS]:
            sentences = " ".join(diagnose(of).sentences) or "no guard failure was logged"
            out.append(f"- {md_text(of.label)}: {md_text(sentences)}")
    return out


def _failures(model: Model) -> list[str]:
    failures = model.failures
    if not failures:
        return []
    out = ["", f"### Failures ({len(failures)})", ""]
    for f in failures[:ROWS]:
        cid = f.compile.id_label if f.compile is not None else "-"
        out.append(
            f"- {md_code(cid, cell=False)} **{md_text(f.fail_type)}**: {md_text(_first_line(f.reason))}"
        )
        if f.location:
            out.append(f"  at {md_code(f.location, cell=False)}")
    if len(failures) > ROWS:
        out += ["", f"… and {len(failures) - ROWS} more."]
    return out


def _errors(model: Model) -> list[str]:
    errors = model.run_errors()
    if not errors:
        return []
    out = ["", f"### Errors: the run crashed ({len(errors)})", ""]
    for e in errors[:ROWS]:
        out.append(f"- **{md_text(e.headline)}**")
        if e.stack:
            out += ["", *("  " + ln for ln in md_block("\n".join(e.stack[-STACK_LINES:]))), ""]
    return out


def _slowest(model: Model) -> list[str]:
    """The overview's slowest compiles (`tcview.report.overview`), as a table."""
    slowest = build_overview(model).slowest
    if not slowest:
        return []
    note = build_overview(model).time_note
    out = ["", "### Slowest compiles" + (f" ({note})" if note else ""), ""]
    rows = [
        [_seconds(row.seconds), md_code(row.compile), md_text(row.frame), row.status]
        for row in slowest
    ]
    out += _table(["time", "compile", "frame", "status"], ["---:", "---", "---", "---"], rows)
    return out


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.split("\n") if ln.strip()), "")
