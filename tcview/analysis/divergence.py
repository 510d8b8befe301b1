"""Divergence between ranks: which ranks compiled differently, how, and where it began.

Two steps, so that the first can run where a file is indexed (a worker process):

1. `file_signature(source)`: a small JSON value per log source (one trace file, or one process
   of a capture), read from its own index: one `Step` per compile, in the order the compiles
   started (id, frame, status, failure, why it recompiled, graph-break causes, cache results,
   the collective ops Inductor scheduled, digests of its tensor metadata), and the graph
   execution order it logged last. Only the small ``inductor_collective_schedule``,
   ``inductor_runtime_and_tensor_meta`` and ``graph_execution`` artifacts are read from disk.
2. `analyze(model)`: each rank's steps (its sources' signatures, in file order) compared:
   groups of ranks per check (`CHECKS`; ``summary --json``'s ``divergence`` and
   ``exec_order_groups``), ranks
   that behave identically folded into one group, and the first point of divergence in a
   sentence.

The checks, and how they differ from tlparse 0.4.3 ``--all-ranks-html`` (see docs/explanation/tlparse.md):

- ``compile_ids``: the set of compile ids (with their episode: ``0/0 #2``); tlparse uses the
  ids of its output directories (attempts ``0/0_1`` and ``[-/-]`` included) and prints no groups.
- ``cache``: per compile, its cache results (hit, miss, bypass) in order; tlparse concatenates
  all results and ignores the compile ids.
- ``breaks``: the (compile id, cause) of every graph break and recompile; tlparse has no such
  check. Causes are made comparable across processes (addresses and object ids removed).
- ``tensor_meta``: shapes, dtypes and strides of Inductor's graphs (the
  ``inductor_runtime_and_tensor_meta`` artifacts without their runtime estimates); tlparse
  compares the whole artifact, estimates included, which differ from process to process.
- ``collectives``: the collective ops Inductor scheduled (``inductor_collective_schedule``),
  concatenated in the order the compiles started; tlparse concatenates them in directory
  listing order.
- ``exec_order``: the last ``graph_execution`` artifact's order of compile ids, as tlparse.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from tcview.analysis.compiletime import compile_seconds
from tcview.analysis.guard_failures import GuardFamily
from tcview.analysis.recompile_causes import primary_failure
from tcview.model.objects import Compile, JsonValue, LogSource, Model
from tcview.model.ranks import LABEL_PARTS, ranks_label, ranks_text

SIGNATURE_VERSION = 2
DIVERGENCE_SIGNATURE = "divergence"  # its name among a trace file's signatures
# The checks, in the order a report lists them.
CHECKS = ("compile_ids", "cache", "breaks", "tensor_meta", "collectives", "exec_order")
# The keys of ``summary --json``'s ``divergence`` (the five checks); the execution order's groups
# are ``exec_order_groups`` beside it.
JSON_CHECKS = ("compile_ids", "cache", "breaks", "tensor_meta", "collectives")
CHECK_TITLES = {
    "compile_ids": "compile ids",
    "cache": "cache hit/miss",
    "breaks": "graph breaks, recompiles, failures",
    "tensor_meta": "tensor metadata",
    "collectives": "collective ops",
    "exec_order": "graph execution order",
}
# Checks whose data only some traces record (the artifacts below).
RECORDED_ONLY = ("tensor_meta", "collectives", "exec_order")
COLLECTIVES_ARTIFACT = "inductor_collective_schedule"
TENSOR_META_ARTIFACT = "inductor_runtime_and_tensor_meta"
EXEC_ORDER_ARTIFACT = "graph_execution"
# Keys of the tensor-metadata artifact that are estimates, not metadata: left out of its digest.
RUNTIME_KEY_PREFIX = "estimated_runtime"
UNREADABLE = "(unreadable)"
GROUPS_SHOWN = 12  # groups a one-line description lists

_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_LONG_NUMBER = re.compile(r"\d{7,}")  # object ids and addresses printed in decimal


class Step(NamedTuple):
    """One compile of a rank, as divergence compares it (its time is apart: never compared)."""

    id: str  # id_label: 0/1, 0/0 #2
    frame: str  # the function compiled
    status: str
    failure: str  # the fail_type, "" when it did not fail
    recompile: str  # why it recompiled (`x` size at index 0), "" when not a recompile
    breaks: tuple[str, ...]  # graph-break causes
    cache: tuple[str, ...]  # hit / miss / bypass, in order
    collectives: tuple[str, ...]  # op names, in schedule order
    tensor_meta: tuple[str, ...]  # digests of its tensor metadata artifacts


class SourceSteps(NamedTuple):
    """One source's compiles as steps, their compile times (in the same order), and the graph
    execution order it logged last (None when it logged none)."""

    steps: tuple[Step, ...]
    times: tuple[float | None, ...]
    exec_order: tuple[str, ...] | None


# ---------------------------------------------------------------------- per source


def stable_text(text: str) -> str:
    """A cause as every process prints it: addresses and object ids replaced by ``…``."""
    return _LONG_NUMBER.sub("…", _ADDRESS.sub("0x…", text.split("\n", 1)[0].strip()))


def recompile_cause(comp: Compile) -> str:
    """``\\`x\\` size at index 0``: what its guard failure says changed ("" when not a
    recompile; ``?`` when no guard failure was logged)."""
    if comp.recompile is None:
        return ""
    failure = primary_failure(comp)
    if failure is None:
        return "?"
    if failure.change is GuardFamily.OTHER:
        return stable_text(failure.text)
    return f"`{failure.input}` {failure.what}" if failure.input else failure.what


def _frame_name(comp: Compile) -> str:
    frame = comp.frame
    if frame is None:
        return ""
    if frame.co_name:
        return frame.co_name
    user = frame.user_frame
    return user.name if user is not None else ""


def _strip_runtimes(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _strip_runtimes(v)
            for k, v in value.items()
            if not str(k).startswith(RUNTIME_KEY_PREFIX)
        }
    if isinstance(value, list):
        return [_strip_runtimes(v) for v in value]
    return value


def tensor_meta_digest(payload: str) -> str:
    """A digest of a tensor-metadata artifact without its runtime estimates (of the text as it
    is when it is not JSON)."""
    try:
        value = json.loads(payload)
    except (ValueError, RecursionError):
        text = payload
    else:
        text = json.dumps(_strip_runtimes(value), sort_keys=True, separators=(",", ":"))
    return hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()[:16]


def collective_ops(payload: str) -> list[str]:
    """The op names of a collective schedule (a JSON list of strings)."""
    try:
        value = json.loads(payload)
    except (ValueError, RecursionError):
        return [UNREADABLE]
    if not isinstance(value, list):
        return [UNREADABLE]
    return [str(v) for v in value]


def execution_order(payload: str) -> list[str]:
    """The compile ids of a ``graph_execution`` artifact's ``graph_execution_order``."""
    try:
        value = json.loads(payload)
    except (ValueError, RecursionError):
        return [UNREADABLE]
    order = value.get("graph_execution_order") if isinstance(value, dict) else None
    if not isinstance(order, list):
        return [UNREADABLE]
    out = []
    for item in order:
        if isinstance(item, dict):
            item = item.get("compile_id")
        out.append(str(item))
    return out


def step_of(comp: Compile, collectives: bool = True, tensor_meta: bool = True) -> Step:
    """One compile as a `Step`; the artifacts are read only when their flags say the source
    has some (a compile's records are otherwise not walked)."""
    ops: list[str] = []
    metas: list[str] = []
    if collectives or tensor_meta:
        for rec in comp.records:
            if collectives and rec.name == COLLECTIVES_ARTIFACT:
                ops.extend(collective_ops(rec.payload()))
            elif tensor_meta and rec.name == TENSOR_META_ARTIFACT:
                metas.append(tensor_meta_digest(rec.payload()))
    failure = comp.failures[0].fail_type if comp.failures else ""
    return Step(
        comp.id_label,
        _frame_name(comp),
        comp.status.value,  # the word: a step is JSON, equal to the steps the cache gives back
        failure,
        recompile_cause(comp),
        tuple(stable_text(gb.reason) for gb in comp.breaks),
        tuple(e.result for e in comp.cache),
        tuple(ops),
        tuple(metas),
    )


def source_steps(source: LogSource) -> SourceSteps:
    """One source's steps: its compiles in the order they started."""
    artifacts = source.artifacts
    collectives = artifacts[COLLECTIVES_ARTIFACT] > 0
    tensor_meta = artifacts[TENSOR_META_ARTIFACT] > 0
    comps = sorted(source.compiles.values(), key=lambda c: c.order)
    order: tuple[str, ...] | None = None
    if artifacts[EXEC_ORDER_ARTIFACT]:
        last = next((r for r in reversed(source.records) if r.name == EXEC_ORDER_ARTIFACT), None)
        if last is not None:
            order = tuple(execution_order(last.payload()))
    steps = tuple(step_of(c, collectives, tensor_meta) for c in comps)
    return SourceSteps(steps, tuple(compile_seconds(c) for c in comps), order)


def file_signature(source: LogSource) -> dict[str, JsonValue]:
    """What divergence needs of one source, as JSON (see the module): small, and made from the
    source's own index (a worker process that indexed the file can make it). Its ``key`` is a
    digest of what is compared (all but the times): ranks that compiled alike have equal keys,
    and `steps_from` reads their steps once."""
    made = source_steps(source)
    steps = [_json_step(step) for step in made.steps]
    order = None if made.exec_order is None else list(made.exec_order)
    return {
        "version": SIGNATURE_VERSION,
        "key": _content_key(steps, order),
        "steps": steps,
        "times": list(made.times),
        "exec_order": order,
    }


def _json_step(step: Step) -> list[JsonValue]:
    """A step as JSON (its tuples as lists)."""
    return [list(v) if isinstance(v, tuple) else v for v in step]


def _content_key(steps: list[list[JsonValue]], order: list[str] | None) -> str:
    text = json.dumps([steps, order], separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()


_STR_ONLY = {str}


def _strings(value: Any) -> tuple[str, ...]:
    if type(value) is not list or (value and not {type(v) for v in value} <= _STR_ONLY):
        raise ValueError("not a list of strings")
    return tuple(value)


Parsed = dict[str, tuple[tuple[Step, ...], tuple[str, ...] | None]]


def steps_from(signature: JsonValue, seen: Parsed | None = None) -> SourceSteps:
    """The steps of a `file_signature` (from JSON); ValueError when it is not one of this
    version, or its key is not its content's (a caller then makes the steps again). `seen`:
    steps already read, by key (a thousand ranks that compiled alike are read once; a later
    signature with a known key is not checked again: signatures are tcview's own, made by the
    worker that indexed the file)."""
    if not isinstance(signature, dict) or signature.get("version") != SIGNATURE_VERSION:
        raise ValueError("not a divergence signature of this version")
    key, times = signature.get("key"), signature.get("times")
    if type(key) is not str or type(times) is not list:
        raise ValueError("no key or times")
    if not all(t is None or type(t) in (int, float) for t in times):
        raise ValueError("a time is not a number")
    known = seen.get(key) if seen is not None else None
    if known is None:
        known = _parse_steps(signature)
        rows = [_json_step(step) for step in known[0]]
        order = None if known[1] is None else list(known[1])
        if _content_key(rows, order) != key:
            raise ValueError("the key is not the signature's")
        if seen is not None:
            seen[key] = known
    steps, exec_order = known
    if len(times) != len(steps):
        raise ValueError("times do not match the steps")
    return SourceSteps(steps, tuple(None if t is None else float(t) for t in times), exec_order)


def _parse_steps(signature: dict[str, Any]) -> tuple[tuple[Step, ...], tuple[str, ...] | None]:
    rows = signature.get("steps")
    if not isinstance(rows, list):
        raise ValueError("no steps")
    steps = []
    width = len(Step._fields)
    for row in rows:
        if type(row) is not list or len(row) != width:
            raise ValueError("a step of the wrong shape")
        sid, frame, status, failure, recompile, breaks, cache, ops, metas = row
        if not {type(sid), type(frame), type(status), type(failure), type(recompile)} <= _STR_ONLY:
            raise ValueError("a step with a field of the wrong type")
        steps.append(
            Step(
                sid,
                frame,
                status,
                failure,
                recompile,
                _strings(breaks),
                _strings(cache),
                _strings(ops),
                _strings(metas),
            )
        )
    order = signature.get("exec_order")
    return tuple(steps), (None if order is None else _strings(order))


# ---------------------------------------------------------------------- combined


@dataclass(eq=False)
class RankSteps:
    """One rank: its sources, its compiles as steps, and the facts its row shows."""

    rank: int
    files: list[LogSource]
    steps: tuple[Step, ...]
    times: tuple[float | None, ...]  # each step's compile time
    exec_order: tuple[str, ...] | None
    errors: list[str] = field(default_factory=list)  # headlines of its errors

    @property
    def compiles(self) -> int:
        return len(self.steps)

    @property
    def breaks(self) -> int:
        return sum(len(s.breaks) for s in self.steps)

    @property
    def recompiles(self) -> int:
        return sum(1 for s in self.steps if s.recompile)

    @property
    def failures(self) -> int:
        return sum(1 for s in self.steps if s.failure)

    @property
    def compile_time(self) -> float | None:
        """The sum of its compile times; None when none is known (TORCH_LOGS text)."""
        known = [t for t in self.times if t is not None]
        return sum(known) if known else None

    def cache_count(self, result: str) -> int:
        return sum(1 for s in self.steps for r in s.cache if r == result)


Steps = tuple[Step, ...]
# What each check compares of a rank's steps (the execution order is compared as it is).
_CHECK_KEYS: dict[str, Callable[[Steps], Hashable]] = {
    "compile_ids": lambda steps: frozenset(s.id for s in steps),
    "cache": lambda steps: tuple((s.id, s.cache) for s in steps if s.cache),
    "breaks": lambda steps: tuple(
        sorted(
            [(s.id, "break", b) for s in steps for b in s.breaks]
            + [(s.id, "recompile", s.recompile) for s in steps if s.recompile]
            + [(s.id, "failure", s.failure) for s in steps if s.failure]
        )
    ),
    "tensor_meta": lambda steps: tuple((s.id, s.tensor_meta) for s in steps if s.tensor_meta),
    "collectives": lambda steps: tuple(op for s in steps for op in s.collectives),
}


def group_ranks(
    ranks: Sequence[RankSteps], key: Callable[[RankSteps], Hashable]
) -> list[list[int]]:
    """Ranks with equal keys, each group sorted, groups sorted by their first rank."""
    by: dict[Hashable, list[int]] = {}
    for r in ranks:
        by.setdefault(key(r), []).append(r.rank)
    return sorted((sorted(g) for g in by.values()), key=lambda g: g[0])


def _step_classes(ranks: Sequence[RankSteps]) -> dict[int, int]:
    """Each rank's steps as a small number, equal for equal steps: ranks that share one steps
    object (read once from equal signatures) are compared by identity, the rest by content."""
    by_object: dict[int, int] = {}
    by_content: dict[Steps, int] = {}
    out: dict[int, int] = {}
    for r in ranks:
        cls = by_object.get(id(r.steps))
        if cls is None:
            cls = by_object[id(r.steps)] = by_content.setdefault(r.steps, len(by_content))
        out[r.rank] = cls
    return out


@dataclass
class Finding:
    """One check: its groups of ranks (one group: no divergence)."""

    check: str
    groups: list[list[int]]
    recorded: bool = True  # the trace records what it compares (always, for the first three)

    @property
    def title(self) -> str:
        return CHECK_TITLES[self.check]

    @property
    def diverges(self) -> bool:
        return len(self.groups) > 1


@dataclass
class Divergence:
    """What `analyze` found: per rank its steps, per check its groups, and where it began."""

    ranks: list[RankSteps]
    findings: dict[str, Finding]
    groups: list[list[int]]  # ranks that behave identically
    first: str = ""  # the first point of divergence, in a sentence ("" when none)
    pair: tuple[int, int] | None = None  # two ranks that show it (to compare side by side)
    unranked: int = 0  # sources without a rank (not compared)

    @property
    def diverges(self) -> bool:
        return len(self.groups) > 1

    def rank(self, rank: int) -> RankSteps | None:
        return next((r for r in self.ranks if r.rank == rank), None)

    def json(self) -> dict[str, list[list[int]]]:
        """``summary --json``'s ``divergence``: the groups of each of `JSON_CHECKS`."""
        return {check: self.findings[check].groups for check in JSON_CHECKS}


Signer = Callable[[LogSource], JsonValue]


def indexed_signature(source: LogSource) -> JsonValue:
    """The `file_signature` made where a trace file was indexed (a worker, the cache, the
    loading thread: signatures.py), or None."""
    return source.signatures.get(DIVERGENCE_SIGNATURE)


def analyze(model: Model, signature: Signer | None = None) -> Divergence:
    """Compare the model's ranks (see the module). `signature` gives a source's
    `file_signature` made elsewhere (by the worker that indexed the file, or from a cache); one
    that does not read back is made again here. By default, a trace file's signature made where
    it was indexed (`LogSource.signatures`); other sources' steps are made here."""
    if signature is None:
        signature = indexed_signature
    by_rank: dict[int, list[LogSource]] = {}
    unranked = 0
    for source in list(model.files):
        rank = source.rank
        if rank is None:
            unranked += 1
        else:
            by_rank.setdefault(rank, []).append(source)
    errors: dict[int, list[str]] = {}
    for error in model.run_errors():
        if error.rank is not None:
            errors.setdefault(error.rank, []).append(error.headline)
    seen: Parsed = {}
    ranks: list[RankSteps] = []
    for rank in sorted(by_rank):
        parts: list[SourceSteps] = []
        for source in by_rank[rank]:
            try:
                if signature is None:
                    raise ValueError("no signature made elsewhere")
                parts.append(steps_from(signature(source), seen))
            except ValueError:
                parts.append(source_steps(source))
        if len(parts) == 1:
            steps, times, order = parts[0]
        else:
            steps = tuple(s for p in parts for s in p.steps)
            times = tuple(t for p in parts for t in p.times)
            order = next((p.exec_order for p in reversed(parts) if p.exec_order), None)
        ranks.append(RankSteps(rank, by_rank[rank], steps, times, order, errors.get(rank, [])))
    return combine(ranks, unranked)


def combine(ranks: list[RankSteps], unranked: int = 0) -> Divergence:
    """The findings over ranks whose steps are known (the cheap step: no disk reads)."""
    classes = _step_classes(ranks)
    reps: dict[int, Steps] = {classes[r.rank]: r.steps for r in ranks}  # one per class
    findings = {}
    for check, key in _CHECK_KEYS.items():
        keys = {cls: key(steps) for cls, steps in reps.items()}
        recorded = check not in RECORDED_ONLY or any(_has(check, steps) for steps in reps.values())
        findings[check] = Finding(check, _grouped(ranks, classes, keys), recorded)
    orders = group_ranks(ranks, lambda r: r.exec_order)
    recorded = any(r.exec_order is not None for r in ranks)
    findings["exec_order"] = Finding("exec_order", orders, recorded)
    groups = group_ranks(ranks, lambda r: (classes[r.rank], r.exec_order, tuple(r.errors)))
    out = Divergence(ranks, findings, groups, unranked=unranked)
    if len(groups) > 1:
        firsts = {g[0] for g in groups}
        out.first, out.pair = first_divergence([r for r in ranks if r.rank in firsts], groups)
    return out


def _grouped(
    ranks: Sequence[RankSteps], classes: dict[int, int], keys: dict[int, Hashable]
) -> list[list[int]]:
    """Ranks grouped by the key of their steps' class."""
    return group_ranks(ranks, lambda r: keys[classes[r.rank]])


def _has(check: str, steps: Steps) -> bool:
    if check == "collectives":
        return any(s.collectives for s in steps)
    return any(s.tensor_meta for s in steps)


# ---------------------------------------------------------------------- the first divergence

# What can differ between two steps of the same index, in the order a sentence names it.
ASPECTS = (
    "id",
    "failure",
    "recompile",
    "breaks",
    "status",
    "cache",
    "collectives",
    "tensor_meta",
    "frame",
)


_ASPECT_VALUES: dict[str, Callable[[Step], Hashable]] = {
    "id": lambda s: s.id,
    "frame": lambda s: s.frame,
    "failure": lambda s: s.failure,
    "recompile": lambda s: s.recompile,
    "breaks": lambda s: s.breaks,
    "status": lambda s: s.status,
    "cache": lambda s: s.cache,
    "collectives": lambda s: s.collectives,
    "tensor_meta": lambda s: s.tensor_meta,
}


def _aspect(step: Step | None, aspect: str) -> Hashable:
    return None if step is None else _ASPECT_VALUES[aspect](step)


def _differ(steps: Iterable[Step | None], aspect: str) -> bool:
    """Whether the steps differ in an aspect. A function not known on one side (a TORCH_LOGS
    capture may not name it) differs from nothing."""
    values = {_aspect(s, aspect) for s in steps}
    if aspect == "frame":
        values.discard("")
    return len(values) > 1


def _verb(phrase: str, plural: bool) -> str:
    """The phrase for several ranks: its first word (a verb) without its ``s``."""
    if not plural:
        return phrase
    head, _, rest = phrase.partition(" ")
    head = {"does": "do", "has": "have"}.get(head, head[:-1] if head.endswith("s") else head)
    return f"{head} {rest}" if rest else head


def _short_op(op: str) -> str:
    """``torch.ops._c10d_functional.all_reduce_.default`` -> ``all_reduce_``."""
    parts = op.split(".")
    if len(parts) >= 2 and parts[-1] == "default":
        return parts[-2]
    return parts[-1] if parts else op


def _describe(step: Step) -> str:
    """A step told in full (its id is not shared with the ranks it is compared with)."""
    if step.failure:
        text = f"fails to compile {step.id} ({step.failure})"
    elif step.recompile and step.recompile != "?":
        text = f"recompiles {step.id} on {step.recompile}"
    elif step.recompile:
        text = f"recompiles {step.id}"
    else:
        text = f"compiles {step.id}" + (f" ({step.frame})" if step.frame else "")
    if step.breaks:
        text += f" and breaks the graph ({step.breaks[0]})"
    return text


def _phrase(step: Step | None, aspect: str, ref: Step | None) -> str:
    """What a group of ranks does at the step where they diverge, for one aspect (singular)."""
    if step is None:
        return "does not"
    if aspect == "id":
        return _describe(step)
    sid = step.id
    if aspect == "failure":
        return f"fails to compile {sid} ({step.failure})" if step.failure else "does not"
    if aspect == "recompile":
        return f"recompiles {sid} on {step.recompile}" if step.recompile else "does not"
    if aspect == "breaks":
        if not step.breaks:
            return "does not"
        theirs = ref.breaks if ref is not None else ()
        new = next((b for b in step.breaks if b not in theirs), step.breaks[0])
        return f"breaks the graph in {sid} ({new})"
    if aspect == "status":
        return f"ends {sid} as {step.status}"
    if aspect == "frame":
        return f"compiles {sid} for {step.frame}"
    if aspect == "cache":
        return f"gets cache {'/'.join(step.cache)} for {sid}" if step.cache else "does not"
    if aspect == "collectives":
        if not step.collectives:
            return f"schedules no collectives in {sid}"
        theirs = ref.collectives if ref is not None else ()
        at = next(
            (i for i, op in enumerate(step.collectives) if i >= len(theirs) or theirs[i] != op),
            len(step.collectives),
        )
        if at >= len(step.collectives):
            return f"schedules {len(step.collectives)} collectives in {sid}"
        return f"schedules {_short_op(step.collectives[at])} as collective {at + 1} of {sid}"
    if not step.tensor_meta:
        return f"logs no tensor metadata for {sid}"
    return f"logs other tensor metadata (shapes, dtypes, strides) for {sid}"


def _reference(groups: list[tuple[list[int], Step | None]]) -> int:
    """The group the others are told against: the largest (the first of equals)."""
    return max(range(len(groups)), key=lambda i: (len(groups[i][0]), -groups[i][0][0]))


def first_divergence(
    reps: Sequence[RankSteps], groups: list[list[int]]
) -> tuple[str, tuple[int, int] | None]:
    """The first point where the groups' representatives differ, in a sentence, and two ranks
    (of the reference group and of another) that show it."""
    members = {g[0]: g for g in groups}
    longest = max(len(r.steps) for r in reps)
    for i in range(longest):
        at = [(r, r.steps[i] if i < len(r.steps) else None) for r in reps]
        if len({s for _, s in at}) == 1:
            continue
        aspect = next((a for a in ASPECTS if _differ([s for _, s in at], a)), None)
        if aspect is None:
            continue
        by: dict[Hashable, tuple[list[int], Step | None]] = {}
        for r, s in at:
            entry = by.setdefault(_aspect(s, aspect), ([], s))
            entry[0].extend(members[r.rank])
        return _sentence([(sorted(rs), s) for rs, s in by.values()], aspect)
    orders = {r.exec_order for r in reps}
    if len(orders) > 1:
        return _order_sentence(reps, members)
    crashed = [r for r in reps if r.errors]
    if crashed:
        return _error_sentence(reps, members)
    return "", None


def _sentence(
    groups: list[tuple[list[int], Step | None]], aspect: str
) -> tuple[str, tuple[int, int]]:
    """The groups at the step where they diverge: those that did something first (the
    reference group, the largest, after the others), then those that did not."""
    groups.sort(key=lambda g: g[0][0])
    ref_at = _reference(groups)
    ref_ranks, ref = groups[ref_at]
    others = [g for i, g in enumerate(groups) if i != ref_at]
    did: list[str] = []
    did_not: list[str] = []
    against = ref if ref is not None and (aspect != "tensor_meta" or ref.tensor_meta) else None
    for ranks, step in others:
        phrase = _phrase(step, aspect, ref)
        if (
            aspect == "tensor_meta"
            and against is not None
            and step is not None
            and step.tensor_meta
        ):
            phrase += f" than {ranks_label(ref_ranks)}"
        (did_not if phrase == "does not" else did).append(
            f"{ranks_label(ranks)} {_verb(phrase, len(ranks) > 1)}"
        )
    if aspect != "tensor_meta" or against is None:
        # Tensor metadata is told against the reference group's: it needs no clause of its own.
        phrase = _phrase(ref, aspect, others[0][1])
        (did_not if phrase == "does not" else did).append(
            f"{ranks_label(ref_ranks)} {_verb(phrase, len(ref_ranks) > 1)}"
        )
    if aspect == "tensor_meta":
        did.sort(key=lambda part: "no tensor metadata" in part)
    return "; ".join(did + did_not), (ref_ranks[0], others[0][0][0])


def _order_sentence(
    reps: Sequence[RankSteps], members: dict[int, list[int]]
) -> tuple[str, tuple[int, int] | None]:
    """Execution orders differ: the first call where they do."""
    orders = [(members[r.rank], r.exec_order or ()) for r in reps]
    longest = max(len(o) for _, o in orders)
    for i in range(longest):
        seen: dict[str, list[int]] = {}
        for ranks, order in orders:
            seen.setdefault(order[i] if i < len(order) else "nothing", []).extend(ranks)
        if len(seen) > 1:
            parts = [
                f"{ranks_label(sorted(rs))} {_verb('runs', len(rs) > 1)} {cid}"
                for cid, rs in sorted(seen.items(), key=lambda kv: min(kv[1]))
            ]
            pair = sorted(min(rs) for rs in seen.values())
            return f"graph execution order, call {i + 1}: " + "; ".join(parts), (
                pair[0],
                pair[1],
            )
    return "", None


def _error_sentence(
    reps: Sequence[RankSteps], members: dict[int, list[int]]
) -> tuple[str, tuple[int, int] | None]:
    """Same compiles, but some ranks crashed."""
    crashed = sorted(rank for r in reps if r.errors for rank in members[r.rank])
    fine = sorted(rank for r in reps if not r.errors for rank in members[r.rank])
    first = next(r for r in reps if r.errors)
    text = f"{ranks_label(crashed)} crashed ({first.errors[0]})"
    if fine:
        text += f"; {ranks_label(fine)} did not"
        return text, (fine[0], crashed[0])
    others = [r.rank for r in reps if r is not first]
    return text, ((first.rank, others[0]) if others else None)


# ---------------------------------------------------------------------- side by side


class Pair(NamedTuple):
    """Two ranks' compiles at one place of their aligned lists; `differs` names the aspects
    (`ASPECTS`) in which they differ (["id"] when one side has no compile there)."""

    left: Step | None
    right: Step | None
    differs: tuple[str, ...]


def align(left: Sequence[Step], right: Sequence[Step]) -> list[Pair]:
    """Two ranks' compile lists aligned by compile id (a longest-common-subsequence match)."""
    matcher = difflib.SequenceMatcher(
        None, [s.id for s in left], [s.id for s in right], autojunk=False
    )
    out: list[Pair] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for a, b in zip(left[i1:i2], right[j1:j2], strict=True):
                out.append(Pair(a, b, _differs(a, b)))
            continue
        n = max(i2 - i1, j2 - j1)
        for k in range(n):
            one = left[i1 + k] if i1 + k < i2 else None
            other = right[j1 + k] if j1 + k < j2 else None
            out.append(Pair(one, other, _differs(one, other)))
    return out


def _differs(a: Step | None, b: Step | None) -> tuple[str, ...]:
    if a is None or b is None:
        return ("id",)
    return tuple(x for x in ASPECTS if _differ((a, b), x))


def describe_groups(groups: Sequence[Sequence[int]], limit: int = GROUPS_SHOWN) -> str:
    """``[0–3] [4] [5, 6]``; past `limit` groups, ``… (N groups)``."""
    shown = " ".join(f"[{ranks_text(g, LABEL_PARTS)}]" for g in groups[:limit])
    return shown + (f" … ({len(groups)} groups)" if len(groups) > limit else "")
