"""Why a frame recompiled, in words: guard failures parsed into (input, what changed), the
Dynamo and Inductor config each compile ran with, and a plain diagnosis per frame.

Guard failures come in the forms torch logs them (``recompile_reasons`` artifacts, the
``Recompiling function`` messages of TORCH_LOGS=recompiles)::

    0/0: tensor 'x' size mismatch at index 0. expected 8, actual 16
    0/0: tensor 'kwargs['input_ids']' dtype mismatch. expected Float, actual Half
    0/0: L['x'].size()[1] == 64
    0/0: ___check_type_id(L['x'], 94123)
    0/0: L['n'] == 3                      # return x * n  # script.py:12 in f
    0/0: GLOBAL_STATE changed: grad_mode

The config is read from each compile's ``compilation_metrics`` (``dynamo_config`` and
``inductor_config`` hold the whole config as JSON text), from disk, when asked.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any

from tcview.model.facts import short_guard
from tcview.model.objects import Compile, Frame, Record

# What changed, in the order a diagnosis lists them.
CHANGES = (
    "size",
    "stride",
    "dtype",
    "rank",
    "device",
    "requires_grad",
    "dispatch keys",
    "type",
    "identity",
    "value",
    "length",
    "dynamic marking",
    "global state",
    "other",
)

_ID = r"(?:(!?\d+(?:/\d+)*(?:_\d+)?): )?"
_TENSOR = r"tensor '(?P<input>.+?)' "
_FORMS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "size",
        re.compile(
            _ID + _TENSOR + r"size mismatch at index (?P<index>\d+)\. "
            r"expected (?P<expected>\S+?), actual (?P<actual>\S+)$"
        ),
    ),
    (
        "stride",
        re.compile(
            _ID + _TENSOR + r"stride mismatch at index (?P<index>\d+)\. "
            r"expected (?P<expected>\S+?), actual (?P<actual>\S+)$"
        ),
    ),
    (
        "dtype",
        re.compile(
            _ID + _TENSOR + r"dtype mismatch\. expected (?P<expected>\S+?), actual (?P<actual>\S+)$"
        ),
    ),
    (
        "rank",
        re.compile(
            _ID + _TENSOR + r"rank mismatch\. expected (?P<expected>\S+?), actual (?P<actual>\S+)$"
        ),
    ),
    (
        "device",
        re.compile(
            _ID + _TENSOR + r"Tensor device index mismatch\. Expected device index to be "
            r"(?P<expected>\S+?), actual (?P<actual>\S+)$"
        ),
    ),
    (
        "requires_grad",
        re.compile(
            _ID + _TENSOR + r"requires_grad mismatch\. expected requires_grad=(?P<expected>\S+)"
        ),
    ),
    (
        "dispatch keys",
        re.compile(
            _ID + _TENSOR + r"dispatch key set mismatch\. expected (?P<expected>.+?), "
            r"actual (?P<actual>.+)$"
        ),
    ),
    ("global state", re.compile(_ID + r"GLOBAL_STATE changed: (?P<input>.*?)\s*$")),
    ("type", re.compile(_ID + r"___check_type_id\((?P<input>[^,]+), (?P<expected>\d+)\)")),
    ("identity", re.compile(_ID + r"___check_obj_id\((?P<input>[^,]+), (?P<expected>\d+)\)")),
    (
        "dynamic marking",
        re.compile(
            _ID + r".*?(?P<input>[A-Z]\[[^\]]+\](?:\[[^\]]+\])*), '_dynamo_dynamic_indices'"
        ),
    ),
    (
        "size",
        re.compile(_ID + r"(?P<input>.+?)\.size\(\)\[(?P<index>\d+)\] == (?P<expected>-?\d+)\s*$"),
    ),
    (
        "stride",
        re.compile(
            _ID + r"(?P<input>.+?)\.stride\(\)\[(?P<index>\d+)\] == (?P<expected>-?\d+)\s*$"
        ),
    ),
    ("length", re.compile(_ID + r"len\((?P<input>.+)\) == (?P<expected>\d+)\s*$")),
    (
        "size",  # a symbolic shape guard on one dimension: Eq(s0, 6), 2 <= L['x'].size()[0]
        re.compile(
            _ID + r".*?(?P<input>[A-Z]\[[^\]]+\](?:\[[^\]]+\])*)\.size\(\)\[(?P<index>\d+)\]"
        ),
    ),
    (
        "value",
        re.compile(
            _ID + r"(?P<input>[A-Za-z_][\w.]*(?:\[[^\]]+\])*) == "
            r"(?P<expected>-?[\w.+-]+|'[^']*'|\"[^\"]*\")\s*$"
        ),
    ),
)
_LOCAL = re.compile(r"^L\[(['\"])(.+?)\1\]")


@dataclass(frozen=True)
class GuardFailure:
    """One guard that failed: which input, what changed, and the guard as logged."""

    change: str  # one of CHANGES
    input: str  # the input as the user names it: x, kwargs['input_ids'], n; "" when unknown
    index: int | None  # the dimension, for a size or stride
    expected: str
    actual: str
    against: str  # the compile whose guard failed (0/0), "" when not logged
    text: str  # the guard's first line, without its source comment

    @property
    def key(self) -> tuple[str, str, int | None]:
        return (self.input, self.change, self.index)

    @property
    def what(self) -> str:
        """``size at index 1``, ``dtype``, ``value``."""
        if self.index is not None:
            return f"{self.change} at index {self.index}"
        return self.change


def input_name(source: str) -> str:
    """``L['x']`` -> ``x``; ``L['kwargs']['input_ids']`` -> ``kwargs['input_ids']``."""
    source = source.strip()
    m = _LOCAL.match(source)
    if m is None:
        return source
    return m.group(2) + source[m.end() :]


def parse_guard_failure(reason: str) -> GuardFailure:
    """One guard failure (``0/0: tensor 'x' size mismatch at index 0. expected 8, …``)."""
    text = short_guard(reason)
    for change, pattern in _FORMS:
        m = pattern.match(text)
        if m is None:
            continue
        groups = m.groupdict()
        index = groups.get("index")
        return GuardFailure(
            change,
            input_name(groups.get("input") or ""),
            int(index) if index is not None else None,
            groups.get("expected") or "",
            groups.get("actual") or "",
            m.group(1) or "",
            text,
        )
    against, _, rest = text.partition(": ")
    if re.fullmatch(r"!?\d+(?:/\d+)*(?:_\d+)?", against):
        return GuardFailure("other", "", None, "", "", against, rest)
    return GuardFailure("other", "", None, "", "", "", text)


# ---------------------------------------------------------------------- config

# Dynamo settings that decide when a frame recompiles, first; then the rest that matter.
DYNAMO_KEYS = (
    "recompile_limit",
    "cache_size_limit",  # torch before 2.6: the same limit
    "accumulated_recompile_limit",
    "accumulated_cache_size_limit",
    "automatic_dynamic_shapes",
    "assume_static_by_default",
    "specialize_int",
    "specialize_float",
    "force_parameter_static_shapes",
    "capture_scalar_outputs",
    "capture_dynamic_output_shape_ops",
    "inline_inbuilt_nn_modules",
    "suppress_errors",
    "guard_nn_modules",
    "optimize_ddp",
)
INDUCTOR_KEYS = (
    "max_autotune",
    "max_autotune_pointwise",
    "max_autotune_gemm",
    "coordinate_descent_tuning",
    "triton.cudagraphs",
    "freezing",
    "cpp_wrapper",
    "fx_graph_cache",
    "benchmark_kernel",
    "compile_threads",
)
LIMIT_KEYS = ("recompile_limit", "cache_size_limit")
# What each torch.compile mode patches into Inductor's config for its compiles
# (torch/_inductor/__init__.py, list_mode_options), largest first.
MODE_OPTIONS: dict[str, dict[str, Any]] = {
    "max-autotune": {
        "max_autotune": True,
        "triton.cudagraphs": True,
        "coordinate_descent_tuning": True,
    },
    "max-autotune-no-cudagraphs": {"max_autotune": True, "coordinate_descent_tuning": True},
    "reduce-overhead": {"triton.cudagraphs": True},
}
# The FX graph cache's key details list the config the compile ran with, one component each:
# ``[hash] inductor_config[max_autotune]: True``.
_CACHE_CONFIG = re.compile(r"\[\w+\] inductor_config\[([\w.]+)\]: (.*)\Z", re.S)
_MARKED = re.compile(
    r"getattr\((?P<input>[A-Z]\[[^\]]+\](?:\[[^\]]+\])*), '_dynamo_dynamic_indices', set\(\)\)"
    r"\.issubset\(\{(?P<dims>[\d, ]*)\}\)"
)


@dataclass
class CompileConfig:
    """The settings one compile ran with (empty when its log does not record them)."""

    dynamo: dict[str, Any] = field(default_factory=dict)
    # Inductor's: the compile's own where its cache key details record them (`effective`),
    # else the process's global config, which leaves out what mode= and options= patch in.
    inductor: dict[str, Any] = field(default_factory=dict)
    marked_dynamic: list[tuple[str, str]] = field(default_factory=list)  # (input, dims)
    effective: bool = False  # `inductor` is the compile's own config
    changed: dict[str, Any] = field(default_factory=dict)  # set for this compile: key -> global

    @property
    def mode(self) -> str | None:
        """The torch.compile mode whose patches are all among the changed settings."""
        for mode, options in MODE_OPTIONS.items():
            if all(
                k in self.changed and _same(self.inductor.get(k), v) for k, v in options.items()
            ):
                return mode
        return None

    def changed_by(self, key: str) -> str:
        """Why a setting differs from the global config: ``mode="max-autotune"`` or
        ``options=`` (the trace does not say which; a mode's own keys are put down to it)."""
        mode = self.mode
        if mode is not None and key in MODE_OPTIONS[mode]:
            return f'mode="{mode}"'
        return "options="

    @property
    def limit(self) -> int | None:
        for key in LIMIT_KEYS:
            value = self.dynamo.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return None

    @property
    def limit_name(self) -> str:
        return next((k for k in LIMIT_KEYS if k in self.dynamo), "recompile_limit")

    def rows(self) -> list[tuple[str, str]]:
        """(setting, value): Dynamo's that matter for recompiles first, then Inductor's."""
        out = [(k, _show(self.dynamo[k])) for k in DYNAMO_KEYS if k in self.dynamo]
        if self.marked_dynamic:
            out.append(
                (
                    "mark_dynamic",
                    "; ".join(f"{name} dims {{{dims}}}" for name, dims in self.marked_dynamic),
                )
            )
        keys = [k for k in INDUCTOR_KEYS if k in self.inductor]
        keys += [k for k in self.changed if k not in keys]
        for k in keys:
            value = _show(self.inductor.get(k))
            if k in self.changed:
                value += f"  (set by {self.changed_by(k)}; global {_show(self.changed[k])})"
            out.append((f"inductor.{k}", value))
        return out


def _show(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, str) else value


def _config_json(text: Any) -> dict[str, Any]:
    if not isinstance(text, str):
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _value(text: Any) -> Any:
    """A config value as Python wrote it (``True``, ``(2, 1, 1)``), or JSON gave it, as data:
    tuples as lists, so that the two compare."""
    if isinstance(text, str):
        try:
            text = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return text
    if isinstance(text, (tuple, list)):
        return [_value(v) for v in text]
    return text


def _same(a: Any, b: Any) -> bool:
    return bool(_value(a) == _value(b))


def cache_config(comp: Compile) -> dict[str, Any] | None:
    """The Inductor config a compile ran with, from its FX graph cache key details (a miss,
    hit or bypass artifact; read from disk), mode= and options= patches included; None when
    it logged none."""
    for event in comp.cache:
        if event.cache != "fx_graph":
            continue
        try:
            details = json.loads(event.record.payload())
        except (OSError, ValueError):
            continue
        components = details.get("components") if isinstance(details, dict) else None
        if not isinstance(components, list):
            continue
        out = {}
        for item in components:
            if isinstance(item, str) and (m := _CACHE_CONFIG.match(item)):
                out[m.group(1)] = _value(m.group(2))
        if out:
            return out
    return None


def compile_config(comp: Compile) -> CompileConfig:
    """The config of a compile's last ``compilation_metrics`` record (read from disk), with
    Inductor's settings as the compile's FX graph cache details record them (what mode= and
    options= changed marked), and the inputs it marked dynamic (from its guards). Empty for
    TORCH_LOGS text."""
    out = CompileConfig()
    metrics = [r for r in comp.metric_records if r.kind == "compilation_metrics"]
    if metrics:
        full = metrics[-1].full_meta()
        if isinstance(full, dict):
            out.dynamo = _config_json(full.get("dynamo_config"))
            out.inductor = _config_json(full.get("inductor_config"))
    own = cache_config(comp)
    if own is not None:
        out.changed = {
            k: out.inductor[k]
            for k, v in own.items()
            if k in out.inductor and not _same(out.inductor[k], v)
        }
        out.inductor = {**out.inductor, **own}
        out.effective = True
    for rec in comp.records:
        if rec.kind == "dynamo_cpp_guards_str":
            out.marked_dynamic = marked_dynamic(rec)
            break
    return out


def marked_dynamic(guards: Record) -> list[tuple[str, str]]:
    """Inputs a ``mark_dynamic`` call marked, from a compile's guards: (input, dims)."""
    out: list[tuple[str, str]] = []
    for m in _MARKED.finditer(guards.payload()):
        item = (input_name(m.group("input")), m.group("dims").replace(" ", ""))
        if item not in out:
            out.append(item)
    return out


# ---------------------------------------------------------------------- diagnosis


@dataclass
class Cause:
    """Recompiles that one kind of guard failure caused, with the values seen."""

    input: str
    what: str
    change: str
    index: int | None
    compiles: list[Compile] = field(default_factory=list)
    values: list[str] = field(default_factory=list)  # the new values, in order
    guarded: list[str] = field(default_factory=list)  # the values guarded on, when no new one

    @property
    def count(self) -> int:
        return len(self.compiles)


@dataclass
class Diagnosis:
    """Why a frame recompiled: counts, the limit, the causes and a sentence."""

    recompiles: int
    limit: int | None
    limit_name: str
    limit_hit: Compile | None  # the compile that hit the limit
    causes: list[Cause]
    unexplained: int  # recompiles with no guard failure logged
    sentences: list[str]


def primary_failure(comp: Compile) -> GuardFailure | None:
    """The guard failure that made a recompile: the first one logged (against the newest
    compile of the frame; the others repeat it against older ones)."""
    rc = comp.recompile
    if rc is None or not rc.reasons:
        return None
    return parse_guard_failure(rc.reasons[0])


def diagnose(frame: Frame, config: CompileConfig | None = None) -> Diagnosis:
    """A plain diagnosis of a frame's recompiles (`config`: what its compiles ran with)."""
    recompiles = [c for c in frame.compiles if c.key.is_recompile]
    config = config or CompileConfig()
    limit_hit = next(
        (c for c in frame.compiles if any(f.is_recompile_limit for f in c.failures)), None
    )
    causes: dict[tuple[str, str, int | None], Cause] = {}
    unexplained = 0
    for comp in recompiles:
        failure = primary_failure(comp)
        if failure is None:
            unexplained += 1
            continue
        cause = causes.get(failure.key)
        if cause is None:
            cause = causes[failure.key] = Cause(
                failure.input, failure.what, failure.change, failure.index
            )
        cause.compiles.append(comp)
        if failure.actual:
            cause.values.append(failure.actual)
        elif failure.expected:
            cause.guarded.append(failure.expected)
    ordered = sorted(causes.values(), key=lambda c: (-c.count, CHANGES.index(c.change)))
    diagnosis = Diagnosis(
        len(recompiles),
        config.limit,
        config.limit_name,
        limit_hit,
        ordered,
        unexplained,
        [],
    )
    diagnosis.sentences = _sentences(frame, diagnosis, config)
    return diagnosis


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _cause_text(cause: Cause) -> str:
    who = f"`{cause.input}`" if cause.input else "a guard"
    values = ""
    if cause.values:
        values = f" (new values {_few(cause.values)})"
    elif cause.guarded:
        values = f" (it was {_few(cause.guarded)})"
    return f"{who} {cause.what}{values}"


def _few(values: list[str]) -> str:
    return ", ".join(values[:6]) + (", …" if len(values) > 6 else "")


def _sentences(frame: Frame, d: Diagnosis, config: CompileConfig) -> list[str]:
    out: list[str] = []
    name = frame.co_name or (frame.user_frame.name if frame.user_frame else frame.id_text)
    if d.limit_hit is not None:
        limit = f" ({d.limit_name} = {d.limit})" if d.limit is not None else ""
        out.append(
            f"The recompile limit was hit{limit} at {d.limit_hit.id_label}: Dynamo stopped "
            f"compiling `{name}` and runs it eagerly from then on."
        )
    if not d.recompiles:
        out.append("No recompiles: the frame compiled once.")
        return out
    if not d.causes:
        head = f"{_plural(d.recompiles, 'recompile')}; no guard failure was logged for them"
    elif len(d.causes) == 1 and not d.unexplained:
        head = f"{_plural(d.recompiles, 'recompile')}, all on {_cause_text(d.causes[0])}"
    else:
        parts = [f"{c.count} on {_cause_text(c)}" for c in d.causes]
        if d.unexplained:
            parts.append(f"{d.unexplained} with no guard failure logged")
        head = f"{_plural(d.recompiles, 'recompile')}: " + "; ".join(parts)
    if d.limit is not None and d.limit_hit is None:
        head += f"; limit {d.limit} not hit"
    out.append(head + ".")
    out.extend(_advice(d, config))
    return out


def _advice(d: Diagnosis, config: CompileConfig) -> list[str]:
    """What would avoid the recompiles, per cause (the most frequent first)."""
    out: list[str] = []
    auto = config.dynamo.get("automatic_dynamic_shapes")
    for cause in d.causes:
        who = f"`{cause.input}`" if cause.input else "the input"
        target = cause.input or "x"
        if cause.change == "size":
            dim = cause.index if cause.index is not None else 0
            fix = (
                f"`dynamic=True` or `torch._dynamo.mark_dynamic({target}, {dim})` would avoid them"
            )
            if auto is False:
                out.append(f"automatic_dynamic_shapes is off (or `dynamic=False`): {fix}.")
            elif auto is True and cause.count > 1:
                out.append(
                    f"automatic_dynamic_shapes is on, yet {who} recompiled {cause.count} times on "
                    f"{cause.what}: a guard specializes that dimension; {fix}."
                )
            elif auto is True:
                out.append(
                    f"automatic_dynamic_shapes made {who} dimension {dim} dynamic at this "
                    f"recompile; `torch._dynamo.mark_dynamic({target}, {dim})` avoids even this one."
                )
            else:
                out.append(f"{fix[0].upper()}{fix[1:]}.")
        elif cause.change == "stride":
            out.append(f"{who} changed memory layout: `.contiguous()` before the call avoids it.")
        elif cause.change == "dtype":
            out.append(
                f"each dtype of {who} needs its own graph: cast to one dtype before the call."
            )
        elif cause.change == "value":
            if auto is False:
                out.append(
                    f"{who} is a Python value baked into the graph as a constant, and "
                    "automatic_dynamic_shapes is off: each new value recompiles; pass it as a "
                    "tensor, or turn automatic dynamic shapes on (an int then becomes a symbol)."
                )
            elif config.dynamo.get("specialize_int") is True:
                out.append(
                    f"{who} is a Python value baked into the graph, and specialize_int is on: "
                    "pass it as a tensor, or turn specialize_int off."
                )
            else:
                out.append(
                    f"{who} is a Python value baked into the graph as a constant: pass it as a "
                    "tensor (automatic dynamic shapes makes an int a symbol once it changes)."
                )
        elif cause.change == "identity":
            out.append(f"{who} is a different object on each call: reuse one object.")
        elif cause.change == "type":
            out.append(f"{who} changed type between calls.")
        elif cause.change == "global state":
            out.append(f"global state changed between calls ({cause.input}): e.g. torch.no_grad().")
        elif cause.change == "requires_grad":
            out.append(f"{who} changed requires_grad between calls.")
    return out
