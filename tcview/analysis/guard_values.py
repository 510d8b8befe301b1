"""What a compile's guards hold of an input: the value, size, strides, keys, type or object it
was compiled for. From these, the values an input took over a frame's recompiles, and the
family of a recompile refined with its frame (`family_of`).
"""

from __future__ import annotations

import re

from tcview.analysis.changes import guard_text
from tcview.analysis.guard_failures import (
    LITERAL,
    GuardFailure,
    GuardFamily,
    backend_of,
    dispatch_keys,
    input_name,
    layout_of,
)
from tcview.analysis.recompile_causes import primary_failure
from tcview.model.objects import Compile, Frame

_TENSOR_MATCH = re.compile(
    r"check_tensor\((?P<input>[^,]+),.*?size=\[(?P<size>[^\]]*)\], stride=\[(?P<stride>[^\]]*)\]"
)


def family_of(comp: Compile, failure: GuardFailure | None = None) -> GuardFamily:
    """The family of a recompile: of the guard that failed against the newest earlier compile
    ("not_logged" when none was). Refines what the guard alone tells with its frame: an
    attribute of `self` in a module's forward is a module flag; strides that are another
    memory format are a layout."""
    failure = failure or primary_failure(comp)
    if failure is None:
        return GuardFamily.NOT_LOGGED
    if failure.family in (GuardFamily.VALUE, GuardFamily.IDENTITY) and _module_attr(
        comp, failure.input
    ):
        return GuardFamily.MODULE_FLAG
    if failure.family is GuardFamily.STRIDE and _formats(comp, failure) is not None:
        return GuardFamily.LAYOUT
    if failure.family is GuardFamily.LENGTH and _is_dict(comp, failure.input):
        return GuardFamily.KEYS
    return failure.family


_SELF_TYPE = re.compile(
    r"___check_type_id\(L\['self'\], \d+\), type=<class '(?:[\w.]*\.)?(?P<cls>\w+)'>"
)


def module_class(frame: Frame) -> str:
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
    pattern = r"list\(dict\.keys\(" + source + r"\)\)\[(\d+)\] == (" + LITERAL + r")(?=\s|$)"
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


def dim_dynamic(comp: Compile, name: str, dim: int) -> bool | None:
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
    old = _tensor_shape(failed_against(comp, failure), failure.input)
    new = _tensor_shape(comp, failure.input)
    if old is None or new is None:
        return None
    a, b = memory_format(*old), memory_format(*new)
    return (a, b) if a and b and a != b else None


def failed_against(comp: Compile, failure: GuardFailure) -> Compile | None:
    """The earlier compile whose guard failed: the one the failure names, else the newest."""
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
        r"(?:== (" + LITERAL + r")|is (None|not None))(?=\s|$)",
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


# The families whose failed guard logs both the old value and the new.
_AS_LOGGED = (
    GuardFamily.SIZE,
    GuardFamily.STRIDE,
    GuardFamily.DTYPE,
    GuardFamily.RANK,
    GuardFamily.DEVICE,
)


def old_and_new(comp: Compile, failure: GuardFailure, family: GuardFamily) -> tuple[str, str]:
    """The input's value at the compile whose guard failed, and at this one ("" unknown)."""
    if family is GuardFamily.IDENTITY or failure.change is GuardFamily.IDENTITY:
        return failure.expected, _id_at(comp, failure.input)
    if family in (GuardFamily.VALUE, GuardFamily.MODULE_FLAG):
        return failure.expected, _guarded_value(comp, failure.input)
    if family is GuardFamily.LAYOUT and failure.change is GuardFamily.STRIDE:
        formats = _formats(comp, failure)
        return formats if formats is not None else ("", "")
    if failure.change is GuardFamily.DISPATCH_KEYS:
        keys_a, keys_b = dispatch_keys(failure.expected), dispatch_keys(failure.actual)
        if family is GuardFamily.DEVICE:
            return backend_of(keys_a), backend_of(keys_b)
        if family is GuardFamily.LAYOUT:
            return layout_of(keys_a) or "strided", layout_of(keys_b) or "strided"
        return failure.expected, failure.actual
    if family in _AS_LOGGED:
        return failure.expected, failure.actual
    if family is GuardFamily.REQUIRES_GRAD:
        old = {"0": "False", "1": "True"}.get(failure.expected, failure.expected)
        new = {"False": "True", "True": "False"}.get(old, "")
        return old, new
    if family is GuardFamily.TYPE:
        return failure.expected, _type_at(comp, failure.input)
    if family is GuardFamily.LENGTH:
        m = re.search(
            r"len\((?:L\['"
            + re.escape(failure.input)
            + r"'\]|"
            + re.escape(failure.input)
            + r")\) == (\d+)",
            guard_text(comp),
        )
        return failure.expected, m.group(1) if m else ""
    if family is GuardFamily.KEYS and not failure.key:
        old_keys = _dict_keys_at(failed_against(comp, failure), failure.input)
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


def key_list(values: list[str]) -> list[str]:
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


def short_value(value: str) -> str:
    """A float as torch printed it, without its binary noise (0.009000000000000001 -> 0.009)."""
    if value_type(value) == "float":
        try:
            return repr(float(f"{float(value):.12g}"))
        except ValueError:
            return value
    return value
