"""Autotuning (``mode="max-autotune"``): per compile, each autotuned op, its choices by time,
the winner, and the template kernel the winner became in the output code.

Two sources:

- the trace: a ``{op}_template_autotuning`` chromium event pair per op (its end event's
  ``autotune_choices_stats`` names the winner, its description and time, and the number of
  choices) and ``{op}_template_precompiling`` before it: the times, and the winner;
- a TORCH_LOGS capture (a run directory's ``torch_logs.txt``): the choice tables torch writes
  to stderr, without the log prefix and without a compile id::

      AUTOTUNE addmm(512x4096, 512x1024, 1024x4096)
      strides: [0, 1], [1024, 1], [1, 1024]
      dtypes: torch.float16, torch.float16, torch.float16
        triton_mm_18 0.0208 ms 100.0% ACC_TYPE='tl.float32', BLOCK_K=64, …, num_warps=8
        …
      SingleProcess AUTOTUNE benchmarking takes 0.4166 seconds and 6.9648 seconds precompiling for 21 choices

  The text indexer keeps each table's first line with the compile of the records before it
  (`model.PlacedLine`); the rows are read from disk here.

Everything reads text; nothing is run. Reading is from disk: build off the UI thread.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from tcview.analysis.kernels import OUTPUT_CODES
from tcview.model.metadata import BACKWARD_METRICS, FRAME_METRICS
from tcview.model.objects import TEXT_FORMAT, Compile, Kernel, Model, PlacedLine

AUTOTUNE_EVENT = "_template_autotuning"
PRECOMPILE_EVENT = "_template_precompiling"
_RANK = r"(?:\[rank\d+\]:)?"
_TABLE = re.compile(_RANK + r"AUTOTUNE (\w+)\((.*)\)\s*$")
_STRIDES = re.compile(_RANK + r"strides: (.*)$")
_DTYPES = re.compile(_RANK + r"dtypes: (.*)$")
_ROW = re.compile(_RANK + r"  (\S+) (\S+) ms (?:([0-9.]+)%|<DIVIDED BY ZERO ERROR>) ?(.*?)\s*$")
_TOTAL = re.compile(
    _RANK + r"(?:SingleProcess|SubProcess) AUTOTUNE benchmarking takes ([0-9.]+) seconds and "
    r"([0-9.]+) seconds precompiling for (\d+) choices"
)
_DESC_ITEM = re.compile(r"(\w+)=('[^']*'|[^,]+)")
_CONFIG_ARGS = re.compile(r"'config_args': \{([^}]*)\}")
_CONFIG_ITEM = re.compile(r"'(\w+)': ('[^']*'|[^,]+)")
_DECORATOR = re.compile(r"^\s*(num_warps|num_stages)=(\d+),?\s*$")
TABLE_ROWS = 200  # rows read after a table's first line, at most
# What says a config: the keys compared between a winner's description and a template kernel.
CONFIG_KEYS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_stages", "num_warps")
NO_TABLES = (
    "the choice tables are not in the trace: torch writes them to stderr (with max-autotune;"
    " TORCH_LOGS=autotuning or +inductor logs the rest of autotuning). Open the run directory"
    " with its torch_logs.txt (what tcview run captures) to see every choice"
)


@dataclass
class Choice:
    """One candidate of an autotuned op: its name (``triton_mm_18``, ``bias_addmm``), its
    time (None when it failed: ``inf``), and its config."""

    name: str
    ms: float | None
    desc: str = ""

    @property
    def is_template(self) -> bool:
        return self.name.startswith(("triton_", "cpp_", "cutlass", "cuda_", "rocm_"))


@dataclass
class AutotunedOp:
    """One op that max-autotune benchmarked, in one compile."""

    op: str  # addmm, mm, bmm, …
    shapes: str = ""  # its inputs: ``512x4096, 512x1024, 1024x4096``
    strides: str = ""
    dtypes: str = ""
    choices: list[Choice] = field(default_factory=list)  # the table's, fastest first
    winner: str | None = None
    winner_desc: str = ""
    winner_ms: float | None = None
    num_choices: int | None = None
    autotune_s: float | None = None  # benchmarking the choices
    precompile_s: float | None = None  # compiling them first
    kernel: Kernel | None = None  # the template kernel it produced in the output code
    sources: list[str] = field(default_factory=list)  # "trace", "TORCH_LOGS"
    lineno: int = 0  # the table's line in the capture

    @property
    def label(self) -> str:
        return f"{self.op}({self.shapes})"

    @property
    def extern(self) -> bool:
        """The winner is not a template: the graph calls an ATen kernel (cuBLAS, MKL)."""
        return self.winner is not None and not Choice(self.winner, None).is_template


# ---------------------------------------------------------------------- the trace


def trace_ops(comp: Compile) -> list[AutotunedOp]:
    """The ops of a compile's ``*_template_autotuning`` chromium events (read from disk)."""
    try:
        events = comp.file.chromium_payloads(comp.chromium_at) if comp.chromium_at else []
    except (OSError, ValueError):
        return []
    ops: list[AutotunedOp] = []
    started: dict[str, float] = {}  # event name -> its B time stamp
    precompiled: dict[str, float] = {}  # op -> the last precompile's seconds
    for ev in events:
        name, ph, ts = str(ev.get("name", "")), ev.get("ph"), ev.get("ts")
        if not name.endswith((AUTOTUNE_EVENT, PRECOMPILE_EVENT)) or not _number(ts):
            continue
        if ph == "B":
            started[name] = float(ts)
            continue
        if ph != "E" or name not in started:
            continue
        seconds = max(0.0, (float(ts) - started.pop(name)) / 1e6)
        if name.endswith(PRECOMPILE_EVENT):
            precompiled[name[: -len(PRECOMPILE_EVENT)]] = seconds
            continue
        op = name[: -len(AUTOTUNE_EVENT)]
        args = ev.get("args")
        args = args if isinstance(args, dict) else {}
        item = AutotunedOp(
            op,
            str(args.get("autotune_shape") or ""),
            str(args.get("autotune_strides") or ""),
            str(args.get("autotune_dtypes") or ""),
            autotune_s=seconds,
            precompile_s=precompiled.pop(op, None),
            sources=["trace"],
        )
        stats = _stats(args.get("autotune_choices_stats"))
        item.winner = _str(stats.get("best_kernel"))
        item.winner_desc = _str(stats.get("best_kernel_desc")) or ""
        best = stats.get("best_time")
        item.winner_ms = float(best) if _number(best) else None
        choices = stats.get("num_choices")
        item.num_choices = choices if isinstance(choices, int) else None
        ops.append(item)
    return ops


def _stats(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    if not isinstance(value, str):
        return {}
    try:
        parsed = json.loads(value)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


# ---------------------------------------------------------------------- the text


def table_at(model: Model, placed: PlacedLine) -> AutotunedOp | None:
    """The choice table whose first line is `placed` (its rows read from disk)."""
    other = model.other
    first = _TABLE.match(other[placed.at].text)
    if first is None:
        return None
    item = AutotunedOp(first.group(1), first.group(2), sources=["TORCH_LOGS"])
    item.lineno = placed.lineno
    end = min(len(other), placed.at + 1 + TABLE_ROWS)
    for i in range(placed.at + 1, end):
        text = other[i].text
        if m := _ROW.match(text):
            ms = _float(m.group(2))
            item.choices.append(Choice(m.group(1), ms, m.group(4)))
        elif m := _STRIDES.match(text):
            item.strides = m.group(1)
        elif m := _DTYPES.match(text):
            item.dtypes = m.group(1)
        elif m := _TOTAL.match(text):
            item.autotune_s, item.precompile_s = float(m.group(1)), float(m.group(2))
            item.num_choices = int(m.group(3))
            break
        else:
            break
    item.choices.sort(key=lambda c: (c.ms is None, c.ms if c.ms is not None else 0.0))
    if item.choices:
        best = item.choices[0]
        item.winner, item.winner_desc, item.winner_ms = best.name, best.desc, best.ms
    return item


def _float(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def placed_compile(model: Model, placed: PlacedLine) -> Compile | None:
    """The compile a table belongs to: that of the records before it, else the first record
    after it that names a compile (a table at the very start of a capture)."""
    if placed.compile is not None:
        return placed.compile
    offset = model.other[placed.at].offset
    after = [
        r for f in model.files for r in f.records if r.compile is not None and r.offset > offset
    ]
    return min(after, key=lambda r: r.offset).compile if after else None


def text_tables(model: Model | None, comp: Compile) -> list[AutotunedOp] | None:
    """The choice tables of the compile in the model's TORCH_LOGS text, in order; None when
    there is no text (a trace on its own)."""
    if model is None:
        return None
    text = model.text if model.text is not None else model
    if text.format != TEXT_FORMAT:
        return None
    same = model.text_compiles(comp)
    out = []
    for placed in text.autotune_lines:
        owner = placed_compile(text, placed)
        if owner is not None and (owner is comp or owner in same):
            table = table_at(text, placed)
            if table is not None:
                out.append(table)
    return out


# ---------------------------------------------------------------------- both, and the kernels


def autotuned_ops(comp: Compile, model: Model | None = None) -> tuple[list[AutotunedOp], bool]:
    """The compile's autotuned ops (trace events merged with the text's tables, in order),
    each with the template kernel its winner produced; and whether choice tables could be
    read (False: a trace without its TORCH_LOGS text, see `NO_TABLES`)."""
    ops = trace_ops(comp)
    tables = text_tables(model, comp)
    for table in tables or []:
        match = next(
            (
                op
                for op in ops
                if "TORCH_LOGS" not in op.sources
                and op.op == table.op
                and (not op.shapes or op.shapes == table.shapes)
            ),
            None,
        )
        if match is None:
            ops.append(table)
            continue
        match.sources.append("TORCH_LOGS")
        match.choices, match.lineno = table.choices, table.lineno
        match.strides = match.strides or table.strides
        match.dtypes = match.dtypes or table.dtypes
        if table.winner is not None:
            match.winner, match.winner_desc = table.winner, table.winner_desc or match.winner_desc
            match.winner_ms = table.winner_ms
        if match.num_choices is None:
            match.num_choices = table.num_choices
        if match.autotune_s is None:
            match.autotune_s, match.precompile_s = table.autotune_s, table.precompile_s
    link_kernels(comp, ops)
    return ops, tables is not None


def parse_desc(desc: str) -> dict[str, str]:
    """``BLOCK_K=64, num_warps=8, ACC_TYPE='tl.float32'`` -> {key: value as written}."""
    return {k: v.strip().strip("'") for k, v in _DESC_ITEM.findall(desc)}


def template_config(comp: Compile, kernel: Kernel) -> dict[str, str]:
    """A Triton template kernel's config: ``config_args`` of its ``inductor_meta`` and the
    ``num_warps``/``num_stages`` of its decorator (read from its output code)."""
    code = OUTPUT_CODES.get(kernel.output)
    span = code.span_of(kernel)
    if span is None:
        return {}
    body = code.lines[span.start : span.end + 1]
    out: dict[str, str] = {}
    for line in body:
        if m := _DECORATOR.match(line):
            out[m.group(1)] = m.group(2)
        elif "'config_args'" in line and (args := _CONFIG_ARGS.search(line)):
            out.update({k: v.strip().strip("'") for k, v in _CONFIG_ITEM.findall(args.group(1))})
    return out


def link_kernels(comp: Compile, ops: Sequence[AutotunedOp]) -> None:
    """Give each op whose winner is a Triton template the template kernel it produced: the
    first kernel of the compile, not taken yet, whose config is the winner's (block sizes,
    group, warps, stages), preferring a kernel whose name holds the op (``bmm``)."""
    templates = [k for k in comp.kernels if k.kind == "template"]
    if not templates:
        return
    configs = {id(k): template_config(comp, k) for k in templates}
    taken: set[int] = set()
    for op in ops:
        if op.winner is None or not op.winner.startswith("triton_"):
            continue
        wanted = parse_desc(op.winner_desc)
        keys = [k for k in CONFIG_KEYS if k in wanted]
        fits = [
            k
            for k in templates
            if id(k) not in taken
            and keys
            and all(configs[id(k)].get(key) == wanted[key] for key in keys)
        ]
        named = [k for k in fits if f"_{op.op}" in k.name]
        pick = named or fits
        if pick:
            op.kernel = pick[0]
            taken.add(id(pick[0]))


# The metrics records that time a compile's autotuning: the frame's, and the lazily compiled
# backward's (its own metrics context; the same compile id).
TIMED_METRICS = (FRAME_METRICS, BACKWARD_METRICS)
FUSION_EVENT = "benchmark_fused_nodes"  # the scheduler benchmarking a fusion with a template


def autotune_seconds(comp: Compile, kinds: Sequence[str] = TIMED_METRICS) -> float | None:
    """The compile's autotuning time, its backward's included: ``compile_time_autotune_time_us``
    of its metrics, into which torch adds each op's precompiling and benchmarking and the
    benchmarking of fused kernels (``benchmark_fused_nodes``)."""
    total: float | None = None
    for m in comp.metric_values:
        value = m.compile_time_autotune_time_us
        if m.kind in kinds and value is not None and value > 0:
            total = (total or 0.0) + value / 1e6
    return total


def fusion_seconds(comp: Compile) -> float | None:
    """The time spent benchmarking fused kernels (``benchmark_fused_nodes`` spans, read from
    disk); None when the trace has none."""
    try:
        events = comp.file.chromium_payloads(comp.chromium_at) if comp.chromium_at else []
    except (OSError, ValueError):
        return None
    total: float | None = None
    started: list[float] = []
    for ev in events:
        ts = ev.get("ts")
        if ev.get("name") != FUSION_EVENT or not _number(ts):
            continue
        if ev.get("ph") == "B":
            started.append(float(ts))
        elif ev.get("ph") == "E" and started:
            total = (total or 0.0) + max(0.0, (float(ts) - started.pop()) / 1e6)
    return total


@dataclass(frozen=True)
class AutotuneTime:
    """One compile's autotuning time, and what it is made of."""

    total_s: float  # the metrics' total; the ops' times where no metrics say it
    ops_s: float  # precompiling and benchmarking the autotuned ops' choices
    fusions_s: float | None  # benchmarking fused kernels
    from_metrics: bool
    backward_s: float | None = None  # the part the backward's compile spent (its metrics)

    @property
    def other_s(self) -> float:
        """What the metrics count that neither the ops nor the fusions' events show."""
        return max(0.0, self.total_s - self.ops_s - (self.fusions_s or 0.0))


def autotune_time(comp: Compile, ops: Sequence[AutotunedOp]) -> AutotuneTime:
    ops_s = sum((op.autotune_s or 0.0) + (op.precompile_s or 0.0) for op in ops)
    metric = autotune_seconds(comp)
    fusions = fusion_seconds(comp)
    if metric is None:
        return AutotuneTime(ops_s + (fusions or 0.0), ops_s, fusions, False)
    backward = autotune_seconds(comp, (BACKWARD_METRICS,))
    return AutotuneTime(metric, ops_s, fusions, True, backward)
