"""Failed guards in words: each guard failure torch logs parsed into its parts (which input,
what changed, the values), and the family it falls in.

Guard failures come in the forms torch logs them (``recompile_reasons`` artifacts, the
``Recompiling function`` messages of TORCH_LOGS=recompiles)::

    0/0: tensor 'x' size mismatch at index 0. expected 8, actual 16
    0/0: tensor 'kwargs['input_ids']' dtype mismatch. expected Float, actual Half
    0/0: L['x'].size()[1] == 64
    0/0: ___check_type_id(L['x'], 94123)
    0/0: L['n'] == 3                      # return x * n  # script.py:12 in f
    0/0: GLOBAL_STATE changed: grad_mode
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from enum import Enum

from tcview.analysis.changes import user_name
from tcview.model.facts import short_guard


class GuardFamily(str, Enum):
    """What a failed guard is about. A guard's own form names one (`GuardFailure.change`);
    its frame can refine it (`guard_values.family_of`: a flag of a module, a memory format).
    The value is the word JSON gives (``guard_families`` of `summary --json`, the ``family``
    of an explanation)."""

    def __str__(self) -> str:
        return self.value

    SIZE = "size"
    STRIDE = "stride"
    LAYOUT = "layout"
    RANK = "rank"
    DTYPE = "dtype"
    DEVICE = "device"
    REQUIRES_GRAD = "requires_grad"
    DISPATCH_KEYS = "dispatch_keys"
    VALUE = "value"
    MODULE_FLAG = "module_flag"
    IDENTITY = "identity"
    TYPE = "type"
    LENGTH = "length"
    KEYS = "keys"
    GLOBAL_STATE = "global_state"
    SYMBOLIC_SHAPE = "symbolic_shape"
    DYNAMIC_MARKING = "dynamic_marking"
    NOT_LOGGED = "not_logged"
    OTHER = "other"

    @property
    def words(self) -> str:
        """As a sentence says it: ``global state``, ``dispatch keys``; ``requires_grad``, the
        tensor's attribute, as it is spelled."""
        if self is GuardFamily.REQUIRES_GRAD:
            return self.value
        return self.value.replace("_", " ")


# The families a guard's own form names (`GuardFailure.change`), in the order a diagnosis
# lists them.
CHANGES = (
    GuardFamily.SIZE,
    GuardFamily.STRIDE,
    GuardFamily.DTYPE,
    GuardFamily.RANK,
    GuardFamily.DEVICE,
    GuardFamily.REQUIRES_GRAD,
    GuardFamily.DISPATCH_KEYS,
    GuardFamily.TYPE,
    GuardFamily.IDENTITY,
    GuardFamily.VALUE,
    GuardFamily.LENGTH,
    GuardFamily.KEYS,
    GuardFamily.DYNAMIC_MARKING,
    GuardFamily.GLOBAL_STATE,
    GuardFamily.OTHER,
)

# What each family is about, in words. `summary --json` counts recompiles by family
# (`guard_families`); "other" keeps the guard's raw text.
FAMILIES: dict[GuardFamily, str] = {
    GuardFamily.SIZE: "a tensor's size",
    GuardFamily.STRIDE: "a tensor's strides",
    GuardFamily.LAYOUT: "a tensor's layout or memory format",
    GuardFamily.RANK: "a tensor's number of dimensions",
    GuardFamily.DTYPE: "a tensor's dtype",
    GuardFamily.DEVICE: "a tensor's device",
    GuardFamily.REQUIRES_GRAD: "a tensor's requires_grad",
    GuardFamily.DISPATCH_KEYS: "a tensor's dispatch keys",
    GuardFamily.VALUE: "a Python value (int, float, bool, str or None)",
    GuardFamily.MODULE_FLAG: "a per-instance attribute of an nn.Module",
    GuardFamily.IDENTITY: "which object was passed",
    GuardFamily.TYPE: "an object's type",
    GuardFamily.LENGTH: "a list's or tuple's length",
    GuardFamily.KEYS: "a dict's keys or the keyword arguments of the call",
    GuardFamily.GLOBAL_STATE: "global state (grad mode, autocast, torch function modes, ...)",
    GuardFamily.SYMBOLIC_SHAPE: "a guard on dynamic (symbolic) sizes",
    GuardFamily.DYNAMIC_MARKING: "the dimensions mark_dynamic marked",
    GuardFamily.NOT_LOGGED: "no guard failure was logged for the recompile",
    GuardFamily.OTHER: "a guard tcview does not know",
}

_ID = r"(?:(!?\d+(?:/\d+)*(?:_\d+)?): )?"
_TENSOR = r"tensor '(?P<input>.+?)' "
# x, L['x'], self.cfg.flag, opts['act'], xs[0]; bounded, so a scan of a hostile line is linear
_NAME = r"[A-Za-z_]\w{0,99}(?:\.\w{1,100}|\[[^\]]{1,100}\]){0,12}"
# A literal a guard compares with: a number, a name, a quoted string.
LITERAL = r"-?[\w.+-]+|'[^']*'|\"[^\"]*\""
_FORMS: tuple[tuple[GuardFamily, re.Pattern[str]], ...] = (
    (
        GuardFamily.SIZE,
        re.compile(
            _ID + _TENSOR + r"size mismatch at index (?P<index>\d+)\. "
            r"expected (?P<expected>\S+?), actual (?P<actual>\S+)$"
        ),
    ),
    (
        GuardFamily.STRIDE,
        re.compile(
            _ID + _TENSOR + r"stride mismatch at index (?P<index>\d+)\. "
            r"expected (?P<expected>\S+?), actual (?P<actual>\S+)$"
        ),
    ),
    (
        GuardFamily.DTYPE,
        re.compile(
            _ID + _TENSOR + r"dtype mismatch\. expected (?P<expected>\S+?), actual (?P<actual>\S+)$"
        ),
    ),
    (
        GuardFamily.RANK,
        re.compile(
            _ID + _TENSOR + r"rank mismatch\. expected (?P<expected>\S+?), actual (?P<actual>\S+)$"
        ),
    ),
    (
        GuardFamily.DEVICE,
        re.compile(
            _ID + _TENSOR + r"Tensor device index mismatch\. Expected device index to be "
            r"(?P<expected>\S+?), actual (?P<actual>\S+)$"
        ),
    ),
    (
        GuardFamily.REQUIRES_GRAD,
        re.compile(
            _ID + _TENSOR + r"requires_grad mismatch\. expected requires_grad=(?P<expected>\S+)"
        ),
    ),
    (
        GuardFamily.DISPATCH_KEYS,
        re.compile(
            _ID + _TENSOR + r"dispatch key set mismatch\. expected (?P<expected>.+?), "
            r"actual (?P<actual>.+)$"
        ),
    ),
    (GuardFamily.GLOBAL_STATE, re.compile(_ID + r"GLOBAL_STATE changed: (?P<input>.*?)\s*$")),
    (GuardFamily.GLOBAL_STATE, re.compile(_ID + r"___check_global_state\(\)")),
    (
        GuardFamily.GLOBAL_STATE,
        re.compile(_ID + r"___check_torch_function_mode_stack\(\)(?P<input>)"),
    ),
    (
        GuardFamily.GLOBAL_STATE,
        re.compile(_ID + r"(?:utils_device\.)?CURRENT_DEVICE == (?P<expected>\S+)"),
    ),
    (
        GuardFamily.GLOBAL_STATE,
        re.compile(_ID + r"___check_current_backend\((?P<expected>[^)]*)\)"),
    ),
    (
        GuardFamily.TYPE,
        re.compile(
            _ID
            + r"___check_type_id\((?P<input>[^,]+), \d+\)(?:, type=<class '(?P<expected>[^']+)'>)?"
        ),
    ),
    (
        GuardFamily.IDENTITY,
        re.compile(
            _ID + r"___check_obj_id\((?P<input>[^,]+), (?P<expected>\d+)\)"
            r"(?:, type=<class '(?P<kind>[^']+)'>)?"
        ),
    ),
    (
        GuardFamily.DYNAMIC_MARKING,
        re.compile(_ID + r".*?(?P<input>" + _NAME + r"), '_dynamo_dynamic_indices'"),
    ),
    (
        GuardFamily.SIZE,
        re.compile(_ID + r"(?P<input>.+?)\.size\(\)\[(?P<index>\d+)\] == (?P<expected>-?\d+)\s*$"),
    ),
    (
        GuardFamily.STRIDE,
        re.compile(
            _ID + r"(?P<input>.+?)\.stride\(\)\[(?P<index>\d+)\] == (?P<expected>-?\d+)\s*$"
        ),
    ),
    (
        GuardFamily.KEYS,
        re.compile(
            _ID + r"(?P<negated>not )?___dict_contains\((?P<key>'[^']*'|\"[^\"]*\"|[^,]+), "
            r"(?P<input>[^)]+)\)"
        ),
    ),
    (
        GuardFamily.KEYS,
        re.compile(
            _ID + r"(?:list\((?P<input>.+?)\.keys\(\)\)|___key_to_id\((?P<input2>.+?)\)) == "
            r"(?P<expected>\[.*\])\s*$"
        ),
    ),
    (
        GuardFamily.KEYS,
        re.compile(
            _ID + r"len\((?P<input>(?:L\[')?\w*kwargs\w*(?:'\])?)\) == (?P<expected>\d+)\s*$"
        ),
    ),
    (
        GuardFamily.KEYS,  # the key at a position of a dict the code iterated: list(dict.keys(d))[1] == 'b'
        re.compile(
            _ID + r"list\(dict\.keys\((?P<input>" + _NAME + r")\)\)\[(?P<position>\d+)\] == "
            r"(?P<expected>" + LITERAL + r")\s*$"
        ),
    ),
    (GuardFamily.LENGTH, re.compile(_ID + r"len\((?P<input>.+)\) [!=]= (?P<expected>\d+)\s*$")),
    (
        GuardFamily.SIZE,  # a symbolic shape guard on one dimension: 2 <= x.size()[0] <= 4, Ne(..., 1)
        re.compile(_ID + r".*?(?P<input>" + _NAME + r")\.(?:size|stride)\(\)\[(?P<index>\d+)\]"),
    ),
    (
        GuardFamily.SIZE,  # a symbolic shape guard on symbols only: Ne(s0, 1), Eq(Mod(s0, 8), 0), s0 <= 4
        re.compile(
            _ID
            + r"(?:(?:Ne|Eq|Lt|Le|Gt|Ge|Mod|FloorDiv|Max|Min)\(|.*\b[su]\d+\b\s*(?:<=?|>=?|[!=]=))"
        ),
    ),
    (
        GuardFamily.VALUE,  # an unspecialized float Dynamo read as a constant: ___as_tensor(x).item() == 0.05
        re.compile(
            _ID
            + r"___as_tensor\((?P<input>"
            + _NAME
            + r")\)\.item\(\) == (?P<expected>"
            + LITERAL
            + r")\s*$"
        ),
    ),
    (
        GuardFamily.VALUE,
        re.compile(_ID + r"(?P<input>" + _NAME + r") is (?P<expected>None|not None)\s*$"),
    ),
    (
        GuardFamily.VALUE,
        re.compile(_ID + r"(?P<input>" + _NAME + r") == (?P<expected>" + LITERAL + r")\s*$"),
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

    change: GuardFamily  # what the guard's own form names: one of CHANGES
    input: str  # the input as the user names it: x, kwargs['input_ids'], n; "" when unknown
    index: int | None  # the dimension, for a size or stride
    expected: str
    actual: str
    against: str  # the compile whose guard failed (0/0), "" when not logged
    text: str  # the guard's first line, without its source comment
    family: GuardFamily = GuardFamily.OTHER  # `change`, refined by what the guard says
    where: str = ""  # the user's line the guard came from (``script.py:7 in f``), when logged
    key: str = ""  # the dict key of a ``___dict_contains`` guard (``'shift'``)
    raw: str = ""  # the guard's first line as logged, with its source comment
    logged: str = field(default="", compare=False)  # all of it, its user stack too

    @property
    def key3(self) -> tuple[str, GuardFamily, int | None]:
        return (self.input, self.change, self.index)

    @property
    def what(self) -> str:
        """``size at index 1``, ``dtype``, ``value``."""
        if self.index is not None:
            return f"{self.change.words} at index {self.index}"
        return self.change.words


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
        if change is GuardFamily.IDENTITY and groups.get("kind"):
            actual = ""  # the id is the expected; the kind names what it is
        failure = GuardFailure(
            change,
            name,
            int(index) if index is not None else None,
            expected,
            actual,
            m.group(1) or "",
            text,
            GuardFamily.OTHER,
            where,
            key,
            first,
            reason,
        )
        return _with_family(failure, groups)
    against, _, rest = text.partition(": ")
    if re.fullmatch(r"!?\d+(?:/\d+)*(?:_\d+)?", against):
        return GuardFailure(
            GuardFamily.OTHER,
            "",
            None,
            "",
            "",
            against,
            rest,
            GuardFamily.OTHER,
            where,
            "",
            first,
            reason,
        )
    return GuardFailure(
        GuardFamily.OTHER, "", None, "", "", "", text, GuardFamily.OTHER, where, "", first, reason
    )


def _with_family(f: GuardFailure, groups: dict[str, str | None]) -> GuardFailure:
    """The family of a parsed guard failure (what the guard alone tells)."""
    family = f.change
    if f.change is GuardFamily.SIZE and not _static_size(f.text):
        family = GuardFamily.SYMBOLIC_SHAPE
    elif f.change is GuardFamily.DISPATCH_KEYS:
        family = _keys_family(f.expected, f.actual)
    elif f.change is GuardFamily.GLOBAL_STATE and not f.input:
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


def backend_of(keys: list[str]) -> str:
    """The device a dispatch key set names (``CUDA``), "" when none."""
    return next((k for k in keys if k in _DEVICE_KEYS), "")


def layout_of(keys: list[str]) -> str:
    """The layout a dispatch key set names (``sparse (COO)``), "" for strided."""
    for k in keys:
        for key, layout in _LAYOUT_KEYS.items():
            if k.startswith(key) and k[len(key) :] in ("", *_DEVICE_KEYS):
                return layout
    return ""


def _keys_family(expected: str, actual: str) -> GuardFamily:
    old, new = dispatch_keys(expected), dispatch_keys(actual)
    if layout_of(old) != layout_of(new):
        return GuardFamily.LAYOUT
    if backend_of(old) and backend_of(new) and backend_of(old) != backend_of(new):
        return GuardFamily.DEVICE
    return GuardFamily.DISPATCH_KEYS
