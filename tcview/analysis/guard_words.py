"""A recompile in words: what changed, what to do and a doc link, for each family of guard
that fails (`Explanation`, made for each recompile of a frame by `recompiles.explain_frame`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tcview.analysis.changes import guard_text
from tcview.analysis.compile_config import CompileConfig
from tcview.analysis.guard_failures import (
    GuardFailure,
    GuardFamily,
    backend_of,
    dispatch_keys,
    input_name,
)
from tcview.analysis.guard_values import (
    dim_dynamic,
    failed_against,
    key_list,
    module_class,
    old_and_new,
    short_value,
    value_type,
)
from tcview.model.objects import Compile, Frame

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


@dataclass
class Explanation:
    """Why one compile recompiled, in words: the guard that failed against the newest earlier
    compile of its frame, its family, the values that input took over the frame's recompiles,
    what changed and what to do.

    `values` lists the input's value at each compile of the frame that guarded on it, first
    compile first (the values a frame's recompiles saw, in order); `fix` is "" where the trace
    does not show what would help. `json()` is the plain data the findings and `show` use."""

    compile: Compile
    family: GuardFamily
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
            "family": str(self.family),
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


def _seen(values: list[str], every_call: bool, unit: str = "") -> str:
    """``0.01, 0.009, 0.0081, …`` with "changes on every call" when it did."""
    shown = ", ".join(short_value(v) + unit for v in values[:6]) + (
        ", …" if len(values) > 6 else ""
    )
    if every_call:
        shown += "; it changes on every call"
    return shown


def _where(f: GuardFailure) -> str:
    """`` (guarded at script.py:7 in f)``: torch cuts the path from the left; its name stays."""
    if not f.where:
        return ""
    path, _, rest = f.where.partition(":")
    return f" (guarded at {path.rsplit('/', 1)[-1]}:{rest})"


@dataclass(frozen=True)
class _Context:
    """One recompile, as the words of each family start from it."""

    e: Explanation
    f: GuardFailure
    frame: Frame
    config: CompileConfig
    n: int  # the frame's recompiles on this input and family
    who: str  # the input, quoted, or "an input"
    old: str  # the input's value at the compile whose guard failed ("" unknown)
    new: str  # and at this one
    change: str  # ``old → new`` in words
    seen: str  # the values the input took over the frame's recompiles


def explanation_words(
    e: Explanation, frame: Frame, config: CompileConfig, n: int
) -> tuple[str, str, str]:
    """(what changed, what to do, a doc link) for one recompile (`n`: the recompiles of its
    frame on its input and family)."""
    f = e.failure
    assert f is not None
    old, new = (e.values[-2], e.values[-1]) if len(e.values) >= 2 else ("", "")
    own = old_and_new(e.compile, f, e.family)
    if own[0] or own[1]:
        old, new = own
    change = (
        f"{short_value(old)} → {short_value(new)}"
        if old and new
        else (short_value(old) and f"{short_value(old)} → another value")
    )
    who = f"`{f.input}`" if f.input else "an input"
    seen = _seen(e.values, e.every_call)
    words = _FAMILY_WORDS.get(e.family)
    if words is None:
        return f"a guard failed: {f.text}", "", ""
    return words(_Context(e, f, frame, config, n, who, old, new, change, seen))


def _size_words(c: _Context) -> tuple[str, str, str]:
    f = c.f
    dim = f.index if f.index is not None else 0
    words = f"{c.who} dimension {dim} changed size: {c.change}"
    if c.old in ("0", "1"):
        words += (
            "; sizes 0 and 1 always get their own graph (0/1 specialization), even with "
            "dynamic shapes"
        )
        return words + ".", "", RECOMPILES_DOC
    if c.n > 1:
        words += f" (sizes seen: {c.seen})"
    target = f.input or "x"
    mark = f"`torch._dynamo.mark_dynamic({target}, {dim})`"
    dynamic = dim_dynamic(c.e.compile, f.input, dim)
    auto = c.config.dynamo.get("automatic_dynamic_shapes")
    if dynamic:
        fix = (
            "none needed: this recompile's graph has the dimension dynamic (size=None in "
            f"its guards), so other sizes reuse it; {mark} before the first call avoids "
            "even this one"
        )
    elif auto is False:
        fix = f"{AUTO_OFF}: turn it on (drop `dynamic=False`), or call {mark} before the call"
    elif auto is True and c.n == 1 and dynamic is None:
        fix = (
            "none needed: automatic dynamic shapes made this dimension dynamic at this "
            f"recompile; {mark} before the first call avoids even this one"
        )
    else:
        fix = f"`torch.compile(..., dynamic=True)` or {mark} before the call"
    return words + ".", fix + ".", RECOMPILES_DOC


def _stride_words(c: _Context) -> tuple[str, str, str]:
    dim = c.f.index if c.f.index is not None else 0
    return (
        f"{c.who} has the same sizes laid out differently in memory: stride at index {dim}: "
        f"{c.change} "
        "(a transposed, sliced or expanded view).",
        f"call `{c.f.input or 'x'}.contiguous()` before passing it, so every call has one layout.",
        "",
    )


def _layout_words(c: _Context) -> tuple[str, str, str]:
    if c.f.change is GuardFamily.DISPATCH_KEYS:
        fix = "pass one layout on every call (e.g. `.to_dense()` before the call)"
        if "sparse" in c.change:
            # torch's own graph-break message: "torch.compile does not support sparse Tensors"
            fix += (
                "; torch.compile does not support sparse tensors, so keep sparse work "
                "outside the compiled function"
            )
        return f"{c.who} changed layout: {c.change}; each layout gets its own graph.", fix + ".", ""
    return (
        f"{c.who} changed memory format: {c.change}; each format gets its own graph.",
        f"convert it to one format before the call (`{c.f.input or 'x'}.contiguous()` or "
        f"`{c.f.input or 'x'}.to(memory_format=torch.channels_last)`).",
        "",
    )


def _dtype_words(c: _Context) -> tuple[str, str, str]:
    return (
        f"{c.who} changed dtype: {c.change}"
        + (f" (dtypes seen: {c.seen})" if c.n > 1 else "")
        + "; each dtype gets its own graph.",
        "cast it to one dtype before the call (e.g. `.float()`), or expect one graph per dtype.",
        "",
    )


def _rank_words(c: _Context) -> tuple[str, str, str]:
    return (
        f"{c.who} changed its number of dimensions: {c.change}; each gets its own graph.",
        "pass it with one number of dimensions (reshape before the call).",
        "",
    )


def _device_words(c: _Context) -> tuple[str, str, str]:
    f = c.f
    if f.change is GuardFamily.DISPATCH_KEYS:
        a, b = backend_of(dispatch_keys(f.expected)), backend_of(dispatch_keys(f.actual))
        change = f"{a} → {b}"
    else:
        change = f"device index {c.change}"
    return (
        f"{c.who} moved to another device: {change}; each device gets its own graph.",
        "keep it on one device across calls, or expect one graph per device.",
        "",
    )


def _requires_grad_words(c: _Context) -> tuple[str, str, str]:
    return (
        f"{c.who} requires_grad changed: {c.change}; each setting gets its own graph, and a call "
        "that goes back to a setting already seen reuses its graph.",
        "",
        "",
    )


def _dispatch_keys_words(c: _Context) -> tuple[str, str, str]:
    keys_a, keys_b = dispatch_keys(c.f.expected), dispatch_keys(c.f.actual)
    lost = [k for k in keys_a if k not in keys_b]
    gained = [k for k in keys_b if k not in keys_a]
    parts = ([f"without {', '.join(lost)}"] if lost else []) + (
        [f"with {', '.join(gained)}"] if gained else []
    )
    words = f"{c.who} has other dispatch keys than when compiled: {'; '.join(parts) or c.change}"
    fix = ""
    if any(k.startswith("Autograd") for k in lost):
        words += " (a tensor made under torch.inference_mode() has no autograd keys)"
        fix = (
            "create it outside torch.inference_mode() (or `.clone()` it outside), so every "
            "call gets the same kind of tensor."
        )
    return words + ".", fix, ""


def _type_words(c: _Context) -> tuple[str, str, str]:
    return (
        f"{c.who} changed type: {c.change}; each type gets its own graph.",
        f"pass {c.who} as one type on every call.",
        "",
    )


def _length_words(c: _Context) -> tuple[str, str, str]:
    return (
        f"{c.who} has another length: {c.change}"
        + (f" (lengths seen: {c.seen})" if c.n > 1 else "")
        + "; Dynamo unrolls it, so each length gets its own graph.",
        "pass a fixed number of items, or stack the tensors into one (`torch.stack`).",
        "",
    )


def _keys_words(c: _Context) -> tuple[str, str, str]:
    f, who = c.f, c.who
    if f.key:
        passed = "passed" if f.expected == "absent" else "did not pass"
        was = "absent" if f.expected == "absent" else "present"
        words = (
            f"the call {passed} `{f.key.strip(chr(39) + chr(34))}` in {who} ({was} when "
            "compiled): each set of keys gets its own graph."
        )
    elif c.old.startswith("["):
        words = f"{who} holds other keys than when compiled: {c.change}"
        old_keys = key_list([c.old] if c.old else [])
        new_keys = key_list([c.new] if c.new else [])
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
            f"{who} holds another number of keys than when compiled: {c.change}; each set of "
            "keys gets its own graph."
        )
    return words, "pass the same keyword arguments (or dict keys) on every call.", ""


def _global_state_words(c: _Context) -> tuple[str, str, str]:
    return (
        _global_words(c.f),
        (
            "call the compiled function in one state (or compile a separate function for each "
            "state); one graph per state is expected when it alternates between a few."
        ),
        "",
    )


def _dynamic_marking_words(c: _Context) -> tuple[str, str, str]:
    return (
        f"{c.who} was marked dynamic (torch._dynamo.mark_dynamic) on other dimensions than "
        "when compiled.",
        "mark the same dimensions before every call.",
        "",
    )


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
    cls = module_class(frame)
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
    if f.change is GuardFamily.IDENTITY:
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


def _value_words(c: _Context) -> tuple[str, str, str]:
    """A Python value (or an attribute of a module) the graph holds as a constant."""
    e, f, who = c.e, c.f, c.who
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
    if e.family is GuardFamily.MODULE_FLAG:
        return _module_words(e, c.frame, c.config, noun, kind, where, c.change)
    values = f" ({c.seen})" if len(e.values) > 2 or e.every_call else ""
    words = f"{who} is {noun} baked into the graph as a constant: {c.change}{values}{where}."
    if kind in ("int", "float") and len(e.values) == 1 and guard_text(e.compile):
        # This compile guards no value of it: Dynamo made it a graph input (automatic dynamic).
        return (
            f"{who} was {noun} baked into the graph as {short_value(f.expected)}{where}; it "
            "changed, and at this recompile Dynamo made it dynamic (a graph input), so other "
            "values reuse the new graph.",
            _LR_FIX.format(first=short_value(f.expected))
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
        return _float_words(c, words)
    if kind == "int":
        return words, _int_fix(c.config) + ".", RECOMPILES_DOC
    return words, "pass it as a tensor, or move it out of the compiled function.", ""


def _float_words(c: _Context, words: str) -> tuple[str, str, str]:
    """A float baked into the graph: a learning rate says so, and how to make it a tensor."""
    if _is_lr(c.f.input):
        first = short_value(c.e.values[0]) if c.e.values else "0.001"
        words = f"the optimizer's learning rate {words}"
        fix = _LR_FIX.format(first=first)
        doc = OPTIMIZER_LR_DOC
    else:
        fix = (
            "pass it as a tensor (`torch.tensor(value)`; one kept between calls is updated in "
            "place with `.fill_(value)`), or move it out of the compiled function"
        )
        doc = RECOMPILES_DOC
    if c.config.dynamo.get("specialize_float") is True:
        fix += "; specialize_float is on: set `torch._dynamo.config.specialize_float = False`"
    elif c.config.dynamo.get("automatic_dynamic_shapes") is False:
        fix += (
            f"; {AUTO_OFF}, which keeps floats constant: with it on, a float becomes a graph "
            "input once it changes"
        )
    return words, fix + ".", doc


def _int_fix(config: CompileConfig) -> str:
    if config.dynamo.get("automatic_dynamic_shapes") is False:
        return (
            f"{AUTO_OFF}, so each int is a constant: turn it on (an int then becomes a "
            "symbol once it changes), pass it as a tensor, or move it out of the compiled "
            "function"
        )
    if config.dynamo.get("specialize_int") is True:
        return "specialize_int is on: turn it off, or pass the int as a tensor"
    return (
        "pass it as a tensor, or move it out of the compiled function (an int used as a "
        "size or in a branch stays a constant even with dynamic shapes)"
    )


_REPR = re.compile(
    r"<(?:code object|function) (?P<name>[\w.<>]+) at 0x[0-9a-f]+(?:, file \"[^\"]*\", line (?P<line>\d+))?>"
)


def _identity_words(c: _Context) -> tuple[str, str, str]:
    """Another object than the one compiled: a function made per call, an instance."""
    e, f, frame, n = c.e, c.f, c.frame, c.n
    name = f.input.removesuffix(".__code__")
    what = "function" if f.input.endswith(".__code__") else "object"
    old, new = _object_names(e.compile, f)
    named = f": {old} → {new}" if old and new else (f" (it was {old})" if old else "")
    recompiles = [comp for comp in frame.compiles if comp.key.is_recompile]
    objects = e.nth + 1
    limit = c.config.limit or 8
    limit_hit = any(fl.is_recompile_limit for comp in frame.compiles for fl in comp.failures)
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
    before, after = _graph_functions(failed_against(comp, f)), _graph_functions(comp)
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


# The words of each family (any other: the guard as logged).
_FAMILY_WORDS: dict[GuardFamily, Callable[[_Context], tuple[str, str, str]]] = {
    GuardFamily.SIZE: _size_words,
    GuardFamily.STRIDE: _stride_words,
    GuardFamily.LAYOUT: _layout_words,
    GuardFamily.DTYPE: _dtype_words,
    GuardFamily.RANK: _rank_words,
    GuardFamily.DEVICE: _device_words,
    GuardFamily.REQUIRES_GRAD: _requires_grad_words,
    GuardFamily.DISPATCH_KEYS: _dispatch_keys_words,
    GuardFamily.VALUE: _value_words,
    GuardFamily.MODULE_FLAG: _value_words,
    GuardFamily.IDENTITY: _identity_words,
    GuardFamily.TYPE: _type_words,
    GuardFamily.LENGTH: _length_words,
    GuardFamily.KEYS: _keys_words,
    GuardFamily.GLOBAL_STATE: _global_state_words,
    GuardFamily.SYMBOLIC_SHAPE: lambda c: _symbolic_words(c.f),
    GuardFamily.DYNAMIC_MARKING: _dynamic_marking_words,
}
