"""Every recompile explained: the family of the guard that failed against the
newest earlier compile, the values seen, what changed in words and the fix. On real CPU runs
of torch 2.13, one a family (tests/fixtures/recompiles/<family>/script.py made them; each
folder holds the TORCH_TRACE directory and the TORCH_LOGS=recompiles,guards capture)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import FIXTURES, SAMPLES, unpack_shared

from tcview.analysis.compile_config import CompileConfig, compile_config
from tcview.analysis.guard_failures import FAMILIES, parse_guard_failure
from tcview.analysis.guard_words import Explanation
from tcview.analysis.recompiles import explain, explain_frame, guard_families
from tcview.analysis.rundiff import run_diff
from tcview.ingest.source import load_source
from tcview.model.objects import Model
from tcview.report.detail import compile_detail, render_text
from tcview.report.summary import summary_json

RECOMPILES = FIXTURES / "recompiles"
SOURCES = ("trace", "torch_logs.txt")


def explained(family_dir: str, source: str = "trace") -> list[Explanation]:
    """The explanations of every recompile of a fixture, frame by frame, with each frame's
    config (from the trace; none in a capture)."""
    model = load_source(str(RECOMPILES / family_dir / source))
    frames = []
    for comp in model.compiles:
        if comp.key.is_recompile and comp.frame is not None and comp.frame not in frames:
            frames.append(comp.frame)
    return [e for f in frames for e in explain_frame(f, compile_config(f.compiles[-1]))]


def only(family_dir: str, source: str = "trace") -> Explanation:
    out = explained(family_dir, source)
    assert len(out) == 1, [e.words for e in out]
    return out[0]


@pytest.mark.parametrize("source", SOURCES)
def test_size(source: str) -> None:
    """dynamic=False, sizes 4, 8, 16: each is a graph; the fix names the dimension."""
    out = explained("size", source)
    assert [e.family for e in out] == ["size", "size"]
    assert out[0].values == ["4", "8", "16"]
    assert out[1].words.startswith("`x` dimension 0 changed size: 8 → 16")
    assert "it changes on every call" in out[1].words
    assert "`torch._dynamo.mark_dynamic(x, 0)`" in out[1].fix
    if source == "trace":  # the config says dynamic=False; the capture does not
        assert out[1].fix.startswith(
            "automatic_dynamic_shapes is off (`torch.compile(dynamic=False)`"
        )


@pytest.mark.parametrize("source", SOURCES)
def test_stride(source: str) -> None:
    e = only("stride", source)
    assert e.family == "stride"
    assert e.values == ["6", "1"]
    assert "same sizes laid out differently in memory: stride at index 0: 6 → 1" in e.words
    assert "`x.contiguous()`" in e.fix


@pytest.mark.parametrize("source", SOURCES)
def test_layout(source: str) -> None:
    """channels_last after contiguous: a stride change that is another memory format (read
    from both compiles' guards); a sparse COO matrix after a dense one: its dispatch keys."""
    fmt, sparse = explained("layout", source)
    assert fmt.family == "layout"
    assert fmt.values == ["contiguous", "channels_last"]
    assert "`x` changed memory format: contiguous → channels_last" in fmt.words
    assert "memory_format=torch.channels_last" in fmt.fix
    assert sparse.family == "layout"
    assert sparse.values == ["strided", "sparse (COO)"]
    assert "`m` changed layout: strided → sparse (COO)" in sparse.words
    assert "torch.compile does not support sparse tensors" in sparse.fix


@pytest.mark.parametrize("source", SOURCES)
def test_dtype(source: str) -> None:
    out = explained("dtype", source)
    assert [e.family for e in out] == ["dtype", "dtype"]
    assert out[1].values == ["Float", "Double", "BFloat16"]
    assert out[1].words.startswith("`x` changed dtype: Double → BFloat16")
    assert "cast it to one dtype" in out[1].fix


@pytest.mark.parametrize("source", SOURCES)
def test_device(source: str) -> None:
    """cpu then meta (no GPU here): the dispatch keys name the devices."""
    e = only("device", source)
    assert e.family == "device"
    assert e.values == ["CPU", "Meta"]
    assert "`x` moved to another device: CPU → Meta" in e.words
    assert "one device" in e.fix


@pytest.mark.parametrize("source", SOURCES)
def test_requires_grad(source: str) -> None:
    e = only("requires_grad", source)
    assert e.family == "requires_grad"
    assert e.values == ["False", "True"]
    assert "`x` requires_grad changed: False → True" in e.words
    # each setting's graph is reused when calls go back to it: nothing to change (detaching
    # an input that needs its gradient would stop training)
    assert e.fix == ""


@pytest.mark.parametrize("source", SOURCES)
def test_dispatch_keys(source: str) -> None:
    """An inference tensor has no autograd key."""
    e = only("dispatch_keys", source)
    assert e.family == "dispatch_keys"
    assert "without AutogradCPU" in e.words
    assert "torch.inference_mode()" in e.words and "torch.inference_mode()" in e.fix


@pytest.mark.parametrize("source", SOURCES)
def test_int_value(source: str) -> None:
    out = explained("value_int", source)
    assert [e.family for e in out] == ["value"] * 3
    assert out[2].values == ["3", "4", "5", "6"]
    assert out[2].every_call
    assert out[2].words.startswith("`n` is a Python int baked into the graph as a constant: 5 → 6")
    assert "3, 4, 5, 6; it changes on every call" in out[2].words
    assert "guarded at script.py:7 in repeat" in out[2].words
    assert "pass it as a tensor" in out[2].fix


@pytest.mark.parametrize("source", SOURCES)
def test_float_learning_rate(source: str) -> None:
    """AdamW's python float lr, changed every step by a scheduler: the values in order, and
    the tensor lr of the PyTorch recipe."""
    out = explained("value_float", source)
    assert [e.family for e in out] == ["value"] * 3
    e = out[-1]
    assert e.values[0] == "0.01" and len(e.values) == 4 and e.every_call
    assert "the optimizer's learning rate `self.param_groups[0]['lr']`" in e.words
    assert "0.01, 0.009, 0.0081, 0.00729; it changes on every call" in e.words
    assert "`torch.optim.AdamW(params, lr=torch.tensor(0.01))`" in e.fix
    assert e.doc.endswith("compiling_optimizer_lr_scheduler.html")
    assert "specialize_float = True" not in e.fix


@pytest.mark.parametrize("source", SOURCES)
def test_bool_attribute(source: str) -> None:
    e = only("value_bool", source)
    assert e.family == "value"
    assert e.values == ["False", "True"]
    assert "`cfg.scale_output` is a Python bool baked into the graph" in e.words
    assert "False → True" in e.words
    assert "two at most" in e.words


@pytest.mark.parametrize("source", SOURCES)
def test_str_in_a_dict(source: str) -> None:
    e = only("value_str", source)
    assert e.family == "value"
    assert e.values == ["'relu'", "'tanh'"]
    assert "`opts['act']` is a Python str" in e.words and "'relu' → 'tanh'" in e.words
    assert "move the choice out" in e.fix


@pytest.mark.parametrize("source", SOURCES)
def test_none(source: str) -> None:
    e = only("value_none", source)
    assert e.family == "value"
    assert "`bias` was None when compiled and is not None in this call" in e.words
    assert e.fix.startswith("none needed")


def test_identity_names_the_old_and_new_function() -> None:
    """A mask function swapped (causal, window, causal, window): two graphs, each reused; the
    words name both functions and never claim a new object on each call."""
    e = only("identity")
    assert e.family == "identity"
    assert len(e.values) == 2
    assert "`mask_fn` is another function than the one compiled" in e.words
    assert "`causal` (script.py:7) → `window` (script.py:11)" in e.words
    assert "each distinct function gets its own graph (2 so far)" in e.words
    assert "every call" not in e.words
    assert e.fix.startswith("none needed")


def test_identity_from_the_capture() -> None:
    """The capture has no graphs: the function is named by its argument only."""
    e = only("identity", "torch_logs.txt")
    assert e.family == "identity"
    assert "`mask_fn` is another function than the one compiled: each distinct" in e.words


def test_int_made_dynamic_at_its_recompile() -> None:
    """The GPU run's `n` (automatic dynamic shapes on): one recompile, after which the new
    compile guards no value of `n` — it became a graph input; nothing to fix."""
    shared = unpack_shared()
    if shared is None:
        pytest.skip("../shared/traces.tar.xz is absent")
    model = load_source(str(shared / "h200-torch2.11" / "recompiles" / "trace"))
    e = next(e for e in explain(model.compiles) if e.compile.id_label == "0/1")
    assert e.family == "value"
    assert e.words.startswith("`n` was a Python int baked into the graph as 0")
    assert "Dynamo made it dynamic (a graph input)" in e.words
    assert e.fix.startswith("none needed")


def test_size_made_dynamic_at_its_recompile() -> None:
    """The CPU run's `x` 4 → 8 (automatic dynamic shapes): the new graph's guards hold the
    dimension dynamic (size=[None]), so nothing needs fixing."""
    shared = unpack_shared()
    if shared is None:
        pytest.skip("../shared/traces.tar.xz is absent")
    model = load_source(str(shared / "cpu-torch2.13" / "c_recompiles" / "trace"))
    e = next(e for e in explain(model.compiles) if e.compile.id_label == "0/2")
    assert (e.family, e.values) == ("size", ["4", "8"])
    assert e.fix.startswith("none needed: this recompile's graph has the dimension dynamic")


def test_identity_each_recompile_a_new_object() -> None:
    """`fn` another object at each of 3 recompiles (tlparse's corpus): said as such, with the
    advice for objects made per call; no limit was hit, so no "every call" claim."""
    shared = unpack_shared()
    if shared is None:
        pytest.skip("../shared/traces.tar.xz is absent")
    model = load_source(str(shared / "tlparse-corpus" / "collectives_parity"))
    frames = {c.frame for c in model.compiles if c.key.is_recompile and c.frame is not None}
    words = [e.words for f in frames for e in explain_frame(f)]
    assert words[-1] == (
        "`fn` was another object at each of the 3 recompiles (4 objects so far, each with its "
        "own graph)."
    ), words
    assert all("every call" not in w for w in words)


@pytest.mark.parametrize("source", SOURCES)
def test_type(source: str) -> None:
    e = only("type", source)
    assert e.family == "type"
    assert e.values == ["tuple", "list"]
    assert "`shape` changed type: tuple → list" in e.words
    assert "one type" in e.fix


@pytest.mark.parametrize("source", SOURCES)
def test_length(source: str) -> None:
    e = only("length", source)
    assert e.family == "length"
    assert e.values == ["2", "3"]
    assert "`xs` has another length: 2 → 3" in e.words
    assert "`torch.stack`" in e.fix


@pytest.mark.parametrize("source", SOURCES)
def test_keyword_arguments(source: str) -> None:
    """`shift=` passed too; **parts iterated with other keys (a, b; a, c; a, b, c): the keys
    by name, from both compiles' guards."""
    e, parts, more = explained("kwargs", source)
    assert (parts.family, more.family) == ("keys", "keys")
    assert parts.words.startswith(
        "`parts` holds other keys than when compiled: ['a', 'b'] → ['a', 'c'] (added 'c';"
        " without 'b')"
    )
    assert "['a', 'c'] → ['a', 'b', 'c'] (added 'b')" in more.words
    assert e.family == "keys"
    assert e.words.startswith("the call passed `shift` in `kwargs` (absent when compiled)")
    assert "?" not in e.words
    assert "same keyword arguments" in e.fix


@pytest.mark.parametrize("source", SOURCES)
def test_module_flag_to_the_recompile_limit(source: str) -> None:
    """Ten `Block`s compiled each on its own, `self.layer_idx` 0..9: the ninth hits the limit;
    a `Head` in train mode, then eval mode."""
    out = explained("module_flag", source)
    assert {e.family for e in out} == {"module_flag"}
    e, training = out[0], out[-1]
    assert e.values == [str(i) for i in range(8)]
    assert "`self.layer_idx` is a Python int attribute of" in e.words
    assert "that took 9 values (0, 1, 2, 3, 4, 5, …): 9 instances of" in e.words
    assert "each value takes a slot of recompile_limit (8)" in e.words
    assert "the limit was hit" in e.words
    assert "allow_unspec_int_on_nn_module = True" in e.fix
    assert "recompile_limit" in e.fix
    if source == "trace":  # the class is named by the guards on `self`
        assert "attribute of `Block`" in e.words
    # One `Head` switched from train() to eval(): two graphs, nothing to fix.
    assert training.words.startswith("`self.training` of")
    assert "changed (guarded at script.py:" in training.words
    assert "True → False; `model.train()` and `model.eval()` each get their own graph" in (
        training.words
    )
    assert training.fix == "none needed for two graphs."


@pytest.mark.parametrize("source", SOURCES)
def test_global_state(source: str) -> None:
    """grad mode, autocast, deterministic algorithms, default device, a TorchFunctionMode."""
    out = explained("global_state", source)
    assert [e.family for e in out] == ["global_state"] * 5
    words = [e.words for e in out]
    assert words[0] == "global state changed: grad mode (torch.no_grad() / torch.enable_grad())."
    assert "autocast (torch.autocast)" in words[1]
    assert "deterministic algorithms (torch.use_deterministic_algorithms)" in words[2]
    # set_default_device pushes a TorchFunctionMode: against the compile it is closest to (the
    # first; the newest differs in deterministic algorithms too, being undone) that is what
    # differs; then the mode itself
    assert "torch function mode stack changed" in words[3]
    assert "torch function mode stack changed" in words[4]
    assert all("one state" in e.fix for e in out)


@pytest.mark.parametrize("source", SOURCES)
def test_symbolic_shapes(source: str) -> None:
    """dynamic=True, sizes 2, 1, 8: `2 <= x.size()[0] <= 4` fails for 1, then size 1's own
    graph (0/1 specialization) fails for 8."""
    out = explained("symbolic", source)
    # size 8 is closest to the dynamic graph 0/0 (size 1 has a graph of its own), whose range
    # 2..4 it falls outside: the branch on the size is the cause, not 8 != 1
    assert [e.family for e in out] == ["symbolic_shape", "symbolic_shape"]
    assert "`x` dimension 0 is dynamic, but its graph holds only sizes 2..4" in out[0].words
    assert "mark_unbacked(x, 0)" in out[0].fix
    assert "`torch.cond`" in out[0].fix
    assert [e.failure.against for e in out if e.failure] == ["0/0", "0/0"]


@pytest.mark.parametrize(
    ("text", "family", "name"),
    [
        ("0/0: ___as_tensor(L['lr']).item() == 0.05", "value", "lr"),
        ("0/0: L['n'] == 3", "value", "n"),
        ("0/1: L['x'].flag == False", "value", "x.flag"),
        ("0/0: Ne(s0, 1)", "symbolic_shape", ""),
        ("0/0: L['x'].size()[0] <= 16", "symbolic_shape", "x"),
        ("0/0: ___check_global_state()", "global_state", ""),
        ("0/0: utils_device.CURRENT_DEVICE == None", "global_state", "default device"),
        ("0/0: list(L['kwargs'].keys()) == ['a', 'b']", "keys", "kwargs"),
        ("0/0: len(L['kwargs']) == 2", "keys", "kwargs"),
        ("0/0: ___dict_contains('mask', L['kwargs'])", "keys", "kwargs"),
        (
            "0/0: tensor 'x' Tensor device index mismatch. Expected device index to be 0, actual 1",
            "device",
            "x",
        ),
    ],
)
def test_other_torch_forms(text: str, family: str, name: str) -> None:
    """Forms older torch releases and other configs log."""
    f = parse_guard_failure(text)
    assert (f.family, f.input) == (family, name)


def test_a_hostile_guard_line_is_parsed_in_linear_time() -> None:
    """Long lines of identifiers (a forged trace): the forms that scan for a name backtracked
    quadratically (10 KB took 9 s); now each is cut and scanned once."""
    lines = [
        "a" * 100_000,
        ".size()[" + "a" * 100_000,
        "_dynamo_dynamic_indices " + "a." * 50_000,
        "a." * 50_000 + " == 3",
    ]
    start = time.perf_counter()
    families = [parse_guard_failure(f"0/0: {line}").family for line in lines * 5]
    assert time.perf_counter() - start < 2.0
    assert set(families) == {"other"}


def test_the_compile_detail_shows_family_words_and_fix() -> None:
    model = load_source(str(RECOMPILES / "value_float" / "trace"))
    comp = next(c for c in model.compiles if c.id_label == "2/3")
    text = render_text(compile_detail(comp, model))
    assert "family    value" in text
    assert "changed   the optimizer's learning rate" in text
    assert "fix       create the optimizer with a tensor learning rate" in text
    assert "fill_(new_lr)" in text
    assert "got ?" not in text


def test_guard_families_counts_each_recompile_once() -> None:
    """global_state: 5 recompiles list 14 failed guards (one per earlier compile)."""
    model = load_source(str(RECOMPILES / "global_state" / "trace"))
    assert sum(len(rc.reasons) for rc in model.recompiles) > 5
    assert summary_json(model)["guard_families"] == {"global_state": 5}


def test_run_diff_counts_recompiles_not_guard_lines() -> None:
    """The run diff's recompile reasons add up to the recompiles, not to the guard lines."""
    a = load_source(str(RECOMPILES / "size" / "trace"))
    b = load_source(str(RECOMPILES / "module_flag" / "trace"))
    diff = run_diff(a, b)
    assert sum(c.b for c in diff.recompile_reasons) == len(b.recompiles) == 9
    assert sum(c.a for c in diff.recompile_reasons) == len(a.recompiles) == 2
    assert any(c.what == "module_flag: `self.layer_idx` value" for c in diff.recompile_reasons)


# ---------------------------------------------------------------------- the walk


def _sources(root: Path) -> list[Path]:
    """Every trace directory and TORCH_LOGS capture under `root`."""
    out: list[Path] = []
    for p in sorted(root.rglob("*")):
        if (
            p.is_dir()
            and any(q.name.endswith(".log") for q in p.iterdir() if q.is_file())
            or p.is_file()
            and p.suffix in (".txt", ".log")
            and p.parent.name != "trace"
        ):
            out.append(p)
    return out


def _other(models: list[tuple[Path, Model]]) -> list[str]:
    """The inputs with a recompile of family "other"; on the way, every recompile is
    explained in words (explaining none raises)."""
    for path, model in models:
        for e in explain(model.compiles):
            assert e.words and (e.failure is None or e.family != "other" or e.fix == ""), path
    return [
        f"{path}: {json.dumps(summary_json(model)['guard_families'])}"
        for path, model in models
        if "other" in guard_families(model.compiles)
    ]


def test_no_recompile_of_the_repo_fixtures_is_other(fixture_runs: Path) -> None:
    paths = _sources(FIXTURES) + _sources(fixture_runs) + _sources(SAMPLES)
    models = [(p, load_source(str(p))) for p in paths]
    assert sum(len(m.recompiles) for _p, m in models) > 60
    assert _other(models) == []


def test_no_recompile_of_the_shared_traces_is_other() -> None:
    shared = unpack_shared()
    if shared is None:
        pytest.skip("../shared/traces.tar.xz is absent")
    models = [(p, load_source(str(p))) for p in _sources(shared)]
    assert sum(len(m.recompiles) for _p, m in models) > 40
    assert _other(models) == []


def test_families_are_documented() -> None:
    assert all(FAMILIES.values()) and "other" in FAMILIES


def test_a_module_attribute_becomes_a_tensor_only_when_a_float() -> None:
    """A module attribute's fix offers `torch.tensor(...)` for a float only: a value of a type
    tcview cannot name (a tuple, an enum member) cannot be one."""
    from dataclasses import replace

    from tcview.analysis.guard_words import _module_words

    model = load_source(str(RECOMPILES / "module_flag" / "trace"))
    frame = next(c.frame for c in model.compiles if c.key.is_recompile and c.frame is not None)
    e = explain_frame(frame, compile_config(frame.compiles[-1]))[0]
    assert e.failure is not None
    fixes = {}
    for kind, literal in (("float", "0.5"), ("value", "(2, 1)")):
        e.failure = replace(e.failure, expected=literal)
        fixes[kind] = _module_words(e, frame, CompileConfig(), "a value", kind, "", "changed")[1]
    assert "torch.tensor(...)" in fixes["float"]
    assert "torch.tensor" not in fixes["value"] and "recompile_limit" in fixes["value"]
