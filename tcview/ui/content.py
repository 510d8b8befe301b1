"""What the viewer shows for each item: plain data (lines, language, focus), no widgets.

Everything here reads the model only; the caller holds the model lock.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from rich.text import Text
from textual.cache import LRUCache

from ..safe import safe_line
from ..trace import FusionDecision, Model, TextLog
from ..trace.compile_id import FIRST_EPISODE
from ..trace.export import export_counts, is_export
from ..trace.facts import short_guard
from ..trace.kernels import KernelSpan, split_output_code
from ..trace.model import (
    MD5_BLANK_LINES,
    MD5_MISMATCH,
    Compile,
    Error,
    Frame,
    Kernel,
    Record,
    stack_frames,
)
from ..trace.summary import counts_line

GRAPH_KINDS = frozenset(
    """dynamo_output_graph aot_forward_graph aot_backward_graph aot_joint_graph
    aot_inference_graph inductor_pre_grad_graph inductor_post_grad_graph graph_dump
    compiled_autograd_graph optimize_ddp_split_graph optimize_ddp_split_child
    before_pre_grad_graph after_pre_grad_graph before_joint_graph after_joint_graph
    before_post_grad_graph fx_graph_runnable""".split()
)
METRIC_KINDS = frozenset(
    """compilation_metrics bwd_compilation_metrics compilation_metrics_runtime
    bwd_compilation_metrics_runtime""".split()
)
JSON_LIMIT = 32 << 20
SUMMARY_ROWS = 500  # compiles listed in a frame summary
FUSION_ROWS = 40  # fused pairs, and reasons for not fusing, listed in a compile's detail
# A compile's status (model.STATUSES) and its marks (model.MARKS): a style and a symbol each.
STATUS_STYLE = {
    "ok": "green",
    "empty graph": "magenta",
    "graph break": "yellow",
    "failed": "bold red",
    "recompile": "cyan",
    "cache hit": "blue",
}
STATUS_MARK = {
    "ok": "✓",
    "empty graph": "∅",
    "graph break": "✂",
    "failed": "✗",
    "recompile": "↻",
    "cache hit": "●",
}
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
    """Lines for the viewer. `styled` lines (tables, summaries) bypass highlighting."""

    title: str
    lines: list[str] = field(default_factory=list)
    language: str | None = None
    first_lineno: int = 1
    focus: int = 0  # 0-based line to bring into view
    styled: list[Text] | None = None
    regions: list[tuple[int, int, str]] = field(default_factory=list)  # (first, last, lang)
    numbered: bool = True
    marked: frozenset[int] = frozenset()  # 0-based lines shown marked (a kernel's graph nodes)

    @property
    def count(self) -> int:
        return len(self.styled) if self.styled is not None else len(self.lines)

    def language_at(self, index: int) -> str | None:
        for first, last, lang in self.regions:
            if first <= index <= last:
                return lang
        return self.language

    def plain(self, index: int) -> str:
        if self.styled is not None:
            return self.styled[index].plain
        return self.lines[index]


# How the tagged lines of reports (provenance, export, diffs) are styled, by tag.
TAG_STYLE = {
    "title": "bold",
    "heading": "bold underline",
    "field": "",
    "code": "cyan",
    "dim": "dim",
    "warn": "yellow",
    "ok": "green",
    "kernel": "bold magenta",
    "issue": "bold red",
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
    """A report line: trace text made safe, styled by its tag, marked spans stressed. The
    style is a span, not the Text's base style: the viewer renders lines without the base."""
    line = lit(text)
    style = TAG_STYLE.get(tag, "")
    if style:
        line.stylize(style, 0, len(line))
    if len(line.plain) == len(text):  # safe_line kept the length: the spans still fit
        for start, end in marks:
            line.stylize(MARK_STYLE, start, end)
    return line


def lines_doc(title: str, lines: Sequence[tuple[str, str]]) -> Document:
    """A document of (tag, text) lines (provenance, the export report)."""
    return styled_doc(title, [tagged_text(tag, text) for tag, text in lines])


def rows_doc(title: str, rows: Sequence[tuple[str, str, list[tuple[int, int]]]]) -> Document:
    """A document of (tag, text, marks) rows (the diffs)."""
    return styled_doc(title, [tagged_text(tag, text, marks) for tag, text, marks in rows])


def lit(text: object, style: str = "") -> Text:
    """Trace text as a literal, terminal-safe Text (never parsed as markup)."""
    return Text(safe_line(str(text)), style=style)


def styled_doc(title: str, lines: list[Text]) -> Document:
    return Document(title, styled=lines, numbered=False)


# ---------------------------------------------------------------- output code cache


class OutputCodeCache:
    """Decoded output code and its kernel spans, for the last few records shown.

    Keyed by the record and its end (a live record may still grow); the value holds the
    record, so its id cannot be reused while cached. Workers and the UI thread share it.
    """

    def __init__(self, size: int = 6) -> None:
        self._items: LRUCache[tuple[int, int], tuple[Record, list[str], list[KernelSpan]]]
        self._items = LRUCache(size)
        self._lock = threading.Lock()  # LRUCache is not thread-safe

    def get(self, record: Record) -> tuple[list[str], list[KernelSpan]]:
        key = (id(record), record.end)
        with self._lock:
            hit = self._items.get(key)
        if hit is not None and hit[0] is record:
            return hit[1], hit[2]
        text = record.payload()
        lines, spans = text.split("\n"), split_output_code(text)
        with self._lock:
            self._items.set(key, (record, lines, spans))
        return lines, spans


OUTPUT_CODES = OutputCodeCache()


def cpp_regions(spans: list[KernelSpan], offset: int = 0) -> list[tuple[int, int, str]]:
    return [(s.start + 1 - offset, s.end - 1 - offset, "cpp") for s in spans if s.kind == "cpp"]


# ---------------------------------------------------------------- records


def record_title(rec: Record) -> str:
    parts = [record_name(rec), rec.compile_text]
    try:
        parts.append(f"line {rec.lineno}")
    except Exception:  # noqa: BLE001 - lineno is lazy and may need a read
        pass
    return " · ".join(p for p in parts if p)


def record_name(rec: Record) -> str:
    label = rec.label
    return {
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
    }.get(label, label)


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
        lines, spans = OUTPUT_CODES.get(rec)
        return Document(title, lines, "python", regions=cpp_regions(spans))
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

_DEF = re.compile(r"^\s*(?:async\s+)?def \w+\(")
_CPP_ENTRY = re.compile(r'^\s*(?:extern "C"|void kernel\()')


def kernel_span(kernel: Kernel) -> tuple[list[str], KernelSpan | None]:
    lines, spans = OUTPUT_CODES.get(kernel.output)
    same = [s for s in spans if s.name == kernel.name]
    if not same:
        return lines, None
    index = kernel.index
    exact = [s for i, s in enumerate(spans) if s.name == kernel.name and i == index]
    return lines, (exact or same)[0]


def kernel_doc(kernel: Kernel) -> Document:
    """The kernel's own lines of the output code, scrolled to its ``def``."""
    lines, span = kernel_span(kernel)
    comp = kernel.compile.id_text if kernel.compile is not None else kernel.output.compile_text
    title = f"kernel {kernel.name} · {kernel.kind} · {comp}"
    if span is None:
        return Document(title + " · not found in output code", lines, "python")
    body = lines[span.start : span.end + 1]
    focus = next((i for i, ln in enumerate(body) if _DEF.match(ln)), None)
    if focus is None:
        focus = next((i for i, ln in enumerate(body) if _CPP_ENTRY.match(ln)), 0)
    launch = f" · launch #{span.launch + 1}" if span.launch is not None else " · not launched"
    title += f" · lines {span.start + 1}-{span.end + 1}{launch}"
    regions = [(1, len(body) - 2, "cpp")] if span.kind == "cpp" else []
    return Document(title, body, "python", span.start + 1, focus, regions=regions)


# ---------------------------------------------------------------- tables and summaries


def fmt_seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:.0f}s"
    if value >= 1:
        return f"{value:.2f}s"
    return f"{value * 1000:.0f}ms" if value >= 0.001 else f"{value * 1e6:.0f}µs"


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


def marks_text(marks: Sequence[str], words: bool = True) -> Text:
    """A compile's or frame's marks: ``↻ recompile  ● cache hit`` (symbols only: ``↻●``)."""
    text = Text()
    for mark in marks:
        if words and text:
            text.append("  ")
        shown = f"{STATUS_MARK.get(mark, '?')} {mark}" if words else STATUS_MARK.get(mark, "?")
        text.append(shown, style=STATUS_STYLE.get(mark, ""))
    return text


def verdict_text(comp: Compile) -> Text:
    """Its status and marks: ``ok  ↻ recompile  ● cache hit``."""
    text = status_text(comp.status)
    if comp.marks:
        text.append("  ")
        text.append_text(marks_text(comp.marks))
    return text


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


def fusion_of(model: Model | None, comp: Compile) -> list[FusionDecision]:
    """Inductor's fusion decisions for this compile, from the TORCH_LOGS text (a TextLog, or
    a run directory's `text`). The trace's compile and the log's are separate objects: they
    are matched by compile id."""
    log = model if isinstance(model, TextLog) or model is None else model.text
    if log is None:
        return []
    return [
        d
        for d in log.fusion_decisions()
        if d.compile is comp or (d.compile is not None and d.compile.id_text == comp.id_text)
    ]


def fusion_lines(decisions: Sequence[FusionDecision]) -> list[Text]:
    """The fused pairs, then the reasons the others were not fused, with counts."""
    fused = [d for d in decisions if d.fused]
    why = Counter(d.reason or "(no reason given)" for d in decisions if not d.fused)
    out = [
        Text(""),
        Text(
            f"fusion decisions ({len(fused)} fused, {len(decisions) - len(fused)} not)",
            style="bold underline",
        ),
    ]
    for d in fused[:FUSION_ROWS]:
        out.append(Text.assemble(("  fused  ", "green"), lit(f"{d.first} + {d.second}")))
    if len(fused) > FUSION_ROWS:
        out.append(Text(f"  … {len(fused) - FUSION_ROWS} more fused", style="dim"))
    for reason, n in why.most_common(FUSION_ROWS):
        out.append(Text.assemble((f"  {n:>5}× not fused: ", "dim"), lit(reason)))
    return out


def compile_summary(comp: Compile, fusion: Sequence[FusionDecision] = ()) -> list[Text]:
    out: list[Text] = []
    head = Text.assemble(("compile ", "bold"), lit(comp.id_label, "bold"), "  ", verdict_text(comp))
    t = comp.compile_time_s
    if t is not None:
        head.append(f"  {fmt_seconds(t)}", style="bold")
    out.append(head)
    if comp.episode != FIRST_EPISODE:
        out.append(
            Text.assemble(
                ("episode   ", "dim"),
                f"{comp.episode}: torch._dynamo.reset() made the process number its compiles "
                "from 0 again",
            )
        )
    frame = comp.frame
    if frame is not None:
        out.append(Text.assemble(("frame     ", "dim"), lit(frame.label), f"  [{frame.id_label}]"))
    m = comp.metrics or {}
    if m.get("co_name"):
        where = f"{m.get('co_name')}  {m.get('co_filename')}:{m.get('co_firstlineno')}"
        out.append(Text.assemble(("code      ", "dim"), lit(where)))
    counts = []
    for key, what in (
        ("graph_op_count", "ops"),
        ("graph_node_count", "nodes"),
        ("guard_count", "guards"),
        ("graph_input_count", "inputs"),
    ):
        if isinstance(m.get(key), int):
            counts.append(f"{m[key]} {what}")
    if counts:
        out.append(Text.assemble(("graph     ", "dim"), " · ".join(counts)))
    rc = comp.recompile
    if rc is not None:
        out.append(Text(""))
        out.append(Text("recompiled because", style="bold cyan underline"))
        for reason in rc.reasons or ["(no reason recorded)"]:
            out.append(Text.assemble("  • ", lit(short_guard(reason) or reason)))
    if comp.breaks:
        out.append(Text(""))
        out.append(Text(f"graph breaks ({len(comp.breaks)})", style="bold yellow underline"))
        for gb in comp.breaks:
            out.append(Text.assemble("  • ", lit(gb.reason, "bold")))
            if gb.location:
                out.append(Text.assemble("    at ", lit(gb.short_location, "yellow")))
            if gb.explanation:
                out.append(Text.assemble("    ", lit(gb.explanation, "dim")))
            for hint in gb.hints[:3]:
                out.append(Text.assemble("    hint: ", lit(hint, "green")))
    restarts = comp.restart_reasons
    if restarts and not comp.breaks:
        out.append(Text(""))
        out.append(Text("restarts", style="bold yellow underline"))
        for reason in restarts:
            out.append(Text.assemble("  • ", lit(reason)))
    if comp.failures:
        out.append(Text(""))
        out.append(Text("failure", style="bold red underline"))
        for f in comp.failures:
            out.append(Text.assemble("  ", lit(f.fail_type, "bold red"), ": ", lit(f.reason)))
            if f.location:
                out.append(Text.assemble("    at ", lit(f.location)))
    phases = phase_times(comp)
    if phases:
        out.append(Text(""))
        out.append(Text("where the time went", style="bold underline"))
        top = max(v for _, v, _ in phases)
        # The chromium events nest deep and name every tiny pass: keep what matters.
        phases = [p for p in phases if p[2] <= 5 and p[1] >= max(0.005 * top, 0.0005)]
        for label, value, depth in phases:
            label = label if len(label) <= 40 else label[:39] + "…"
            row = Text("  " * depth + label.ljust(max(26, 44 - 2 * depth)))
            row.append(fmt_seconds(value).rjust(8) + " ")
            row.append(bar(value, top, 30, "cyan" if depth else "bold cyan"))
            out.append(row)
    if comp.cache:
        parts = ", ".join(f"{c.cache} {c.result}" for c in comp.cache)
        out.append(Text(""))
        out.append(Text.assemble(("cache     ", "dim"), lit(parts)))
    if comp.kernels:
        kinds = Counter(k.kind for k in comp.kernels)
        desc = ", ".join(f"{n} {k}" for k, n in kinds.most_common())
        out.append(Text(""))
        out.append(
            Text.assemble(
                ("kernels   ", "dim"),
                f"{len(comp.kernels)} in {len(comp.output_codes)} output code(s): {desc}",
            )
        )
    if fusion:
        out.extend(fusion_lines(fusion))
    if frame is not None and frame.stack:
        out.append(Text(""))
        out.append(Text("user stack", style="bold underline"))
        for sf in frame.stack[-12:]:
            out.append(Text.assemble("  ", lit(f"{sf.filename}:{sf.line}"), " in ", lit(sf.name)))
    return out


def frame_summary(frame: Frame) -> list[Text]:
    status = status_text(frame.status)
    if frame.marks:
        status.append("  ")
        status.append_text(marks_text(frame.marks))
    out = [
        Text.assemble(("frame ", "bold"), lit(frame.label, "bold"), f"  [{frame.id_label}]"),
        Text.assemble(("status  ", "dim"), status),
        Text.assemble(("compiles ", "dim"), str(len(frame.compiles))),
        Text(""),
        Text("compiles", style="bold underline"),
    ]
    for comp in frame.compiles[:SUMMARY_ROWS]:
        row = Text.assemble("  ", lit(comp.id_label.ljust(8), "bold"), " ")
        row.append_text(status_text(comp.status.ljust(12)))
        row.append(fmt_seconds(comp.compile_time_s).rjust(8))
        if comp.marks:
            row.append("  ")
            row.append_text(marks_text(comp.marks))
        out.append(row)
        if comp.recompile is not None:
            for reason in comp.recompile.reasons[:3]:
                out.append(Text.assemble("      guard failed: ", lit(short_guard(reason), "cyan")))
        for gb in comp.breaks[:3]:
            out.append(Text.assemble("      break: ", lit(gb.reason, "yellow")))
    if len(frame.compiles) > SUMMARY_ROWS:
        out.append(Text(f"  … {len(frame.compiles) - SUMMARY_ROWS} more", style="dim"))
    if frame.stack:
        out.append(Text(""))
        out.append(Text("stack", style="bold underline"))
        for sf in frame.stack[-16:]:
            out.append(Text.assemble("  ", lit(f"{sf.filename}:{sf.line}"), " in ", lit(sf.name)))
    return out


ERROR_ROWS = 5  # errors the overview lists (e lists them all)


def crash_summary(model: Model) -> list[Text]:
    """ "The run crashed" and its first errors, for the top of the overview (or nothing)."""
    errors = model.run_errors()
    if not errors:
        return []
    out = [Text(f"The run crashed: {len(errors)} error(s)  (e for all)", style="bold red")]
    for error in errors[:ERROR_ROWS]:
        out.append(Text.assemble("  ", lit(error.headline, "red")))
        if error.stack:
            out.append(Text.assemble("    at ", lit(error.stack[-1], "dim")))
    if len(errors) > ERROR_ROWS:
        out.append(Text(f"  … {len(errors) - ERROR_ROWS} more", style="dim"))
    return out


def error_doc(error: Error) -> Document:
    """One error: where it came from, its exception, its stack and the traceback as printed."""
    where = "run.json" if error.origin == "run.json" else f"line {error.lineno}"
    rank = "-" if error.rank is None else str(error.rank)
    lines = [
        Text.assemble(lit(error.error_type, "bold red")),
        lit(error.message),
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


def model_summary(
    model: Model,
    title: str,
    summary: dict[str, Any] | None = None,
    state: InputState | None = None,
) -> list[Text]:
    """The overview: `summary` (model.summary_counts(), the status bar's snapshot), the top
    breaks and slowest compiles; `state` says the input is empty (see `input_state`)."""
    s = model.summary_counts() if summary is None else summary
    out = [Text(safe_line(title), style="bold")]
    out.extend(crash_summary(model))
    if state is not None:
        out.append(lit(state.text, "bold yellow"))
        if state.help:
            out.append(Text(state.help, style="dim"))
    out.append(Text(counts_line(s), style="bold"))
    if is_export(model):
        counts = export_counts(model)
        out.append(
            Text(
                "torch.export trace (it compiles nothing with Dynamo): x for the export report"
                f" ({counts['guards']} guard(s), {counts['data_dependent_errors']} data-dependent"
                f" error(s), {counts['fake_kernel_problems']} fake-kernel problem(s))",
                style="bold magenta",
            )
        )
    out.append(Text(""))
    if state is None:
        for key, value in s.items():
            out.append(Text.assemble(lit(str(key).ljust(16), "dim"), lit(value)))
    groups = model.grouped_breaks()
    if groups:
        out.append(Text(""))
        out.append(Text("top graph breaks  (b for all)", style="bold yellow underline"))
        for g in groups[:5]:
            out.append(Text.assemble(f"  {g.count:>4}× ", lit(g.reason, "bold")))
            if g.location:
                out.append(Text.assemble("        at ", lit(g.first.short_location, "yellow")))
    timed = [c for c in model.compiles if c.compile_time_s]
    if timed:
        out.append(Text(""))
        out.append(Text("slowest compiles  (t for all)", style="bold underline"))
        for comp in sorted(timed, key=lambda c: -(c.compile_time_s or 0))[:5]:
            label = comp.frame.label if comp.frame is not None else ""
            out.append(
                Text.assemble(
                    f"  {fmt_seconds(comp.compile_time_s):>8}  ",
                    lit(comp.id_label.ljust(8), "bold"),
                    " ",
                    lit(label),
                )
            )
    skipped = model.skipped
    if skipped:
        out.append(Text(""))
        out.append(Text(f"skipped files ({len(skipped)})", style="bold underline"))
        for path, why in skipped[:20]:
            out.append(Text.assemble("  ", lit(path), "  ", lit(why, "dim")))
    out.append(Text(""))
    out.append(
        Text(
            "? help · b breaks · r recompiles · K kernels · t time · i provenance"
            " · d diff · ctrl+p jump",
            style="dim",
        )
    )
    return out
