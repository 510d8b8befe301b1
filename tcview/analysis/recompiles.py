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

Every recompile explained (the API the findings build on):

- ``FAMILIES``: each family a failed guard falls in, with what it is about in words;
- ``parse_guard_failure(text)`` -> ``GuardFailure``: the failed guard's parts (``family``,
  ``input``, ``index``, ``expected``, ``actual``, ``against``, ``key``, ``where``);
- ``family_of(compile)``: the family of a recompile, by the guard that failed against the
  newest earlier compile of its frame (a recompile lists one failed guard per earlier compile;
  the first is that one). ``guard_families(compiles)`` counts them, each recompile once;
- ``explain_frame(frame, config)`` / ``explain_compile(compile, config)`` / ``explain(compiles)``
  -> ``Explanation``: per recompile the family, the failed guard, the values that input took
  over the frame's compiles in order, whether it changed on every call, what changed in words,
  the fix ("" where the trace does not show what would help) and a doc link; ``json()`` is
  the same as plain data.
"""

from __future__ import annotations

import ast
import functools
import json
import re
import threading
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from tcview.analysis.changes import (
    COMPARED,
    Aspect,
    Change,
    Facts,
    diff,
    guard_facts,
    guard_text,
    user_name,
)
from tcview.model.facts import short_guard
from tcview.model.objects import Compile, Frame, Model, Record

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
    "keys",
    "dynamic marking",
    "global state",
    "other",
)

# The family of a failed guard, and what it is about, in words. `summary --json` counts
# recompiles by family (`guard_families`); "other" keeps the guard's raw text.
FAMILIES: dict[str, str] = {
    "size": "a tensor's size",
    "stride": "a tensor's strides",
    "layout": "a tensor's layout or memory format",
    "rank": "a tensor's number of dimensions",
    "dtype": "a tensor's dtype",
    "device": "a tensor's device",
    "requires_grad": "a tensor's requires_grad",
    "dispatch_keys": "a tensor's dispatch keys",
    "value": "a Python value (int, float, bool, str or None)",
    "module_flag": "a per-instance attribute of an nn.Module",
    "identity": "which object was passed",
    "type": "an object's type",
    "length": "a list's or tuple's length",
    "keys": "a dict's keys or the keyword arguments of the call",
    "global_state": "global state (grad mode, autocast, torch function modes, ...)",
    "symbolic_shape": "a guard on dynamic (symbolic) sizes",
    "dynamic_marking": "the dimensions mark_dynamic marked",
    "not_logged": "no guard failure was logged for the recompile",
    "other": "a guard tcview does not know",
}

_ID = r"(?:(!?\d+(?:/\d+)*(?:_\d+)?): )?"
_TENSOR = r"tensor '(?P<input>.+?)' "
# x, L['x'], self.cfg.flag, opts['act'], xs[0]; bounded, so a scan of a hostile line is linear
_NAME = r"[A-Za-z_]\w{0,99}(?:\.\w{1,100}|\[[^\]]{1,100}\]){0,12}"
_LITERAL = r"-?[\w.+-]+|'[^']*'|\"[^\"]*\""
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
    ("global state", re.compile(_ID + r"___check_global_state\(\)")),
    (
        "global state",
        re.compile(_ID + r"___check_torch_function_mode_stack\(\)(?P<input>)"),
    ),
    ("global state", re.compile(_ID + r"(?:utils_device\.)?CURRENT_DEVICE == (?P<expected>\S+)")),
    ("global state", re.compile(_ID + r"___check_current_backend\((?P<expected>[^)]*)\)")),
    (
        "type",
        re.compile(
            _ID
            + r"___check_type_id\((?P<input>[^,]+), \d+\)(?:, type=<class '(?P<expected>[^']+)'>)?"
        ),
    ),
    (
        "identity",
        re.compile(
            _ID + r"___check_obj_id\((?P<input>[^,]+), (?P<expected>\d+)\)"
            r"(?:, type=<class '(?P<kind>[^']+)'>)?"
        ),
    ),
    (
        "dynamic marking",
        re.compile(_ID + r".*?(?P<input>" + _NAME + r"), '_dynamo_dynamic_indices'"),
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
    (
        "keys",
        re.compile(
            _ID + r"(?P<negated>not )?___dict_contains\((?P<key>'[^']*'|\"[^\"]*\"|[^,]+), "
            r"(?P<input>[^)]+)\)"
        ),
    ),
    (
        "keys",
        re.compile(
            _ID + r"(?:list\((?P<input>.+?)\.keys\(\)\)|___key_to_id\((?P<input2>.+?)\)) == "
            r"(?P<expected>\[.*\])\s*$"
        ),
    ),
    (
        "keys",
        re.compile(
            _ID + r"len\((?P<input>(?:L\[')?\w*kwargs\w*(?:'\])?)\) == (?P<expected>\d+)\s*$"
        ),
    ),
    (
        "keys",  # the key at a position of a dict the code iterated: list(dict.keys(d))[1] == 'b'
        re.compile(
            _ID + r"list\(dict\.keys\((?P<input>" + _NAME + r")\)\)\[(?P<position>\d+)\] == "
            r"(?P<expected>" + _LITERAL + r")\s*$"
        ),
    ),
    ("length", re.compile(_ID + r"len\((?P<input>.+)\) [!=]= (?P<expected>\d+)\s*$")),
    (
        "size",  # a symbolic shape guard on one dimension: 2 <= x.size()[0] <= 4, Ne(..., 1)
        re.compile(_ID + r".*?(?P<input>" + _NAME + r")\.(?:size|stride)\(\)\[(?P<index>\d+)\]"),
    ),
    (
        "size",  # a symbolic shape guard on symbols only: Ne(s0, 1), Eq(Mod(s0, 8), 0), s0 <= 4
        re.compile(
            _ID
            + r"(?:(?:Ne|Eq|Lt|Le|Gt|Ge|Mod|FloorDiv|Max|Min)\(|.*\b[su]\d+\b\s*(?:<=?|>=?|[!=]=))"
        ),
    ),
    (
        "value",  # an unspecialized float Dynamo read as a constant: ___as_tensor(x).item() == 0.05
        re.compile(
            _ID
            + r"___as_tensor\((?P<input>"
            + _NAME
            + r")\)\.item\(\) == (?P<expected>"
            + _LITERAL
            + r")\s*$"
        ),
    ),
    (
        "value",
        re.compile(_ID + r"(?P<input>" + _NAME + r") is (?P<expected>None|not None)\s*$"),
    ),
    (
        "value",
        re.compile(_ID + r"(?P<input>" + _NAME + r") == (?P<expected>" + _LITERAL + r")\s*$"),
    ),
)
# The forms that scan a line for a name (``.*?NAME``) are tried only on lines with their mark:
# on a long line of identifiers they backtrack quadratically.
_NEEDLES = {
    pattern: re.compile(mark)
    for _change, pattern in _FORMS
    for key, mark in (
        ("_dynamo_dynamic_indices", r"_dynamo_dynamic_indices"),
        ("(?:size|stride)", r"\.(?:size|stride)\(\)\["),
    )
    if pattern.pattern.startswith(_ID + ".*?") and key in pattern.pattern
}
GUARD_CHARS = 1000  # of a guard's first line parsed (Dynamo's are a few hundred at most)
_LOCAL = re.compile(r"^L\[(['\"])(.+?)\1\]")
_WHERE = re.compile(r"#\s*(?P<code>.*?)\s+#\s*(?P<where>\S+:\d+ in \S+)")
_KEYS = re.compile(r"DispatchKeySet\((?P<keys>[^)]*)\)")
# Backend dispatch keys that name a device; the layout keys that name a layout.
_DEVICE_KEYS = ("CPU", "CUDA", "Meta", "XPU", "MPS", "HIP", "XLA", "Lazy", "PrivateUse1", "MTIA")
_LAYOUT_KEYS = {
    "SparseCsr": "sparse compressed (CSR, CSC, BSR or BSC)",
    "Sparse": "sparse (COO)",
    "Mkldnn": "mkldnn",
    "Nested": "nested",
    "Quantized": "quantized",
}


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
    family: str = "other"  # one of FAMILIES
    where: str = ""  # the user's line the guard came from (``script.py:7 in f``), when logged
    key: str = ""  # the dict key of a ``___dict_contains`` guard (``'shift'``)
    raw: str = ""  # the guard's first line as logged, with its source comment
    logged: str = field(default="", compare=False)  # all of it, its user stack too

    @property
    def key3(self) -> tuple[str, str, int | None]:
        return (self.input, self.change, self.index)

    @property
    def what(self) -> str:
        """``size at index 1``, ``dtype``, ``value``."""
        if self.index is not None:
            return f"{self.change} at index {self.index}"
        return self.change


def input_name(source: str) -> str:
    """``L['x']`` -> ``x``; ``L['kwargs']['input_ids']`` -> ``kwargs['input_ids']``;
    ``G['hyper']['lr']`` -> ``hyper['lr']`` (`changes.user_name`)."""
    return user_name(source.strip())


def parse_guard_failure(reason: str) -> GuardFailure:
    """One guard failure (``0/0: tensor 'x' size mismatch at index 0. expected 8, …``)."""
    text = short_guard(reason)[:GUARD_CHARS]
    first = reason.split("\n", 1)[0].strip()
    where_m = _WHERE.search(first)
    where = where_m.group("where") if where_m else ""
    for change, pattern in _FORMS:
        needle = _NEEDLES.get(pattern)
        if needle is not None and needle.search(text) is None:
            continue  # a form that scans the line: only where its mark is (linear otherwise)
        m = pattern.match(text)
        if m is None:
            continue
        groups = m.groupdict()
        index = groups.get("index")
        name = input_name(groups.get("input") or groups.get("input2") or "")
        expected = groups.get("expected") or ""
        actual = groups.get("actual") or ""
        key = ""
        if groups.get("key"):
            key = groups["key"]
            expected = "absent" if groups.get("negated") else "present"
        if change == "identity" and groups.get("kind"):
            actual = ""  # the id is the expected; the kind names what it is
        failure = GuardFailure(
            change,
            name,
            int(index) if index is not None else None,
            expected,
            actual,
            m.group(1) or "",
            text,
            "other",
            where,
            key,
            first,
            reason,
        )
        return _with_family(failure, groups)
    against, _, rest = text.partition(": ")
    if re.fullmatch(r"!?\d+(?:/\d+)*(?:_\d+)?", against):
        return GuardFailure(
            "other", "", None, "", "", against, rest, "other", where, "", first, reason
        )
    return GuardFailure("other", "", None, "", "", "", text, "other", where, "", first, reason)


def _with_family(f: GuardFailure, groups: dict[str, str | None]) -> GuardFailure:
    """The family of a parsed guard failure (what the guard alone tells)."""
    family = {
        "global state": "global_state",
        "dynamic marking": "dynamic_marking",
        "dispatch keys": "dispatch_keys",
    }.get(f.change, f.change)
    if f.change == "size" and not _static_size(f.text):
        family = "symbolic_shape"
    elif f.change == "dispatch keys":
        family = _keys_family(f.expected, f.actual)
    elif f.change == "global state" and not f.input:
        if "torch_function_mode_stack" in f.text:
            f = replace(f, input="torch function mode")
        elif "CURRENT_DEVICE" in f.text:
            f = replace(f, input="default device")
        elif "current_backend" in f.text:
            f = replace(f, input="compile backend")
    return replace(f, family=family)


def _static_size(text: str) -> bool:
    return bool(
        re.search(r"size mismatch at index", text)
        or re.fullmatch(_ID + r".+?\.size\(\)\[\d+\] == -?\d+\s*", text)
    )


def dispatch_keys(text: str) -> list[str]:
    """The keys of a ``DispatchKeySet(CPU, BackendSelect, …)``."""
    m = _KEYS.search(text)
    return [k.strip() for k in m.group("keys").split(",") if k.strip()] if m else []


def _backend(keys: list[str]) -> str:
    return next((k for k in keys if k in _DEVICE_KEYS), "")


def _layout(keys: list[str]) -> str:
    """The layout a dispatch key set names (``sparse (COO)``), "" for strided."""
    for k in keys:
        for key, layout in _LAYOUT_KEYS.items():
            if k.startswith(key) and k[len(key) :] in ("", *_DEVICE_KEYS):
                return layout
    return ""


def _keys_family(expected: str, actual: str) -> str:
    old, new = dispatch_keys(expected), dispatch_keys(actual)
    if _layout(old) != _layout(new):
        return "layout"
    if _backend(old) and _backend(new) and _backend(old) != _backend(new):
        return "device"
    return "dispatch_keys"


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


# ---------------------------------------------------------------------- explanations

AUTO_OFF = (
    "automatic_dynamic_shapes is off (`torch.compile(dynamic=False)` or "
    "`torch._dynamo.config.automatic_dynamic_shapes = False`)"
)
OPTIMIZER_LR_DOC = (
    "https://docs.pytorch.org/tutorials/recipes/compiling_optimizer_lr_scheduler.html"
)
RECOMPILES_DOC = "https://docs.pytorch.org/docs/stable/torch.compiler_troubleshooting.html"
# Dynamo's own words of the global state it guards (GLOBAL_STATE changed: …), as the user sets it.
_GLOBAL_WORDS = (
    ("grad_mode", "grad mode (torch.no_grad() / torch.enable_grad())"),
    ("autocast", "autocast (torch.autocast)"),
    ("deterministic_algorithms", "deterministic algorithms (torch.use_deterministic_algorithms)"),
    ("default_dtype", "the default dtype (torch.set_default_dtype)"),
    ("allow_tf32", "TF32 matmuls (torch.backends.cuda.matmul.allow_tf32)"),
    ("allow_bf16_reduce", "reduced-precision bf16 matmuls"),
    ("allow_fp16_reduce", "reduced-precision fp16 matmuls"),
    ("num_threads", "the number of threads (torch.set_num_threads)"),
    ("torch_function", "torch function handling (torch._C.DisableTorchFunction)"),
)
_TENSOR_MATCH = re.compile(
    r"check_tensor\((?P<input>[^,]+),.*?size=\[(?P<size>[^\]]*)\], stride=\[(?P<stride>[^\]]*)\]"
)


@dataclass
class Explanation:
    """Why one compile recompiled, in words: the guard that failed against the newest earlier
    compile of its frame, its family, the values that input took over the frame's recompiles,
    what changed and what to do.

    `values` lists the input's value at each compile of the frame that guarded on it, first
    compile first (the values a frame's recompiles saw, in order); `fix` is "" where the trace
    does not show what would help. `json()` is the plain data the findings and `show` use."""

    compile: Compile
    family: str
    failure: GuardFailure | None
    values: list[str] = field(default_factory=list)
    every_call: bool = False  # each recompile of the frame came from a new value of this input
    nth: int = 1  # this is the nth recompile of its frame on this input and family
    words: str = ""
    fix: str = ""
    doc: str = ""

    def json(self) -> dict[str, Any]:
        f = self.failure
        return {
            "compile": self.compile.id_label,
            "family": self.family,
            "guard": None
            if f is None
            else {
                "text": f.text,
                "input": f.input,
                "index": f.index,
                "expected": f.expected,
                "actual": f.actual,
                "against": f.against,
                "key": f.key,
                "where": f.where,
            },
            "values": self.values,
            "every_call": self.every_call,
            "words": self.words,
            "fix": self.fix,
            "doc": self.doc,
        }


def family_of(comp: Compile, failure: GuardFailure | None = None) -> str:
    """The family of a recompile: of the guard that failed against the newest earlier compile
    ("not_logged" when none was). Refines what the guard alone tells with its frame: an
    attribute of `self` in a module's forward is a module flag; strides that are another
    memory format are a layout."""
    failure = failure or primary_failure(comp)
    if failure is None:
        return "not_logged"
    if failure.family in ("value", "identity") and _module_attr(comp, failure.input):
        return "module_flag"
    if failure.family == "stride" and _formats(comp, failure) is not None:
        return "layout"
    if failure.family == "length" and _is_dict(comp, failure.input):
        return "keys"
    return failure.family


_SELF_TYPE = re.compile(
    r"___check_type_id\(L\['self'\], \d+\), type=<class '(?:[\w.]*\.)?(?P<cls>\w+)'>"
)


def _module_class(frame: Frame) -> str:
    """``Block``: the module class whose forward a frame is (from its guards), or "the module"."""
    for comp in frame.compiles:
        m = _SELF_TYPE.search(guard_text(comp))
        if m is not None:
            return f"`{m.group('cls')}`"
    return "the module"


def _is_dict(comp: Compile, name: str) -> bool:
    """Whether a compile's guards hold `name` to be a dict (``source=L['parts'], … type=<class
    'dict'>``)."""
    pattern = (
        r"source=(?:L\['"
        + re.escape(name)
        + r"'\]|"
        + re.escape(name)
        + r"),[^\n]*type=<class 'dict'>"
    )
    return re.search(pattern, guard_text(comp)) is not None


def _dict_keys_at(comp: Compile | None, name: str) -> list[str]:
    """The keys, in order, a compile's guards hold a dict it iterated to
    (``list(dict.keys(L['parts']))[1] == 'b'``)."""
    if comp is None:
        return []
    source = r"(?:L\['" + re.escape(name) + r"'\]|" + re.escape(name) + r")"
    found: dict[int, str] = {}
    pattern = r"list\(dict\.keys\(" + source + r"\)\)\[(\d+)\] == (" + _LITERAL + r")(?=\s|$)"
    for m in re.finditer(pattern, guard_text(comp), re.M):
        found.setdefault(int(m.group(1)), m.group(2))
    return [found[i] for i in sorted(found)]


def _module_attr(comp: Compile, name: str) -> bool:
    frame = comp.frame
    return (
        bool(re.fullmatch(r"self(?:\.\w+)?", name))
        and frame is not None
        and frame.co_name == "forward"
    )


def _tensor_shape(comp: Compile | None, name: str) -> tuple[list[int], list[int]] | None:
    """The size and strides a compile guarded an input tensor on (from its guards)."""
    if comp is None:
        return None
    for m in _TENSOR_MATCH.finditer(guard_text(comp)):
        if input_name(m.group("input")) == name:
            try:
                size = [int(v) for v in m.group("size").split(",") if v.strip()]
                stride = [int(v) for v in m.group("stride").split(",") if v.strip()]
            except ValueError:
                return None
            return size, stride
    return None


def _dim_dynamic(comp: Compile, name: str, dim: int) -> bool | None:
    """Whether a compile's guards leave a dimension of an input dynamic (``size=[2, None]``);
    None when its guards do not say."""
    for m in _TENSOR_MATCH.finditer(guard_text(comp)):
        if input_name(m.group("input")) == name:
            sizes = [v.strip() for v in m.group("size").split(",")]
            return sizes[dim] == "None" if dim < len(sizes) else None
    return None


def memory_format(size: list[int], stride: list[int]) -> str:
    """``contiguous``, ``channels_last`` (4-d), ``channels_last_3d`` (5-d) or "" (another)."""
    if len(size) != len(stride):
        return ""

    def dense(order: list[int]) -> bool:
        expect = 1
        for dim in order:
            if size[dim] != 1 and stride[dim] != expect:
                return False
            expect *= size[dim]
        return True

    n = len(size)
    if dense(list(range(n - 1, -1, -1))):
        return "contiguous"
    if n == 4 and dense([1, 3, 2, 0]):
        return "channels_last"
    if n == 5 and dense([1, 4, 3, 2, 0]):
        return "channels_last_3d"
    return ""


def _formats(comp: Compile, failure: GuardFailure) -> tuple[str, str] | None:
    """(old, new) memory formats of a stride change when both are named formats that differ."""
    old = _tensor_shape(_against(comp, failure), failure.input)
    new = _tensor_shape(comp, failure.input)
    if old is None or new is None:
        return None
    a, b = memory_format(*old), memory_format(*new)
    return (a, b) if a and b and a != b else None


def _against(comp: Compile, failure: GuardFailure) -> Compile | None:
    frame = comp.frame
    if frame is None:
        return None
    if failure.against:
        found = next((c for c in frame.compiles if c.id_text == failure.against), None)
        if found is not None:
            return found
    earlier = [c for c in frame.compiles if c is not comp and c.key < comp.key]
    return earlier[-1] if earlier else None


def _guarded_value(comp: Compile, name: str) -> str:
    """The value a compile's guards hold a Python input to (``n == 4`` -> ``4``), or ""."""
    if not name:
        return ""
    head = re.match(r"\w+", name)
    names = [re.escape(name)]
    if head is not None:
        names.append(re.escape(f"L['{head.group(0)}']" + name[head.end() :]))
    pattern = re.compile(
        r"(?<![\w.\]'])(?:___as_tensor\()?(?:" + "|".join(names) + r")\)?(?:\.item\(\))? "
        r"(?:== (" + _LITERAL + r")|is (None|not None))(?=\s|$)",
        re.M,
    )
    m = pattern.search(guard_text(comp))
    return (m.group(1) or m.group(2)) if m else ""


def value_type(literal: str) -> str:
    """What a guard's literal is: ``int``, ``float``, ``bool``, ``str`` or ``None``."""
    if literal in ("True", "False"):
        return "bool"
    if literal in ("None", "not None"):
        return "None"
    if literal[:1] in "'\"":
        return "str"
    if re.fullmatch(r"-?\d+", literal):
        return "int"
    if re.fullmatch(r"-?(?:\d+\.\d*|\.\d+|\d+)(?:e[+-]?\d+)?|-?inf|nan", literal):
        return "float"
    return "value"


def explain_frame(frame: Frame, config: CompileConfig | None = None) -> list[Explanation]:
    """An explanation of each recompile of a frame, in compile order (`config`: what its
    compiles ran with, for the fix; read with `compile_config`)."""
    config = config or CompileConfig()
    recompiles = [c for c in frame.compiles if c.key.is_recompile]
    out: list[Explanation] = []
    series: dict[tuple[str, str, int | None], list[str]] = {}
    counts: dict[tuple[str, str, int | None], int] = {}
    for comp in recompiles:
        failure = primary_failure(comp)
        if failure is None:
            out.append(
                Explanation(comp, "not_logged", None, words="no guard failure was logged for it")
            )
            continue
        family = family_of(comp, failure)
        key = (family, failure.input, failure.index)
        values = series.setdefault(key, [])
        counts[key] = counts.get(key, 0) + 1
        nth = counts[key]
        old, new = _old_new(comp, failure, family)
        if old and (not values or values[-1] != old):
            values.append(old)  # without guards logged, each failed guard names the last value
        if new:
            values.append(new)
        out.append(Explanation(comp, family, failure, values, nth=nth))
    for e in out:
        if e.failure is None:
            continue
        key = (e.family, e.failure.input, e.failure.index)
        n = counts[key]
        e.every_call = n >= 2 and n == len(recompiles) and len(set(e.values)) == len(e.values)
        e.words, e.fix, e.doc = _words(e, frame, config, n)
    return out


def explain_compile(comp: Compile, config: CompileConfig | None = None) -> Explanation | None:
    """The explanation of one recompile (None when `comp` is not one)."""
    if not comp.key.is_recompile or comp.frame is None:
        return None
    return next((e for e in explain_frame(comp.frame, config) if e.compile is comp), None)


def explain(model_compiles: list[Compile]) -> list[Explanation]:
    """Explanations of every recompile among `model_compiles` (a model's compiles), each once,
    each frame with the config its first compile ran with (read from disk)."""
    frames: list[Frame] = []
    for c in model_compiles:
        if c.key.is_recompile and c.frame is not None and c.frame not in frames:
            frames.append(c.frame)
    return [e for f in frames for e in explain_frame(f, compile_config(f.compiles[0], False))]


def guard_families(model_compiles: list[Compile]) -> dict[str, int]:
    """{family: recompiles}: each recompile counted once, by the guard that failed against the
    newest earlier compile of its frame (families with none left out)."""
    counts: dict[str, int] = {}
    for c in model_compiles:
        if c.key.is_recompile:
            family = family_of(c)
            counts[family] = counts.get(family, 0) + 1
    return {f: counts[f] for f in FAMILIES if f in counts}


def _old_new(comp: Compile, failure: GuardFailure, family: str) -> tuple[str, str]:
    """The input's value at the compile whose guard failed, and at this one ("" unknown)."""
    if family == "identity" or failure.change == "identity":
        return failure.expected, _id_at(comp, failure.input)
    if family in ("value", "module_flag"):
        return failure.expected, _guarded_value(comp, failure.input)
    if family == "layout" and failure.change == "stride":
        formats = _formats(comp, failure)
        return formats if formats is not None else ("", "")
    if failure.change == "dispatch keys":
        keys_a, keys_b = dispatch_keys(failure.expected), dispatch_keys(failure.actual)
        if family == "device":
            return _backend(keys_a), _backend(keys_b)
        if family == "layout":
            return _layout(keys_a) or "strided", _layout(keys_b) or "strided"
        return failure.expected, failure.actual
    if family in ("size", "stride", "dtype", "rank", "device"):
        return failure.expected, failure.actual
    if family == "requires_grad":
        old = {"0": "False", "1": "True"}.get(failure.expected, failure.expected)
        new = {"False": "True", "True": "False"}.get(old, "")
        return old, new
    if family == "type":
        return failure.expected, _type_at(comp, failure.input)
    if family == "length":
        m = re.search(
            r"len\((?:L\['"
            + re.escape(failure.input)
            + r"'\]|"
            + re.escape(failure.input)
            + r")\) == (\d+)",
            guard_text(comp),
        )
        return failure.expected, m.group(1) if m else ""
    if family == "identity":
        return failure.expected, _id_at(comp, failure.input)
    if family == "keys" and not failure.key:
        old_keys = _dict_keys_at(_against(comp, failure), failure.input)
        new_keys = _dict_keys_at(comp, failure.input)
        if old_keys and new_keys:
            return f"[{', '.join(old_keys)}]", f"[{', '.join(new_keys)}]"
        if failure.expected:
            return failure.expected, _keys_at(comp, failure)
    return "", ""


def _keys_at(comp: Compile, failure: GuardFailure) -> str:
    """The keys (``['a', 'b']``) or their count a compile guards a dict or kwargs on."""
    name = re.escape(failure.input)
    source = r"(?:L\['" + name + r"'\]|" + name + r")"
    if failure.expected.startswith("["):
        form = r"(?:list\(" + source + r"\.keys\(\)\)|___key_to_id\(" + source + r"\)) == (\[.*?\])"
    else:
        form = r"len\(" + source + r"\) == (\d+)"
    m = re.search(form + r"(?=\s|$)", guard_text(comp), re.M)
    return m.group(1) if m else ""


def _key_list(values: list[str]) -> list[str]:
    """``["['a', 'b']"]`` -> ``["'a'", "'b'"]``."""
    if not values:
        return []
    return [k.strip() for k in values[0].strip("[]").split(",") if k.strip()]


def _type_at(comp: Compile, name: str) -> str:
    for m in re.finditer(
        r"___check_type_id\(([^,]+), \d+\), type=<class '([^']+)'>", guard_text(comp)
    ):
        if input_name(m.group(1)) == name:
            return m.group(2)
    return ""


def _id_at(comp: Compile, name: str) -> str:
    for m in re.finditer(r"___check_obj_id\(([^,]+), (\d+)\)", guard_text(comp)):
        if input_name(m.group(1)) == name:
            return m.group(2)
    return ""


def _seen(values: list[str], every_call: bool, unit: str = "") -> str:
    """``0.01, 0.009, 0.0081, …`` with "changes on every call" when it did."""
    shown = ", ".join(_short(v) + unit for v in values[:6]) + (", …" if len(values) > 6 else "")
    if every_call:
        shown += "; it changes on every call"
    return shown


def _short(value: str) -> str:
    """A float as torch printed it, without its binary noise (0.009000000000000001 -> 0.009)."""
    if value_type(value) == "float":
        try:
            return repr(float(f"{float(value):.12g}"))
        except ValueError:
            return value
    return value


def _where(f: GuardFailure) -> str:
    """`` (guarded at script.py:7 in f)``: torch cuts the path from the left; its name stays."""
    if not f.where:
        return ""
    path, _, rest = f.where.partition(":")
    return f" (guarded at {path.rsplit('/', 1)[-1]}:{rest})"


def _words(e: Explanation, frame: Frame, config: CompileConfig, n: int) -> tuple[str, str, str]:
    """(what changed, what to do, a doc link) for one recompile."""
    f = e.failure
    assert f is not None
    who = f"`{f.input}`" if f.input else "an input"
    old, new = (e.values[-2], e.values[-1]) if len(e.values) >= 2 else ("", "")
    own = _old_new(e.compile, f, e.family)
    if own[0] or own[1]:
        old, new = own
    change = (
        f"{_short(old)} → {_short(new)}"
        if old and new
        else (_short(old) and f"{_short(old)} → another value")
    )
    auto = config.dynamo.get("automatic_dynamic_shapes")
    family = e.family
    seen = _seen(e.values, e.every_call)
    if family == "size":
        dim = f.index if f.index is not None else 0
        words = f"{who} dimension {dim} changed size: {change}"
        if old in ("0", "1"):
            words += (
                "; sizes 0 and 1 always get their own graph (0/1 specialization), even with "
                "dynamic shapes"
            )
            return words + ".", "", RECOMPILES_DOC
        if n > 1:
            words += f" (sizes seen: {seen})"
        target = f.input or "x"
        mark = f"`torch._dynamo.mark_dynamic({target}, {dim})`"
        dynamic = _dim_dynamic(e.compile, f.input, dim)
        if dynamic:
            fix = (
                "none needed: this recompile's graph has the dimension dynamic (size=None in "
                f"its guards), so other sizes reuse it; {mark} before the first call avoids "
                "even this one"
            )
        elif auto is False:
            fix = f"{AUTO_OFF}: turn it on (drop `dynamic=False`), or call {mark} before the call"
        elif auto is True and n == 1 and dynamic is None:
            fix = (
                "none needed: automatic dynamic shapes made this dimension dynamic at this "
                f"recompile; {mark} before the first call avoids even this one"
            )
        else:
            fix = f"`torch.compile(..., dynamic=True)` or {mark} before the call"
        return words + ".", fix + ".", RECOMPILES_DOC
    if family == "stride":
        dim = f.index if f.index is not None else 0
        return (
            f"{who} has the same sizes laid out differently in memory: stride at index {dim}: "
            f"{change} "
            "(a transposed, sliced or expanded view).",
            f"call `{f.input or 'x'}.contiguous()` before passing it, so every call has one layout.",
            "",
        )
    if family == "layout":
        if f.change == "dispatch keys":
            fix = "pass one layout on every call (e.g. `.to_dense()` before the call)"
            if "sparse" in change:
                # torch's own graph-break message: "torch.compile does not support sparse Tensors"
                fix += (
                    "; torch.compile does not support sparse tensors, so keep sparse work "
                    "outside the compiled function"
                )
            return f"{who} changed layout: {change}; each layout gets its own graph.", fix + ".", ""
        return (
            f"{who} changed memory format: {change}; each format gets its own graph.",
            f"convert it to one format before the call (`{f.input or 'x'}.contiguous()` or "
            f"`{f.input or 'x'}.to(memory_format=torch.channels_last)`).",
            "",
        )
    if family == "dtype":
        return (
            f"{who} changed dtype: {change}" + (f" (dtypes seen: {seen})" if n > 1 else "") + "; "
            "each dtype gets its own graph.",
            "cast it to one dtype before the call (e.g. `.float()`), or expect one graph per dtype.",
            "",
        )
    if family == "rank":
        return (
            f"{who} changed its number of dimensions: {change}; each gets its own graph.",
            "pass it with one number of dimensions (reshape before the call).",
            "",
        )
    if family == "device":
        if f.change == "dispatch keys":
            a, b = _backend(dispatch_keys(f.expected)), _backend(dispatch_keys(f.actual))
            change = f"{a} → {b}"
        else:
            change = f"device index {change}"
        return (
            f"{who} moved to another device: {change}; each device gets its own graph.",
            "keep it on one device across calls, or expect one graph per device.",
            "",
        )
    if family == "requires_grad":
        return (
            f"{who} requires_grad changed: {change}; each setting gets its own graph, and a call "
            "that goes back to a setting already seen reuses its graph.",
            "",
            "",
        )
    if family == "dispatch_keys":
        keys_a, keys_b = dispatch_keys(f.expected), dispatch_keys(f.actual)
        lost = [k for k in keys_a if k not in keys_b]
        gained = [k for k in keys_b if k not in keys_a]
        parts = ([f"without {', '.join(lost)}"] if lost else []) + (
            [f"with {', '.join(gained)}"] if gained else []
        )
        words = f"{who} has other dispatch keys than when compiled: {'; '.join(parts) or change}"
        fix = ""
        if any(k.startswith("Autograd") for k in lost):
            words += " (a tensor made under torch.inference_mode() has no autograd keys)"
            fix = (
                "create it outside torch.inference_mode() (or `.clone()` it outside), so every "
                "call gets the same kind of tensor."
            )
        return words + ".", fix, ""
    if family in ("value", "module_flag"):
        return _value_words(e, frame, config, n, who, change, seen)
    if family == "identity":
        return _identity_words(e, frame, config, n, who)
    if family == "type":
        return (
            f"{who} changed type: {change}; each type gets its own graph.",
            f"pass {who} as one type on every call.",
            "",
        )
    if family == "length":
        return (
            f"{who} has another length: {change}"
            + (f" (lengths seen: {seen})" if n > 1 else "")
            + "; Dynamo unrolls it, so each length gets its own graph.",
            "pass a fixed number of items, or stack the tensors into one (`torch.stack`).",
            "",
        )
    if family == "keys":
        if f.key:
            passed = "passed" if f.expected == "absent" else "did not pass"
            was = "absent" if f.expected == "absent" else "present"
            words = (
                f"the call {passed} `{f.key.strip(chr(39) + chr(34))}` in {who} ({was} when "
                "compiled): each set of keys gets its own graph."
            )
        elif old.startswith("["):
            words = f"{who} holds other keys than when compiled: {change}"
            old_keys, new_keys = _key_list([old] if old else []), _key_list([new] if new else [])
            added = [k for k in new_keys if k not in old_keys]
            gone = [k for k in old_keys if k not in new_keys]
            if new_keys and (added or gone):
                words += (
                    " ("
                    + "; ".join(
                        ([f"added {', '.join(added)}"] if added else [])
                        + ([f"without {', '.join(gone)}"] if gone else [])
                    )
                    + ")"
                )
            words += ": each set of keys gets its own graph."
        elif "dict.keys(" in f.text:
            position = re.search(r"\)\)\[(\d+)\]", f.text)
            at = f" at position {position.group(1)}" if position else ""
            words = (
                f"{who} holds other keys than when compiled: its key{at} was {f.expected}; each "
                "set of keys gets its own graph."
            )
        else:
            words = (
                f"{who} holds another number of keys than when compiled: {change}; each set of "
                "keys gets its own graph."
            )
        return words, "pass the same keyword arguments (or dict keys) on every call.", ""
    if family == "global_state":
        return (
            _global_words(f),
            (
                "call the compiled function in one state (or compile a separate function for each "
                "state); one graph per state is expected when it alternates between a few."
            ),
            "",
        )
    if family == "symbolic_shape":
        return _symbolic_words(f)
    if family == "dynamic_marking":
        return (
            f"{who} was marked dynamic (torch._dynamo.mark_dynamic) on other dimensions than "
            "when compiled.",
            "mark the same dimensions before every call.",
            "",
        )
    return f"a guard failed: {f.text}", "", ""


def _module_words(
    e: Explanation,
    frame: Frame,
    config: CompileConfig,
    noun: str,
    kind: str,
    where: str,
    change: str,
) -> tuple[str, str, str]:
    """A guard on `self` or one of its attributes in a module's forward."""
    f = e.failure
    assert f is not None
    cls = _module_class(frame)
    limit = config.limit or 8
    limit_hit = any(fl.is_recompile_limit for c in frame.compiles for fl in c.failures)
    hit = "; the limit was hit: instances past it run eagerly" if limit_hit else ""
    parent = (
        "compile the parent module once (the loop over its instances is then one graph, each "
        "instance's value a constant in it), or raise `torch._dynamo.config.recompile_limit` "
        "to at least the number of instances"
    )
    if f.input == "self.training":
        return (
            f"`self.training` of {cls} changed{where}: {change}; `model.train()` and "
            "`model.eval()` each get their own graph (two at most).",
            "none needed for two graphs.",
            "",
        )
    if f.change == "identity":
        graphs = e.nth + 1
        return (
            f"`self` is guarded by identity in {cls}.forward{where}: each instance of {cls} that "
            f"calls this code gets its own graph ({graphs} so far), and each takes a slot of "
            f"recompile_limit ({limit}){hit}.",
            parent + ".",
            RECOMPILES_DOC,
        )
    count = len(set(e.values)) + (1 if limit_hit else 0)
    shown = _seen(e.values, False)
    words = (
        f"`{f.input}` is {noun} attribute of {cls}{where} that took {count} values ({shown}): "
        f"{count} instances of {cls} with different values share this code (or one instance "
        f"changed it), and each value takes a slot of recompile_limit ({limit}){hit}."
    )
    fix = parent
    if kind == "int":
        fix += (
            ", or set `torch._dynamo.config.allow_unspec_int_on_nn_module = True` (torch's own "
            "hint) so the int is not specialized"
        )
    elif kind == "float":  # a value of another type (a tuple, an enum) cannot become one
        fix += f", or make it a tensor (`{f.input} = torch.tensor(...)`)"
    return words, fix + ".", RECOMPILES_DOC


_LR_FIX = (
    "create the optimizer with a tensor learning rate, e.g. "
    "`torch.optim.AdamW(params, lr=torch.tensor({first}))`, and change it only in place: an LR "
    "scheduler does (`scheduler.step()` fills the tensor); where your loop sets it, write "
    "`g['lr'].fill_(new_lr)`, not `g['lr'] = new_lr` (a new float or tensor recompiles as "
    "before). Run eagerly, Adam and AdamW take a tensor lr only with `fused=True` or "
    "`capturable=True`"
)


def _is_lr(name: str) -> bool:
    """An optimizer's learning rate (``self.param_groups[0]['lr']``)."""
    return "param_groups" in name and "'lr'" in name


def _value_words(
    e: Explanation, frame: Frame, config: CompileConfig, n: int, who: str, change: str, seen: str
) -> tuple[str, str, str]:
    f = e.failure
    assert f is not None
    kind = value_type(f.expected)
    noun = {"value": "a Python value", "None": "an optional value"}.get(kind, f"a Python {kind}")
    where = _where(f)
    if kind == "None":
        now = "not None" if f.expected == "None" else "None"
        words = (
            f"{who} was {f.expected} when compiled and is {now} in this call{where}: None and "
            "not-None each get their own graph (two at most)."
        )
        return (
            words,
            "none needed for two graphs; pass it the same way on every call to keep one.",
            "",
        )
    if e.family == "module_flag":
        return _module_words(e, frame, config, noun, kind, where, change)
    values = f" ({seen})" if len(e.values) > 2 or e.every_call else ""
    words = f"{who} is {noun} baked into the graph as a constant: {change}{values}{where}."
    if kind in ("int", "float") and len(e.values) == 1 and guard_text(e.compile):
        # This compile guards no value of it: Dynamo made it a graph input (automatic dynamic).
        return (
            f"{who} was {noun} baked into the graph as {_short(f.expected)}{where}; it changed, "
            "and at this recompile Dynamo made it dynamic (a graph input), so other values "
            "reuse the new graph.",
            _LR_FIX.format(first=_short(f.expected))
            if _is_lr(f.input)
            else "none needed for this one recompile (pass it as a tensor to avoid even this one).",
            OPTIMIZER_LR_DOC if _is_lr(f.input) else "",
        )
    if kind == "bool":
        return (
            words[:-1] + "; each value gets its own graph (two at most).",
            "none needed for two graphs; if it flips often, move the branch out of the compiled "
            "function.",
            "",
        )
    if kind == "str":
        return (
            words[:-1] + "; each string gets its own graph.",
            "fine for a few values; for many, move the choice out of the compiled function.",
            "",
        )
    if kind == "float":
        if _is_lr(f.input):
            first = _short(e.values[0]) if e.values else "0.001"
            words = f"the optimizer's learning rate {words}"
            fix = _LR_FIX.format(first=first)
            doc = OPTIMIZER_LR_DOC
        else:
            fix = (
                "pass it as a tensor (`torch.tensor(value)`; one kept between calls is updated in "
                "place with `.fill_(value)`), or move it out of the compiled function"
            )
            doc = RECOMPILES_DOC
        if config.dynamo.get("specialize_float") is True:
            fix += "; specialize_float is on: set `torch._dynamo.config.specialize_float = False`"
        elif config.dynamo.get("automatic_dynamic_shapes") is False:
            fix += (
                f"; {AUTO_OFF}, which keeps floats constant: with it on, a float becomes a graph "
                "input once it changes"
            )
        return words, fix + ".", doc
    if kind == "int":
        if config.dynamo.get("automatic_dynamic_shapes") is False:
            fix = (
                f"{AUTO_OFF}, so each int is a constant: turn it on (an int then becomes a "
                "symbol once it changes), pass it as a tensor, or move it out of the compiled "
                "function"
            )
        elif config.dynamo.get("specialize_int") is True:
            fix = "specialize_int is on: turn it off, or pass the int as a tensor"
        else:
            fix = (
                "pass it as a tensor, or move it out of the compiled function (an int used as a "
                "size or in a branch stays a constant even with dynamic shapes)"
            )
        return words, fix + ".", RECOMPILES_DOC
    return words, "pass it as a tensor, or move it out of the compiled function.", ""


_REPR = re.compile(
    r"<(?:code object|function) (?P<name>[\w.<>]+) at 0x[0-9a-f]+(?:, file \"[^\"]*\", line (?P<line>\d+))?>"
)


def _identity_words(
    e: Explanation, frame: Frame, config: CompileConfig, n: int, who: str
) -> tuple[str, str, str]:
    f = e.failure
    assert f is not None
    name = f.input.removesuffix(".__code__")
    what = "function" if f.input.endswith(".__code__") else "object"
    old, new = _object_names(e.compile, f)
    named = f": {old} → {new}" if old and new else (f" (it was {old})" if old else "")
    recompiles = [c for c in frame.compiles if c.key.is_recompile]
    objects = e.nth + 1
    limit = config.limit or 8
    limit_hit = any(fl.is_recompile_limit for c in frame.compiles for fl in c.failures)
    if n == len(recompiles) and (limit_hit or n + 1 >= limit):
        words = (
            f"`{name}` is a new {what} at nearly every call{named}: {n + 1} different objects, "
            f"each guarded by identity, up to recompile_limit ({limit})."
        )
        fix = (
            f"create the {what} once, outside the loop, and pass the same one on every call "
            f"(a lambda or functools.partial made per call is a new object each time)."
        )
        return words, fix, RECOMPILES_DOC
    if n == len(recompiles) and n >= 3:
        words = (
            f"`{name}` was another {what} at each of the {n} recompiles{named} ({objects} "
            "objects so far, each with its own graph)."
        )
        fix = (
            f"if the {what} is made per call (a lambda or functools.partial inside the loop), "
            "create it once and reuse it; otherwise expect one graph per object."
        )
        return words, fix, RECOMPILES_DOC
    words = (
        f"`{name}` is another {what} than the one compiled{named}: each distinct {what} gets its "
        f"own graph ({objects} so far); a call with one already compiled reuses its graph."
    )
    return words, f"none needed for a few; keep their number below recompile_limit ({limit}).", ""


def _object_names(comp: Compile, f: GuardFailure) -> tuple[str, str]:
    """The old and new object of an identity guard: from a repr in the guard when torch
    wrote one (``<code object causal at 0x…, file "m.py", line 11>``), else, for a function,
    the user functions that one compile's graph ran and the other's did not."""
    reprs = [_repr_name(m) for m in _REPR.finditer(f.raw)]
    if reprs:
        return reprs[0], ""
    if not f.input.endswith(".__code__"):
        return "", ""
    before, after = _graph_functions(_against(comp, f)), _graph_functions(comp)
    gone = [fn for fn in before if fn not in after]
    came = [fn for fn in after if fn not in before]
    if len(gone) == 1 and len(came) == 1:
        return gone[0], came[0]
    return "", ""


def _repr_name(m: re.Match[str]) -> str:
    line = m.group("line")
    return f"`{m.group('name')}`" + (f" (line {line})" if line else "")


_GRAPH_FILE = re.compile(r"# File: (?P<file>.+?):(?P<line>\d+) in (?P<fn>[\w<>]+), code:")


def _graph_functions(comp: Compile | None) -> list[str]:
    """The functions (``causal`` at ``script.py:7``) a compile's Dynamo graph ran, in order."""
    out: list[str] = []
    seen: set[str] = set()
    if comp is None:
        return out
    for rec in comp.records:
        if rec.kind != "dynamo_output_graph":
            continue
        for m in _GRAPH_FILE.finditer(rec.payload()):
            if m.group("fn") not in seen:
                seen.add(m.group("fn"))
                out.append(
                    f"`{m.group('fn')}` ({m.group('file').rsplit('/', 1)[-1]}:{m.group('line')})"
                )
    return out


_RANGE = re.compile(
    r"(?P<lo>-?\d+) <= (?P<name>.+?)\.size\(\)\[(?P<dim>\d+)\](?: <= (?P<hi>-?\d+))?"
)
_UNBACKED_HINT = "0/1 specialization"


def _symbolic_words(f: GuardFailure) -> tuple[str, str, str]:
    guard = re.split(r"\s+#", f.text.partition(": ")[2] if f.against else f.text, maxsplit=1)[0]
    m = _RANGE.search(guard)
    if m is not None:
        name, dim = input_name(m.group("name")), m.group("dim")
        span = f"{m.group('lo')}..{m.group('hi')}" if m.group("hi") else f"{m.group('lo')} and up"
        words = (
            f"`{name}` dimension {dim} is dynamic, but its graph holds only sizes {span} "
            f"(`{guard}`){_where(f)}; this call's size is outside."
        )
    else:
        words = f"a guard on dynamic sizes failed: `{guard}`{_where(f)}."
    reasons = []
    if m is not None and m.group("lo") == "2" and _UNBACKED_HINT in f.raw:
        reasons.append(
            "the lower bound 2 is 0/1 specialization: sizes 0 and 1 get their own graph; torch's "
            f"hint: `torch._dynamo.decorators.mark_unbacked({name}, {dim})` avoids it"
        )
    if m is None or m.group("hi"):
        reasons.append(
            "an upper bound usually comes from Python code that branches on the size (e.g. "
            "`if x.shape[0] > 4`): each side gets its own graph; `torch.where` or `torch.cond` "
            "keeps one"
        )
    return words, "; ".join(reasons) + ".", RECOMPILES_DOC


def _global_words(f: GuardFailure) -> str:
    if f.input == "torch function mode":
        return (
            "the torch function mode stack changed: a TorchFunctionMode was entered or left "
            "(torch.set_default_device installs one)."
        )
    if f.input in ("default device", "compile backend"):
        return f"the {f.input} changed."
    names = f.input.split()
    parts = [next((w for k, w in _GLOBAL_WORDS if name.startswith(k)), name) for name in names]
    if not parts:
        return "global state changed (the guard does not say which)."
    return f"global state changed: {', '.join(parts)}."


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
    explanations: list[Explanation] = field(default_factory=list)  # one a recompile, in order


def primary_failure(comp: Compile) -> GuardFailure | None:
    """The guard failure that made a recompile: the one logged against the earlier compile
    it is closest to (`recompile_cause`), else the first one logged."""
    rc = comp.recompile
    if rc is None or not rc.reasons:
        return None
    failures = [parse_guard_failure(r) for r in rc.reasons]
    if len({(f.input, f.change, f.text) for f in failures}) == 1:
        return failures[0]  # one guard failed against every compile: no comparing needed
    closest = recompile_cause(comp).closest
    if closest is not None:
        for f in failures:
            if f.against == closest.id_text:
                return f
    return failures[0]


@dataclass
class RecompileCause:
    """Why one recompile happened: the earlier compile of its frame it is closest to, and
    every value that differs from it (`changes`, from both compiles' guards)."""

    compile: Compile
    closest: Compile | None
    changes: list[Change]
    guarded: bool  # both compiles' guards were logged (else: the recompile log alone)


def recompile_cause(comp: Compile) -> RecompileCause:
    """The earlier compile of `comp`'s frame with the fewest differences from it (the newest
    of equals), and those differences. Without guards, from the recompile log alone: the
    entry whose failed guard names what differs from the most entries (the oldest of
    equals), since calls that vary one thing and go back fail the newest entry on the
    previous change being undone."""
    return _recompile_cause(comp, len(comp.records))


@lru_cache(maxsize=1024)
def _recompile_cause(comp: Compile, _records: int) -> RecompileCause:
    frame = comp.frame
    earlier = [] if frame is None else [c for c in frame.compiles if c.key < comp.key]
    earlier = earlier[-COMPARED:]
    mine = guard_facts(comp)
    best: tuple[Compile, list[Change]] | None = None
    if mine:
        for other in reversed(earlier):  # newest first: it wins a tie
            theirs = guard_facts(other)
            if not theirs:
                continue
            changes = diff(theirs, mine)
            # none found: what differs is in no guard tcview reads; the logged failure says
            if best is None or len(changes) < len(best[1]):
                best = (other, changes)
    if best is not None:
        closest, changes = best
        logged = _logged_change(comp, closest, guard_facts(closest), mine)
        if logged is not None and all(c.source != logged.source for c in changes):
            changes = [*changes, logged]  # torch's own word on what failed, when it adds one
        return RecompileCause(comp, closest, _with_values(comp, changes), True)
    found, logged_changes = _closest_by_log(comp, earlier)
    return RecompileCause(comp, found, logged_changes, False)


def symbol_values(comp: Compile) -> dict[str, str]:
    """{source: value} of the symbols a compile made: what the call passed for each number
    or size it made dynamic (``L['x'].size()[0]`` -> ``512``)."""
    values: dict[str, str] = {}
    for rec in comp.records:
        if rec.kind != "create_symbol":
            continue
        body = rec.full_meta()
        if isinstance(body, dict) and isinstance(body.get("source"), str):
            values.setdefault(body["source"], str(body.get("val", "")))
    return values


def _with_values(comp: Compile, changes: list[Change]) -> list[Change]:
    """A number or size the compile made dynamic, with the value the call passed."""
    if not any(c.new == "dynamic" or "None" in c.new for c in changes):
        return changes
    values = symbol_values(comp)
    out = []
    for c in changes:
        if c.new == "dynamic" and values.get(c.source):
            c = replace(c, new=f"{values[c.source]} (dynamic from now on)")
        elif c.aspect is Aspect.SIZE and "None" in c.new:
            dims = c.new.strip("[]").split(", ")
            shown = [
                values.get(f"{c.source}.size()[{i}]", "dynamic") if d == "None" else d
                for i, d in enumerate(dims)
            ]
            free = [str(i) for i, d in enumerate(dims) if d == "None"]
            c = replace(c, new=f"[{', '.join(shown)}] (dim {', '.join(free)} dynamic from now on)")
        out.append(c)
    return out


# The aspect of a fact a failed guard is about.
_ASPECTS = {
    "size": Aspect.SIZE,
    "stride": Aspect.STRIDE,
    "rank": Aspect.DIMS,
    "dtype": Aspect.DTYPE,
    "device": Aspect.DEVICE,
    "dispatch keys": Aspect.DEVICE,
    "requires_grad": Aspect.REQUIRES_GRAD,
    "value": Aspect.VALUE,
    "length": Aspect.LENGTH,
    "keys": Aspect.KEYS,
    "type": Aspect.TYPE,
    "identity": Aspect.IDENTITY,
    "global state": Aspect.GLOBAL,
    "dynamic marking": Aspect.MARKING,
}


def _fact_of(facts: Facts, failure: GuardFailure) -> tuple[str, Aspect] | None:
    """The fact of a compile's guards that a failed guard is about."""
    aspect = _ASPECTS.get(failure.change)
    return next((k for k in facts if k[1] is aspect and user_name(k[0]) == failure.input), None)


def _closest_by_log(comp: Compile, earlier: list[Compile]) -> tuple[Compile | None, list[Change]]:
    """Without the call's own guards (a call that was not compiled: the one that hit the
    limit), from the failure it logged against each earlier compile. A failed guard on a
    value every earlier compile holds alike is a value the call changed for sure (it differs
    from all of them): the newest compile failing on such a value is the closest. Otherwise
    the failure logged against the most compiles, the oldest of equals (calls that vary one
    thing and go back fail the newest compile on the previous change being undone)."""
    if comp.recompile is None or not comp.recompile.reasons:
        return None, []
    by_id = {c.id_text: c for c in earlier}
    logged = [
        (entry, f)
        for f in map(parse_guard_failure, comp.recompile.reasons)
        for entry in [by_id.get(f.against)]
        if entry is not None
    ]
    if not logged:
        return None, []
    facts = {id(e): guard_facts(e) for e, _f in logged}
    sure: list[tuple[Compile, Change]] = []
    for entry, failure in logged:
        key = _fact_of(facts[id(entry)], failure)
        if key is None:
            continue
        value = facts[id(entry)][key]
        if all(facts[id(e)].get(key, value) == value for e, _f in logged):
            sure.append((entry, Change(key[0], key[1], value, _new_value(value, failure))))
    if sure:
        entry = max((e for e, _c in sure), key=lambda e: e.key)
        changes = list({(c.source, c.aspect): c for _e, c in sure}.values())
        return entry, changes
    counts: dict[tuple[str, str], int] = {}
    for _e, f in logged:
        counts[(f.input, f.change)] = counts.get((f.input, f.change), 0) + 1
    top = max(counts.values())
    if top > 1:  # one input failed against several compiles: the newest of them is closest
        entry, failure = max(
            (ef for ef in logged if counts[(ef[1].input, ef[1].change)] == top),
            key=lambda ef: ef[0].key,
        )
    else:  # each failed on another input: the oldest compile (the calls' common base)
        entry, failure = min(
            logged, key=lambda ef: (-counts[(ef[1].input, ef[1].change)], ef[0].key)
        )
    key = _fact_of(facts[id(entry)], failure)
    if key is None:
        return entry, []
    old = facts[id(entry)][key]
    return entry, [Change(key[0], key[1], old, _new_value(old, failure))]


def _logged_change(comp: Compile, against: Compile, theirs: Facts, mine: Facts) -> Change | None:
    """The failure torch logged against `against`, as a change of one of its facts."""
    if comp.recompile is None:
        return None
    for failure in map(parse_guard_failure, comp.recompile.reasons):
        if failure.against != against.id_text:
            continue
        key = _fact_of(theirs, failure)
        if key is None:
            return None
        old = theirs[key]
        new = mine.get(key) or _new_value(old, failure)
        return Change(key[0], key[1], old, new) if new != old else None
    return None


def _new_value(old: str, failure: GuardFailure) -> str:
    """The call's value, where the failed guard logged it: a size's new dimension in place,
    the other bool."""
    if old in ("True", "False") and failure.change == "value":
        return "False" if old == "True" else "True"
    if not failure.actual:
        return "another value"
    if failure.index is not None and old.startswith("["):
        dims = old.strip("[]").split(", ")
        if failure.index < len(dims):
            dims[failure.index] = failure.actual
            return f"[{', '.join(dims)}]"
    return failure.actual


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
        cause = causes.get(failure.key3)
        if cause is None:
            cause = causes[failure.key3] = Cause(
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
    diagnosis.explanations = explain_frame(frame, config)
    diagnosis.sentences = _sentences(frame, diagnosis, config)
    return diagnosis


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _cause_text(cause: Cause) -> str:
    who = f"`{cause.input}`" if cause.input else "a guard"
    values = ""
    if cause.change == "identity":
        pass  # object ids say nothing to a reader
    elif cause.values:
        values = f" (new values {_few(cause.values)})"
    elif cause.guarded:
        values = f" (it was {_few(cause.guarded)})"
    return f"{who} {cause.what}{values}"


def _few(values: list[str]) -> str:
    return ", ".join(_short(v) for v in values[:6]) + (", …" if len(values) > 6 else "")


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
    out.extend(_advice(d, config, d.explanations))
    return out


def _advice(d: Diagnosis, config: CompileConfig, explanations: list[Explanation]) -> list[str]:
    """What would avoid the recompiles, per cause (the most frequent first)."""
    out: list[str] = []
    auto = config.dynamo.get("automatic_dynamic_shapes")
    for cause in d.causes:
        who = f"`{cause.input}`" if cause.input else "the input"
        target = cause.input or "x"
        # The newest explanation of this cause: its words and fix.
        e = next(
            (
                e
                for e in reversed(explanations)
                if e.failure is not None
                and e.failure.key3 == (cause.input, cause.change, cause.index)
            ),
            None,
        )
        plain = e is None or (e.family == cause.change and "0/1 specialization" not in e.words)
        if not plain and e is not None:
            out.append(f"{e.words} Fix: {e.fix}" if e.fix else e.words)
        elif cause.change == "size":
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
        elif e is not None:
            out.append(f"{e.words} Fix: {e.fix}" if e.fix else e.words)
    return out


DEFAULT_RECOMPILE_LIMIT = 8  # torch._dynamo.config.recompile_limit when a trace does not say


@dataclass(frozen=True)
class Budget:
    """How much of its recompile limit a frame has used: ``step 7/8 recompiles``."""

    frame: Frame
    recompiles: int
    limit: int

    def text(self) -> str:
        name = self.frame.co_name or f"frame {self.frame.id_label}"
        return f"{name} {self.recompiles}/{self.limit} recompiles"


def recompile_budget(model: Model) -> Budget | None:
    """The frame closest to its recompile limit (None when no frame recompiled), from what is
    in memory: the UI's status bar asks it on every redraw."""
    worst: Budget | None = None
    for source in list(model.files):
        for frame in list(source.frames.values()):
            compiles = list(frame.compiles)
            used = sum(1 for c in compiles if c.key.is_recompile)
            if not used:
                continue
            limit = compiles[0].recompile_limit or DEFAULT_RECOMPILE_LIMIT
            budget = Budget(frame, used, limit)
            if worst is None or used / limit > worst.recompiles / worst.limit:
                worst = budget
    return worst
