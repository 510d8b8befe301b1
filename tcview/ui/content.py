"""What the viewer shows for each item: plain data (lines, language, focus), no widgets.

Everything here reads the model only; the caller holds the model lock.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text

from tcview.analysis.cudagraphs import CudaGraphs
from tcview.analysis.export import export_counts, is_export
from tcview.analysis.findings import Finding
from tcview.analysis.kernels import OUTPUT_CODES, KernelSpan
from tcview.analysis.profile import RuntimeJoin
from tcview.model.objects import (
    GRAPH_KINDS,
    MARK_TABLE,
    MD5_BLANK_LINES,
    MD5_MISMATCH,
    Compile,
    Error,
    Kernel,
    Model,
    Record,
    stack_frames,
)
from tcview.model.ranks import RankSet, counts_in, ranks_label
from tcview.report.detail import (
    FACT_SEP,
    Detail,
    Row,
    Section,
    body_rows,
    fmt_seconds,
    headline,
    kernel_detail,
    record_name,
    row_groups,
    row_parts,
)
from tcview.report.overview import (
    Overview,
    build_overview,
    stack_row_parts,
    stacks_more,
    stacks_title,
    torch_line,
)
from tcview.report.summary import InputState, counts_line
from tcview.text.safe import safe_line
from tcview.ui.hints import KeyNames, key_of, overview_hint
from tcview.ui.measured import measured_summary, profiles_found

METRIC_KINDS = frozenset(
    [
        "compilation_metrics",
        "bwd_compilation_metrics",
        "compilation_metrics_runtime",
        "bwd_compilation_metrics_runtime",
    ]
)
JSON_LIMIT = 32 << 20
# The tree's marks (model.MARK_TABLE, the one table): a symbol and a style by name.
STATUS_MARK = {name: symbol for name, (symbol, _style) in MARK_TABLE.items()}
STATUS_STYLE = {name: style for name, (_symbol, style) in MARK_TABLE.items()}
# A compile's CUDA graphs (trace.cudagraphs.CudaGraphs.state): a style and a symbol each.
CUDAGRAPH_STYLE = {"used": "green", "partly": "yellow", "skipped": "yellow"}
CUDAGRAPH_SYMBOL = {"used": "◆", "partly": "◈", "skipped": "◇"}
KIND_STYLE = {
    "pointwise": "green",
    "reduction": "magenta",
    "persistent": "cyan",
    "template": "yellow",
    "cpp": "blue",
    "user": "bright_magenta",
    "other": "white",
}


@dataclass
class Document:
    """Lines for the viewer. `styled` lines (tables, summaries) bypass highlighting.

    A code document may start with `head` and end with `tail`: styled lines shown above and
    below the code, without line numbers (a kernel's kind and compile above its source, what
    it fuses and its launch below). Indexes (`focus`, `regions`, `plain`) count the head's
    lines first.
    """

    title: str
    lines: list[str] = field(default_factory=list)
    language: str | None = None
    first_lineno: int = 1
    focus: int = 0  # 0-based line to bring into view
    styled: list[Text] | None = None
    regions: list[tuple[int, int, str]] = field(default_factory=list)  # (first, last, lang)
    numbered: bool = True
    head: list[Text] = field(default_factory=list)
    marked: frozenset[int] = frozenset()  # 0-based lines shown marked (a kernel's graph nodes)
    tail: list[Text] = field(default_factory=list)

    @property
    def count(self) -> int:
        if self.styled is not None:
            return len(self.styled)
        return len(self.head) + len(self.lines) + len(self.tail)

    def styled_line(self, index: int) -> Text | None:
        """Line `index` when it is a styled one (of `styled`, the head or the tail), else None:
        a code line."""
        if self.styled is not None:
            return self.styled[index]
        at = index - len(self.head)
        if at < 0:
            return self.head[index]
        return self.tail[at - len(self.lines)] if at >= len(self.lines) else None

    def language_at(self, index: int) -> str | None:
        for first, last, lang in self.regions:
            if first <= index <= last:
                return lang
        return self.language

    def plain(self, index: int) -> str:
        styled = self.styled_line(index)
        return styled.plain if styled is not None else self.lines[index - len(self.head)]

    def index_of(self, lineno: int) -> int:
        """The index of the code line the gutter numbers `lineno` (-1: there is none)."""
        at = lineno - self.first_lineno
        return len(self.head) + at if self.styled is None and 0 <= at < len(self.lines) else -1

    def lineno(self, index: int) -> int | None:
        """The source line number shown in the gutter for line `index` (None: a head or tail
        line)."""
        at = index - len(self.head)
        return self.first_lineno + at if 0 <= at < len(self.lines) else None


# How the tagged lines of the diff reports (`trace.diffreport`) are styled, by tag.
REPORT_STYLE = {
    "title": "bold",
    "heading": "bold underline",
    "field": "",
    "dim": "dim",
    "warn": "yellow",
    "ok": "green",
    "fold": "dim italic",
    "same": "",
    "removed": "red",
    "added": "green",
    "changed": "yellow",
    "new": "green",
    "gone": "red",
    "renamed": "cyan",
    "moved": "cyan",
}
MARK_STYLE = "bold reverse"  # the characters of a diff line that differ from the other side


def tagged_text(tag: str, text: str, marks: Sequence[tuple[int, int]] = ()) -> Text:
    """A report line: trace text made safe, styled by its tag, marked spans stressed."""
    line = lit(text, REPORT_STYLE.get(tag, ""))
    if len(line.plain) == len(text):  # safe_line kept the length: the spans still fit
        for start, end in marks:
            line.stylize(MARK_STYLE, start, end)
    return line


def rows_doc(title: str, rows: Sequence[tuple[str, str, list[tuple[int, int]]]]) -> Document:
    """A document of (tag, text, marks) rows (the diffs)."""
    return styled_doc(title, [tagged_text(tag, text, marks) for tag, text, marks in rows])


def lit(text: object, style: str = "") -> Text:
    """Trace text as a literal, terminal-safe Text (never parsed as markup)."""
    return Text(safe_line(str(text)), style=style)


def lit_lines(text: str, style: str = "", indent: str = "  ") -> list[Text]:
    """Trace text of several lines (a failure's message) as real lines, the ones after the
    first indented by `indent`; each made safe like `lit`. Trailing blank lines are dropped."""
    first, *rest = text.rstrip("\n").split("\n")
    out = [lit(first, style)]
    out.extend(lit(indent + line if line.strip() else "", style) for line in rest)
    return out


def styled_doc(title: str, lines: list[Text]) -> Document:
    return Document(title, styled=lines, numbered=False)


# ---------------------------------------------------------------- output code


def cpp_regions(spans: list[KernelSpan], offset: int = 0) -> list[tuple[int, int, str]]:
    return [(s.start + 1 - offset, s.end - 1 - offset, "cpp") for s in spans if s.kind == "cpp"]


# ---------------------------------------------------------------- records


def record_title(rec: Record) -> str:
    parts = [record_name(rec), rec.compile_text]
    with contextlib.suppress(Exception):  # lineno is lazy and may need a read
        parts.append(f"line {rec.line_number()}")
    return " · ".join(p for p in parts if p)


@dataclass(frozen=True)
class Marked:
    """Lines of a graph to mark: the nodes of a kernel (`kernel` names it)."""

    kernel: str
    lines: tuple[int, ...]


def readable_meta(rec: Record) -> object:
    """A header-only record's value in full (big and shape-env headers are not kept in
    memory), its stacks' string-table ids replaced by file names."""
    value = rec.full_meta()
    if not isinstance(value, dict):
        return value
    out = dict(value)
    for key, item in value.items():
        if isinstance(item, list) and item and all(isinstance(f, dict) for f in item):
            frames = stack_frames(rec.source, item)
            if frames and len(frames) == len(item) and all("line" in f for f in item):
                out[key] = [f.text for f in frames]
    return out


def record_doc(rec: Record, marked: Marked | None = None) -> Document:
    """The payload of one record, highlighted by kind; metrics as a table; `marked`: graph
    lines to mark (the nodes of the kernel picked last)."""
    title = record_title(rec)
    if rec.kind in METRIC_KINDS and isinstance(rec.meta, dict):
        return styled_doc(title, metrics_table(rec.meta))
    has_payload = bool(rec.md5) or rec.end > rec.hdr_end
    if not has_payload:
        return Document(title + " · header only", json_lines(readable_meta(rec)), "json")
    if rec.kind == "inductor_output_code":
        code = OUTPUT_CODES.get(rec)
        return Document(title, code.lines, "python", regions=cpp_regions(code.spans))
    text = rec.payload()
    state = rec.md5_state() if rec.md5 and len(text) < JSON_LIMIT else None
    if state == MD5_MISMATCH:
        title += " · md5 MISMATCH (truncated or edited)"
    elif state == MD5_BLANK_LINES:
        title += " · its whitespace-only lines had lost their tab (harmless: shown restored)"
    if rec.kind in GRAPH_KINDS or rec.label in GRAPH_KINDS:
        doc = Document(title, text.split("\n"), "python")
        if marked:
            doc.marked = frozenset(marked.lines)
            doc.focus = min(marked.lines)
            doc.title += f" · {len(marked.lines)} line(s) of {marked.kernel} marked"
        return doc
    stripped = text.lstrip()
    if stripped[:1] in ("{", "[") and len(text) < JSON_LIMIT:
        try:
            value = json.loads(text)
        except ValueError:
            pass
        else:
            return Document(title, json_lines(value), "json")
    lang = "python" if _looks_like_python(rec.label, text) else None
    return Document(title, text.split("\n"), lang)


def _looks_like_python(label: str, text: str) -> bool:
    return label.endswith("_graph") or label.endswith("graph_runnable") or "def forward(" in text


def json_lines(value: object) -> list[str]:
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, default=repr).split("\n")
    except (ValueError, TypeError, RecursionError):
        return [repr(value)]


# ---------------------------------------------------------------- kernels

# ---------------------------------------------------------------- details (trace/detail.py)

# A row's tag -> its value's style; a section's tag -> its heading's colour.
TAG_STYLE = {
    "break": "bold",
    "where": "yellow",
    "hint": "green",
    "guard": "cyan",
    "failure": "red",
    "limit": "bold",
    "diagnosis": "bold",
    "advice": "green",
    "dim": "dim",
    "strong": "bold",
    "id": "bold",
    "fused": "green",
    "role": "magenta",
    "code": "cyan",
    "kernel": "bold magenta",
    "issue": "bold red",
    "ok": "green",
    "warn": "yellow",
    "subheading": "bold",
    "autotune": "bold",
    "winner": "bold green",
}
HEADING_STYLE = {
    "break": "bold yellow underline",
    "recompile": "bold cyan underline",
    "failure": "bold red underline",
}
LABEL_STYLE = {"failure": "bold red", "guard": "cyan"}
BAR_WIDTH = 30


def tag_style(tag: str) -> str:
    kind, _, what = tag.partition(":")
    if kind == "status":
        return STATUS_STYLE.get(what, "")
    if kind == "kind":
        return KIND_STYLE.get(what, "")
    if kind == "cudagraphs":
        return CUDAGRAPH_STYLE.get(what, "")
    return TAG_STYLE.get(tag, "")


def row_line(row: Row, width: int, top: float) -> Text:
    """One row, styled by its tag: the same characters as `trace.detail.row_text`."""
    lead, label, value = row_parts(row, width)
    text = Text(lead)
    if label:
        text.append_text(lit(label, LABEL_STYLE.get(row.tag, "dim" if row.depth == 0 else "")))
    if row.tag == "marks":
        for i, mark in enumerate(value.split(", ")):
            if i:
                text.append(", ")
            text.append_text(lit(mark, STATUS_STYLE.get(mark, "")))
        return text
    text.append_text(lit(value, tag_style(row.tag)))
    if row.amount is not None:
        text.append(" ")
        text.append_text(bar(row.amount, top, BAR_WIDTH, "cyan" if row.depth else "bold cyan"))
    return text


def facts_line(rows: list[Row]) -> Text:
    """Inline rows side by side, styled: the same characters as `trace.detail.group_text`."""
    text = Text()
    for i, row in enumerate(rows):
        if i:
            text.append(FACT_SEP, "dim")
        if row.label:
            text.append_text(lit(row.label + " ", "dim"))
        text.append_text(lit(row.value, tag_style(row.tag)))
    return text


def section_lines(section: Section, rows: list[Row] | None = None) -> list[Text]:
    """A section's heading and rows (`rows`: those of them to show), styled; its code lines
    are not included."""
    out: list[Text] = []
    if section.heading:
        out.append(Text(""))
        out.append(lit(section.heading, HEADING_STYLE.get(section.tag, "bold underline")))
    rows = section.rows if rows is None else rows
    top = max((r.amount for r in rows if r.amount is not None), default=0.0)
    for group in row_groups(rows):
        if group[0].inline:
            out.append(facts_line(group))
        else:
            out.append(row_line(group[0], section.label_width, top))
    if section.lines and not section.language:
        out.extend(lit(line) for line in section.lines)
    return out


def headline_text(detail: Detail) -> Text:
    """The first line: the title, then its status, marks and time, styled."""
    title, rows = headline(detail)
    text = lit(title, "bold")
    for row in rows:
        text.append("  ")
        if row.tag == "marks":
            text.append_text(row_line(Row("", row.value, "marks"), 0, 0.0)[2:])
        else:
            text.append_text(
                lit(row.value, "bold" if row.tag == "duration" else tag_style(row.tag))
            )
    return text


def detail_lines(detail: Detail) -> list[Text]:
    """The whole detail as styled lines (code sections as plain lines)."""
    out = [headline_text(detail)]
    for section in detail.sections:
        if section.rows or section.lines:
            out.extend(section_lines(section, body_rows(detail, section)))
            if section.language:
                out.extend(lit(line) for line in section.lines)
    return out


def detail_doc(detail: Detail) -> Document:
    """The detail for the viewer: styled lines, or, when it has code (a kernel's source), that
    code highlighted and numbered between the sections before and after it, brought into view
    at its focus line (a kernel's ``def``)."""
    sections = [s for s in detail.sections if s.rows or s.lines]
    at = next((i for i, s in enumerate(sections) if s.language), None)
    if at is None:
        return styled_doc(detail.title, detail_lines(detail))
    code = sections[at]
    head = [headline_text(detail)]
    for section in sections[:at]:
        head.extend(section_lines(section, body_rows(detail, section)))
    head.extend(section_lines(Section(code.heading, code.tag, list(code.rows))))
    tail: list[Text] = []
    for section in sections[at + 1 :]:
        tail.extend(section_lines(section, body_rows(detail, section)))
    n = len(head)
    return Document(
        detail.title,
        code.lines,
        code.language,
        code.first_lineno,
        n + code.focus if code.focus else 0,
        regions=[(a + n, b + n, lang) for a, b, lang in code.regions],
        head=head,
        tail=tail,
    )


def kernel_doc(kernel: Kernel) -> Document:
    """The kernel's detail: its kind and compile, its source (brought into view at its
    ``def``), then what it fuses and its launch."""
    return detail_doc(kernel_detail(kernel))


# ---------------------------------------------------------------- tables and summaries


def _metric_value(key: str, value: object) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, (int, float)):
        if key.endswith("_us"):
            return f"{fmt_seconds(value / 1e6)}  ({value})"
        if key.endswith("_ms"):
            return f"{fmt_seconds(value / 1e3)}  ({value})"
        if key.endswith("_s") and "time" in key:
            return fmt_seconds(float(value))
        return str(value)
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        return repr(value)


def metrics_table(meta: dict) -> list[Text]:
    """Timings first, then the rest, as aligned key/value rows."""
    keys = [k for k in meta if isinstance(k, str)]
    timing = [k for k in keys if "time" in k or k.endswith(("_us", "_s", "_ms"))]
    rest = [k for k in keys if k not in timing]
    width = min(max((len(k) for k in keys), default=10), 48)
    out: list[Text] = []
    for heading, group in (("timings", timing), ("other", rest)):
        if not group:
            continue
        out.append(Text(heading, style="bold underline"))
        for key in group:
            value = meta[key]
            empty = value in (None, "", [], {}, 0)
            row = lit(key.ljust(width), "dim" if empty else "bold")
            row.append("  ")
            row.append(lit(_metric_value(key, value), "dim" if empty else ""))
            out.append(row)
        out.append(Text(""))
    return out


def status_text(status: str) -> Text:
    return Text(status, style=STATUS_STYLE.get(status, ""))


def mark_text(name: str) -> Text:
    """``✓ ok``, ``? no metrics``, ``↻ recompile``: a status or mark with its word."""
    return Text(f"{STATUS_MARK.get(name, '?')} {name}", style=STATUS_STYLE.get(name, ""))


def marks_text(marks: Sequence[str], words: bool = True) -> Text:
    """A compile's or frame's marks: ``↻ recompile  ● cache hit`` (symbols only: ``↻●``)."""
    text = Text()
    for mark in marks:
        if words and text:
            text.append("  ")
        if words:
            text.append_text(mark_text(mark))
        else:
            text.append(STATUS_MARK.get(mark, "?"), style=STATUS_STYLE.get(mark, ""))
    return text


def cudagraphs_text(found: CudaGraphs) -> Text:
    """``◆ cudagraphs``, ``◈ cudagraphs (partly)``, ``◇ no cudagraphs``: the tree's mark."""
    return Text(f"{CUDAGRAPH_SYMBOL[found.state]} {found.mark}", style=CUDAGRAPH_STYLE[found.state])


def verdict_text(comp: Compile) -> Text:
    """Its status and marks: ``ok  ↻ recompile  ● cache hit``."""
    text = status_text(comp.status)
    if comp.marks:
        text.append("  ")
        text.append_text(marks_text(comp.marks))
    return text


def elide_middle(text: Text, width: int) -> Text:
    """`text` in at most `width` cells, its middle left out (``torch_dyn…at_13 (x.py:13)``):
    both ends of a long name say the most."""
    if text.cell_len <= width:
        return text
    if width <= 1:
        return Text("…"[:width])
    plain = text.plain
    head, cells = 0, 0
    while head < len(plain) and cells + cell_len(plain[head]) <= width // 2:
        cells += cell_len(plain[head])
        head += 1
    tail = len(plain)
    while tail > head and cells + cell_len(plain[tail - 1]) <= width - 1:
        tail -= 1
        cells += cell_len(plain[tail])
    out = text[:head]
    out.append("…", style="dim")
    out.append_text(text[tail:])
    return out


# Parts of a tree label that give way when it is wider than the pane (`fit_label`): words
# beside a mark's symbol go first (the legend says what the symbols mean), then the middle
# of the name. What stays: the id, the marks, the time.
FIT_WORD = Style(meta={"fit": "word"})
FIT_NAME = Style(meta={"fit": "name"})


def _fit_spans(text: Text, part: str) -> list[tuple[int, int]]:
    return [
        (span.start, span.end)
        for span in text.spans
        if isinstance(span.style, Style) and span.style.meta.get("fit") == part
    ]


def fit_label(text: Text, width: int) -> Text:
    """`text` in at most `width` cells: without its FIT_WORD words, then with its FIT_NAME
    name elided in the middle, then cut at the end."""
    if text.cell_len <= width:
        return text
    words = _fit_spans(text, "word")
    if words:
        kept, pos = Text(), 0
        for start, end in sorted(words):
            kept.append_text(text[pos:start])
            pos = max(pos, end)
        kept.append_text(text[pos:])
        text = kept
        if text.cell_len <= width:
            return text
    names = _fit_spans(text, "name")
    if names:
        start, end = names[0]
        name = text[start:end]
        room = width - (text.cell_len - name.cell_len)
        if room >= 6:
            out = text[:start]
            out.append_text(elide_middle(name, room))
            out.append_text(text[end:])
            return out
    return elide_end(text, width)


def elide_end(text: Text, width: int) -> Text:
    """`text` in at most `width` cells, its end cut (``…``)."""
    if text.cell_len <= width:
        return text
    out = text.copy()
    out.truncate(width, overflow="ellipsis")
    return out


def bar(value: float, top: float, width: int, style: str) -> Text:
    """A horizontal bar with eighth-block resolution."""
    if top <= 0 or width <= 0:
        return Text("")
    cells = max(0.0, min(1.0, value / top)) * width
    full = int(cells)
    part = " ▏▎▍▌▋▊▉"[int((cells - full) * 8)]
    text = "█" * full + (part if part != " " else "")
    if not text and value > 0:
        text = "▏"
    return Text(text.ljust(width), style=style)


FINDING_ROWS = 5  # findings the overview lists
SEVERITY_STYLES = {"error": "bold red", "warning": "bold yellow", "info": "cyan"}


def findings_summary(found: Sequence[Finding] | None, keys: KeyNames | None = None) -> list[Text]:
    """The worst findings first, for the top of the overview (nothing until they are made)."""
    if not found:
        return []
    out = [
        Text.assemble(
            (f"findings ({len(found)}), worst first", "bold underline"),
            (f"  ({key_of(keys, 'view.findings')}: each with its evidence)", "dim"),
        )
    ]
    for finding in found[:FINDING_ROWS]:
        out.append(
            Text.assemble(
                "  ",
                lit(finding.severity.ljust(8), SEVERITY_STYLES[finding.severity]),
                lit(finding.title, "bold"),
            )
        )
        if finding.fix:
            out.append(Text.assemble("          fix: ", lit(finding.fix, "dim")))
    if len(found) > FINDING_ROWS:
        out.append(
            Text(
                f"  … {len(found) - FINDING_ROWS} more ({key_of(keys, 'view.findings')} lists them all)"
            )
        )
    out.append(Text(""))
    return out


def stacks_summary(overview: Overview) -> list[Text]:
    """The stack tree (tlparse's stack trie), its first rows, for the overview (or nothing)."""
    if not overview.stacks:
        return []
    out = [Text(""), Text(stacks_title(overview), style="bold underline")]
    for row in overview.stacks:
        out.append(
            Text.assemble(
                *(lit(text, style) for text, style in stack_row_parts(row, overview.many_ranks))
            )
        )
    more = stacks_more(overview)
    if more:
        out.append(lit(f"  {more}", "dim"))
    return out


def crash_summary(overview: Overview, keys: KeyNames | None = None) -> list[Text]:
    """ "The run crashed" and its first errors, for the top of the overview (or nothing)."""
    if not overview.errors_total:
        return []
    total = overview.errors_total
    out = [
        Text(
            f"The run crashed: {total} error(s)  ({key_of(keys, 'view.errors')} for all)",
            style="bold red",
        )
    ]
    for error in overview.errors:
        out.append(Text.assemble("  ", lit(error.headline, "red")))
        if error.at:
            out.append(Text.assemble("    at ", lit(error.at, "dim")))
    if total > len(overview.errors):
        out.append(Text(f"  … {total - len(overview.errors)} more", style="dim"))
    return out


def error_doc(error: Error) -> Document:
    """One error: where it came from, its exception, its stack and the traceback as printed."""
    where = "run.json" if error.origin == "run.json" else f"line {error.lineno}"
    rank = "-" if error.rank is None else str(error.rank)
    lines = [
        Text.assemble(lit(error.error_type, "bold red")),
        *lit_lines(error.message),
        Text.assemble(
            ("rank ", "dim"), lit(rank), ("  from ", "dim"), lit(error.where), " ", (where, "dim")
        ),
    ]
    if error.stack:
        lines.append(Text(""))
        lines.append(Text("stack (most recent call last)", style="bold underline"))
        lines.extend(Text.assemble("  ", lit(frame)) for frame in error.stack[-40:])
    if error.text:
        lines.append(Text(""))
        lines.append(Text("as printed", style="bold underline"))
        lines.extend(lit(line) for line in error.text.split("\n")[:400])
    return styled_doc(f"error · {error.error_type}", lines)


def value_text(value: object) -> str:
    """A summary value in words: ``hit 0 · miss 8``, ``0, 1``, ``none``."""
    if isinstance(value, dict):
        return " · ".join(f"{k} {value_text(v)}" for k, v in value.items()) or "none"
    if isinstance(value, (list, tuple)):
        return ", ".join(value_text(v) for v in value) or "none"
    return str(value)


def model_summary(
    model: Model,
    title: str,
    summary: dict[str, Any] | None = None,
    state: InputState | None = None,
    ranks: RankSet = None,
    found: Sequence[Finding] | None = None,
    keys: KeyNames | None = None,
    measured: RuntimeJoin | None = None,
) -> list[Text]:
    """The overview: what a joined profile (`measured`) measured, then the worst `found`
    findings, `summary` (model.summary_counts(), the
    status bar's snapshot), the top breaks and slowest compiles; `state` says the input is
    empty (see `input_state`); `ranks`, the ranks picked with `#` (None: all); `keys`, the
    screen's keys, which its hints name (None: `tcview open`'s)."""
    s = model.summary_counts() if summary is None else summary
    overview = build_overview(model, ranks, read=False)  # on the UI thread: reads nothing
    torch = torch_line(model)  # the torch_version artifacts, kept at ingest: reads nothing
    out = [Text.assemble((safe_line(title), "bold"), (safe_line(torch and f"  {torch}"), "dim"))]
    if measured is not None:
        out.extend(measured_summary(measured, keys))
    out.extend(findings_summary(found, keys))
    out.extend(crash_summary(overview, keys))
    if state is not None:
        out.append(lit(state.text, "bold yellow"))
        if state.help:
            out.append(Text(state.help, style="dim"))
    if ranks is not None:
        out.append(Text(counts_line({**s, **counts_in(model, ranks)}), style="bold"))
        pick, label = key_of(keys, "app.rank-filter"), ranks_label(sorted(ranks))
        out.append(lit(f"{label} only ({pick} to pick ranks); the table counts all", "cyan"))
    else:
        out.append(Text(counts_line(s), style="bold"))
    if is_export(model):
        counts = export_counts(model)
        out.append(
            Text(
                "torch.export trace (it compiles nothing with Dynamo): X for the export report"
                f" ({counts['guards']} guard(s), {counts['data_dependent_errors']} data-dependent"
                f" error(s), {counts['fake_kernel_problems']} fake-kernel problem(s))",
                style="bold magenta",
            )
        )
    out.extend(stacks_summary(overview))
    out.append(Text(""))
    if state is None:
        for key, value in s.items():
            out.append(Text.assemble(lit(str(key).ljust(16), "dim"), lit(value_text(value))))
    if overview.breaks:
        every = key_of(keys, "view.breaks")
        out.append(Text(""))
        out.append(Text(f"top graph breaks  ({every} for all)", style="bold yellow underline"))
        for g in overview.breaks:
            out.append(Text.assemble(f"  {g.count:>4}× ", lit(g.reason, "bold")))
            if g.location:
                out.append(Text.assemble("        at ", lit(g.location, "yellow")))
    if overview.slowest:
        out.append(Text(""))
        note = f" ({overview.time_note})" if overview.time_note else ""
        every = key_of(keys, "view.time")
        out.append(Text(f"slowest compiles{note}  ({every} for all)", style="bold underline"))
        for row in overview.slowest:
            label = f"rank {row.rank}  {row.frame}" if overview.many_ranks else row.frame
            out.append(
                Text.assemble(
                    f"  {fmt_seconds(row.seconds):>8}  ",
                    lit(row.compile.ljust(8), "bold"),
                    " ",
                    lit(label),
                )
            )
    out.extend(profiles_found(overview.profiles) if measured is None else [])
    if overview.skipped_total:
        out.append(Text(""))
        out.append(Text(f"skipped files ({overview.skipped_total})", style="bold underline"))
        for path, why in overview.skipped:
            out.append(Text.assemble("  ", lit(path), "  ", lit(why, "dim")))
    out.append(Text(""))
    out.append(Text(overview_hint(keys), style="dim"))
    return out
