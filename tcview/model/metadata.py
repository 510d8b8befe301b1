"""Typed metadata of the trace event kinds tcview reads, decoded once when a record is indexed.

A trace record's header carries one JSON value for its kind (`Record.meta`, a dict for most
kinds). What tcview reads of a kind's value is decoded by that kind's handler
(ingest/handlers.py) into a frozen record of this module, kept by the compile it belongs to:
consumers read typed attributes, never the raw dict, so a field torch renames or retypes is
handled in one decoder. The raw value stays where it was (`Record.meta`, `Compile.metrics`,
read whole from disk by `Record.full_meta`) for the views that list every field.

Decoders never raise: a field missing, null or of another type reads as None (or empty), as a
hostile trace must load like any other.

The records here hold only str, int, float, bool, None and tuples of str: the index cache
(ingest/snapshot.py) writes any record of `METADATA_TYPES` kept in a `Compile` field, field by
field, with its field names, so a record whose fields change is read back from no older cache.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass, fields
from enum import Enum
from typing import Any

# The recompile limit a compile ran with, as a slim `compilation_metrics` value keeps it out of
# the long `dynamo_config` text (torch names it recompile_limit, earlier cache_size_limit).
LIMIT_KEY = "recompile_limit"
_LIMIT = re.compile(r'"(?:recompile_limit|cache_size_limit)": (\d{1,9})\b')


def config_limit(dynamo_config: str) -> int | None:
    """The recompile limit in a compile's `dynamo_config` text, or None."""
    m = _LIMIT.search(dynamo_config)
    return int(m.group(1)) if m else None


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def _float(value: Any) -> float | None:
    """A number as a float (bools are not numbers here); an int too big for a float is
    infinite, as it is when compared."""
    if type(value) is float:
        return value
    if type(value) is not int:
        return None
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _str(value: Any) -> str | None:
    return value if type(value) is str else None


# The kinds a `CompilationMetrics` is decoded from: torch logs one CompilationMetrics value
# per compile, another for the lazily compiled backward (the same compile id), and the costs
# paid when each first runs. ESTIMATE: a TORCH_LOGS capture's estimate of a compile's time.
FRAME_METRICS = "compilation_metrics"
BACKWARD_METRICS = "bwd_compilation_metrics"
RUNTIME_METRICS = "compilation_metrics_runtime"
BACKWARD_RUNTIME_METRICS = "bwd_compilation_metrics_runtime"
ESTIMATE = "estimate"
METRICS_KINDS = (FRAME_METRICS, BACKWARD_METRICS, RUNTIME_METRICS, BACKWARD_RUNTIME_METRICS)
RUNTIME_KINDS = (RUNTIME_METRICS, BACKWARD_RUNTIME_METRICS)

# The timing fields decoded, each in its metric's own unit (its name ends in _s or _us).
TIME_FIELDS = (
    "entire_frame_compile_time_s",
    "duration_us",
    "dynamo_cumulative_compile_time_us",
    "backend_compile_time_s",
    "aot_autograd_cumulative_compile_time_us",
    "joint_graph_pass_time_us",
    "inductor_compile_time_s",
    "inductor_cumulative_compile_time_us",
    "pre_grad_pass_time_us",
    "post_grad_pass_time_us",
    "code_gen_time_s",
    "inductor_code_gen_cumulative_compile_time_us",
    "triton_compile_time_us",
    "compile_time_autotune_time_us",
    "gc_time_us",
    "structured_logging_overhead_s",
    "backward_cumulative_compile_time_us",
    "runtime_cudagraphify_time_us",
)
# Counts of the compiled graph and its guards.
COUNT_FIELDS = (
    "graph_op_count",
    "graph_node_count",
    "graph_input_count",
    "guard_count",
    "shape_env_guard_count",
)


@dataclass(frozen=True, slots=True)
class CompilationMetrics:
    """What tcview reads of a ``compilation_metrics`` value (and of the backward's and the
    runtime's, which have its fields): see `METRICS_KINDS`."""

    kind: str  # the record's kind (`METRICS_KINDS`), or ESTIMATE
    co_name: str | None = None
    co_filename: str | None = None
    co_firstlineno: int | None = None
    # Its graph has no ops: graph_op_count 0, null or missing (tlparse's "empty graph").
    empty_graph: bool = False
    graph_op_count: int | None = None
    graph_node_count: int | None = None
    graph_input_count: int | None = None
    guard_count: int | None = None
    shape_env_guard_count: int | None = None
    restart_reasons: tuple[str, ...] = ()  # why Dynamo restarted the analysis, whole
    fail_type: str | None = None  # set when the compile failed
    fail_reason: str = ""
    fail_location: str = ""  # ``file:line`` of the user's frame it failed in
    recompile_limit: int | None = None  # from dynamo_config (or a slim value's own key)
    cudagraph_skip_reason: str | None = None
    pytorch_version: str | None = None
    entire_frame_compile_time_s: float | None = None
    duration_us: float | None = None
    dynamo_cumulative_compile_time_us: float | None = None
    backend_compile_time_s: float | None = None
    aot_autograd_cumulative_compile_time_us: float | None = None
    joint_graph_pass_time_us: float | None = None
    inductor_compile_time_s: float | None = None
    inductor_cumulative_compile_time_us: float | None = None
    pre_grad_pass_time_us: float | None = None
    post_grad_pass_time_us: float | None = None
    code_gen_time_s: float | None = None
    inductor_code_gen_cumulative_compile_time_us: float | None = None
    triton_compile_time_us: float | None = None
    compile_time_autotune_time_us: float | None = None
    gc_time_us: float | None = None
    structured_logging_overhead_s: float | None = None
    backward_cumulative_compile_time_us: float | None = None
    runtime_cudagraphify_time_us: float | None = None

    @classmethod
    def decode(cls, kind: str, meta: dict[str, Any]) -> CompilationMetrics:
        """The fields tcview reads of one metrics value (`meta`, the record's header value)."""
        get = meta.get
        reasons = get("restart_reasons")
        if isinstance(reasons, list):
            restarts = tuple(str(r) for r in reasons)
        else:
            restarts = (str(reasons),) if reasons else ()
        fail = get("fail_type")
        fn, ln = get("fail_user_frame_filename"), get("fail_user_frame_lineno")
        limit = _int(get(LIMIT_KEY))
        config = get("dynamo_config")
        if limit is None and type(config) is str:
            limit = config_limit(config)
        numbers: dict[str, Any] = {}
        for name in COUNT_FIELDS:
            value = get(name)
            numbers[name] = value if type(value) is int else None
        for name in TIME_FIELDS:  # (inline: a metrics value per compile, per rank)
            value = get(name)
            numbers[name] = value if type(value) is float else _float(value)
        return cls(
            kind,
            co_name=_str(get("co_name")),
            co_filename=_str(get("co_filename")),
            co_firstlineno=_int(get("co_firstlineno")),
            empty_graph=get("graph_op_count") in (None, 0),
            restart_reasons=restarts,
            fail_type=str(fail) if fail else None,
            fail_reason=str(get("fail_reason") or ""),
            fail_location=f"{fn}:{ln}" if fn else "",
            recompile_limit=limit,
            cudagraph_skip_reason=_str(get("cudagraph_skip_reason")),
            pytorch_version=_str(get("pytorch_version")),
            **numbers,
        )

    @classmethod
    def estimate(cls, seconds: float) -> CompilationMetrics:
        """A TORCH_LOGS capture's compile time, from the times of its Step 1/2/3 messages."""
        return cls(ESTIMATE, entire_frame_compile_time_s=seconds)

    @property
    def backward(self) -> bool:
        return self.kind in (BACKWARD_METRICS, BACKWARD_RUNTIME_METRICS)

    @property
    def runtime(self) -> bool:
        return self.kind in RUNTIME_KINDS

    @property
    def compile_time_s(self) -> float | None:
        """The frame's compile time: entire_frame_compile_time_s, else duration_us."""
        if self.entire_frame_compile_time_s is not None:
            return self.entire_frame_compile_time_s
        return self.duration_us / 1e6 if self.duration_us is not None else None

    def seconds(self, name: str) -> float | None:
        """A timing field (`TIME_FIELDS`) in seconds, whichever unit its name says."""
        value: float | None = getattr(self, name)
        if value is None:
            return None
        return value / 1e6 if name.endswith("_us") else value


# ``fx_graph_cache_hit``, ``aotautograd_cache_bypass``: the artifacts that say what a cache
# did for a compile (``*_cache_hash`` artifacts are keys, not results).
CACHE_PREFIXES = ("fx_graph_cache_", "aotautograd_cache_")
CACHE_RESULTS = ("hit", "miss", "bypass")


@dataclass(frozen=True, slots=True)
class CacheArtifact:
    """What an ``artifact`` record named ``<cache>_cache_<result>`` says."""

    cache: str  # fx_graph, aotautograd
    result: str  # one of CACHE_RESULTS

    @staticmethod
    @functools.lru_cache(maxsize=256)  # a few names, on every compile of every rank
    def decode(name: str) -> CacheArtifact | None:
        """The cache and result an artifact's name gives; None for any other artifact."""
        cls = CacheArtifact
        for prefix in CACHE_PREFIXES:
            if name.startswith(prefix):
                result = name[len(prefix) :]
                return cls(prefix[:-7], result) if result in CACHE_RESULTS else None
        return None


# ---------------------------------------------------------------- newer torch (2.12+)
# Artifacts read from their name or payload when shown (the records stay on disk); each kind's
# one parser is here. Real records: tests/fixtures/runs/torch2_1{2,4}_artifacts.tar.xz.

TORCH_VERSION = "torch_version"  # artifact, first record of a file: which torch wrote it
DYNAMO_CACHE_ENTRIES = "dynamo_cache_entries"  # artifact: what caching precompile saved
SUBGRAPH_KEY = "subgraph_name"  # context key: the regional-inductor region being compiled
_BYTECODE = re.compile(r"(.+)_(ORIGINAL|MODIFIED)_BYTECODE")


def _json_object(text: str) -> dict[str, Any]:
    """A payload's JSON object, or {} (a payload is untrusted: never raises)."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True, slots=True)
class TorchVersion:
    """A ``torch_version`` artifact: ``{"pytorch_version": ..., "commit": ..., "oss": ...}``."""

    version: str | None
    commit: str | None = None

    @classmethod
    def decode(cls, payload: str) -> TorchVersion:
        get = _json_object(payload).get
        return cls(_str(get("pytorch_version")), _str(get("commit")))


class BytecodeSide(str, Enum):
    """Which dump of a compiled code object: before Dynamo rewrote it, or after."""

    def __str__(self) -> str:
        return self.value

    ORIGINAL = "original"
    MODIFIED = "modified"


@dataclass(frozen=True, slots=True)
class BytecodeDump:
    """A ``<code name>_ORIGINAL_BYTECODE`` / ``_MODIFIED_BYTECODE`` artifact: Dynamo's dump of
    a resume function's bytecode before and after its compile (`dis` text in the payload)."""

    function: str  # the code object's name (``torch_dynamo_resume_in_f_at_18``)
    which: BytecodeSide

    @staticmethod
    @functools.lru_cache(maxsize=256)
    def decode(name: str) -> BytecodeDump | None:
        m = _BYTECODE.fullmatch(name)
        return BytecodeDump(m.group(1), BytecodeSide(m.group(2).lower())) if m else None

    @property
    def title(self) -> str:
        return f"{self.which.value} bytecode"


def subgraph_name(meta: object) -> str | None:
    """The ``subgraph_name`` a record's header names (regional inductor compiles a marked
    region of the graph on its own: its records carry the region's name), else None."""
    return _str(meta.get(SUBGRAPH_KEY)) if isinstance(meta, dict) else None


def _count(value: Any) -> int | None:
    """A count written as an int or, as torch writes ``num_codes``, as a string of digits."""
    if type(value) is str and value.isdigit() and len(value) < 10:
        return int(value)
    return _int(value)


@dataclass(frozen=True, slots=True)
class CacheEntry:
    """One function's entry in a ``dynamo_cache_entries`` artifact (``artifacts.dynamo[i]``)."""

    fn_name: str | None
    fn_first_lineno: int | None
    num_codes: int | None  # its code objects (the function and its resume functions)
    device_type: str | None
    backends: tuple[str, ...]  # its compiled graphs' backend ids
    key: str | None  # the cache key it is saved under

    @classmethod
    def decode_all(cls, payload: str) -> list[CacheEntry]:
        """The entries of a ``dynamo_cache_entries`` payload, in its order ([] when broken)."""
        artifacts = _json_object(payload).get("artifacts")
        dynamo = artifacts.get("dynamo") if isinstance(artifacts, dict) else None
        out = []
        for item in dynamo if isinstance(dynamo, list) else []:
            if not isinstance(item, dict):
                continue
            get = item.get
            ids = get("backend_ids")
            out.append(
                cls(
                    _str(get("fn_name")),
                    _int(get("fn_first_lineno")),
                    _count(get("num_codes")),
                    _str(get("device_type")),
                    tuple(str(b) for b in ids) if isinstance(ids, list) else (),
                    _str(get("key")),
                )
            )
        return out


# The records a `Compile` field may hold, which the index cache writes (see the module).
METADATA_TYPES: tuple[type, ...] = (CompilationMetrics,)


def field_names(cls: type) -> list[str]:
    return [f.name for f in fields(cls)]
