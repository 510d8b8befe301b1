"""Provenance: which FX nodes and user source lines each Inductor kernel implements, and back.

Inductor logs, per compiled graph, when provenance tracking is on:

- ``inductor_provenance_tracking_node_mappings`` (JSON): ``preToPost`` / ``postToPre`` (pre-grad
  node <-> post-grad nodes) and ``cppCodeToPost`` / ``postToCppCode`` (kernel <-> post-grad
  nodes; Python kernels too, despite the name). Kernel keys are ``name`` or, from version 2.0,
  ``name:debug_handle`` (``triton_poi_fused_mul_1:2``, ``extern_kernels.mm:4``);
- ``inductor_provenance_tracking_kernel_stack_traces`` (JSON): kernel -> the user stack strings
  (``  File "f.py", line 12, in forward\\n    code\\n``) of the nodes it implements;
- older traces: ``inductor_triton_kernel_to_post_grad_nodes`` (kernel -> post-grad nodes) and
  ``inductor_post_to_pre_grad_nodes`` (post-grad node -> the chain of nodes it came from).

A `Unit` is one graph Inductor compiled (a forward, a backward, an AOTInductor model): its
mapping, its stack traces, its output code and its pre- and post-grad graphs. A training
compile has two units (tlparse 0.4.3 keeps only the last mapping of a compile id, the
backward's). Where a compile logged no mapping, the kernels' ``Topologically Sorted Source
Nodes`` comments and the pre-grad (or Dynamo) graph's ``# File:`` comments give a fallback.

Everything here reads payloads: call it off the UI thread. Nothing from a trace is executed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tcview.analysis.kernels import OUTPUT_CODES, fuses
from tcview.model.objects import Compile, Kernel, LogSource, Model, Record, is_torch_internal

MAPPINGS = "inductor_provenance_tracking_node_mappings"
STACK_TRACES = "inductor_provenance_tracking_kernel_stack_traces"
LEGACY_KERNEL_TO_POST = "inductor_triton_kernel_to_post_grad_nodes"
LEGACY_POST_TO_PRE = "inductor_post_to_pre_grad_nodes"
# The graphs and code of a unit, best first (tlparse's order of preference).
PRE_GRAD_GRAPHS = ("before_pre_grad_graph", "inductor_pre_grad_graph")
POST_GRAD_GRAPHS = ("after_post_grad_graph", "inductor_post_grad_graph")
# Output code: a trace's records, AOTInductor's wrapper, a TORCH_LOGS capture's messages.
CODES = ("inductor_output_code", "inductor_aot_wrapper_code", "output_code")
DYNAMO_GRAPHS = ("dynamo_output_graph", "graph_code")  # a trace's, a capture's
PROVENANCE_ARTIFACTS = (MAPPINGS, STACK_TRACES, LEGACY_KERNEL_TO_POST, LEGACY_POST_TO_PRE)
# Everything a unit is made of: a compile's other records are not read.
_UNIT_LABELS = frozenset(
    (*PROVENANCE_ARTIFACTS, *PRE_GRAD_GRAPHS, *POST_GRAD_GRAPHS, *CODES, *DYNAMO_GRAPHS)
)
PAYLOAD_LIMIT = 64 << 20
LINES_FROM_TRACES = "stack traces"
LINES_FROM_GRAPH = "graph comments"  # a mapping or graph larger than this is not read

_FRAME = re.compile(r'File "([^"]*)", line (\d+)(?:, in (.*))?')
# ``# File: /a/b.py:24 in forward, code: h = self.norm(x)`` above a graph's nodes.
_GRAPH_FILE = re.compile(r"^\s*# File: (.*?):(\d+) in (.*?), code: (.*)$")
# ---------------------------------------------------------------------- data


@dataclass(frozen=True)
class SourceLine:
    """A line of the user's program (or of torch) that a kernel's nodes came from."""

    file: str
    line: int
    function: str = ""
    code: str = ""

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def short(self) -> str:
        return f"{Path(self.file).name}:{self.line}"

    @property
    def user(self) -> bool:
        """Not a line of torch itself (``torch/nn/modules/linear.py``)."""
        return not is_torch_internal(self.file)

    @property
    def key(self) -> tuple[str, int]:
        return (self.file, self.line)

    @property
    def text(self) -> str:
        """``/a/m.py:27 in forward    h = h * 2`` (its function and code where known)."""
        fn = f" in {self.function}" if self.function else ""
        code = f"    {self.code}" if self.code else ""
        return f"{self.where}{fn}{code}"


@dataclass(eq=False)
class KernelProvenance:
    """What one kernel (a key of the mapping) implements."""

    key: str  # as the mapping names it: ``triton_poi_fused_mul_1:2``
    name: str  # without the debug handle
    handle: str  # the debug handle, "" when none
    post_grad: list[str] = field(default_factory=list)
    pre_grad: list[str] = field(default_factory=list)
    lines: list[SourceLine] = field(default_factory=list)
    kernel: Kernel | None = None  # the model's kernel of that name in the unit's output code
    unit: Unit | None = field(default=None, repr=False)
    # Where `lines` come from: the stack-traces artifact, or the ``# File:`` comments of the
    # pre-grad (or Dynamo) graph above its pre-grad nodes (`LINES_FROM_GRAPH`).
    lines_from: str = ""

    @property
    def user_lines(self) -> list[SourceLine]:
        return [ln for ln in self.lines if ln.user]


@dataclass(eq=False)
class Unit:
    """One graph that Inductor compiled, and what its provenance artifacts say about it.

    `tracked`: it has a provenance artifact (a mapping, stack traces or a legacy mapping);
    otherwise `kernels` come from the kernels' source-node comments (`fallback`).
    """

    source: LogSource
    compile: Compile | None
    index: int = 0  # among its compile's units (0: the forward, 1: the backward)
    mapping: Record | None = None
    stack_traces: Record | None = None
    legacy: list[Record] = field(default_factory=list)
    code: Record | None = None  # output code or AOTInductor wrapper code
    pre_graph: Record | None = None
    post_graph: Record | None = None
    dynamo_graph: Record | None = None
    version: str = ""  # the mapping's "version" (2.0: keys carry debug handles)
    kernels: dict[str, KernelProvenance] = field(default_factory=dict)
    pre_to_post: dict[str, list[str]] = field(default_factory=dict)
    post_to_pre: dict[str, list[str]] = field(default_factory=dict)
    fallback: bool = False
    problems: list[str] = field(default_factory=list)
    # Stack traces whose key names no kernel of the mapping (kept, shown apart).
    orphan_traces: dict[str, list[SourceLine]] = field(default_factory=dict)

    @property
    def tracked(self) -> bool:
        return not self.fallback

    @property
    def label(self) -> str:
        """``0/0``, ``0/0 backward``: its compile, and its graph when the output code says."""
        comp = self.compile.id_label if self.compile is not None else "-"
        role = self.code.role if self.code is not None else None
        if role:
            return f"{comp} {role}"
        return f"{comp} graph {self.index + 1}" if self.index else comp

    @property
    def empty_mapping(self) -> bool:
        """A mapping that maps nothing (torch logs ``{"version": 2.0}`` for a backward)."""
        return self.tracked and not any(k.post_grad for k in self.kernels.values())

    def kernels_of_post(self, node: str) -> list[KernelProvenance]:
        return [k for k in self.kernels.values() if node in k.post_grad]

    def kernels_of_pre(self, node: str) -> list[KernelProvenance]:
        return [k for k in self.kernels.values() if node in k.pre_grad]

    def kernel_for(self, kernel: Kernel) -> KernelProvenance | None:
        found = [k for k in self.kernels.values() if k.kernel is kernel]
        if found:
            return found[0]
        same = [k for k in self.kernels.values() if k.name == kernel.name]
        return same[0] if same else None


@dataclass(eq=False)
class Provenance:
    """The units of a model (or of part of one), and the reverse maps over all of them."""

    units: list[Unit] = field(default_factory=list)

    @property
    def tracked(self) -> bool:
        """Some unit has provenance artifacts (tracking was on)."""
        return any(u.tracked for u in self.units)

    def kernels(self) -> list[KernelProvenance]:
        return [k for u in self.units for k in u.kernels.values()]

    def by_line(self, user_only: bool = False) -> dict[SourceLine, list[KernelProvenance]]:
        """Source line -> the kernels that implement it, lines in first-seen order."""
        out: dict[SourceLine, list[KernelProvenance]] = {}
        for kp in self.kernels():
            for line in kp.user_lines if user_only else kp.lines:
                kernels = out.setdefault(line, [])
                if kp not in kernels:
                    kernels.append(kp)
        return out

    def kernels_of_line(self, file: str, line: int) -> list[KernelProvenance]:
        """The kernels of a user line: `file` is a path, or its end (``model.py``)."""
        out: list[KernelProvenance] = []
        for src, kernels in self.by_line().items():
            if src.line == line and same_file(src.file, file):
                out.extend(k for k in kernels if k not in out)
        return out

    def for_kernel(self, kernel: Kernel) -> KernelProvenance | None:
        for unit in self.units:
            if unit.code is kernel.output:
                return unit.kernel_for(kernel)
        return None


@dataclass(frozen=True)
class ProvenanceRow:
    """A row of the provenance view: a user line or an FX node (a heading), or a kernel (under
    the line or node it implements)."""

    kernel: KernelProvenance | None = None
    line: SourceLine | None = None
    unit: Unit | None = None
    node: str = ""


def same_file(path: str, asked: str) -> bool:
    """`path` is the file the user asked for: the same path, or one ending with it."""
    if path == asked:
        return True
    asked = asked.lstrip("./")
    return bool(asked) and (path.endswith("/" + asked) or Path(path).name == asked)


# ---------------------------------------------------------------------- parsing


def pure_name(key: str, cpp: bool = False) -> tuple[str, str]:
    """(name, debug handle) of a mapping key: ``triton_poi_fused_mul_1:2`` -> (``…_1``, ``2``).

    A handle is digits after the last ``:``; a key without one is all name (tlparse cuts at
    the first ``:`` for Python and the last for C++, which is the same on every key seen)."""
    name, sep, handle = key.rpartition(":")
    if sep and handle.isdigit() and name:
        return name, handle
    return key, ""


def parse_stack_strings(traces: object) -> list[SourceLine]:
    """The frames of a kernel's stack-trace strings, innermost first as logged, without
    repeats. Each string holds one or more ``File "…", line N, in fn`` frames, each followed
    by its code line."""
    out: list[SourceLine] = []
    seen: set[SourceLine] = set()
    items = traces if isinstance(traces, list) else [traces]
    for item in items:
        if not isinstance(item, str):
            continue
        text = item if "\n" in item or "\\n" not in item else item.replace("\\n", "\n")
        lines = text.split("\n")
        for i, raw in enumerate(lines):
            m = _FRAME.search(raw)
            if m is None:
                continue
            code = lines[i + 1].strip() if i + 1 < len(lines) else ""
            if _FRAME.search(code):
                code = ""
            src = SourceLine(m.group(1), int(m.group(2)), (m.group(3) or "").strip(), code)
            if src not in seen:
                seen.add(src)
                out.append(src)
    return out


def _json_payload(rec: Record, problems: list[str]) -> Any:
    if rec.end - rec.hdr_end > PAYLOAD_LIMIT:
        problems.append(
            f"{rec.label} at line {rec.line_number()}: larger than {PAYLOAD_LIMIT} bytes"
        )
        return None
    text = rec.payload()
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        problems.append(f"{rec.label} at line {rec.line_number()}: not JSON ({exc})")
        return None


def _str_lists(value: object) -> dict[str, list[str]]:
    """A ``{name: [name, …]}`` value, with anything else dropped."""
    if not isinstance(value, dict):
        return {}
    out: dict[str, list[str]] = {}
    for key, items in value.items():
        if isinstance(key, str) and isinstance(items, list):
            out[key] = [str(x) for x in items if isinstance(x, (str, int))]
    return out


def _legacy_pre_nodes(value: object) -> dict[str, list[str]]:
    """``inductor_post_to_pre_grad_nodes``: post-grad node -> the nodes it came from, as
    chains of ``{name, from_node: [...]}``. The pre-grad nodes are the chains' roots."""
    if not isinstance(value, dict):
        return {}
    out: dict[str, list[str]] = {}

    def roots(node: object, found: list[str], depth: int) -> None:
        if not isinstance(node, dict) or depth > 64:
            return
        parents = node.get("from_node")
        if isinstance(parents, list) and parents:
            for parent in parents:
                roots(parent, found, depth + 1)
        else:
            name = node.get("name")
            if isinstance(name, str) and name and name not in found:
                found.append(name)

    for post, chains in value.items():
        found: list[str] = []
        if isinstance(chains, list):
            for chain in chains:
                roots(chain, found, 0)
        if isinstance(post, str) and found:
            out[post] = found
    return out


def _union(nodes: Iterable[str], mapping: dict[str, list[str]]) -> list[str]:
    out: list[str] = []
    for node in nodes:
        for other in mapping.get(node, []):
            if other not in out:
                out.append(other)
    return out


# ---------------------------------------------------------------------- units


def _scopes(source: LogSource) -> list[tuple[Compile | None, list[Record]]]:
    """The record lists units are found in: each compile's, and the records without one."""
    out: list[tuple[Compile | None, list[Record]]] = [
        (comp, list(comp.records)) for comp in list(source.compiles.values())
    ]
    loose = [r for r in list(source.records) if r.compile is None and r.label in _UNIT_LABELS]
    if loose:
        out.append((None, loose))
    return out


def _assign(mappings: list[Record], others: list[Record], records: list[Record]) -> list[int]:
    """The unit (index into `mappings`) of each record of `others`, all of one kind.

    As many as there are units: one each, in order (a forward's and a backward's). Otherwise
    a record goes to the unit whose mapping is the first at or after it, or the last unit."""
    if len(others) == len(mappings):
        return list(range(len(others)))
    at = {id(r): i for i, r in enumerate(records)}
    where = [at.get(id(m), 0) for m in mappings]
    out = []
    for rec in others:
        pos = at.get(id(rec), 0)
        unit = next((i for i, w in enumerate(where) if w >= pos), len(mappings) - 1)
        out.append(unit)
    return out


def scope_units(source: LogSource, comp: Compile | None, records: Sequence[Record]) -> list[Unit]:
    """The units of one compile (or of records without a compile id)."""
    records = [r for r in records if r.label in _UNIT_LABELS]
    labels = {r.label for r in records}
    if not labels & set(CODES):
        return []
    mappings = [r for r in records if r.label == MAPPINGS]
    legacy_kernels = [r for r in records if r.label == LEGACY_KERNEL_TO_POST]
    anchors = mappings or legacy_kernels
    codes = [r for r in records if r.label in CODES]
    if not anchors:
        # No provenance: one unit per output code that defines kernels, from its comments.
        with_kernels = {id(k.output) for k in comp.kernels} if comp is not None else set()
        anchors = [r for r in codes if id(r) in with_kernels]
        if not anchors:
            return []
    units = [Unit(source, comp, i) for i in range(len(anchors))]
    for i, unit in enumerate(units):
        unit.fallback = not mappings and not legacy_kernels
        if mappings:
            unit.mapping = anchors[i]
        elif legacy_kernels:
            unit.legacy.append(anchors[i])

    def spread(kinds: Sequence[str]) -> list[Record | None]:
        """The record of the first of `kinds` present, per unit (None: that unit has none)."""
        out: list[Record | None] = [None] * len(units)
        for kind in kinds:
            found = [r for r in records if r.label == kind]
            if found:
                for rec, i in zip(found, _assign(anchors, found, records), strict=True):
                    out[i] = out[i] or rec
                break
        return out

    for unit, code, post, pre in zip(
        units, spread(CODES), spread(POST_GRAD_GRAPHS), spread(PRE_GRAD_GRAPHS), strict=True
    ):
        unit.code, unit.post_graph, unit.pre_graph = code, post, pre
    if mappings:
        traces = [r for r in records if r.label == STACK_TRACES]
        for rec, i in zip(traces, _assign(anchors, traces, records), strict=True):
            if units[i].stack_traces is None:
                units[i].stack_traces = rec
    extra = [r for r in records if r.label in PROVENANCE_ARTIFACTS[2:] and r not in anchors]
    for rec, i in zip(extra, _assign(anchors, extra, records), strict=True):
        units[i].legacy.append(rec)
    dynamo = next((r for r in records if r.label in DYNAMO_GRAPHS), None)
    for unit in units:
        unit.dynamo_graph = dynamo
        if unit.fallback:
            _read_fallback(unit)
        else:
            _read_unit(unit)
    return units


def _read_unit(unit: Unit) -> None:
    problems = unit.problems
    kernel_to_post: dict[str, list[str]] = {}
    if unit.mapping is not None:
        value = _json_payload(unit.mapping, problems)
        if isinstance(value, dict):
            unit.pre_to_post = _str_lists(value.get("preToPost"))
            unit.post_to_pre = _str_lists(value.get("postToPre"))
            kernel_to_post = _str_lists(value.get("cppCodeToPost"))
            version = value.get("version")
            unit.version = "" if version is None else str(version)
        elif value is not None:
            problems.append(f"{MAPPINGS}: not a JSON object")
    for rec in unit.legacy:
        value = _json_payload(rec, problems)
        if rec.label == LEGACY_KERNEL_TO_POST and not kernel_to_post:
            kernel_to_post = _str_lists(value)
        elif rec.label == LEGACY_POST_TO_PRE and not unit.post_to_pre:
            unit.post_to_pre = _legacy_pre_nodes(value)
    if unit.post_to_pre and not unit.pre_to_post:
        for post, pres in unit.post_to_pre.items():
            for pre in pres:
                unit.pre_to_post.setdefault(pre, []).append(post)
    traces: dict[str, list[SourceLine]] = {}
    if unit.stack_traces is not None:
        value = _json_payload(unit.stack_traces, problems)
        if isinstance(value, dict):
            traces = {str(k): parse_stack_strings(v) for k, v in value.items()}
    code_kernels = _code_kernels(unit)
    for key, posts in kernel_to_post.items():
        name, handle = pure_name(key)
        unit.kernels[key] = KernelProvenance(
            key,
            name,
            handle,
            posts,
            _union(posts, unit.post_to_pre),
            traces.get(key, []),
            code_kernels.get(name),
            unit,
            LINES_FROM_TRACES if key in traces else "",
        )
        traces.pop(key, None)
    for key, lines in traces.items():  # stack traces of kernels the mapping does not name
        name, handle = pure_name(key)
        if name in code_kernels or not kernel_to_post:
            unit.kernels[key] = KernelProvenance(
                key, name, handle, [], [], lines, code_kernels.get(name), unit, LINES_FROM_TRACES
            )
        else:
            unit.orphan_traces[key] = lines
    _lines_from_graph(unit)


def _code_kernels(unit: Unit) -> dict[str, Kernel]:
    comp = unit.compile
    if comp is None or unit.code is None:
        return {}
    return {k.name: k for k in list(comp.kernels) if k.output is unit.code}


def _lines_from_graph(unit: Unit) -> None:
    """Kernels with no stack trace get the ``# File:`` lines of their pre-grad nodes."""
    if all(k.lines for k in unit.kernels.values()):
        return
    where = graph_node_lines(unit.pre_graph) or graph_node_lines(unit.dynamo_graph)
    if not where:
        return
    for kp in unit.kernels.values():
        if not kp.lines:
            kp.lines = _dedup(where[n] for n in kp.pre_grad if n in where)
            kp.lines_from = LINES_FROM_GRAPH if kp.lines else ""


def _dedup(lines: Iterable[SourceLine]) -> list[SourceLine]:
    out: list[SourceLine] = []
    for line in lines:
        if line not in out:
            out.append(line)
    return out


def graph_node_lines(rec: Record | None) -> dict[str, SourceLine]:
    """Node name -> the user line its ``# File:`` comment names, in a printed FX graph."""
    if rec is None or rec.end - rec.hdr_end > PAYLOAD_LIMIT:
        return {}
    out: dict[str, SourceLine] = {}
    current: SourceLine | None = None
    for raw in rec.payload().split("\n"):
        m = _GRAPH_FILE.match(raw)
        if m is not None:
            current = SourceLine(m.group(1), int(m.group(2)), m.group(3), m.group(4).strip())
            continue
        if not raw.strip():
            current = None
            continue
        name = node_name(raw)
        if name and current is not None:
            out.setdefault(name, current)
    return out


def node_name(line: str) -> str:
    """The node a printed FX graph line defines (tlparse's rule: the text before the first
    ``=``, then before the first ``:``), "" for comments and other lines."""
    text = line.strip()
    if not text or text.startswith(("#", "def ", "class ", "return", "@")) or "=" not in text:
        return ""
    name = text.split("=", 1)[0].split(":", 1)[0].strip()
    return name if name.isidentifier() else ""


def graph_lines_of(rec: Record, nodes: Iterable[str]) -> list[int]:
    """0-based lines of a graph record's payload that define the given nodes."""
    wanted = set(nodes)
    if not wanted or rec.end - rec.hdr_end > PAYLOAD_LIMIT:
        return []
    return [i for i, raw in enumerate(rec.payload().split("\n")) if node_name(raw) in wanted]


# ---------------------------------------------------------------------- fallback


def _read_fallback(unit: Unit) -> None:
    """The kernels' pre-grad nodes from the source-node comment of their output code
    (`kernels.fuses`; unnamed nodes left out), their lines from the graphs' ``# File:``."""
    code = unit.code
    if code is None or code.end - code.hdr_end > PAYLOAD_LIMIT:
        return
    text = OUTPUT_CODES.get(code)
    where = graph_node_lines(unit.pre_graph) or graph_node_lines(unit.dynamo_graph)
    for name, kernel in _code_kernels(unit).items():
        span = text.span_of(kernel)
        nodes = [n for n in fuses(text, span).source_nodes if n] if span is not None else []
        lines = _dedup(where[n] for n in nodes if n in where)
        unit.kernels[name] = KernelProvenance(
            name, name, "", [], nodes, lines, kernel, unit, LINES_FROM_GRAPH if lines else ""
        )


# ---------------------------------------------------------------------- entry points


def compile_units(comp: Compile) -> list[Unit]:
    return scope_units(comp.file, comp, list(comp.records))


def kernel_provenance(kernel: Kernel) -> tuple[Unit | None, KernelProvenance | None]:
    """The unit a kernel's output code belongs to, and what it says about the kernel."""
    comp = kernel.compile
    units = compile_units(comp) if comp is not None else []
    for unit in units:
        if unit.code is kernel.output:
            return unit, unit.kernel_for(kernel)
    return None, None


def model_provenance(model: Model, cancelled: Any = None) -> Provenance:
    """Every unit of a model, in file and compile order. `cancelled()`: stop early."""
    out = Provenance()
    for source in list(model.files):
        for comp, records in _scopes(source):
            if cancelled is not None and cancelled():
                return out
            out.units.extend(scope_units(source, comp, records))
    return out


def tracking_hint(version: str | None) -> str:
    """How to turn provenance tracking on, for the torch version of a trace ("" unknown)."""
    new = "INDUCTOR_PROVENANCE=1 (or torch._inductor.config.trace.provenance_tracking_level = 1)"
    # torch 2.9 brought INDUCTOR_PROVENANCE and the level; before, only trace.enabled did it.
    old = "TORCH_COMPILE_DEBUG=1 (or torch._inductor.config.trace.enabled = True)"
    if version:
        m = re.match(r"(\d+)\.(\d+)", version)
        if m is not None:
            major, minor = int(m.group(1)), int(m.group(2))
            if (major, minor) >= (2, 9):
                return f"torch {version}: run with {new}"
            return f"torch {version}: run with {old}"
    return f"torch 2.9 or newer: run with {new}; older torch: {old}"


def torch_version(model: Model) -> str | None:
    """The torch version a trace names in its ``torch_version`` artifact (torch 2.12+)."""
    for rec in model.records_of("torch_version"):
        try:
            value = json.loads(rec.payload())
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict) and isinstance(value.get("pytorch_version"), str):
            return str(value["pytorch_version"])
    return None


# ---------------------------------------------------------------------- words


def unit_origin(unit: Unit) -> str:
    """What a unit's facts come from, in words."""
    if unit.fallback:
        return "the kernels' source-node comments (provenance tracking was off)"
    parts = []
    if unit.mapping is not None:
        version = f", version {unit.version}" if unit.version else ""
        parts.append(f"node mappings (line {unit.mapping.line_number()}{version})")
    elif unit.legacy:
        parts.append("legacy kernel and node mappings")
    if unit.stack_traces is not None:
        parts.append(f"stack traces (line {unit.stack_traces.line_number()})")
    return ", ".join(parts)
