"""Split an Inductor output-code module into its kernels, and read what it says about each:
the source nodes and ATen ops a kernel fuses, and its launch metadata.

Everything here reads the output code's text only (never imports or runs it).
"""

from __future__ import annotations

import bisect
import hashlib
import json
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from tcview.model.objects import KERNEL_DEF, NOT_KERNEL_METHODS, Kernel, Record, kernel_kind

_KERNEL_LINE = re.compile("^" + KERNEL_DEF, re.M)
_END = re.compile(r"^.*?'''\s*(?:,[^\n]*)?\)\s*$")
# The comment Inductor writes above a kernel's definition, and before its launch in call().
_NODES = re.compile(r"#\s*Topologically Sorted Source Nodes: \[(.*?)\], Original ATen: \[(.*?)\]")
HEAD_MAX = 400  # comment lines above a definition that are read as its header


@dataclass
class KernelSpan:
    name: str  # the variable name in the wrapper
    method: str  # async_compile.<method>
    start: int  # 0-based line of the definition
    end: int  # 0-based line of the closing ''' (inclusive)
    launch: int | None = None  # position in call()'s launch order, None if never launched
    head: int = -1  # 0-based first line of the comment block just above it (start: none)

    @property
    def kind(self) -> str:
        return kernel_kind(self.name, self.method)

    @property
    def first(self) -> int:
        """The first line of its source: its header comment, else its definition."""
        return self.head if 0 <= self.head < self.start else self.start

    def source(self, lines: list[str]) -> str:
        """Its definition (``NAME = async_compile.…(`` to the closing ``''')``)."""
        return "\n".join(lines[self.start : self.end + 1])


def split_output_code(text: str, launches: bool = True) -> list[KernelSpan]:
    """Kernels defined in `text`, with their line span, header comment and (`launches`)
    launch order."""
    lines = text.split("\n")
    offsets = _line_starts(text)
    spans: list[KernelSpan] = []
    for m in _KERNEL_LINE.finditer(text):
        if m.group(2) in NOT_KERNEL_METHODS:
            continue
        start = _line_of(offsets, m.start())
        span = KernelSpan(m.group(1), m.group(2), start, _span_end(lines, start))
        span.head = _head_of(lines, start, spans[-1].end if spans else -1)
        spans.append(span)
    if launches:
        order = launch_order(text, spans)
        for s in spans:
            s.launch = order.get(s.name)
    return spans


def _head_of(lines: list[str], start: int, floor: int) -> int:
    """The first of the comment lines right above line `start` (not above line `floor`)."""
    i = start
    while i - 1 > floor and start - i < HEAD_MAX and lines[i - 1].lstrip().startswith("#"):
        i -= 1
    return i


def _span_end(lines: list[str], start: int) -> int:
    """Line of the closing ``''')`` of a kernel source string."""
    first = lines[start]
    if first.count("'''") >= 2:
        return start
    for i in range(start + 1, min(len(lines), start + 200000)):
        if "'''" in lines[i] and _END.match(lines[i]):
            return i
    return start


def launch_order(text: str, spans: list[KernelSpan]) -> dict[str, int]:
    """Kernel name -> index of its first launch, outside the kernels' own sources.

    Launches live in ``call()`` or, with graph partitions, in ``partition_N()`` functions.
    """
    if not spans:
        return {}
    pattern = _launch_pattern(spans)
    inside = _inside(spans)
    order: dict[str, int] = {}
    for i, line in enumerate(text.split("\n")):
        if i in inside or "(" not in line:
            continue
        for m in pattern.finditer(line):
            order.setdefault(m.group(1), len(order))
    return order


def _launch_pattern(spans: list[KernelSpan]) -> re.Pattern[str]:
    names = sorted({s.name for s in spans}, key=len, reverse=True)
    return re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")(?:\.run)?\(")


def _inside(spans: list[KernelSpan]) -> set[int]:
    inside: set[int] = set()
    for s in spans:
        inside.update(range(s.first, s.end + 1))
    return inside


def _line_starts(text: str) -> list[int]:
    starts = [0]
    pos = text.find("\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = text.find("\n", pos + 1)
    return starts


def _line_of(starts: list[int], offset: int) -> int:
    return bisect.bisect_right(starts, offset) - 1


# ---------------------------------------------------------------------- output code cache


class OutputCode:
    """One output code's text, split into lines and kernels (read once, shared)."""

    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")
        self.spans = split_output_code(text)

    def span_of(self, kernel: Kernel) -> KernelSpan | None:
        """The kernel's span: the one at its position, else the first of its name."""
        spans = self.spans
        index = kernel.index
        if 0 <= index < len(spans) and spans[index].name == kernel.name:
            return spans[index]
        return next((s for s in spans if s.name == kernel.name), None)

    def launch_line(self, span: KernelSpan) -> str | None:
        """The line that first launches the kernel (``NAME.run(…)`` or ``NAME(…)``)."""
        i = _launch_index(self, span)
        return self.lines[i] if i is not None else None


class OutputCodeCache:
    """Decoded output code and its kernel spans, for the last few records read.

    Keyed by the record and its end (a live record may still grow); the value holds the
    record, so its id cannot be reused while cached. Any thread may use it.
    """

    def __init__(self, size: int = 6) -> None:
        self.size = size
        self._items: OrderedDict[tuple[int, int], tuple[Record, OutputCode]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, record: Record) -> OutputCode:
        key = (id(record), record.end)
        with self._lock:
            hit = self._items.get(key)
            if hit is not None and hit[0] is record:
                self._items.move_to_end(key)
                return hit[1]
        code = OutputCode(record.payload())
        with self._lock:
            self._items[key] = (record, code)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return code

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


OUTPUT_CODES = OutputCodeCache()


# ---------------------------------------------------------------------- identical kernels


def _digest_key(kernel: Kernel) -> tuple[str, int, int]:
    return ("digest", kernel.output.offset, kernel.index)


def kernel_digest(kernel: Kernel) -> str | None:
    """The digest of the kernel's definition's text, once `source_digests` read it (None
    before, and while its output code still grows)."""
    digest: str | None = kernel.output.source.memo.get(_digest_key(kernel))
    return digest


def source_digests(kernels: Sequence[Kernel]) -> None:
    """Find the digest of each kernel's definition's text (kernels of one output code), read
    from disk once for all of them and kept in their file's memo. A kernel not found in the
    text gets its name as digest."""
    if not kernels:
        return
    output = kernels[0].output
    memo = output.source.memo
    text = output.payload()
    lines = text.split("\n")
    spans = split_output_code(text, launches=False)
    for kernel in kernels:
        spans_at = spans[kernel.index] if 0 <= kernel.index < len(spans) else None
        span = spans_at if spans_at is not None and spans_at.name == kernel.name else None
        if span is None:
            span = next((s for s in spans if s.name == kernel.name), None)
        if span is None:
            memo.put(_digest_key(kernel), f"name:{kernel.name}")
            continue
        body = span.source(lines).encode("utf-8", "replace")
        memo.put(_digest_key(kernel), hashlib.blake2b(body, digest_size=12).hexdigest())


# ---------------------------------------------------------------------- what a kernel fuses


@dataclass
class Fuses:
    """The post-grad (source) nodes and ATen ops a kernel computes, from its header comment
    (``# Topologically Sorted Source Nodes: […], Original ATen: […]``)."""

    source_nodes: list[str] = field(default_factory=list)
    aten_ops: list[str] = field(default_factory=list)
    found: bool = False
    # The post-grad graph's nodes, from ``# Source node to ATen node mapping:`` lines
    # (``#   layer_norm => add, rsqrt, var_mean``), in order, each once.
    post_grad_nodes: list[str] = field(default_factory=list)


def fuses(code: OutputCode, span: KernelSpan) -> Fuses:
    """What the kernel fuses: from the comment above its definition, else from the one above
    its launch in call() (C++ kernels and older torch have only that one, if any)."""
    head = code.lines[span.first : span.start]
    for line in head:
        m = _NODES.search(line)
        if m:
            return Fuses(_names(m.group(1)), _names(m.group(2)), True, _post_grad(head))
    launch = _launch_index(code, span)
    if launch is not None:
        for line in reversed(code.lines[max(0, launch - 3) : launch]):
            m = _NODES.search(line)
            if m:
                return Fuses(_names(m.group(1)), _names(m.group(2)), True)
    return Fuses()


_FRAGMENT_NODE = re.compile(r"^\s*#\s+%(\w+) : .*?= call_function\[")
_MAPPING = re.compile(r"^\s*#\s{3}(.*?)\s*=>\s*(.*?)\s*$")


def _post_grad(head: list[str]) -> list[str]:
    """The post-grad nodes a kernel computes: the ``call_function`` nodes of its ``# Graph
    fragment:`` (placeholders are its inputs), else the right-hand sides of its ``# Source
    node to ATen node mapping:`` (older torch has no fragment)."""
    out = [m.group(1) for line in head if (m := _FRAGMENT_NODE.match(line))]
    if out:
        return list(dict.fromkeys(out))
    mapping = False
    for line in head:
        if line.lstrip().startswith("# Source node to ATen node mapping:"):
            mapping = True
            continue
        m = _MAPPING.match(line) if mapping else None
        if m is None:
            if mapping:
                break
            continue
        for name in _names(m.group(2)):
            if name not in out:
                out.append(name)
    return out


def _launch_index(code: OutputCode, span: KernelSpan) -> int | None:
    inside = _inside(code.spans)
    pattern = re.compile(r"\b" + re.escape(span.name) + r"(?:\.run)?\(")
    for i, line in enumerate(code.lines):
        if i not in inside and pattern.search(line) and not line.lstrip().startswith("#"):
            return i
    return None


def _names(text: str) -> list[str]:
    """``a, b, c`` -> its names; an empty name (Inductor leaves some nodes unnamed) is kept
    as "" between others."""
    parts = [part.strip() for part in text.split(",")]
    return [] if parts == [""] else parts


# ---------------------------------------------------------------------- launch metadata

_HEURISTIC = re.compile(r"^\s*@triton_heuristics\.(\w+)\(")
_SIZE_HINTS = re.compile(r"size_hints=\{([^}]*)\}")
_REDUCTION_HINT = re.compile(r"reduction_hint=ReductionHint\.(\w+)")
_SIGNATURE = re.compile(r"'signature': \{([^}]*)\}")
_SIG_ITEM = re.compile(r"'(\w+)': '([^']*)'")
_META_NUMBER = re.compile(r"'(kernel_num_gb|num_load|num_store|num_reduction)': ([-+0-9.eE]+)")
_GRID_TYPE = re.compile(r"'grid_type': '(\w+)'")
_EXTRA_ARGS = re.compile(r"'extra_launcher_args': \[([^\]]*)\]")
_DECORATOR_INT = re.compile(r"^\s*(num_warps|num_stages)=(\d+)")
_NUMEL = re.compile(r"^\s+([xyz]|r\d_)numel = (\S+)\s*$")
_CPP_ARGS = re.compile(r"async_compile\.cpp\w*\(\[([^\]]*)\]")
_INT = re.compile(r"^\d+$")
_KEYWORD = re.compile(r"^\w+=")
_NAME = re.compile(r"^[A-Za-z_]\w*$")
BLOCK_OF = {"x": "XBLOCK", "y": "YBLOCK", "z": "ZBLOCK"}
ARG_CUT = 60  # characters of a launch argument shown


@dataclass
class Launch:
    """What the output code (and Triton's kernel info, when logged) says about launching a
    kernel: rows of (label, value), in a fixed order."""

    rows: list[tuple[str, str]] = field(default_factory=list)

    def add(self, label: str, value: object) -> None:
        self.rows.append((label, str(value)))

    def get(self, label: str) -> str | None:
        return next((v for k, v in self.rows if k == label), None)


def launch_info(code: OutputCode, span: KernelSpan, info: dict[str, object] | None) -> Launch:
    """The launch metadata of one kernel: for Triton, its heuristic, size hints, numels,
    grid, warps and stages, GB moved; for C++, its arguments. `info` is this kernel's entry
    of a ``triton_kernel_info`` artifact (its autotuned config), if the trace has one."""
    out = Launch()
    body = code.lines[span.start : span.end + 1]
    launch = code.launch_line(span)
    if span.kind == "cpp":
        _cpp_rows(out, body)
    else:
        _triton_rows(out, code, span, body, launch, info)
    if launch is not None:
        out.add("launch", _cut(launch.strip(), 160))
    return out


def _cpp_rows(out: Launch, body: list[str]) -> None:
    """A C++ kernel's argument types, and whether it runs in parallel and vectorized."""
    m = _CPP_ARGS.search(body[0]) if body else None
    if m:
        out.add("argument types", ", ".join(_names(m.group(1).replace("'", ""))))
    text = "\n".join(body)
    out.add("runs on", "CPU" + (" (OpenMP, parallel)" if "#pragma omp parallel" in text else ""))
    if "at::vec::Vectorized" in text:
        out.add("vectorized", "yes (at::vec)")


def _triton_rows(
    out: Launch,
    code: OutputCode,
    span: KernelSpan,
    body: list[str],
    launch: str | None,
    info: dict[str, object] | None,
) -> None:
    """A Triton kernel's rows, all but its launch line."""
    decorator = next((_HEURISTIC.match(ln) for ln in body if _HEURISTIC.match(ln)), None)
    if decorator:
        out.add("heuristic", decorator.group(1))
    text = "\n".join(body)
    hints = _SIZE_HINTS.search(text)
    if hints:
        out.add("size hints", hints.group(1).replace("'", "").strip())
    rhint = _REDUCTION_HINT.search(text)
    if rhint:
        out.add("reduction hint", rhint.group(1))
    numels, extras, keywords = _arguments(code, span, body, text, launch)
    for dim, numel in numels.items():
        out.add(f"{dim}numel", numel)
    config = _config(info)
    _grid_row(out, text, numels, extras, keywords, config)
    for key in ("num_warps", "num_stages"):
        value = config.get(key)
        if value is None:
            value = next(
                (
                    m.group(2)
                    for ln in body
                    if (m := _DECORATOR_INT.match(ln)) and m.group(1) == key
                ),
                None,
            )
        if value is not None:
            out.add(key, value)
    blocks = {k: v for k, v in config.items() if k.endswith("BLOCK")}
    if blocks:
        out.add("blocks", ", ".join(f"{k}={v}" for k, v in blocks.items()))
    for key, value in _META_NUMBER.findall(text):
        out.add(key, value)
    if info:
        _info_rows(out, info, config)


def _arguments(
    code: OutputCode, span: KernelSpan, body: list[str], text: str, launch: str | None
) -> tuple[dict[str, str], list[tuple[str, str]], dict[str, str]]:
    """A Triton kernel's numels (its body's, then the numel arguments of its launch), the
    launch's arguments past the kernel's signature (named as the kernel names them), and the
    launch's keywords."""
    numels = _numels(body)
    args, keywords = _launch_args(launch, span.name) if launch is not None else (None, {})
    signature = _SIGNATURE.search(text)
    params = (
        [k for k, v in _SIG_ITEM.findall(signature.group(1)) if v != "constexpr"]
        if signature
        else []
    )
    extras: list[tuple[str, str]] = []
    if args is not None and params:
        named = dict(zip(params, args, strict=False))
        for name, value in named.items():
            if name.endswith("numel"):
                numels.setdefault(name[: -len("numel")], _cut(_value_of(code, value), ARG_CUT))
        rest = args[len(params) :]
        extra = _EXTRA_ARGS.search(text)
        names = [n.strip().strip("'") for n in extra.group(1).split(",")] if extra else []
        extras = [
            (names[i] if i < len(names) else f"extra {i}", _cut(v, ARG_CUT))
            for i, v in enumerate(rest)
        ]
    return numels, extras, keywords


def _grid_row(
    out: Launch,
    text: str,
    numels: dict[str, str],
    extras: list[tuple[str, str]],
    keywords: dict[str, str],
    config: dict[str, object],
) -> None:
    """The launch grid: as the launch passed it, else computed from the grid type."""
    grid = [v for k, v in extras if k.startswith("_grid")]
    grid_type = _GRID_TYPE.search(text)
    if grid:
        out.add("grid", f"({', '.join(grid)})")
    elif "grid" in keywords:  # torch before 2.6: ``.run(…, grid=grid(1024), stream=…)``
        out.add("grid", keywords["grid"])
    elif grid_type is not None:
        computed = _grid(grid_type.group(1), numels, config)
        out.add("grid", computed or grid_type.group(1))


def _info_rows(out: Launch, info: dict[str, object], config: dict[str, object]) -> None:
    """What Triton's kernel info adds: the autotune cache, the configs and the compile time."""
    state = info.get("autotune_cache_state")
    if state is not None:
        out.add("autotune", state)
    configs = info.get("num_configs")
    if isinstance(configs, int) and not config:
        out.add("configs", f"{configs}, one chosen when it first runs (not in the trace)")
    compile_us = info.get("compile_time_us")
    if isinstance(compile_us, (int, float)):
        out.add("triton compile", f"{compile_us / 1e6:.3f}s")


def kernel_num_gb(code: OutputCode, span: KernelSpan) -> float | None:
    """The GB a Triton kernel moves per launch (``kernel_num_gb`` of its ``inductor_meta``,
    written with ``benchmark_kernel`` and by recent torch), None when it does not say."""
    for line in code.lines[span.start : span.end + 1]:
        for key, value in _META_NUMBER.findall(line):
            if key == "kernel_num_gb":
                try:
                    return float(value)
                except ValueError:
                    return None
    return None


# Devices an output code's example inputs are made on: ``rand_strided(…, device='cuda:0', …)``.
_ARG_DEVICE = re.compile(r"device='(\w+)(?::\d+)?'")


def output_devices(code: OutputCode) -> list[str]:
    """The devices an output code runs on: those of the inputs its ``get_args()`` makes (the
    benchmark harness's), else its kernels' (Triton: cuda, C++: cpu)."""
    found: list[str] = []
    in_args = False
    for line in code.lines:
        if line.startswith("def get_args("):
            in_args = True
        elif in_args and line and not line[0].isspace():
            break
        elif in_args:
            for device in _ARG_DEVICE.findall(line):
                if device not in found:
                    found.append(device)
    if found:
        return found
    kinds = {s.kind for s in code.spans}
    if kinds & {"pointwise", "reduction", "persistent", "template", "user", "other"}:
        found.append("cuda")
    if "cpp" in kinds:
        found.append("cpu")
    return found


def _value_of(code: OutputCode, arg: str) -> str:
    """A launch argument's value: ``256*s75`` for ``k_xnumel`` where call() computed it
    (``k_xnumel = 256*s75``, dynamic shapes), else the argument as written."""
    if not _NAME.match(arg) or _INT.match(arg):
        return arg
    pattern = re.compile(r"^\s*" + re.escape(arg) + r" = (.+?)\s*$")
    found = [m.group(1) for line in code.lines if (m := pattern.match(line))]
    return found[-1] if len(set(found)) == 1 else arg


def _numels(body: list[str]) -> dict[str, str]:
    """``xnumel = 1024`` lines at the top of a Triton kernel's body: dim -> value."""
    out: dict[str, str] = {}
    for line in body:
        m = _NUMEL.match(line)
        if m:
            out.setdefault(m.group(1), m.group(2))
    return out


def _launch_args(line: str, name: str) -> tuple[list[str] | None, dict[str, str]]:
    """The positional and keyword arguments of ``NAME.run(a, b, 1024, stream=stream0)``."""
    at = line.find(name + ".run(")
    if at < 0:
        return None, {}
    args: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in line[at + len(name) + 5 :]:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                break
            depth -= 1
        if ch == "," and depth == 0:
            args.append("".join(current).strip())
            current = []
            continue
        current.append(ch)
    if "".join(current).strip():
        args.append("".join(current).strip())
    keywords = dict(a.split("=", 1) for a in args if _KEYWORD.match(a))
    return [a for a in args if not _KEYWORD.match(a)], keywords


def _config(info: dict[str, object] | None) -> dict[str, object]:
    """The autotuned config of a kernel info entry: ``[["XBLOCK", 1], ["num_warps", 8]]``."""
    if not info:
        return {}
    raw = info.get("best_config") or info.get("only_config")
    out: dict[str, object] = {}
    if isinstance(raw, list):
        for item in raw:
            if isinstance(item, list) and len(item) == 2 and isinstance(item[0], str):
                out[item[0]] = item[1]
    elif isinstance(raw, dict):
        out.update({str(k): v for k, v in raw.items()})
    return out


def _grid(grid_type: str, numels: dict[str, str], config: dict[str, object]) -> str | None:
    """``(32, 1, 1)`` for a Grid1D/2D/3D kernel whose numels and blocks are known."""
    dims = {"Grid1D": ("x",), "Grid2D": ("x", "y"), "Grid3D": ("x", "y", "z")}.get(grid_type)
    if dims is None:
        return None
    sizes: list[int] = []
    for dim in dims:
        numel, block = numels.get(dim), config.get(BLOCK_OF[dim])
        if numel is None or not _INT.match(numel) or not isinstance(block, int) or block <= 0:
            return None
        sizes.append(math.ceil(int(numel) / block))
    sizes += [1] * (3 - len(sizes))
    return f"({', '.join(map(str, sizes))})  {grid_type}"


def kernel_info_of(payload: str) -> dict[str, dict[str, object]]:
    """A ``triton_kernel_info`` artifact: kernel name -> its entry ({} when unreadable)."""
    try:
        value = json.loads(payload)
    except ValueError:
        return {}
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, dict)}


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


# ---------------------------------------------------------------------- kernel groups


@dataclass(eq=False)
class KernelGroup:
    """Kernels with the same source (the same kernel compiled again, say for each shape a
    frame recompiled for): one row of the kernels view."""

    kernels: list[Kernel]

    @property
    def first(self) -> Kernel:
        return self.kernels[0]

    @property
    def name(self) -> str:
        return self.kernels[0].name

    @property
    def kind(self) -> str:
        return self.kernels[0].kind

    @property
    def count(self) -> int:
        return len(self.kernels)

    @property
    def roles(self) -> list[str]:
        """The graphs its kernels come from, in the order first seen."""
        out: list[str] = []
        for k in self.kernels:
            role = k.role
            if role is not None and role not in out:
                out.append(role)
        return out

    @property
    def compile_ids(self) -> list[str]:
        out: list[str] = []
        for k in self.kernels:
            text = k.compile.id_label if k.compile is not None else k.output.compile_text
            if text not in out:
                out.append(text)
        return out


def needs_digests(kernels: Sequence[Kernel]) -> list[list[Kernel]]:
    """The kernels (one list per output code, in order) whose digest is still unknown and
    whose output code is complete."""
    pending: dict[int, list[Kernel]] = {}
    for k in kernels:
        if k.output.closed and kernel_digest(k) is None:
            pending.setdefault(id(k.output), []).append(k)
    return list(pending.values())


def group_kernels(kernels: Sequence[Kernel]) -> list[KernelGroup]:
    """Kernels grouped by identical source (their digests), in the order first seen. A kernel
    without a digest (its output code still growing) is a group of its own."""
    groups: dict[object, KernelGroup] = {}
    for k in kernels:
        digest = kernel_digest(k)
        key: object = digest if digest is not None else id(k)
        group = groups.get(key)
        if group is None:
            groups[key] = KernelGroup([k])
        else:
            group.kernels.append(k)
    return list(groups.values())
