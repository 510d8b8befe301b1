"""Compile diffs: a recompile against the compile it replaced (or any two compiles).

A compile diff compares the cache keys (the components whose hash differs: a config setting
that made the same graph compile again), the guards (added, removed, changed: the same guard
on the same source with another value; never the object ids, addresses or numbers Dynamo
gives anew), the Dynamo graph's code, the AOT graphs, the output code's kernels (same,
changed, new, gone, renamed: matched by name, kind and a fingerprint of their source) and the
compile times. The parts a run diff shares (text diff, kernel fingerprints, statuses) live
here too; the run diff is `rundiff`, the reports of both `diffreport`.

Pure: reads payloads (cache keys, guards, graphs, output code) from disk; call it off the UI
thread. Text is compared with difflib; nothing from a trace is executed.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from tcview.analysis.cache_misses import GRAPH_COMPONENT, key_entries, shown_value
from tcview.analysis.compiletime import BACKWARD_PHASE, backward_seconds
from tcview.analysis.guard_failures import input_name, parse_guard_failure
from tcview.analysis.kernels import split_output_code
from tcview.model.objects import Compile, Kernel, Model, Record

# ---------------------------------------------------------------------- text


SAME, REMOVED, ADDED, CHANGED, NEW, GONE, RENAMED, MOVED = (
    "same",
    "removed",
    "added",
    "changed",
    "new",
    "gone",
    "renamed",
    "moved",
)
CONTEXT = 3  # unchanged lines kept around a change
DIFF_LIMIT = 20_000  # lines of one side compared (more are cut, with a note)
INTRALINE_LIMIT = 2_000  # longer line pairs are not compared character by character


@dataclass
class DiffLine:
    """A line of a unified diff: ``" "`` same, ``"-"`` only in A, ``"+"`` only in B,
    ``"…"`` a run of same lines left out (`text` says how many). `marks`: the character
    spans that differ from the paired line on the other side."""

    op: str
    text: str
    a_no: int | None = None  # 1-based line in A
    b_no: int | None = None
    marks: list[tuple[int, int]] = field(default_factory=list)


def char_marks(a: str, b: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    if len(a) + len(b) > INTRALINE_LIMIT:
        return [(0, len(a))], [(0, len(b))]
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    ma: list[tuple[int, int]] = []
    mb: list[tuple[int, int]] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        if i2 > i1:
            ma.append((i1, i2))
        if j2 > j1:
            mb.append((j1, j2))
    return ma, mb


def text_diff(a: Sequence[str], b: Sequence[str], context: int = CONTEXT) -> list[DiffLine]:
    """A unified diff of two texts (as lines), with the differing characters of replaced
    lines marked; runs of more than 2×`context` same lines are folded into one ``…`` line."""
    a, b = list(a[:DIFF_LIMIT]), list(b[:DIFF_LIMIT])
    out: list[DiffLine] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            n = i2 - i1
            keep = range(n)
            if n > 2 * context + 1:
                first = context if out else 0
                last = context if i2 < len(a) or j2 < len(b) else 0
                keep = range(first)
                for k in keep:
                    out.append(DiffLine(" ", a[i1 + k], i1 + k + 1, j1 + k + 1))
                out.append(DiffLine("…", f"{n - first - last} same lines", None, None))
                for k in range(n - last, n):
                    out.append(DiffLine(" ", a[i1 + k], i1 + k + 1, j1 + k + 1))
                continue
            for k in keep:
                out.append(DiffLine(" ", a[i1 + k], i1 + k + 1, j1 + k + 1))
            continue
        removed = [DiffLine("-", a[i], i + 1, None) for i in range(i1, i2)]
        added = [DiffLine("+", b[j], None, j + 1) for j in range(j1, j2)]
        if op == "replace":
            for old, new in zip(removed, added, strict=False):
                old.marks, new.marks = char_marks(old.text, new.text)
        out.extend(removed)
        out.extend(added)
    return out


def diff_counts(lines: Iterable[DiffLine]) -> tuple[int, int]:
    """(lines removed, lines added)."""
    c = Counter(line.op for line in lines)
    return c["-"], c["+"]


# ---------------------------------------------------------------------- guards


GUARD_RECORDS = ("dynamo_cpp_guards_str", "dynamo_guards")
_GUARD_LINE = re.compile(r"^[|\s]*\+- ([A-Z][A-Z_]*): (.*)$")
_MANAGER = re.compile(r"^([|\s]*)\+- (?:\w*GuardManager|GuardManager): source=([^,]*)")
_COMMENT = re.compile(r"\s{2,}#.*$|\s+# \(.*$")
# Globals Dynamo installs under a numbered name, numbered anew in each compile
# (``G['__builtins_dict___24']``: OutputGraph.install_global's unique_id; ``…_<id>_c<n>``:
# install_global_by_id): the same guard under another number is the same guard.
_RENUMBERED = re.compile(r"(G\[(['\"])__\w*?)_\d+(?:_c\d+)?\2\]")


# Other names Dynamo numbers per compile: a graph's stack slots (``___stack0``), its lifted
# constants (``_tensor_constant0``), compiled and resume functions (``__compiled_fn_3``,
# ``__resume_at_30_1``: the offset is kept, the count is not).
_NUMBERED = re.compile(
    r"(?<!\w)(___stack|_tensor_constant|_{2,3}compiled_fn_|__resume_at_\d+_)\d+\b"
)
# Object and type ids (``___check_obj_id(G['torch'], 140367125840416)``, ``id(x) == 1403…``)
# and addresses (``<function f at 0x7f65c4aaade0>``): another process (another run, another
# rank) has other numbers for the same objects.
_IDS = re.compile(r"(___check_(?:obj|type)_id\(.*?, )\d+\)")
_ID_LITERAL = re.compile(r"(\bid\((?:[^()]|\([^()]*\))*\)\s*(?:==|!=|is not|is)\s*)\d+")
_ADDRESS = re.compile(r"\b0x[0-9A-Fa-f]{6,}\b")


def stable(text: str, ids: bool = False) -> str:
    """A guard's text with the numbers of globals Dynamo numbers anew replaced by ``#``; with
    `ids`, the object and type ids and the addresses it names too."""
    text = _NUMBERED.sub(r"\1#", _RENUMBERED.sub(r"\1_#\2]", text))
    if not ids:
        return text
    text = _ID_LITERAL.sub(r"\1#", _IDS.sub(r"\1#)", text))
    return _ADDRESS.sub("0x#", text)


@dataclass(frozen=True)
class Guard:
    """One guard of a compile: what it checks (`source`, the enclosing guard manager's
    source, "" at the root), its kind (``TENSOR_MATCH``) and its expression, without the
    comment that says where it came from (`comment`)."""

    source: str
    kind: str
    expr: str
    comment: str = ""

    @property
    def text(self) -> str:
        where = f"{self.source}: " if self.source else ""
        return f"{where}{self.kind}: {self.expr}"


def parse_guards(text: str) -> list[Guard]:
    """The guards of a ``dynamo_cpp_guards_str`` tree (or any text: one guard a line)."""
    out: list[Guard] = []
    stack: list[tuple[int, str]] = []  # (indent, source) of the open guard managers
    tree = "+- " in text
    for raw in text.split("\n"):
        if not raw.strip() or raw.startswith(("TREE_GUARD_MANAGER", "Guard latency")):
            continue
        if not tree:
            out.append(Guard("", "", _COMMENT.sub("", raw).strip(), raw.strip()))
            continue
        indent = len(raw) - len(raw.lstrip("| "))
        m = _MANAGER.match(raw)
        if m is not None:
            while stack and stack[-1][0] >= indent:
                stack.pop()
            stack.append((indent, m.group(2).strip()))
            continue
        g = _GUARD_LINE.match(raw)
        if g is None:
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        body = g.group(2)
        expr = _COMMENT.sub("", body).strip()
        comment = body[len(expr) :].strip() if body.startswith(expr) else ""
        out.append(Guard(stack[-1][1] if stack else "", g.group(1), expr, comment))
    return out


def compile_guards(comp: Compile) -> list[Guard] | None:
    """The guards a compile logged (None: it logged none)."""
    for kind in GUARD_RECORDS:
        records = comp.records_of(kind)
        if records:
            return parse_guards(records[-1].payload())
    return None


@dataclass
class GuardChange:
    status: str  # SAME, ADDED, REMOVED, CHANGED
    a: Guard | None
    b: Guard | None
    decides: bool = False  # on the input whose guard failed (the recompile's reason)

    @property
    def renumbered(self) -> bool:
        """The same guard under other numbers (an object's id, an address, a global Dynamo
        numbered anew: `stable`): the report counts these and does not list them."""
        return (
            self.status == SAME
            and self.a is not None
            and self.b is not None
            and (self.a.text != self.b.text)
        )

    @property
    def other_ids(self) -> bool:
        """It differs in an object's id or an address, not only in a global's number."""
        return (
            self.a is not None and self.b is not None and stable(self.a.text) != stable(self.b.text)
        )

    @property
    def guard(self) -> Guard:
        guard = self.b if self.b is not None else self.a
        assert guard is not None
        return guard


def guard_diff(a: Sequence[Guard], b: Sequence[Guard], ids: bool = True) -> list[GuardChange]:
    """Guards matched by (source, kind) where that pair is one guard on each side (its
    value may have changed), else by their whole text; in B's order, removed ones after
    the guard they followed. Globals Dynamo numbers anew are compared without their
    numbers; with `ids`, object ids and addresses are not compared either: a guard that
    differs only in those is SAME (`GuardChange.renumbered`)."""

    def key(g: Guard) -> tuple[str, str]:
        return (stable(g.source, ids), g.kind)

    def expr(g: Guard) -> str:
        return stable(g.expr, ids)

    ca, cb = Counter(map(key, a)), Counter(map(key, b))
    unique = {k for k in ca if ca[k] == 1 and cb.get(k) == 1}
    by_key = {key(g): g for g in a if key(g) in unique}
    left = [g for g in a if key(g) not in unique]
    out: list[GuardChange] = []
    used: set[int] = set()
    for g in b:
        k = key(g)
        if k in unique:
            old = by_key[k]
            used.add(id(old))
            same = expr(old) == expr(g)
            out.append(GuardChange(SAME if same else CHANGED, old, g))
            continue
        # The same guard: source, kind and expression (the comment may differ).
        match = next(
            (o for o in left if id(o) not in used and key(o) + (expr(o),) == k + (expr(g),)),
            None,
        )
        if match is not None:
            used.add(id(match))
            out.append(GuardChange(SAME, match, g))
        else:
            out.append(GuardChange(ADDED, None, g))
    out.extend(GuardChange(REMOVED, g, None) for g in a if id(g) not in used)
    return _pair_by_source(out)


def _pair_by_source(changes: list[GuardChange]) -> list[GuardChange]:
    """One guard removed and one added on the same source (``L['n'] == 0`` became a type
    check): that source's guard changed."""
    by_source: dict[str, list[GuardChange]] = {}
    for c in changes:
        if c.status in (ADDED, REMOVED) and c.guard.source:
            by_source.setdefault(c.guard.source, []).append(c)
    for pair in by_source.values():
        statuses = sorted(c.status for c in pair)
        if statuses != [ADDED, REMOVED]:
            continue
        added = next(c for c in pair if c.status == ADDED)
        removed = next(c for c in pair if c.status == REMOVED)
        added.status, added.a = CHANGED, removed.a
        changes.remove(removed)
    return changes


def _mentions(guard: Guard, name: str) -> bool:
    """The guard checks the input `name` (``idx``, ``kwargs['input_ids']``): its source, or
    its expression for a guard without one (``LAMBDA_GUARD: 2 <= L['idx'].size()[1]``)."""
    source = input_name(guard.source) if guard.source else ""
    if source == name or source.startswith((f"{name}[", f"{name}.")):
        return True
    head, _, rest = name.partition("[")
    local = f"L['{head}']" + (f"[{rest}" if rest else "")
    return local in guard.expr


def decisive_first(
    changes: list[GuardChange], reasons: Sequence[str], one_process: bool = False
) -> list[GuardChange]:
    """The changes on the inputs whose guards failed (why B was compiled) first, marked
    `decides`; the rest after them, in their order. `one_process`: A and B share their
    objects' ids, so a guard on a failed input whose id differs checks another object (the
    cause, not noise): it is CHANGED, and listed."""
    names = {f.input for f in map(parse_guard_failure, reasons) if f.input}
    for c in changes:
        on_failed = any(_mentions(g, n) for g in (c.a, c.b) if g is not None for n in names)
        if one_process and on_failed and c.renumbered and c.other_ids:
            c.status = CHANGED
        c.decides = c.status != SAME and on_failed
    order = {CHANGED: 0, REMOVED: 1, ADDED: 2}
    deciding = sorted((c for c in changes if c.decides), key=lambda c: order.get(c.status, 3))
    return deciding + [c for c in changes if not c.decides]


# ---------------------------------------------------------------------- kernels


_KERNEL_PATH = re.compile(r"^\s*# kernel path: .*$", re.M)
_BACKEND_HASH = re.compile(r"'backend_hash': '[0-9A-Fa-f]+',?\s*")


def kernel_fingerprint(source: str, name: str) -> str:
    """A digest of a kernel's source that ignores its own name, the cache path and the
    backend hash (two runs' copies of one kernel compare equal)."""
    text = _KERNEL_PATH.sub("", source)
    text = _BACKEND_HASH.sub("", text)
    if name:
        text = text.replace(name, "KERNEL")
    return hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=12).hexdigest()


@dataclass(frozen=True)
class KernelInfo:
    name: str
    kind: str
    digest: str  # `kernel_fingerprint` ("" when its source was not found)
    where: str  # the compile id, with the output code's position when it has several

    @property
    def key(self) -> tuple[str, str]:
        return (self.name, self.kind)


def output_kernels(rec: Record, kernels: Sequence[Kernel], where: str) -> list[KernelInfo]:
    """The kernels of one output code, with their fingerprints (reads the payload)."""
    text = rec.payload()
    lines = text.split("\n")
    spans = {s.name: s for s in split_output_code(text)}
    out = []
    for k in kernels:
        span = spans.get(k.name)
        digest = kernel_fingerprint(span.source(lines), k.name) if span is not None else ""
        out.append(KernelInfo(k.name, k.kind, digest, where))
    return out


def compile_kernels(comp: Compile) -> list[KernelInfo]:
    out: list[KernelInfo] = []
    codes = comp.output_codes
    for i, rec in enumerate(codes):
        where = comp.id_label + (f" #{i + 1}" if len(codes) > 1 else "")
        out.extend(output_kernels(rec, [k for k in comp.kernels if k.output is rec], where))
    return out


@dataclass
class KernelChange:
    status: str  # SAME, CHANGED (same name and kind, other source), NEW, GONE, RENAMED
    a: KernelInfo | None
    b: KernelInfo | None

    @property
    def name(self) -> str:
        k = self.b if self.b is not None else self.a
        return k.name if k is not None else ""

    @property
    def kind(self) -> str:
        k = self.b if self.b is not None else self.a
        return k.kind if k is not None else ""


def kernel_diff(a: Sequence[KernelInfo], b: Sequence[KernelInfo]) -> list[KernelChange]:
    """Kernels matched by name and kind (same or changed source), then the rest by source
    fingerprint (renamed); what is left is new (B only) or gone (A only). A name that
    occurs several times (recompiles) is one kernel: changed when its sources differ."""

    def grouped(infos: Sequence[KernelInfo]) -> dict[tuple[str, str], list[KernelInfo]]:
        out: dict[tuple[str, str], list[KernelInfo]] = {}
        for info in infos:
            out.setdefault(info.key, []).append(info)
        return out

    ga, gb = grouped(a), grouped(b)
    out: list[KernelChange] = []
    only_a = [infos[0] for key, infos in ga.items() if key not in gb]
    only_b = [infos[0] for key, infos in gb.items() if key not in ga]
    for key, infos in gb.items():
        before = ga.get(key)
        if before is None:
            continue
        same = {i.digest for i in before} == {i.digest for i in infos}
        out.append(KernelChange(SAME if same else CHANGED, before[0], infos[0]))
    by_digest: dict[str, KernelInfo] = {}
    for info in only_a:
        if info.digest:
            by_digest.setdefault(info.digest, info)
    gone = list(only_a)
    for info in only_b:
        old = by_digest.pop(info.digest, None) if info.digest else None
        if old is not None and old.kind == info.kind:
            gone.remove(old)
            out.append(KernelChange(RENAMED, old, info))
        else:
            out.append(KernelChange(NEW, None, info))
    out.extend(KernelChange(GONE, info, None) for info in gone)
    return out


# ---------------------------------------------------------------------- cache keys


@dataclass(frozen=True)
class KeyChange:
    """A cache key component whose hash differs between A's key and B's, with its value in
    each (its first line; None: that key has no such component) and the caches it differs in
    (``fx_graph``; ``fx_graph #2`` for a compile's second key of that cache)."""

    name: str
    a: str | None
    b: str | None
    caches: tuple[str, ...]

    @property
    def setting(self) -> bool:
        """A choice made outside the code (a config, a version), not what is compiled (the
        graph, its inputs): what makes the same graph miss the cache."""
        return self.name != GRAPH_COMPONENT and not self.name.startswith("example_inputs")


def compile_cache_keys(comp: Compile) -> dict[str, dict[str, tuple[str, str]]]:
    """A compile's cache keys that list their components, by cache (``fx_graph``, then
    ``fx_graph #2``: a forward's and a backward's graph each have a key), in log order."""
    seen: Counter[str] = Counter()
    out: dict[str, dict[str, tuple[str, str]]] = {}
    for event in comp.cache:
        key = key_entries(event.record)
        if key:
            seen[event.cache] += 1
            n = seen[event.cache]
            out[event.cache if n == 1 else f"{event.cache} #{n}"] = key
    return out


def cache_key_diff(a: Compile, b: Compile) -> list[KeyChange] | None:
    """The components whose hash differs between A's and B's keys of the same cache, one
    entry per component over the caches: settings (config, versions) first, then the
    inputs, then the graph. None: no cache has a key on both sides to compare."""
    ka, kb = compile_cache_keys(a), compile_cache_keys(b)
    both = [cache for cache in kb if cache in ka]
    if not both:
        return None
    found: dict[str, tuple[str | None, str | None, list[str]]] = {}
    for cache in both:
        ca, cb = ka[cache], kb[cache]
        for name in [*ca, *(n for n in cb if n not in ca)]:
            va, vb = ca.get(name), cb.get(name)
            if (va and va[0]) == (vb and vb[0]):
                continue
            entry = found.setdefault(
                name,
                (shown_value(va[1]) if va else None, shown_value(vb[1]) if vb else None, []),
            )
            entry[2].append(cache)
    changes = [KeyChange(name, va, vb, tuple(caches)) for name, (va, vb, caches) in found.items()]

    def rank(c: KeyChange) -> int:
        return 0 if c.setting else 2 if c.name == GRAPH_COMPONENT else 1

    return sorted(changes, key=rank)


# ---------------------------------------------------------------------- compile diff


GRAPH_RECORDS = (
    ("dynamo_output_graph", "Dynamo graph"),
    ("aot_joint_graph", "AOT joint graph"),
    ("aot_forward_graph", "AOT forward graph"),
    ("aot_backward_graph", "AOT backward graph"),
    ("aot_inference_graph", "AOT inference graph"),
)


@dataclass
class GraphDiff:
    label: str
    lines: list[DiffLine]
    in_a: bool
    in_b: bool


@dataclass
class CompileDiff:
    a: Compile
    b: Compile
    guards: list[GuardChange] | None  # None: a compile logged no guards (`guards_logged`)
    guards_logged: tuple[bool, bool]
    graphs: list[GraphDiff]
    kernels: list[KernelChange]
    times: list[tuple[str, float | None, float | None]]  # (phase, A seconds, B seconds)
    reasons: list[str]  # why B was compiled (its recompile reasons)
    other_process: bool = False  # A and B from two log files: other ids for the same objects
    # The cache key components that differ, settings first (None: A or B logged no key).
    cache_keys: list[KeyChange] | None = None

    @property
    def guard_counts(self) -> Counter[str]:
        return Counter(c.status for c in self.guards or [])

    @property
    def kernel_counts(self) -> Counter[str]:
        return Counter(c.status for c in self.kernels)


def predecessor(comp: Compile) -> Compile | None:
    """The compile a recompile replaced: the same frame's compile with the highest
    frame_compile_id below its own, in the same episode (the frame is per episode)."""
    frame = comp.frame
    mine = comp.key.frame_compile_id
    if frame is None or not isinstance(mine, int):
        return None
    earlier = [
        c
        for c in frame.compiles
        if isinstance(c.key.frame_compile_id, int) and c.key.frame_compile_id < mine
    ]
    return max(earlier, key=lambda c: c.key.frame_compile_id or 0) if earlier else None


def _payload_lines(comp: Compile, kind: str) -> list[str] | None:
    records = comp.records_of(kind)
    return records[-1].payload().split("\n") if records else None


def compile_times(a: Compile, b: Compile) -> list[tuple[str, float | None, float | None]]:
    pa = {label: v for label, v, _ in a.metric_phases()}
    pb = {label: v for label, v, _ in b.metric_phases()}
    labels = list(pa) + [k for k in pb if k not in pa]
    out = [(label, pa.get(label), pb.get(label)) for label in labels]
    ba, bb = backward_seconds(a), backward_seconds(b)
    if ba is not None or bb is not None:
        out.append((BACKWARD_PHASE, ba, bb))
    return out


def compile_diff(a: Compile, b: Compile) -> CompileDiff:
    ga, gb = compile_guards(a), compile_guards(b)
    # Two log files: two processes (runs or ranks), whose object ids differ.
    ids = a.file is not b.file
    guards = guard_diff(ga, gb) if ga is not None and gb is not None else None
    graphs = []
    for kind, label in GRAPH_RECORDS:
        la, lb = _payload_lines(a, kind), _payload_lines(b, kind)
        if la is None and lb is None:
            continue
        graphs.append(
            GraphDiff(label, text_diff(la or [], lb or []), la is not None, lb is not None)
        )
    kernels = kernel_diff(compile_kernels(a), compile_kernels(b))
    reasons = b.recompile.reasons if b.recompile is not None else []
    if guards is not None:
        guards = decisive_first(guards, reasons, one_process=not ids)
    logged = (ga is not None, gb is not None)
    times = compile_times(a, b)
    keys = cache_key_diff(a, b)
    return CompileDiff(a, b, guards, logged, graphs, kernels, times, reasons, ids, keys)


def model_kernels(model: Model, cancelled: Callable[[], bool] | None = None) -> list[KernelInfo]:
    """Every kernel of a model with its fingerprint (reads each output code once)."""
    out: list[KernelInfo] = []
    for comp in list(model.compiles):
        if cancelled is not None and cancelled():
            break
        out.extend(compile_kernels(comp))
    return out
