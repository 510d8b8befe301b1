"""`tcview export --markdown`: a report to paste into a GitHub issue.

GitHub-flavoured Markdown whose numbers are those of `summary --json`. Trace text cannot break
the layout: in prose and table cells, Markdown's punctuation is backslash-escaped (``|`` too)
and ``&`` written as an entity; locations and ids are code spans fenced with more backticks
than they hold; stacks and messages go in fenced code blocks whose fence is longer than any
run of backticks inside; what tcview's own words quote in backticks is a code span too.
Control characters are made visible (tcview.text.safe). Compile ids say their rank where the
input has several ranks, and the report names the torch version the trace or run.json names.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from pathlib import Path

from tcview.analysis.guard_values import family_of
from tcview.analysis.provenance import torch_version
from tcview.analysis.recompiles import diagnose
from tcview.ingest.source import RUN_JSON
from tcview.model.facts import short_guard
from tcview.model.objects import Compile, Frame, Model, Recompile
from tcview.model.ranks import ranks_of
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
    return _escaped(" ".join(safe_text(str(text)).split()))


_SPAN = re.compile(r"`([^`\n]+)`")


def md_prose(text: object, cell: bool = True) -> str:
    """tcview's own words as inline Markdown: like `md_text`, but what they quote in backticks
    (a name, a guard) is a code span, as GitHub shows it, not backticks escaped."""
    one_line = " ".join(safe_text(str(text)).split())
    out, at = [], 0
    for m in _SPAN.finditer(one_line):
        out += [_escaped(one_line[at : m.start()]), md_code(m.group(1), cell)]
        at = m.end()
    return "".join([*out, _escaped(one_line[at:])])


def _escaped(text: str) -> str:
    return _SPECIAL.sub(r"\\\1", text.replace("&", "&amp;"))


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
        out.append(f"- **{f['severity']}**: {md_prose(f['title'], cell=False)}{at}")
        if f.get("fix"):
            out.append(f"  fix: {md_prose(f['fix'], cell=False)}")
    if len(found) > ROWS:
        out.append(f"- … {len(found) - ROWS} more")
    return [*out, ""]


def trace_torch(model: Model) -> str | None:
    """The torch version the trace names: its ``torch_version`` artifact (torch 2.12+), else
    a compile's metrics (torch 2.4+); None when no record says."""
    named = torch_version(model)
    if named:
        return named
    for comp in model.compiles:
        for m in comp.compilation_metrics():
            if m.pytorch_version:
                return m.pytorch_version
    return None


def run_json_torch(path: str | None) -> str | None:
    """The torch version a run directory's run.json (`tcview run`) names, else None."""
    if path is None:
        return None
    try:
        data = json.loads((Path(path) / RUN_JSON).read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    version = data.get("torch") if isinstance(data, dict) else None
    return version if isinstance(version, str) and version else None


def markdown_report(
    model: Model, why: Diagnose = recompile_diagnosis, path: str | None = None
) -> str:
    """The report of `model`; `path`: its input, whose run.json may name the torch version
    when the trace does not."""
    s = summary_json(model)
    out: list[str] = [f"## torch.compile report: {md_code(model.display, cell=False)}", ""]
    torch = trace_torch(model)
    where = "the trace"
    if torch is None:
        torch, where = run_json_torch(path), RUN_JSON
    if torch is not None:
        out += [f"torch {md_code(torch, cell=False)} (from {where})", ""]
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


def compile_label(comp: Compile, many_ranks: bool) -> str:
    """A compile's id, after its rank where the input has several (each rank has a 0/0)."""
    rank = comp.file.rank if many_ranks else None
    return comp.id_label if rank is None else f"rank {rank} {comp.id_label}"


def _breaks(model: Model, total: int) -> list[str]:
    groups = model.grouped_breaks()
    if not groups:
        return []
    out = ["", f"### Graph breaks ({total}, {len(groups)} distinct)", ""]
    rows = []
    many = len(ranks_of(model)) > 1
    for g in groups[:TOP_BREAKS]:
        ids = []
        for b in g.breaks:
            label = compile_label(b.compile, many) if b.compile is not None else None
            if label is not None and label not in ids:
                ids.append(label)
        shown = ", ".join(ids[:6]) + (f" +{len(ids) - 6}" if len(ids) > 6 else "")
        rows.append([str(g.count), md_prose(g.reason), md_code(g.location or "?"), md_code(shown)])
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
            out.append(f"- hint: {md_prose(hint, cell=False)}")
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
    many = len(ranks_of(model)) > 1
    for rc in recompiles[:ROWS]:
        frame = rc.compile.frame.label if rc.compile.frame is not None else ""
        label = compile_label(rc.compile, many)
        rows.append([md_code(label), md_text(frame), md_prose(why(rc))])
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
            out.append(f"- {md_text(of.label)}: {md_prose(sentences, cell=False)}")
    return out


def _failures(model: Model) -> list[str]:
    failures = model.failures
    if not failures:
        return []
    out = ["", f"### Failures ({len(failures)})", ""]
    many = len(ranks_of(model)) > 1
    for f in failures[:ROWS]:
        cid = compile_label(f.compile, many) if f.compile is not None else "-"
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
    overview = build_overview(model)
    slowest = overview.slowest
    if not slowest:
        return []
    note = overview.time_note
    out = ["", "### Slowest compiles" + (f" ({note})" if note else ""), ""]
    rows = [
        [_seconds(row.seconds), md_code(row.compile), md_text(row.frame), row.status]
        for row in slowest
    ]
    header, align = ["time", "compile", "frame", "status"], ["---:", "---", "---", "---"]
    if overview.many_ranks:  # each rank has its own 0/0
        header, align = [header[0], "rank", *header[1:]], [align[0], "---:", *align[1:]]
        rows = [
            [r[0], "-" if row.rank is None else str(row.rank), *r[1:]]
            for r, row in zip(rows, slowest, strict=True)
        ]
    out += _table(header, align, rows)
    return out


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.split("\n") if ln.strip()), "")
