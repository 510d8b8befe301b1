"""What differed between a recompile and the earlier compiles of its frame, read from the
guards each compile was made with.

A recompile's log lists one failed guard per earlier compile, newest cache entry first. The
first one is often not the cause: a call that changes one thing and then goes back (an eval
under no_grad, a dtype, a flag) fails the newest entry on the previous call's change being
undone. Each compile's own guards hold every value it was specialised on, so comparing them
finds the earlier compile the new one is closest to, and every value that differs from it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from enum import Enum
from functools import lru_cache

from tcview.analysis.owner import resume_function
from tcview.model.objects import Compile, Frame


class Aspect(str, Enum):
    """What a guard holds of a value."""

    def __str__(self) -> str:
        return self.value

    SIZE = "size"
    STRIDE = "stride"
    DIMS = "number of dimensions"
    DTYPE = "dtype"
    DEVICE = "device"
    REQUIRES_GRAD = "requires_grad"
    VALUE = "value"
    LENGTH = "length"
    KEYS = "keys"
    TYPE = "type"
    IDENTITY = "identity"
    MARKING = "dynamic marking"
    GLOBAL = "global state"


GLOBAL_SOURCE = "global state"
_GUARD_RECORDS = ("dynamo_cpp_guards_str", "guards")
COMPARED = 64  # earlier compiles a recompile is compared with, newest first

# One guard per line; the tree's prefix (``| | +- EQUALS_MATCH: ``) and the source comment
# (``  # if flag:  # script.py:6 in f``) are cut before matching.
_PREFIX = re.compile(r"^[|\s]*(?:\+-\s*)?(?:[A-Z][A-Z_]+:\s*)?")
_COMMENT = re.compile(r"\s+#\s.*$")
# A guard tree's line names its kind; only these are read (a legacy guards text, with no
# kinds, is read whole).
_KIND = re.compile(r"^[|\s]*\+-\s*(\w+):")
_READ_KINDS = frozenset(
    {
        "TENSOR_MATCH",
        "GLOBAL_STATE",
        "EQUALS_MATCH",
        "TRUE_MATCH",
        "FALSE_MATCH",
        "NONE_MATCH",
        "NOT_NONE_MATCH",
        "CONSTANT_MATCH",
        "LENGTH_CHECK",
        "DICT_LENGTH",
        "SEQUENCE_LENGTH",
        "TYPE_MATCH",
        "ID_MATCH",
        "DIMENSION_DYNAMIC_MARKING_GUARD",
        "DEFAULT_DEVICE",
        "LAMBDA_GUARD",
        "DICT_KEYS_MATCH",
    }
)
_SRC = r"(?P<src>[A-Za-z_][\w]*(?:\[[^\]]{1,200}\]|\.\w+){0,20})"
_LIT = r"(?P<lit>[\w.]+\([^()]*\)|-?[\w.+-]+|'[^']*'|\"[^\"]*\")"
_TENSOR = re.compile(
    r"check_tensor\((?P<src>.+?), [\w.]+, DispatchKeySet\((?P<keys>[^)]*)\), "
    r"torch\.(?P<dtype>\w+), device=(?P<device>[^,]+), requires_grad=(?P<rg>\w+), "
    r"size=\[(?P<size>[^\]]*)\], stride=\[(?P<stride>[^\]]*)\]\)"
)
_FORMS: tuple[tuple[Aspect, re.Pattern[str]], ...] = (
    (Aspect.VALUE, re.compile(r"^___as_tensor\(" + _SRC + r"\)\.item\(\) == " + _LIT + r"$")),
    (Aspect.VALUE, re.compile(r"^" + _SRC + r" is (?P<lit>None|not None)$")),
    (Aspect.LENGTH, re.compile(r"^len\(" + _SRC + r"\) == (?P<lit>\d+)$")),
    (Aspect.KEYS, re.compile(r"^list\(dict\.keys\(" + _SRC + r"\)\) == (?P<lit>\[.*\])$")),
    (Aspect.KEYS, re.compile(r"^(?:list\(" + _SRC + r"\.keys\(\)\)) == (?P<lit>\[.*\])$")),
    (Aspect.VALUE, re.compile(r"^" + _SRC + r" == " + _LIT + r"$")),
    (
        Aspect.TYPE,
        re.compile(r"^___check_type_id\(" + _SRC + r", \d+\), type=<class '(?P<lit>[^']+)'>"),
    ),
    (Aspect.IDENTITY, re.compile(r"^___check_obj_id\(" + _SRC + r", (?P<lit>\d+)\)")),
    (
        Aspect.MARKING,
        re.compile(r"^hasattr\(" + _SRC + r", '_dynamo_dynamic_indices'\) == (?P<lit>False)$"),
    ),
    (
        Aspect.MARKING,
        re.compile(r"^" + _SRC + r"\._dynamo_dynamic_indices\.issubset\((?P<lit>\{[^}]*\})\)"),
    ),
)
_DICT_KEY = re.compile(r"^list\(dict\.keys\(" + _SRC + r"\)\)\[(?P<pos>\d+)\] == " + _LIT + r"$")
_TYPE_FORM = next(i for i, (aspect, _p) in enumerate(_FORMS) if aspect is Aspect.TYPE)
_GLOBAL = re.compile(r"___check_global_state\(\) against (?P<json>\{.*\})")
_DEVICE_KEYS = ("CUDA", "CPU", "XPU", "MPS", "Meta", "HIP", "XLA", "MTIA", "PrivateUse1")


Facts = dict[tuple[str, Aspect], str]


def guard_text(comp: Compile) -> str:
    """The guards a compile installed, as logged (trace or TORCH_LOGS=guards; "" when neither).
    Read from disk once per compile and record count (a live compile gains its guards late)."""
    return _guard_text(comp, len(comp.records))


@lru_cache(maxsize=64)
def _guard_text(comp: Compile, _records: int) -> str:
    return "\n".join(r.payload() for r in comp.records if r.kind in _GUARD_RECORDS)


def guard_facts(comp: Compile) -> Facts:
    """{(source, aspect): value} of every guard of a compile ({} when none was logged)."""
    return _facts(comp, len(comp.records))


@lru_cache(maxsize=1024)
def _facts(comp: Compile, _records: int) -> Facts:
    guards = [r for r in comp.records if r.kind in _GUARD_RECORDS]
    digests = tuple(r.md5 or "" for r in guards)
    if not guards or not all(digests):
        return parse_facts(guard_text(comp))
    known = _BY_DIGEST.get(digests)  # the same guards (every rank's copy): parsed once
    if known is None:
        known = _BY_DIGEST[digests] = parse_facts(guard_text(comp))
        while len(_BY_DIGEST) > FACTS_KEPT:
            _BY_DIGEST.pop(next(iter(_BY_DIGEST)))
    return known


FACTS_KEPT = 1024  # guards texts whose facts are kept, by their payloads' md5
_BY_DIGEST: dict[tuple[str, ...], Facts] = {}


def parse_facts(text: str) -> Facts:
    """The facts of a guards text (`guard_facts` without the compile)."""
    facts: Facts = {}
    typed: dict[str, str] = {}
    dict_keys: dict[str, dict[int, str]] = {}
    for raw in text.split("\n"):
        kind = _KIND.match(raw)
        name = kind.group(1) if kind is not None else ""
        if kind is not None and name not in _READ_KINDS:
            continue  # a guard manager, an accessor, a guard tcview does not compare
        line = _COMMENT.sub("", _PREFIX.sub("", raw[:2000])).strip()
        if not line:
            continue
        if name in ("", "TENSOR_MATCH"):
            m = _TENSOR.search(line)
            if m is not None:
                _tensor_facts(facts, m)
                continue
        if name in ("", "GLOBAL_STATE"):
            g = _GLOBAL.search(line)
            if g is not None:
                _global_facts(facts, g.group("json"))
                continue
        if name == "TYPE_MATCH":  # the most common guard after the managers
            t = _FORMS[_TYPE_FORM][1].match(line)
            if t is not None:
                typed[t.group("src")] = t.group("lit")
            continue
        k = _DICT_KEY.match(line)
        if k is not None:  # a dict the code iterated: the key at each position
            dict_keys.setdefault(k.group("src"), {})[int(k.group("pos"))] = k.group("lit")
            continue
        for aspect, pattern in _FORMS:
            f = pattern.match(line)
            if f is None:
                continue
            src, lit = f.group("src"), f.group("lit")
            if aspect is Aspect.TYPE:
                typed[src] = lit
            if aspect is Aspect.MARKING and lit == "False":
                lit = "none"
            facts.setdefault((src, aspect), lit)
            break
    for src, keys in dict_keys.items():
        facts[(src, Aspect.KEYS)] = f"[{', '.join(keys[i] for i in sorted(keys))}]"
    for src, cls in typed.items():
        facts[(src, Aspect.TYPE)] = cls
        if cls in ("int", "float") and (src, Aspect.VALUE) not in facts:
            facts[(src, Aspect.VALUE)] = "dynamic"  # a number Dynamo made a graph input
    return facts


def _tensor_facts(facts: Facts, m: re.Match[str]) -> None:
    src = m.group("src").strip()
    keys = [k.strip() for k in m.group("keys").split(",")]
    backend = next((k for k in _DEVICE_KEYS if k in keys), "")
    index = m.group("device").strip()
    device = backend.lower() + (f":{index}" if index not in ("None", "") else "")
    size = m.group("size").replace(" ", "")
    facts[(src, Aspect.DTYPE)] = m.group("dtype")
    facts[(src, Aspect.DEVICE)] = device or index
    facts[(src, Aspect.REQUIRES_GRAD)] = m.group("rg")
    facts[(src, Aspect.DIMS)] = str(len([v for v in size.split(",") if v]))
    facts[(src, Aspect.SIZE)] = f"[{size.replace(',', ', ')}]"
    facts[(src, Aspect.STRIDE)] = f"[{m.group('stride').replace(' ', '').replace(',', ', ')}]"


def _global_facts(facts: Facts, text: str) -> None:
    try:
        state = json.loads(text)
    except ValueError:
        return
    if not isinstance(state, dict):
        return
    for key, value in state.items():
        if key == "autocast_state" and isinstance(value, dict):
            enabled = value.get("enabled")
            if isinstance(enabled, list):
                value = "on" if any(enabled) else "off"
        text = value if isinstance(value, str) else json.dumps(value)
        facts[(f"{GLOBAL_SOURCE}.{key}", Aspect.GLOBAL)] = text


def covers(guarded: str, value: str) -> bool:
    """Whether a compile guarded on `guarded` accepts `value`: the same, or dynamic there (a
    number made dynamic, a size with dynamic dimensions)."""
    if guarded == value or guarded == "dynamic":
        return True
    if guarded.startswith("[") and value.startswith("["):
        a, b = guarded.strip("[]").split(", "), value.strip("[]").split(", ")
        return len(a) == len(b) and all(x in (y, "None") for x, y in zip(a, b, strict=True))
    return False


@dataclass(frozen=True)
class Change:
    """One value that differs between two compiles of a frame."""

    source: str  # Dynamo's source: L['x'], L['self'].training, G['hyper']['lr']
    aspect: Aspect
    old: str
    new: str
    count: int = 1  # the changes it stands for (every submodule's training flag)

    @property
    def name(self) -> str:
        return user_name(self.source)

    def text(self) -> str:
        """``x dtype float32 → float64``, ``flag True → False``, ``grad_mode True → False``."""
        what = "" if self.aspect in (Aspect.VALUE, Aspect.GLOBAL) else f" {self.aspect.value}"
        return f"{self.name}{what} {show(self.old)} → {show(self.new)}"


_FLOAT = re.compile(r"-?\d+\.\d+(?:e[+-]?\d+)?")


def show(value: str) -> str:
    """A fact's value in words: a number or size Dynamo made dynamic says so."""
    if value == "dynamic":
        return "dynamic (any value)"
    if value.startswith("[") and "None" in value:
        return value.replace("None", "dynamic")
    if _FLOAT.fullmatch(value):  # as the user wrote it: 0.009, not 0.009000000000000001
        return repr(float(f"{float(value):.12g}"))
    if value in ("true", "false"):
        return value.capitalize()
    return value


# Aspects that follow from another's change on the same source (a new size brings new strides).
_FOLLOWS = {Aspect.STRIDE: Aspect.SIZE, Aspect.DIMS: Aspect.SIZE}
# Differences that say nothing a user can act on: object ids of torch's own globals.
_NOISE = re.compile(r"^G\['__import_|__code__$|\.__closure__|___odict|^G\['__")


def diff(old: Facts, new: Facts) -> list[Change]:
    """What differs between two compiles' facts: the values both guarded on that differ, and
    a number one compile baked in that the other made dynamic. Derived differences are left
    out: the items of a list whose length changed, strides that follow a new size."""
    out: list[Change] = []
    for key, value in new.items():
        before = old.get(key)
        if before is None or before == value:
            continue
        source, aspect = key
        if _NOISE.search(source):
            continue
        out.append(Change(source, aspect, before, value))
    lengths = {c.source for c in out if c.aspect in (Aspect.LENGTH, Aspect.KEYS)}
    sized = {c.source for c in out if c.aspect is Aspect.SIZE}
    typed = {c.source for c in out if c.aspect is Aspect.TYPE}
    kept = []
    for c in out:
        if any(c.source.startswith(s) and c.source != s for s in lengths | typed):
            continue  # an item of a list or dict that changed length, or of a new type
        if _FOLLOWS.get(c.aspect) is Aspect.SIZE and c.source in sized:
            continue
        if c.aspect is not Aspect.TYPE and c.source in typed:
            continue  # another type: its other facts follow from that
        kept.append(c)
    return sorted(_fold(kept), key=_order)


_PARAM = re.compile(r"\._(?:parameters|buffers)\[")
_TRAINING = re.compile(r"\.training$")


def _fold(changes: list[Change]) -> list[Change]:
    """One change for many alike: the parameters of a module cast to another dtype, every
    submodule's `training` flag flipped by model.train() / model.eval()."""
    out: list[Change] = []
    params: dict[tuple[Aspect, str, str], list[Change]] = {}
    training = [c for c in changes if _TRAINING.search(c.source)]
    for c in changes:
        if _PARAM.search(c.source):
            params.setdefault((c.aspect, c.old, c.new), []).append(c)
        elif c not in training:
            out.append(c)
    for (aspect, old, new), group in params.items():
        if len(group) == 1:
            out.append(group[0])
        else:
            owner = min((c.source.split("._", 1)[0] for c in group), key=len)
            out.append(Change(f"{owner}.parameters ({len(group)})", aspect, old, new))
    if training:
        top = min(training, key=lambda c: len(c.source))
        out.append(
            top if len(training) == 1 else replace(top, source=top.source, count=len(training))
        )
    return out


def _order(c: Change) -> tuple[int, int, str]:
    """The function's own arguments first, then what hangs off them, globals last."""
    depth = (
        c.source.count(".")
        + c.source.count("[")
        + (5 if c.source.startswith(("G[", GLOBAL_SOURCE)) else 0)
    )
    return (depth, list(Aspect).index(c.aspect), c.source)


# How Dynamo reaches into a module: self._modules['drop']._parameters['weight'] is the user's
# self.drop.weight.
_MODULE_PARTS = re.compile(r"\._(?:modules|parameters|buffers)\[['\"](\w+)['\"]\]")


def user_name(source: str, frame: Frame | None = None) -> str:
    """A Dynamo source in the user's words: ``L['x']`` -> ``x``, ``L['self'].layers[3]`` ->
    ``self.layers[3]``, ``G['hyper']['lr']`` -> ``hyper['lr']``, the global state's keys by
    name; a resume function's stack slot is a value carried across its graph break."""
    if source.startswith(f"{GLOBAL_SOURCE}."):
        key = source[len(GLOBAL_SOURCE) + 1 :]
        return "autocast" if key == "autocast_state" else key
    if source == "utils_device.CURRENT_DEVICE":
        return "the default device (torch.set_default_device)"
    m = re.match(r"^[LG]\[(['\"])(.+?)\1\]", source)
    if m is None:
        return source
    head, rest = m.group(2), _MODULE_PARTS.sub(r".\1", source[m.end() :])
    if head.startswith("___stack"):
        line = None
        if frame is not None and frame.co_name:
            found = resume_function(frame.co_name)
            line = found[1] if found else None
        at = f" at line {line}" if line else ""
        return f"a value carried across the graph break{at}"
    return head + rest
