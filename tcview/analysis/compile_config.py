"""The Dynamo and Inductor config each compile ran with.

The config is read from each compile's ``compilation_metrics`` (``dynamo_config`` and
``inductor_config`` hold the whole config as JSON text), from disk, when asked; Inductor's as
the compile itself ran with it from its FX graph cache key details (what ``mode=`` and
``options=`` patched in).
"""

from __future__ import annotations

import ast
import functools
import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from tcview.analysis.guard_failures import input_name
from tcview.model.objects import Compile, Record

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
        return _literal(text)
    if isinstance(text, (tuple, list)):
        return [_value(v) for v in text]
    return text


@functools.lru_cache(maxsize=4096)
def _literal(text: str) -> Any:
    """`_value` of a string (each compile's config repeats the same few hundred values; the
    lists it returns are shared, and only compared)."""
    try:
        with _AST_LOCK:
            value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, SystemError):
        return text
    return _value(value) if isinstance(value, (tuple, list)) else value


# CPython 3.11's AST construction checks a recursion depth kept per interpreter; the findings
# worker's parse raised "SystemError: AST constructor recursion depth mismatch" while another
# thread parsed too (python/cpython#106905 is one cause). Parses here take turns, and a
# SystemError leaves the value as text.
_AST_LOCK = threading.Lock()


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


def compile_config(comp: Compile, inductor: bool = True) -> CompileConfig:
    """The config of a compile's last ``compilation_metrics`` record (read from disk), with
    Inductor's settings as the compile's FX graph cache details record them (what mode= and
    options= changed marked), and the inputs it marked dynamic (from its guards). Empty for
    TORCH_LOGS text. `inductor=False`: Dynamo's settings and the marked inputs only (all that
    a recompile's diagnosis reads; Inductor's are the costly part)."""
    out = CompileConfig()
    metrics = [r for r in comp.metric_records if r.kind == "compilation_metrics"]
    if metrics:
        full = metrics[-1].full_meta()
        if isinstance(full, dict):
            out.dynamo = _config_json(full.get("dynamo_config"))
            if inductor:
                out.inductor = _config_json(full.get("inductor_config"))
    own = cache_config(comp) if inductor else None
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
