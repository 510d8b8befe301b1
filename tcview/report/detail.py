"""What tcview says about one item, built once as plain data: a compile, a frame, a kernel
(with its provenance), a kernel's or compile's provenance alone, the kernels of a user line
(``FILE:LINE``), the draft-export report and its issues.

The detail pane renders a `Detail` as styled text (tcview/ui/content.py picks a style for each
tag), and ``tcview show`` prints it as plain text (`render_text`) or JSON (`Detail.to_json`):
the two say the same by construction.

A `Detail` is a title and sections. A section has a heading, rows and, for text or code, lines.
A row is (label, value, tag): the tag says what the value *is*, never how it looks:

- ``status:<status>`` (`model.STATUSES`), ``mark:<mark>`` (`model.MARKS`)
- ``break``, ``where``, ``hint``, ``guard``, ``failure``, ``diagnosis``, ``limit``, ``advice``
- ``time`` (the row's `amount` is seconds), ``kind:<kernel kind>``, ``role``, ``id``
- ``code`` (a line of the user's program), ``kernel`` (a kernel's name or mapping key)
- ``issue`` (an export issue), ``ok`` (nothing wrong), ``warn`` (a caveat), ``subheading`` (the
  title of the rows under it, within a section)
- ``cudagraphs:<state>`` (`cudagraphs.CudaGraphs.state`), ``autotune`` (an autotuned op),
  ``winner`` and ``choice`` (its choices)
- ``dim`` (secondary), ``strong`` (primary), ``""`` (plain)

Building a detail reads from disk (payloads, big headers): do it off the UI thread.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from tcview.analysis.autotune import (
    NO_TABLES,
    AutotunedOp,
    Choice,
    autotune_time,
    autotuned_ops,
)
from tcview.analysis.compile_config import CompileConfig, compile_config
from tcview.analysis.compiletime import BACKWARD_NOTE, CompileTime, compile_seconds, compile_time
from tcview.analysis.cudagraphs import CudaGraphs, cudagraphs_of, model_cudagraphs
from tcview.analysis.export import (
    FAKE_KERNEL_DOC,
    MISMATCHED_FAKE,
    MISSING_FAKE,
    ExportIssue,
    ExportReport,
    export_report,
    is_export,
)
from tcview.analysis.findings import Finding, where_text
from tcview.analysis.guard_words import Explanation
from tcview.analysis.kernels import (
    OUTPUT_CODES,
    KernelSpan,
    OutputCode,
    fuses,
    kernel_digest,
    kernel_info_of,
    launch_info,
    needs_digests,
    source_digests,
)
from tcview.analysis.provenance import (
    KernelProvenance,
    Provenance,
    Unit,
    compile_units,
    kernel_provenance,
    same_file,
    torch_version,
    tracking_hint,
    unit_origin,
)
from tcview.analysis.recompiles import Diagnosis, diagnose, explain_compile
from tcview.model.compile_id import FIRST_EPISODE
from tcview.model.facts import short_guard
from tcview.model.metadata import (
    DYNAMO_CACHE_ENTRIES,
    BytecodeDump,
    BytecodeSide,
    CacheEntry,
    subgraph_name,
)
from tcview.model.objects import (
    AOT_GRAPH_ROLES,
    ROLE_SHORT,
    Compile,
    Frame,
    FusionDecision,
    Kernel,
    LogSource,
    Model,
    Record,
)

LABEL_WIDTH = 10  # a row's label column, in characters
_DEF = re.compile(r"^\s*(?:async\s+)?def \w+\(")  # where a kernel's source is opened
_CPP_ENTRY = re.compile(r'^\s*(?:extern "C"|void kernel\()')
STACK_ROWS = 12  # user stack frames shown for a compile
FRAME_STACK_ROWS = 16
SUMMARY_ROWS = 500  # compiles listed in a frame's detail
FUSION_ROWS = 40  # fused pairs, and reasons for not fusing, listed in a compile's detail
KERNEL_ROWS = 200  # kernels listed in a compile's detail
SHAPE_ROWS = 300  # symbolic-shape records listed in a compile's detail
GROUP_ROWS = 50  # compiles listed for a kernel defined in several
NODES_SHOWN = 40  # FX nodes listed in a row (the rest are counted)
STACK_SHOWN = 12  # frames of an export issue's stacks shown (the Export view: more)
GUARD_ROWS = 8  # guard failures listed for a recompile (one per older compile of its frame)
# autotuning time the events do not account for, below which it is not worth a word
OTHER_AUTOTUNE_S = 0.05
CHOICE_ROWS = 20  # choices listed per autotuned op (torch prints its 10 fastest)
TEXT_ROWS = 40  # lines of a long value (a failure's reason) shown under its row
SHAPE_KINDS = (
    "create_symbol",
    "create_unbacked_symbol",
    "symbolic_shape_specialization",
    "guard_added_fast",
    "guard_added",
    "expression_created",
)
# compilation_metrics fields shown in a compile's detail: (key, label, kind of value).
METRIC_ROWS = (
    ("backend_compile_time_s", "backend compile", "s"),
    ("inductor_compile_time_s", "inductor", "s"),
    ("code_gen_time_s", "code gen", "s"),
    ("cache_size", "cache size", ""),
    ("accumulated_cache_size", "accumulated cache size", ""),
    ("guard_count", "guards", ""),
    ("shape_env_guard_count", "shape-env guards", ""),
    ("graph_op_count", "graph ops", ""),
    ("graph_node_count", "graph nodes", ""),
    ("graph_input_count", "graph inputs", ""),
    ("non_compliant_ops", "non-compliant ops", "list"),
    ("compliant_custom_ops", "custom ops", "list"),
    ("num_graph_breaks", "graph breaks", ""),
    ("dynamo_time_before_restart_s", "time before restart", "s"),
    ("guard_latency_us", "guard latency", "us"),
    ("remote_cache_time_saved_s", "remote cache saved", "s"),
    ("is_forward", "is forward", ""),
)
RECORD_NAMES = {
    "dynamo_output_graph": "Dynamo graph",
    "dynamo_cpp_guards_str": "guards",
    "dynamo_guards": "guards (json)",
    "recompile_reasons": "recompile reason",
    "dynamo_graph_break_reason": "graph break",
    "aot_forward_graph": "AOT forward graph",
    "aot_backward_graph": "AOT backward graph",
    "aot_joint_graph": "AOT joint graph",
    "aot_inference_graph": "AOT inference graph",
    "inductor_pre_grad_graph": "Inductor pre-grad graph",
    "inductor_post_grad_graph": "Inductor post-grad graph",
    "inductor_output_code": "output code",
    "compilation_metrics": "metrics",
    "bwd_compilation_metrics": "metrics (backward)",
    "compilation_metrics_runtime": "runtime metrics",
    "bwd_compilation_metrics_runtime": "runtime metrics (backward)",
    "dynamo_error": "dynamo error",
}
# The records of a compile listed under "graphs", in this order.
GRAPH_RECORDS = (
    "dynamo_output_graph",
    "aot_joint_graph",
    "aot_forward_graph",
    "aot_backward_graph",
    "aot_inference_graph",
    "inductor_pre_grad_graph",
    "inductor_post_grad_graph",
    "inductor_output_code",
    "output_code",
)


# ---------------------------------------------------------------------- the structure


@dataclass
class Row:
    """One line of a section: a label (may be empty), a value and a tag (see the module)."""

    label: str
    value: str
    tag: str = ""
    depth: int = 0  # 0: a row of the section; 1, 2: under the row above it
    bullet: bool = False  # an item of a list (``• value``)
    amount: float | None = None  # a quantity to draw as a bar (time rows: seconds)
    # Shown beside the inline rows around it (``compile 0/0 · graph inference``): a layout
    # only, not in the JSON.
    inline: bool = False


@dataclass
class Section:
    """A heading with rows, or with lines of text or code (`language` says which)."""

    heading: str = ""
    tag: str = ""
    rows: list[Row] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    language: str | None = None  # "python": code, shown with line numbers from first_lineno
    first_lineno: int = 1
    focus: int = 0  # the line of `lines` to bring into view
    regions: list[tuple[int, int, str]] = field(default_factory=list)  # (first, last, lang)
    label_width: int = 0  # rows under the heading: their labels padded to this (0: not)

    def row(self, label: str, value: object, tag: str = "", **kw: Any) -> Row:
        row = Row(label, str(value), tag, **kw)
        self.rows.append(row)
        return row

    def text_row(self, label: str, value: str, tag: str = "", depth: int = 0) -> None:
        """A row whose value may have several lines: the first on the row, the others (up
        to `TEXT_ROWS`) under it."""
        lines = value.strip("\n").split("\n")
        self.row(label, lines[0], tag, depth=depth)
        rest = [ln for ln in lines[1:] if ln.strip()]
        for line in rest[:TEXT_ROWS]:
            self.row("", line, "dim", depth=depth + 1)
        if len(rest) > TEXT_ROWS:
            self.row("", f"… {len(rest) - TEXT_ROWS} more lines", "dim", depth=depth + 1)

    def fit_labels(self) -> None:
        """Pad the labels of its rows to the longest one."""
        self.label_width = max((len(r.label) for r in self.rows), default=0) + 2


@dataclass
class Detail:
    kind: str  # "compile", "frame", "kernel"
    title: str
    sections: list[Section] = field(default_factory=list)
    id: str = ""  # the compile id, frame id or kernel name

    def section(self, heading: str = "", tag: str = "") -> Section:
        section = Section(heading, tag)
        self.sections.append(section)
        return section

    def to_json(self) -> dict[str, Any]:
        """The same content as data: title, sections, rows with their tags."""
        return {
            "kind": self.kind,
            "id": self.id,
            "title": self.title,
            "sections": [_section_json(s) for s in self.sections if s.rows or s.lines],
        }


def _section_json(section: Section) -> dict[str, Any]:
    out: dict[str, Any] = {"heading": section.heading, "tag": section.tag}
    if section.rows:
        out["rows"] = [
            {
                k: v
                for k, v in asdict(r).items()
                if (v not in (None, False) or k == "value") and k != "inline"
            }
            for r in section.rows
        ]
    if section.lines:
        out["lines"] = section.lines
        out["language"] = section.language
        out["first_lineno"] = section.first_lineno
    return out


def row_parts(row: Row, width: int = 0) -> tuple[str, str, str]:
    """A row as plain text in three parts, (indent and bullet, label, value): the pane shows
    the same characters, styled. `width`: the section's label width (0: none)."""
    indent = "  " * row.depth
    if row.bullet:
        return (f"{indent}  • ", "", row.value)
    if row.amount is not None:
        return (indent, row.label.ljust(max(26, 44 - 2 * row.depth)), row.value.rjust(8))
    if not row.label:
        return (f"{indent}  ", "", row.value)
    if row.depth == 0 and not width:
        return ("", _pad(row.label, LABEL_WIDTH), row.value)
    label = _pad(row.label, width) if width else row.label + " "
    return (f"{indent}  ", label, row.value)


def _pad(label: str, width: int) -> str:
    """A label padded to `width`; one as long or longer (a kernel's name past the section's
    cap) is kept apart from its value by two spaces, so the two never run together."""
    return label.ljust(width) if len(label) < width else label + "  "


def row_text(row: Row, width: int = 0) -> str:
    return "".join(row_parts(row, width))


def fact_text(row: Row) -> str:
    """An inline row: ``compile 0/0``."""
    return f"{row.label} {row.value}" if row.label else row.value


FACT_SEP = " · "
FACTS_WIDTH = 64  # inline rows go side by side up to this many characters (a narrow pane's)


def row_groups(rows: Sequence[Row]) -> list[list[Row]]:
    """The rows line by line: one row a line, but inline rows side by side, as many as fit
    in FACTS_WIDTH."""
    out: list[list[Row]] = []
    used = 0
    for row in rows:
        size = len(fact_text(row))
        if row.inline and out and out[-1][-1].inline and used + len(FACT_SEP) + size <= FACTS_WIDTH:
            out[-1].append(row)
            used += len(FACT_SEP) + size
        else:
            out.append([row])
            used = size
    return out


def group_text(group: list[Row], width: int = 0) -> str:
    if group[0].inline:
        return FACT_SEP.join(fact_text(r) for r in group)
    return row_text(group[0], width)


# Tags of the head rows shown on the first line, after the title: ``compile 0/1  ok  1.2s``,
# ``kernel NAME  pointwise`` (a kind: tag).
HEADLINE_TAGS = ("marks", "duration", "headline")


def in_headline(row: Row) -> bool:
    return row.tag.startswith(("status:", "kind:")) or row.tag in HEADLINE_TAGS


def headline(detail: Detail) -> tuple[str, list[Row]]:
    """The first line: the title, then the head rows that go on it (status, marks, time)."""
    head = detail.sections[0] if detail.sections and not detail.sections[0].heading else None
    rows = [r for r in head.rows if in_headline(r)] if head is not None else []
    return detail.title, rows


def body_rows(detail: Detail, section: Section) -> list[Row]:
    """A section's rows below the headline."""
    if detail.sections and section is detail.sections[0] and not section.heading:
        return [r for r in section.rows if not in_headline(r)]
    return section.rows


def render_text(detail: Detail) -> str:
    """The detail as plain text: what the pane shows, without styles."""
    title, rows = headline(detail)
    out = ["  ".join([title, *(r.value for r in rows)])]
    for section in detail.sections:
        if not section.rows and not section.lines:
            continue
        if section.heading:
            out.append("")
            out.append(section.heading)
        groups = row_groups(body_rows(detail, section))
        out.extend(group_text(g, section.label_width) for g in groups)
        if section.lines:
            if section.language:
                width = len(str(section.first_lineno + len(section.lines)))
                for i, line in enumerate(section.lines):
                    out.append(f"{section.first_lineno + i:>{width}} │ {line}")
            else:
                out.extend(section.lines)
    return "\n".join(out) + "\n"


def render_json(detail: Detail) -> str:
    return json.dumps(detail.to_json(), indent=2, ensure_ascii=False)


# ---------------------------------------------------------------------- helpers


def fmt_seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:.0f}s"
    if value >= 1:
        return f"{value:.2f}s"
    return f"{value * 1000:.0f}ms" if value >= 0.001 else f"{value * 1e6:.0f}µs"


def fmt_compile_time(t: CompileTime) -> str:
    """``8.82s incl. backward 3.41s``, or the forward's time alone."""
    text = fmt_seconds(t.total_s)
    if t.backward_s is not None:
        text += f" {BACKWARD_NOTE} {fmt_seconds(t.backward_s)}"
    return text


def record_name(rec: Record) -> str:
    """What a record is, in words; AOT graphs and output code with their role; a bytecode dump
    by its function."""
    dump = BytecodeDump.decode(rec.label)
    if dump is not None:
        return f"{dump.title}: {dump.function}"
    name = RECORD_NAMES.get(rec.label, rec.label)
    role = rec.compile.graph_role(rec) if rec.compile is not None else rec.role
    if role is not None and rec.kind not in AOT_GRAPH_ROLES:  # their names say it already
        name += f" ({role})"
    return name


def record_subgraph(rec: Record) -> str | None:
    """The regional-inductor region a record was logged in: its header's ``subgraph_name``
    (a context key: `Record.meta` holds the kind's value only, so the header is read from
    disk; None for a TORCH_LOGS message or an unreadable header)."""
    try:
        line = rec.source.header_line(rec)
    except (OSError, ValueError):
        return None
    if b'"subgraph_name"' not in line:  # most headers: no JSON parse
        return None
    start = line.find(b"] {")
    try:
        header = json.loads(line[start + 2 :]) if start >= 0 else None
    except (ValueError, RecursionError):
        return None
    return subgraph_name(header)


def bytecode_dumps(comp: Compile) -> list[tuple[BytecodeDump, Record]]:
    """A compile's bytecode dumps (torch 2.12+ logs them for resume functions), original
    first."""
    found = [(d, r) for r in comp.records if (d := BytecodeDump.decode(r.label)) is not None]
    return sorted(found, key=lambda t: t[0].which is not BytecodeSide.ORIGINAL)


def subgraphs(comp: Compile) -> Counter[str]:
    """The regional-inductor regions a compile compiled, with the number of records of each."""
    return Counter(sub for r in comp.records if (sub := record_subgraph(r)) is not None)


def cache_entries(source: LogSource) -> list[CacheEntry]:
    """What caching precompile saved (the ``dynamo_cache_entries`` artifacts of a file), read
    from disk."""
    out: list[CacheEntry] = []
    for rec in source.records:
        if rec.name == DYNAMO_CACHE_ENTRIES:
            try:
                out.extend(CacheEntry.decode_all(rec.payload()))
            except (OSError, ValueError):  # the file went away
                continue
    return out


def frame_cache_entries(frame: Frame) -> list[CacheEntry]:
    """The cache entries saved for a frame: its code's name and first line (the name its
    stack's innermost frame gives when its metrics are missing)."""
    code = frame.code_frame
    name = frame.co_name or (code.name if code is not None else None)
    line = frame.co_firstlineno
    return [
        e
        for e in cache_entries(frame.file)
        if e.fn_name is not None
        and e.fn_name == name
        and (None in (e.fn_first_lineno, frame.co_firstlineno) or e.fn_first_lineno == line)
    ]


def phase_times(comp: Compile, detailed: bool = True) -> list[tuple[str, float, int]]:
    """(label, seconds, depth) of one compile's phases: from its chromium events when
    `detailed` (read from disk), else from the times in its compilation metrics."""
    if detailed:
        try:
            got = comp.phases()
        except (OSError, ValueError):  # the file went away, or an event is broken
            got = []
        if got:
            return got
    return comp.metric_phases()


def fusion_of(model: Model | None, comp: Compile) -> list[FusionDecision]:
    """Inductor's fusion decisions for this compile, from the TORCH_LOGS text (the model
    itself, or a run directory's `text`). The trace's compile and the log's are separate
    objects: they are matched by compile id."""
    if model is None:
        return []
    log = model.text if model.text is not None else model
    return [
        d
        for d in log.fusion_decisions()
        if d.compile is comp or (d.compile is not None and d.compile.id_text == comp.id_text)
    ]


def where_of(source: LogSource) -> str:
    """``rank 1`` for a ranked source, else ""."""
    return "" if source.rank is None else f"rank {source.rank}"


# ---------------------------------------------------------------------- compile


def compile_detail(comp: Compile, model: Model | None = None) -> Detail:
    """Everything about one compile: status, frame, graphs, breaks with causes, why it
    recompiled, what failed, the config that matters, metrics, time, kernels, stack."""
    title = f"compile {comp.id_label}"
    detail = Detail("compile", title, id=comp.id_label)
    head = detail.section()
    head.row("status", comp.status, f"status:{comp.status}")
    if comp.marks:
        head.row("marks", ", ".join(comp.marks), "marks")
    t = compile_time(comp)
    if t.total_s is not None:
        head.row("time", fmt_compile_time(t), "duration")
    where = where_of(comp.file)
    if where:
        head.row("rank", where.split(" ", 1)[1])
    if comp.episode != FIRST_EPISODE:
        head.row(
            "episode",
            f"{comp.episode}: torch._dynamo.reset() made the process number its compiles "
            "from 0 again",
        )
    frame = comp.frame
    if frame is not None:
        head.row("frame", f"{frame.label}  [{frame.id_label}]")
    m = comp.own_metrics
    if m is not None and m.co_name:
        head.row("code", f"{m.co_name}  {m.co_filename}:{m.co_firstlineno}")
    counts = []
    if m is not None:
        for value, what in (
            (m.graph_op_count, "ops"),
            (m.graph_node_count, "nodes"),
            (m.guard_count, "guards"),
            (m.graph_input_count, "inputs"),
        ):
            if value is not None:
                counts.append(f"{value} {what}")
    if counts:
        head.row("graph", " · ".join(counts))

    if comp.cache:
        head.row("cache", ", ".join(f"{c.cache} {c.result}" for c in comp.cache), "cache")
    regions = subgraphs(comp)
    if regions:
        head.row(
            "subgraphs",
            ", ".join(f"{name} ({n} records)" for name, n in regions.items()),
            "subgraph",
        )

    config = compile_config(comp)
    _recompile_section(detail, comp, config)
    _breaks_section(detail, comp)
    _failure_section(detail, comp)
    _phases_section(detail, comp)
    cudagraphs = (
        model_cudagraphs(model, comp)
        if model is not None
        else cudagraphs_of(comp, comp.cudagraph_notes)
    )
    _cudagraphs_section(detail, cudagraphs, model)
    _autotune_section(detail, comp, *autotuned_ops(comp, model))
    _kernels_section(detail, comp)
    _graphs_section(detail, comp)
    _bytecode_section(detail, comp)
    _config_section(detail, config)
    _metrics_section(detail, comp)
    _runtime_section(detail, comp)
    _shapes_section(detail, comp)
    _fusion_section(detail, fusion_of(model, comp))
    if frame is not None and frame.stack:
        stack = detail.section("user stack")
        for sf in frame.stack[-STACK_ROWS:]:
            stack.row("", f"{sf.filename}:{sf.line} in {sf.name}")
    return detail


def _recompile_section(detail: Detail, comp: Compile, config: CompileConfig) -> None:
    rc = comp.recompile
    if rc is None:
        return
    if comp.frame is not None:
        _diagnosis_section(detail, comp.frame, config, "why its frame recompiles")
    section = detail.section("recompiled because", "recompile")
    explanation = explain_compile(comp, config)
    if explanation is not None and explanation.failure is not None:
        section.row("family", explanation.family, "strong")
        section.row("changed", explanation.words, "diagnosis")
        if len(explanation.values) > 1 and explanation.family != "identity":  # ids say nothing
            section.row("values", ", ".join(explanation.values), "dim")
        if explanation.fix:
            section.row("fix", explanation.fix, "advice")
        if explanation.doc:
            section.row("doc", explanation.doc, "dim")
    reasons = rc.reasons or ["(no reason recorded)"]
    for i, reason in enumerate(reasons[:GUARD_ROWS]):
        label = "failed" if i == 0 and rc.reasons else ""
        section.row(label, short_guard(reason) or reason, "guard", bullet=not label)
        if i == 0 and rc.reasons and len(reasons) > 1:
            section.row("", "against the newest earlier compile; below, against older ones", "dim")
    if len(reasons) > GUARD_ROWS:
        section.row("", f"… {len(reasons) - GUARD_ROWS} more (against older compiles)", "dim")


def _diagnosis_section(
    detail: Detail, frame: Frame, config: CompileConfig, heading: str
) -> Diagnosis:
    diagnosis = diagnose(frame, config)
    section = detail.section(heading, "recompile")
    for sentence in diagnosis.sentences:
        section.row("", sentence, "diagnosis", bullet=True)
    if config.limit is not None:
        section.row(config.limit_name, config.limit, "limit", depth=1)
    for cause in diagnosis.causes:
        ids = ", ".join(c.id_label for c in cause.compiles[:12])
        more = f" +{cause.count - 12}" if cause.count > 12 else ""
        section.row(
            f"{cause.count}×", f"{cause.input or '?'} {cause.what}: {ids}{more}", "guard", depth=1
        )
    section.fit_labels()
    return diagnosis


def _breaks_section(detail: Detail, comp: Compile) -> None:
    if comp.breaks:
        section = detail.section(f"graph breaks ({len(comp.breaks)})", "break")
        for gb in comp.breaks:
            section.row("", gb.reason, "break", bullet=True)
            if gb.location:
                section.row("at", gb.short_location, "where", depth=1)
            if gb.explanation:
                section.row("", gb.explanation, "dim", depth=1)
            for hint in gb.hints[:3]:
                section.row("hint:", hint, "hint", depth=1)
    restarts = comp.restart_reasons
    if restarts and not comp.breaks:
        section = detail.section("restarts", "break")
        for reason in restarts:
            lines = reason.strip("\n").split("\n")
            section.row("", lines[0], "", bullet=True)
            for line in lines[1:TEXT_ROWS]:
                if line.strip():
                    section.row("", line, "dim", depth=1)


def _failure_section(detail: Detail, comp: Compile) -> None:
    if not comp.failures:
        return
    section = detail.section("failure", "failure")
    for f in comp.failures:
        section.text_row(f.fail_type, f.reason, "failure")
        if f.is_recompile_limit:
            section.row(
                "", "the recompile limit: the frame runs eagerly from then on", "failure", depth=1
            )
        if f.location:
            section.row("at", f.location, "where", depth=1)


def _graphs_section(detail: Detail, comp: Compile) -> None:
    order = {kind: i for i, kind in enumerate(GRAPH_RECORDS)}
    graphs = sorted(
        (r for r in comp.records if r.kind in order or r.label in order),
        key=lambda r: order.get(r.kind, order.get(r.label, 0)),
    )
    if not graphs:
        return
    section = detail.section("graphs")
    for rec in graphs:
        extra = ""
        if rec.kind in ("inductor_output_code", "output_code"):
            n = sum(1 for k in comp.kernels if k.output is rec)
            extra = f"  {n} kernel{'s' if n != 1 else ''}"
        sub = record_subgraph(rec)
        if sub is not None:
            extra += f"  [subgraph {sub}]"
        section.row("", f"{record_name(rec)}{extra}", "graph")


def _bytecode_section(detail: Detail, comp: Compile) -> None:
    dumps = bytecode_dumps(comp)
    if not dumps:
        return
    section = detail.section("bytecode", "bytecode")
    for dump, rec in dumps:
        section.row(dump.which.value, f"{dump.function}  ({rec.label}, line {rec.line_number()})")


# What the compiled graph cost when it first ran (compilation_metrics_runtime), by field.
RUNTIME_ROWS = (
    ("duration_us", "first run"),
    ("runtime_cudagraphify_time_us", "cudagraphify"),
    ("runtime_triton_autotune_time_us", "triton autotune"),
)


def _runtime_section(detail: Detail, comp: Compile) -> None:
    """compilation_metrics_runtime records, each its own rows (with the compile's metrics)."""
    rows = []
    for rec in comp.runtime_records:
        meta = rec.meta if isinstance(rec.meta, dict) else {}
        side = "backward" if rec.kind.startswith("bwd_") or meta.get("is_forward") is False else ""
        for key, label in RUNTIME_ROWS:
            value = meta.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                rows.append((f"{label} ({side})" if side else label, fmt_seconds(value / 1e6)))
    if not rows:
        return
    section = detail.section("runtime metrics (compilation_metrics_runtime)", "time")
    section.label_width = max(len(label) for label, _ in rows) + 2
    for label, text in rows:
        section.row(label, text)


def _config_section(detail: Detail, config: CompileConfig) -> None:
    rows = config.rows()
    if not rows:
        return
    section = detail.section("config", "config")
    section.label_width = max(len(k) for k, _ in rows) + 2
    for key, value in rows:
        changed = key.removeprefix("inductor.") in config.changed
        section.row(key, value, "config:changed" if changed else "config")
    if config.inductor and not config.effective:
        section.row(
            "",
            "Inductor's global config: the trace records no FX graph cache details for this"
            " compile, so what mode= or options= set for it is not shown",
            "dim",
        )


def _metrics_section(detail: Detail, comp: Compile) -> None:
    m = comp.metrics or {}
    rows: list[tuple[str, str]] = []
    for key, label, kind in METRIC_ROWS:
        if key not in m or m[key] is None:
            continue
        value = m[key]
        if kind == "s" and isinstance(value, (int, float)):
            text = fmt_seconds(float(value))
        elif kind == "us" and isinstance(value, (int, float)):
            text = fmt_seconds(value / 1e6)
        elif kind == "list" and isinstance(value, list):
            if not value and key == "compliant_custom_ops":
                continue
            text = ", ".join(map(str, value)) if value else "none"
        else:
            text = str(value)
        rows.append((label, text))
    if not rows:
        return
    section = detail.section("metrics")
    section.label_width = max(len(label) for label, _ in rows) + 2
    for label, text in rows:
        section.row(label, text)


def _phases_section(detail: Detail, comp: Compile) -> None:
    phases = phase_times(comp)
    if not phases:
        return
    section = detail.section("where the time went", "time")
    top = max(v for _, v, _ in phases)
    # The chromium events nest deep and name every tiny pass: keep what matters.
    for label, value, depth in phases:
        if depth > 5 or value < max(0.005 * top, 0.0005):
            continue
        label = label if len(label) <= 40 else label[:39] + "…"
        section.row(label, fmt_seconds(value), "time", depth=depth, amount=value)


CUDAGRAPH_STATES = {
    "used": "used",
    "partly": "used for part of the compile",
    "skipped": "skipped",
}


def _cudagraphs_section(detail: Detail, found: CudaGraphs | None, model: Model | None) -> None:
    if found is None:
        return
    section = detail.section("CUDA graphs", "cudagraphs")
    section.label_width = 14
    section.row("state", CUDAGRAPH_STATES[found.state], f"cudagraphs:{found.state}")
    for skip in found.skips:
        section.text_row("skipped", f"a graph of this compile was not recorded: {skip}", "failure")
    if found.skips:
        section.row("recorded", "another graph of it ran as a CUDA graph (the log records it)")
    why = "why" if found.state == "skipped" else "left out"
    for reason in found.reasons:
        section.text_row(why, reason, "failure" if found.state == "skipped" else "")
    if found.partitions:
        section.row("partitions", found.partitions)
    if found.cudagraphify_s is not None:
        section.row("cudagraphify", fmt_seconds(found.cudagraphify_s), "dim")
    if found.sources == ["trace"] and found.state != "skipped":
        has_text = model is not None and model.text is not None
        section.row(
            "from",
            "the trace's metrics: "
            + (
                "its TORCH_LOGS text says nothing about CUDA graphs"
                if has_text
                else "torch 2.11 leaves skips decided when the graph first runs (mutated"
                " inputs) out of them; the cudagraphs or perf_hints log has them"
            ),
            "dim",
        )


def _autotune_section(detail: Detail, comp: Compile, ops: list[AutotunedOp], tables: bool) -> None:
    if not ops:
        return
    spent = autotune_time(comp, ops)
    section = detail.section(f"autotuning {fmt_seconds(spent.total_s)}", "autotune")
    parts = [f"{len(ops)} op(s) {fmt_seconds(spent.ops_s)}"]
    if spent.fusions_s is not None:
        parts.append(f"benchmarking fused kernels {fmt_seconds(spent.fusions_s)}")
    if spent.from_metrics and spent.other_s >= OTHER_AUTOTUNE_S:
        parts.append(f"{fmt_seconds(spent.other_s)} the trace's events do not show")
    section.row("time", " + ".join(parts), "autotune")
    if spent.backward_s is not None:
        forward = spent.total_s - spent.backward_s
        section.row(
            "", f"forward {fmt_seconds(forward)} · backward {fmt_seconds(spent.backward_s)}", "dim"
        )
    for op in ops:
        section.row("", op.label, "autotune", bullet=True)
        if op.winner is not None:
            best = f"  {op.winner_ms:.4f} ms" if op.winner_ms is not None else ""
            section.row("winner", f"{op.winner}{best}", "winner", depth=1)
        if op.kernel is not None:
            section.row("kernel", op.kernel.name, "kernel", depth=1)
        elif op.extern:
            section.row("kernel", "none: an ATen kernel won (cuBLAS, MKL, …)", "dim", depth=1)
        facts = []
        if op.num_choices is not None:
            facts.append(f"{op.num_choices} choices")
        if op.autotune_s is not None:
            facts.append(f"benchmarked in {fmt_seconds(op.autotune_s)}")
        if op.precompile_s is not None:
            facts.append(f"precompiled in {fmt_seconds(op.precompile_s)}")
        if facts:
            section.row("", " · ".join(facts), "dim", depth=1)
        if op.dtypes:
            section.row("dtypes", op.dtypes, "dim", depth=1)
        if op.choices:
            best_ms = op.choices[0].ms
            for choice in op.choices[:CHOICE_ROWS]:
                section.row("", _choice_text(choice, best_ms), _choice_tag(op, choice), depth=2)
            if len(op.choices) > CHOICE_ROWS:
                section.row("", f"… {len(op.choices) - CHOICE_ROWS} more", "dim", depth=2)
            if op.num_choices and op.num_choices > len(op.choices):
                shown = f"the {len(op.choices)} fastest of {op.num_choices} (as torch prints them)"
                section.row("", shown, "dim", depth=2)
    if not tables:
        section.row("", NO_TABLES, "dim")


def _choice_text(choice: Choice, best_ms: float | None) -> str:
    if choice.ms is None:
        return f"{choice.name:<22} failed (inf)  {choice.desc}".rstrip()
    share = f"{100 * best_ms / choice.ms:5.1f}%" if best_ms and choice.ms else "     -"
    return f"{choice.name:<22} {choice.ms:.4f} ms {share}  {choice.desc}".rstrip()


def _choice_tag(op: AutotunedOp, choice: Choice) -> str:
    return "winner" if choice.name == op.winner else "choice"


def _shapes_section(detail: Detail, comp: Compile) -> None:
    records = [r for r in comp.records if r.kind in SHAPE_KINDS]
    if not records:
        return
    counts = Counter(r.kind for r in records)
    summary = ", ".join(f"{n} {kind}" for kind, n in counts.most_common())
    section = detail.section(f"symbolic shapes ({summary})", "shapes")
    for rec in records[:SHAPE_ROWS]:
        section.row(rec.kind, shape_text(rec), "shape")
    if len(records) > SHAPE_ROWS:
        section.row("", f"… {len(records) - SHAPE_ROWS} more", "dim")


def shape_text(rec: Record) -> str:
    """One symbolic-shape record in a line (its value read from disk)."""
    meta = rec.full_meta()
    if not isinstance(meta, dict):
        return str(meta)
    get = meta.get
    kind = rec.kind
    if kind in ("create_symbol", "create_unbacked_symbol"):
        text = f"{get('symbol')}"
        if get("val") is not None:
            text += f" = {get('val')}"
        if get("source"):
            text += f"  from {get('source')}"
        if get("vr"):
            text += f"  range {get('vr')}"
    elif kind == "symbolic_shape_specialization":
        sources = get("sources")
        where = ", ".join(map(str, sources)) if isinstance(sources, list) else ""
        text = f"{get('symbol')} = {get('value')}  ({get('reason')})"
        if where:
            text += f"  from {where}"
    elif kind in ("guard_added_fast", "guard_added"):
        text = str(get("expr"))
        if get("prefix"):
            text = f"{get('prefix')}: {text}"
    elif kind == "expression_created":
        args = get("argument_ids") or get("arguments")
        text = f"{get('result')} = {get('method')}({args})"
    else:
        text = json.dumps(meta)[:200]
    user = get("user_stack")
    if isinstance(user, list) and user and isinstance(user[-1], dict):
        last = user[-1]
        loc = str(last.get("loc") or "").strip()
        text += f"  @ line {last.get('line')}" + (f": {loc}" if loc else "")
    return text


def _kernels_section(detail: Detail, comp: Compile) -> None:
    if not comp.kernels:
        return
    kinds = Counter(k.kind for k in comp.kernels)
    desc = ", ".join(f"{n} {k}" for k, n in kinds.most_common())
    section = detail.section(
        f"kernels ({len(comp.kernels)} in {len(comp.output_codes)} output code(s): {desc})"
    )
    section.label_width = min(max(len(k.name) for k in comp.kernels), 60) + 2
    for k in comp.kernels[:KERNEL_ROWS]:
        role = ROLE_SHORT.get(k.role or "", "")
        section.row(k.name, f"{k.kind:<12}{role}".rstrip(), f"kind:{k.kind}")
    if len(comp.kernels) > KERNEL_ROWS:
        section.row("", f"… {len(comp.kernels) - KERNEL_ROWS} more", "dim")


def _fusion_section(detail: Detail, decisions: Sequence[FusionDecision]) -> None:
    if not decisions:
        return
    fused = [d for d in decisions if d.fused]
    why = Counter(d.reason or "(no reason given)" for d in decisions if not d.fused)
    section = detail.section(
        f"fusion decisions ({len(fused)} fused, {len(decisions) - len(fused)} not)"
    )
    for d in fused[:FUSION_ROWS]:
        section.row("", f"fused  {d.first} + {d.second}", "fused")
    if len(fused) > FUSION_ROWS:
        section.row("", f"… {len(fused) - FUSION_ROWS} more fused", "dim")
    for reason, n in why.most_common(FUSION_ROWS):
        section.row("", f"{n:>5}× not fused: {reason}", "dim")


# ---------------------------------------------------------------------- frame


def frame_detail(frame: Frame) -> Detail:
    """A frame: its status, why it recompiled, its compiles and its stack."""
    detail = Detail("frame", f"frame {frame.label}", id=frame.id_label)
    head = detail.section()
    head.row("id", f"[{frame.id_label}]", "headline")
    head.row("status", frame.status, f"status:{frame.status}")
    if frame.marks:
        head.row("marks", ", ".join(frame.marks), "marks")
    head.row("compiles", len(frame.compiles))
    where = where_of(frame.file)
    if where:
        head.row("rank", where.split(" ", 1)[1])
    explained: dict[int, Explanation] = {}
    if any(c.key.is_recompile for c in frame.compiles):
        config = compile_config(frame.compiles[0]) if frame.compiles else CompileConfig()
        diagnosis = _diagnosis_section(detail, frame, config, "why it recompiled")
        explained = {id(e.compile): e for e in diagnosis.explanations}
    section = detail.section("compiles")
    for comp in frame.compiles[:SUMMARY_ROWS]:
        value = f"{comp.status:<12}{fmt_seconds(compile_seconds(comp)):>8}"
        if comp.marks:
            value += "  " + ", ".join(comp.marks)
        section.row(comp.id_label, value, f"status:{comp.status}")
        e = explained.get(id(comp))
        if e is not None and e.failure is not None:
            section.row(f"{e.family}:", e.words, "guard", depth=2)
        elif comp.recompile is not None:
            for reason in comp.recompile.reasons[:3]:
                section.row("guard failed:", short_guard(reason), "guard", depth=2)
        for gb in comp.breaks[:3]:
            section.row("break:", gb.reason, "break", depth=2)
    if len(frame.compiles) > SUMMARY_ROWS:
        section.row("", f"… {len(frame.compiles) - SUMMARY_ROWS} more", "dim")
    entries = frame_cache_entries(frame)
    if entries:
        saved = detail.section("dynamo cache entries (caching precompile)", "cache")
        for entry in entries:
            n = entry.num_codes
            saved.row(
                f"{entry.fn_name}:{entry.fn_first_lineno}",
                f"{'?' if n is None else n} code object(s) · {len(entry.backends)} backend(s)"
                f" · {entry.device_type or '?'}",
                "cache",
            )
            if entry.key:
                saved.row("key", entry.key, "dim", depth=1)
    if frame.stack:
        stack = detail.section("stack")
        for sf in frame.stack[-FRAME_STACK_ROWS:]:
            stack.row("", f"{sf.filename}:{sf.line} in {sf.name}")
    return detail


# ---------------------------------------------------------------------- kernel


def kernel_detail(kernel: Kernel, model: Model | None = None) -> Detail:
    """A kernel: its kind, compile and graph in a few lines, then its source (with the comment
    above it), then what it fuses, its provenance and how it is launched (someone who picks a
    kernel wants its source first); with `model`, the other kernels of that name: the same
    source compiled again (the kernels view's row for it) and namesakes with another source."""
    role = kernel.role
    detail = Detail("kernel", f"kernel {kernel.name}", id=kernel.name)
    head = detail.section()
    head.row("kind", kernel.kind, f"kind:{kernel.kind}")
    comp = kernel.compile
    compile_text = comp.id_label if comp is not None else kernel.output.compile_text
    head.row("compile", compile_text, "id", inline=True)
    where = where_of(kernel.output.source)
    if where:
        head.row("rank", where.split(" ", 1)[1], inline=True)
    head.row("graph", role or "unknown", "role" if role else "dim", inline=True)
    code = OUTPUT_CODES.get(kernel.output)
    span = code.span_of(kernel)
    if span is not None:
        launch = "not launched" if span.launch is None else f"#{span.launch + 1}"
        lines = f"lines {span.first + 1}-{span.end + 1}"
        head.row("output code", f"{lines} · launch {launch}", inline=True)
    if model is not None:
        same, other = namesakes(model, kernel)
        if same:
            ids = [_kernel_where(k) for k in [kernel, *same]]
            head.row("same in", f"{len(ids)} compiles: {_listed(ids)}", "id")
        if other:
            ids = [_kernel_where(k) for k in other]
            head.row("also", f"{len(ids)} other source(s) of this name: {_listed(ids)}", "dim")
    if span is None:
        head.row("source", "not found in its output code", "failure")
        section = detail.section("output code")
        section.lines = code.lines
        section.language = "python"
        return detail
    _source_section(detail, code, span)
    found = fuses(code, span)
    unit, kp = kernel_provenance(kernel)
    tracked = unit is not None and unit.tracked and kp is not None
    if found.found or not tracked:
        section = detail.section("fuses")
        section.label_width = 11
        if found.found:
            if found.aten_ops:
                section.row("ATen ops", ", ".join(found.aten_ops), "strong")
            nodes = ", ".join(n or "(unnamed)" for n in found.source_nodes)
            section.row("nodes", nodes or "(none)")
            if found.post_grad_nodes:
                section.row("post-grad", ", ".join(found.post_grad_nodes), "dim")
        else:
            section.row("", "the output code does not say (no source-node comment)", "dim")
    # Without tracking, the provenance's pre-grad nodes are the comment's: said above.
    hint = tracking_hint(torch_version(model) if model is not None else None)
    provenance_sections(detail, unit, kp, hint, nodes=tracked)
    info = _kernel_info(kernel)
    launch_rows = launch_info(code, span, info).rows
    if launch_rows:
        section = detail.section("launch")
        section.label_width = max(len(k) for k, _ in launch_rows) + 2
        for key, value in launch_rows:
            section.row(key, value, "launch")
    return detail


def _kernel_where(kernel: Kernel) -> str:
    """``0/1``, ``rank 1 0/1 (bwd)``: its compile, and its graph when known."""
    comp = kernel.compile
    text = comp.id_label if comp is not None else kernel.output.compile_text
    where = where_of(kernel.output.source)
    if where:
        text = f"{where} {text}"
    return text + (f" ({ROLE_SHORT[kernel.role]})" if kernel.role else "")


def _listed(ids: list[str]) -> str:
    more = f" +{len(ids) - GROUP_ROWS}" if len(ids) > GROUP_ROWS else ""
    return ", ".join(ids[:GROUP_ROWS]) + more


def namesakes(model: Model, kernel: Kernel) -> tuple[list[Kernel], list[Kernel]]:
    """The other kernels named like `kernel`: those with the same source (compiled again:
    the kernels view shows them as one row), and those with another. Reads the output codes
    whose kernels have no digest yet (`digest_namesakes` does it without a lock held)."""
    named = [k for k in model.kernels if k.name == kernel.name and k is not kernel]
    for batch in needs_digests([kernel, *named]):
        source_digests(batch)
    digest = kernel_digest(kernel)
    if digest is None:  # its output code is still growing
        return [], named
    same = [k for k in named if kernel_digest(k) == digest]
    other = [k for k in named if kernel_digest(k) != digest]
    return same, other


def digest_namesakes(model: Model, kernel: Kernel) -> None:
    """Find the digests of the kernels named like `kernel` (reads from disk: off the UI
    thread)."""
    pending = needs_digests([k for k in model.kernels if k.name == kernel.name])
    for batch in pending:
        source_digests(batch)


def _source_section(detail: Detail, code: OutputCode, span: KernelSpan) -> None:
    body = code.lines[span.first : span.end + 1]
    section = detail.section("source")
    section.lines = body
    section.language = "python"
    section.first_lineno = span.first + 1
    at = span.start - span.first
    entry = _CPP_ENTRY if span.kind == "cpp" else _DEF
    focus = next((i for i in range(at, len(body)) if entry.match(body[i])), None)
    section.focus = focus if focus is not None else at
    if span.kind == "cpp":
        section.regions = [(at + 1, len(body) - 2, "cpp")]


def _following(kernel: Kernel, name: str) -> Record | None:
    """The artifact `name` logged after the kernel's output code and before the next one of
    its compile (what Inductor logs about that output code), if any."""
    comp = kernel.compile
    if comp is None:
        return None
    records = comp.records
    try:
        at = records.index(kernel.output)
    except ValueError:
        return None
    for rec in records[at + 1 :]:
        if rec.kind in ("inductor_output_code", "output_code"):
            return None
        if rec.label == name:
            return rec
    return None


def _kernel_info(kernel: Kernel) -> dict[str, object] | None:
    """The kernel's entry of the ``triton_kernel_info`` artifact logged after its output
    code (autotuned config, compile time), read from disk; None when there is none."""
    rec = _following(kernel, "triton_kernel_info")
    return kernel_info_of(rec.payload()).get(kernel.name) if rec is not None else None


# ---------------------------------------------------------------------- provenance


def nodes_text(nodes: Sequence[str]) -> str:
    more = f" … +{len(nodes) - NODES_SHOWN}" if len(nodes) > NODES_SHOWN else ""
    return ", ".join(nodes[:NODES_SHOWN]) + more if nodes else "(none)"


def provenance_sections(
    detail: Detail,
    unit: Unit | None,
    kp: KernelProvenance | None,
    hint: str = "",
    nodes: bool = True,
) -> None:
    """What a kernel implements (`provenance.kernel_provenance`): where that comes from, its
    user lines (and torch's), its post- and pre-grad nodes (`nodes`), the graphs that mark
    them, and the other kernels of its lines. `hint`: how to turn tracking on."""
    section = detail.section("provenance", "provenance")
    if unit is None:
        section.row("", "its output code is not part of an Inductor compile tcview knows", "warn")
        return
    code = f"{unit.code.label} line {unit.code.line_number()}" if unit.code is not None else "?"
    section.row("graph", f"{unit.label}  ({code})")
    section.row("from", unit_origin(unit), "warn" if unit.fallback else "")
    if unit.fallback and hint:
        section.row("turn it on", hint, "hint")
    if kp is None:
        section.row("", "the mapping does not name this kernel", "warn")
        if unit.tracked and unit.kernels:
            section.row("it names", nodes_text(list(unit.kernels)), "dim")
        section.fit_labels()
        return
    if kp.key != kp.name:
        section.row("mapping key", kp.key)
    section.fit_labels()
    lines = kp.user_lines
    origin = f"  (from the {kp.lines_from})" if kp.lines_from else ""
    user = detail.section(f"user lines ({len(lines)}){origin}", "lines")
    if not lines:
        user.row("", "(none known)", "dim")
    for src in lines:
        user.row("", src.text, "code")
    internal = [ln for ln in kp.lines if not ln.user]
    if internal:
        torch = detail.section(f"torch lines ({len(internal)})", "lines")
        for src in internal:
            torch.row("", src.text, "dim")
    if unit.empty_mapping:
        section.row(
            "",
            "the node mapping of this graph is empty (torch maps no nodes of a backward"
            " graph): only the stack traces link its kernels to lines",
            "dim",
        )
    elif nodes:
        graphs = (
            ("post-grad nodes", unit.post_graph, kp.post_grad, unit.tracked),
            (
                "pre-grad nodes" if unit.tracked else "source nodes (pre-grad)",
                unit.pre_graph,
                kp.pre_grad,
                True,
            ),
        )
        for heading, rec, names, shown in graphs:
            if not shown:
                continue
            part = detail.section(f"{heading} ({len(names)})", "nodes")
            part.row("", nodes_text(names))
            if rec is not None and names:
                part.row(
                    "", f"in {rec.label} line {rec.line_number()} (its nodes are marked)", "dim"
                )
    others = {
        k.key: k for src in lines for k in unit.kernels.values() if k is not kp and src in k.lines
    }
    if others:
        near = detail.section("other kernels of these lines")
        for key in others:
            near.row("", key, "kernel")


def provenance_detail(obj: Kernel | Compile, model: Model | None = None) -> Detail:
    """What ``i`` shows: a kernel's provenance (`provenance_sections`), or a compile's: each
    graph Inductor compiled, its kernels and their user lines."""
    if isinstance(obj, Kernel):
        unit, kp = kernel_provenance(obj)
        hint = tracking_hint(torch_version(model) if model is not None else None)
        return kernel_provenance_detail(unit, kp, obj.name, hint)
    detail = Detail("provenance", f"provenance · compile {obj.id_label}", id=obj.id_label)
    units = compile_units(obj)
    if not units:
        detail.section().row("", f"compile {obj.id_label} has no Inductor output code", "dim")
    for unit in units:
        section = detail.section(f"{unit.label}: {unit_origin(unit)}", "provenance")
        for kp in unit.kernels.values():
            section.row("", kp.key, "kernel")
            where = ", ".join(src.short for src in kp.user_lines) or "(no user line)"
            section.row("", where, "code", depth=2)
    return detail


def kernel_provenance_detail(
    unit: Unit | None, kp: KernelProvenance | None, name: str, hint: str = ""
) -> Detail:
    """A kernel's provenance alone (an extern kernel of a mapping has no other detail)."""
    detail = Detail("provenance", f"provenance · {name}", id=name)
    provenance_sections(detail, unit, kp, hint if unit is None or unit.fallback else "")
    return detail


def line_detail(prov: Provenance, file: str, line: int) -> Detail:
    """The kernels that implement a user line (``FILE:LINE``), with the nodes each covers."""
    detail = Detail("line", f"kernels of {file}:{line}", id=f"{file}:{line}")
    head = detail.section()
    kernels = prov.kernels_of_line(file, line)
    if not kernels:
        head.row("", "no kernel implements this line (as far as the trace says)", "warn")
        return detail
    src = next(s for s in kernels[0].lines if s.line == line and same_file(s.file, file))
    head.row("", src.text, "code")
    section = detail.section(f"kernels ({len(kernels)})")
    section.label_width = 11
    for kp in kernels:
        graph = kp.unit.label if kp.unit is not None else "-"
        section.row("", f"{kp.key}  [{graph}]", "kernel")
        if kp.post_grad:
            section.row("post-grad", nodes_text(kp.post_grad), depth=1)
        if kp.pre_grad:
            section.row("pre-grad", nodes_text(kp.pre_grad), depth=1)
    return detail


# ---------------------------------------------------------------------- export


def export_detail(model: Model) -> Detail:
    """The draft-export report of a torch.export trace (``tcview show PATH export``)."""
    if not is_export(model):
        detail = Detail("export", "Draft export report", id="export")
        detail.section().row(
            "", "this trace was not written by torch.export (no export records)", "warn"
        )
        return detail
    return report_detail(export_report(model))


def report_detail(report: ExportReport, stacks: int = STACK_SHOWN) -> Detail:
    """The report: a summary, each issue (`issue_section`), the symbols and their sources."""
    detail = Detail("export", "Draft export report", id="export")
    detail.section().rows.extend(report_summary(report))
    for number, issue in enumerate(report.issues, 1):
        issue_section(detail, number, issue, stacks)
    if report.symbols:
        section = detail.section("symbols")
        for symbol, source, value in report.symbols:
            section.row("", f"{symbol}: {source}" + (f"  (traced with {value})" if value else ""))
    return detail


def report_summary(report: ExportReport) -> list[Row]:
    """The report's first rows: how many issues of each kind, what tlparse omits, where the
    exported program is (the Export view's head shows them too)."""
    n = len(report.issues)
    if not n:
        rows = [Row("", "No issues found during export.", "ok")]
    else:
        kinds = Counter(i.title for i in report.issues)
        what = ", ".join(f"{v} {k}" for k, v in kinds.items())
        rows = [Row("", f"{n} issue(s) found during export: {what}", "issue")]
    hidden = [i for i in report.issues if not i.reported_by_tlparse]
    if hidden:
        rows.append(
            Row(
                "",
                f"({len(hidden)} guard(s) without the prefix 'eval': tlparse -e omits them)",
                "dim",
            )
        )
    if report.programs:
        rows.append(Row("", f"exported program: line {report.programs[-1].line_number()}", "dim"))
    return rows


def issue_detail(number: int, issue: ExportIssue, stacks: int = STACK_SHOWN) -> Detail:
    """One issue of the report alone (the Export view's pane)."""
    detail = Detail("export issue", f"export issue {number}: {issue.title}", id=str(number))
    issue_section(detail, number, issue, stacks, heading=False)
    return detail


def issue_section(
    detail: Detail, number: int, issue: ExportIssue, stacks: int, heading: bool = True
) -> None:
    """One issue: what it is, where, its stacks, locals and the provenance of its expression
    (under a heading that names it, or, alone in its detail, under the title)."""
    section = detail.section(f"{number}. {issue.title}" if heading else "", "issue")
    section.text_row("", issue.reason_text, "strong")
    if issue.kind in (MISSING_FAKE, MISMATCHED_FAKE):
        section.row("", f"how to write a fake kernel: {FAKE_KERNEL_DOC}", "dim")
    where = issue.user_line
    if where is not None:
        section.row("", f"at {where.filename}:{where.line} in {where.name}", "where")
        if where.loc or issue.loc:
            section.row("", where.loc or issue.loc, "code", depth=1)
    elif issue.loc:
        section.row("", issue.loc, "code", depth=1)
    if issue.user_stack:
        section.row("", "user stack", "subheading")
        for frame in issue.user_stack[-stacks:]:
            section.row("", frame.text, "code", depth=1)
    if issue.stack:
        section.row("", f"framework stack ({len(issue.stack)} frames)", "subheading")
        if len(issue.stack) > stacks:
            section.row("", f"… {len(issue.stack) - stacks} outer frames", "dim", depth=1)
        for frame in issue.stack[-stacks:]:
            section.row("", frame.text, "code", depth=1)
    for part, values in (
        ("locals", issue.locals),
        ("symbols", issue.symbols),
        ("symbol sources", issue.symbol_sources),
    ):
        if values:
            section.row("", part, "subheading")
            for key, value in values.items():
                section.row("", f"{key}: {value}", depth=1)
    if issue.tree:
        section.row("", "provenance of the expression", "subheading")
        for depth, node in issue.tree:
            if node.method:
                text = f"{node.result}  = {node.method}({', '.join(node.arguments)})"
            else:
                text = f"{node.result}  unbacked symbol, range {node.range}"
            section.row("", text, "code", depth=1 + depth)
            at = next((f for f in reversed(node.user_stack) if f.loc), None) or (
                node.user_stack[-1] if node.user_stack else None
            )
            if at is not None:
                section.row("", f"at {at.where}: {at.loc}", "dim", depth=2 + depth)


# The tag of a finding's title row, by severity.
SEVERITY_TAGS = {"error": "failure", "warning": "warn", "info": "strong"}


def findings_detail(found: Sequence[Finding]) -> Detail:
    """The run's findings, most important first (``tcview show PATH findings``): a section
    each, with what, where, cost, fix, docs and evidence."""
    detail = Detail("findings", f"Findings ({len(found)})", id="findings")
    if not found:
        detail.section().row("", "nothing wrong found", "ok")
        return detail
    for number, finding in enumerate(found, 1):
        section = detail.section(f"{number}. {finding.severity}: {finding.kind}")
        section.row("", finding.title, SEVERITY_TAGS[finding.severity])
        section.text_row("what", finding.detail)
        if finding.where:
            section.row("where", where_text(finding.where), "where")
        if finding.cost_s:
            section.row("cost", f"{finding.cost_s:.2f}s of compile time")
        if finding.fix:
            section.row("fix", finding.fix, "advice")
        if finding.doc:
            section.row("doc", finding.doc, "dim")
        for key, value in finding.evidence.items():
            if value not in (None, "", [], {}):
                section.row(key, json.dumps(value, ensure_ascii=False), "dim", depth=1)
        section.fit_labels()
    return detail
