"""`tcview summary`: the counts as JSON and a human-readable report."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from tcview.analysis.cudagraphs import cudagraph_counts, model_cudagraphs
from tcview.analysis.divergence import CHECK_TITLES, CHECKS, Divergence, analyze, describe_groups
from tcview.analysis.export import export_counts, is_export
from tcview.analysis.findings import (
    Aside,
    Finding,
    finding_lines,
    findings_json,
    findings_later,
)
from tcview.analysis.recompiles import explain, guard_families
from tcview.ingest.detect import split_profiles
from tcview.ingest.textlog import TextLog
from tcview.model.facts import short_guard
from tcview.model.objects import KERNEL_KINDS, Model, short_location
from tcview.model.ranks import rank_of, ranks_label
from tcview.report.detail import cache_entries
from tcview.report.overview import (
    Overview,
    build_overview,
    stack_row_parts,
    stacks_more,
    stacks_title,
    torch_line,
    torch_versions,
)
from tcview.report.stacks import StackNode, stack_json, stack_trie


def counts_line(counts: Mapping[str, int]) -> str:
    """The four counts in one line, as the status bar and `tcview run` show them."""
    return (
        f"compiles {counts.get('compiles', 0)} · breaks {counts.get('graph_breaks', 0)}"
        f" · recompiles {counts.get('recompiles', 0)} · kernels {counts.get('kernels', 0)}"
    )


def summary_json(
    ts: Model,
    verify: bool = False,
    divergence: Divergence | None = None,
    roots: list[StackNode] | None = None,
    found: Callable[[], list[Finding]] | None = None,
) -> dict[str, Any]:
    """The findings, the counts, and how the ranks diverge (`divergence`: an `analyze` of `ts`
    already made; `roots`: its `stack_trie`, made; `found` gives its findings, asked for
    last, when the rest is made: `findings_later`'s)."""
    div = divergence if divergence is not None else analyze(ts)
    made = found if found is not None else findings_later(ts, div)
    out = ts.summary_counts(verify=verify)
    out["findings"] = []  # its place in the document; filled last
    out["kernels_by_kind"] = kernels_by_kind(ts)
    out["cudagraphs"] = cudagraph_counts(ts)
    # Each recompile once, by the guard that failed against its frame's newest earlier compile.
    out["guard_families"] = guard_families(ts.compiles)
    skipped, profiles = split_profiles(ts.skipped)
    out["skipped"] = [{"path": str(p), "reason": why} for p, why in skipped]
    out["profiles_found"] = [str(p) for p in profiles]  # --profile joins one
    unknown = ts.unknown_kinds()
    out["unknown_kinds"] = dict(sorted(unknown.items()))
    # Newer torch (2.12+): the torch that wrote the files, what caching precompile saved.
    out["torch_versions"] = torch_versions(ts)
    out["dynamo_cache_entries"] = [
        {
            "function": e.fn_name,
            "first_line": e.fn_first_lineno,
            "code_objects": e.num_codes,
            "backends": len(e.backends),
            "device": e.device_type,
            "key": e.key,
        }
        for tf in ts.files
        for e in cache_entries(tf)
    ]
    out["damage"] = damage(ts, out)
    out["export"] = export_counts(ts)
    out["divergence"] = div.json()
    out["exec_order_groups"] = div.findings["exec_order"].groups
    out["rank_groups"] = div.groups
    out["first_divergence"] = div.first or None
    out["stacks"] = stack_json(roots if roots is not None else stack_trie(ts))
    out["findings"] = findings_json(made())
    return out


class SummaryParts(NamedTuple):
    """What both forms of the summary are made of, each made once."""

    divergence: Divergence
    overview: Overview
    found: list[Finding]
    counts: dict[str, Any]  # summary_json's


def summary_parts(ts: Model, verify: bool = False, aside: Aside | None = None) -> SummaryParts:
    """`aside`: makes the slowest findings elsewhere (another process) meanwhile."""
    div = analyze(ts)
    found = findings_later(ts, div, aside)  # asked for once the rest is made
    roots = stack_trie(ts)
    overview = build_overview(ts, roots=roots)
    counts = summary_json(ts, verify=verify, divergence=div, roots=roots, found=found)
    return SummaryParts(div, overview, found(), counts)


def summary_document(
    ts: Model, verify: bool = False, parts: SummaryParts | None = None
) -> dict[str, Any]:
    """`tcview summary --json`: `summary_json` and the overview the text report prints."""
    p = parts or summary_parts(ts, verify)
    return {**p.counts, "overview": p.overview.json()}


def damage(ts: Model, counts: dict[str, Any]) -> dict[str, int]:
    """What was wrong with the input; all zero for a healthy trace."""
    files = ts.files
    out = {
        "unparsed_lines": counts.get("unparsed_lines", 0),
        "bad_headers": sum(f.bad_headers for f in files),
        "truncated_records": sum(f.truncated for f in files),
        "missing_strings": sum(f.missing_strings for f in files),
        "unreadable_files": sum(1 for _p, why in ts.skipped if why.startswith("unreadable")),
        "handler_errors": len(ts.handler_errors()),
    }
    if "md5_mismatches" in counts:
        out["md5_mismatches"] = counts["md5_mismatches"]
        # Payloads whose whitespace-only lines were stripped (harmless: read restored).
        out["whitespace_stripped_records"] = sum(f.blank_line_records for f in files)
    return out


def kernels_by_kind(ts: Model) -> dict[str, int]:
    counts = Counter(k.kind for k in ts.kernels)
    return {kind: counts[kind] for kind in KERNEL_KINDS if counts[kind]}


def crash_lines(ts: Model, overview: Overview | None = None) -> list[str]:
    """ "The run crashed" and its first errors (rank, type, message, where), or nothing."""
    o = overview if overview is not None else build_overview(ts)
    if not o.errors_total:
        return []
    lines = [f"The run crashed: {o.errors_total} error(s)"]
    for error in o.errors:
        lines.append(f"  {error.headline}")
        if error.at:
            lines.append(f"    at {error.at}")
    if o.errors_total > len(o.errors):
        lines.append(f"  … {o.errors_total - len(o.errors)} more")
    return lines


def stack_tree_lines(overview: Overview) -> list[str]:
    """The overview's stack tree under its heading, after a blank line (or nothing)."""
    if not overview.stacks:
        return []
    title = stacks_title(overview)
    lines = ["", title[:1].upper() + title[1:]]
    for row in overview.stacks:
        lines.append("".join(text for text, _style in stack_row_parts(row, overview.many_ranks)))
    more = stacks_more(overview)
    return [*lines, f"  {more}"] if more else lines


def _fmt_s(value: float | None) -> str:
    if value is None:
        return "   -  "
    return f"{value:6.2f}s" if value >= 0.01 else f"{value * 1000:5.1f}ms"


def _folded(lines: list[tuple[int | None, str]], multi: bool) -> list[str]:
    """Report lines, each with the ranks that print it in front when there are several ranks
    (ranks that print the same line share it: ``ranks 0–3: …``)."""
    if not multi:
        return [f"  {text}" for _rank, text in lines]
    by: dict[str, list[int | None]] = {}
    for rank, text in lines:
        by.setdefault(text, []).append(rank)
    out = []
    for text, ranks in by.items():
        known = [r for r in ranks if r is not None]
        who = ranks_label(known) if known else "no rank"
        if known and len(known) < len(ranks):
            who += " and no rank"
        out.append(f"  {who}: {text}")
    return out


def divergence_lines(div: Divergence) -> list[str]:
    """The Ranks section: the groups of ranks that behave alike, the first divergence, and
    each check's groups."""
    ranks = len(div.ranks)
    head = f"Ranks ({ranks})"
    if div.diverges:
        head += (
            f": {len(div.groups)} groups that compiled differently: {describe_groups(div.groups)}"
        )
    else:
        head += ": all compiled alike"
    lines = [head]
    if div.first:
        lines.append(f"  first divergence: {div.first}")
    width = max(len(t) for t in CHECK_TITLES.values())
    for check in CHECKS:
        finding = div.findings[check]
        if not finding.recorded:
            what = "not in this trace"
        elif finding.diverges:
            what = describe_groups(finding.groups)
        else:
            what = "same on every rank"
        lines.append(f"  {finding.title:<{width}}  {what}")
    if div.unranked:
        lines.append(f"  ({div.unranked} file(s) without a rank not compared)")
    return lines


def summary_text(
    ts: Model, verify: bool = False, width: int = 100, parts: SummaryParts | None = None
) -> str:
    div, overview, ranked, s = parts or summary_parts(ts, verify)
    multi = overview.many_ranks
    lines: list[str] = finding_lines(ranked)
    crashed = crash_lines(ts, overview)
    if lines and crashed:
        lines.append("")
    lines.extend(crashed)
    add = lines.append
    add("")
    add(
        f"files {s['files']} · records {s['records']} · compiles {s['compiles']} · "
        f"frames {s['frames']} · breaks {s['graph_breaks']} · recompiles {s['recompiles']} · "
        f"empty graphs {s['empty_graphs']} · failures {s['failures']} · errors {s['errors']} · "
        f"kernels {s['kernels']}"
    )
    cache = s["fx_graph_cache"]
    add(
        f"output codes {s['output_codes']} · fx graph cache hit {cache['hit']} / "
        f"miss {cache['miss']} / bypass {cache['bypass']} · unparsed lines {s['unparsed_lines']}"
        + (f" · md5 mismatches {s['md5_mismatches']}" if "md5_mismatches" in s else "")
    )
    torch = torch_line(ts)
    if torch:
        add(f"{torch} (the trace's torch_version)")
    if is_export(ts):
        e = s["export"]
        add(
            f"torch.export trace: guards {e['guards']} · data-dependent errors "
            f"{e['data_dependent_errors']} · fake-kernel problems {e['fake_kernel_problems']}"
            " (tcview show PATH export prints the report)"
        )
    lines.extend(stack_tree_lines(overview))
    add("")
    add("Runs")
    for run in ts.runs:
        add(f"  {run.label}  ({run.directory})")
        for rank in run.ranks:
            for tf in rank.files:
                add(
                    f"    {rank.label:8} {tf.display}  compiles {len(tf.compiles)}"
                    f" · records {sum(tf.kinds.values())}"
                )
    if multi:
        add("")
        lines.extend(divergence_lines(div))
    frames = [f for tf in ts.files for f in tf.frames.values()]
    if frames:
        add("")
        add("Frames")
        frame_lines = []
        for frame in frames[:200]:
            ids = "; ".join(f"{c.id_label} {c.status_text}" for c in frame.compiles[:8])
            more = f" +{len(frame.compiles) - 8}" if len(frame.compiles) > 8 else ""
            text = (
                f"[{frame.id_label}] {frame.label}: {len(frame.compiles)} compile(s): {ids}{more}"
            )
            frame_lines.append((rank_of(frame), text))
        lines.extend(_folded(frame_lines, multi))
        if len(frames) > 200:
            add(f"  … {len(frames) - 200} more frames")
    groups = ts.grouped_breaks()
    if groups:
        add("")
        add(f"Graph breaks ({s['graph_breaks']}, {len(groups)} distinct)")
        for g in groups:
            who = ""
            if multi:
                known = {r for r in map(rank_of, g.breaks) if r is not None}
                who = f"  ({ranks_label(known)})" if known else "  (no rank)"
            add(f"  {g.count:4}×  {short_location(g.location) or '?'}  {g.reason}{who}")
            if g.first.hints:
                add(f"         hint: {g.first.hints[0]}")
    recompiles = ts.recompiles
    if recompiles:
        add("")
        add(f"Recompiles ({len(recompiles)})")
        recompile_lines = []
        shown = recompiles[:200]
        explained = {id(e.compile): e for e in explain([rc.compile for rc in shown])}
        for rc in shown:
            where = rc.compile.frame.label if rc.compile.frame else "?"
            e = explained.get(id(rc.compile))
            if e is not None and e.failure is not None and e.family != "other":
                why = f"{e.family}: {e.words}"
            else:
                why = "; ".join(short_guard(r) for r in rc.reasons[:3]) or "(reason not logged)"
            recompile_lines.append((rank_of(rc.compile), f"[{rc.compile.id_label}] {where}: {why}"))
        lines.extend(_folded(recompile_lines, multi))
    entries = s.get("dynamo_cache_entries") or []
    if entries:
        add("")
        add(f"Dynamo cache entries ({len(entries)}, saved by caching precompile)")
        for e in entries:
            add(
                f"  {e['function']}:{e['first_line']}  {e['code_objects']} code object(s)"
                f" · {e['backends']} backend(s) · {e['device']}"
            )
    if ts.failures:
        add("")
        add(f"Failures ({len(ts.failures)})")
        failure_lines = []
        for f in ts.failures[:100]:
            cid = f.compile.id_label if f.compile else "-"
            first = f.reason.strip().split("\n", 1)[0]
            limit = "  [recompile limit: fell back to eager]" if f.is_recompile_limit else ""
            failure_lines.append((rank_of(f), f"[{cid}] {f.fail_type}: {first}{limit}"))
        lines.extend(_folded(failure_lines, multi))
    if s["kernels"]:
        add("")
        kinds = " · ".join(f"{k} {n}" for k, n in s["kernels_by_kind"].items())
        add(f"Kernels ({s['kernels']}): {kinds}")
    graphs = s["cudagraphs"]
    if graphs["used"] or graphs["skipped"]:
        add("")
        add(f"CUDA graphs: used by {graphs['used']} compile(s), skipped by {graphs['skipped']}")
        for comp in ts.compiles:
            found = model_cudagraphs(ts, comp)
            if found is not None and found.state != "used":
                add(f"  [{comp.id_label}] {found.text}")
    if overview.slowest:
        add("")
        add("Slowest compiles" + (f" ({overview.time_note})" if overview.time_note else ""))
        for row in overview.slowest:
            who = ""
            if multi:
                who = "no rank  " if row.rank is None else f"rank {row.rank}  "
            add(f"  {_fmt_s(row.seconds)}  {who}[{row.compile}] {row.frame}  ({row.status})")
    hurt = {k: v for k, v in s["damage"].items() if v}
    if hurt:
        add("")
        add("Damage: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in hurt.items()))
        for error in ts.handler_errors()[:20]:
            add(f"  {error.text()}")
    if s["unknown_kinds"]:
        add("")
        add("Unknown event kinds: " + ", ".join(f"{k} ×{n}" for k, n in s["unknown_kinds"].items()))
    if overview.profiles:
        add("")
        add(f"Profiles here, not joined ({len(overview.profiles)}): --profile PATH joins one")
        for path in overview.profiles:
            add(f"  {path}")
    if overview.skipped_total:
        add("")
        add(f"Skipped files ({overview.skipped_total})")
        for path, why in overview.skipped:
            add(f"  {path}: {why}")
        if overview.skipped_total > len(overview.skipped):
            add(f"  … {overview.skipped_total - len(overview.skipped)} more (--json lists all)")
    return "\n".join(lines)


class InputState(NamedTuple):
    """An input that holds nothing yet: what to say in the overview, in the status bar (which
    shows the path anyway), and why."""

    text: str
    brief: str
    help: str = ""


def input_state(model: Model | None, source: str, live: bool, finished: bool) -> InputState | None:
    """What to say while the input holds nothing: waiting for it (live), or that there is
    nothing; None once it holds something, or while a one-shot read is still going."""
    if model is None or not (live or finished):
        return None
    if isinstance(model, TextLog):
        if model.pos:
            return None
        if model.path is None:  # stdin, or a pipe read like it
            if model.finished:
                return InputState("stdin ended without input", "no input")
            return InputState(
                "waiting for input on stdin…",
                "waiting for input…",
                "TORCH_LOGS text is indexed as it comes through the pipe.",
            )
        if live:
            return InputState(f"waiting for input in {source}…", "waiting for input…")
        return InputState(f"{source} is empty", "empty")
    if model.files:
        return None
    if live:
        return InputState(
            f"waiting for traces in {source}…",
            "waiting for traces…",
            "Trace files (dedicated_log_torch_trace_*.log) are shown as they appear.",
        )
    return InputState(
        f"no trace found in {source}",
        "no trace found",
        "tcview reads the dedicated_log_torch_trace_*.log files that TORCH_TRACE=DIR writes,"
        " and TORCH_LOGS captures (e.g. torch_logs.txt).",
    )
