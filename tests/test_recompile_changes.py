"""A recompile's cause from what differed: every compile's guards compared, the closest
earlier compile, every change old → new in Dynamo's names made the user's."""

from __future__ import annotations

from pathlib import Path

import pytest
from corpus import CORPUS, run_dir

from tcview.analysis.changes import Aspect, Change, covers, diff, parse_facts, show, user_name
from tcview.analysis.recompile_causes import recompile_cause
from tcview.analysis.recompiles import guard_families
from tcview.analysis.rules import BEGIN, END, kinds_table, with_table
from tcview.ingest.source import load_source
from tcview.model.objects import Model

GUARDS = """
TREE_GUARD_MANAGER:
+- RootGuardManager
| +- GLOBAL_STATE: ___check_global_state() against {"autocast_state":{"cached_enabled":true,"dtype":[15],"enabled":[false]},"grad_mode":true}
| +- DEFAULT_DEVICE: utils_device.CURRENT_DEVICE == None                           # _dynamo/output_graph.py:1122 in init_ambient_guards
| +- GuardManager: source=L['x'], accessed_by=FrameLocalsGuardAccessor(key='x', framelocals_idx=0), type=<class 'torch.Tensor'>, tag_safe=(False, False)
| | +- TENSOR_MATCH: check_tensor(L['x'], Tensor, DispatchKeySet(CUDA, BackendSelect, ADInplaceOrView, AutogradCUDA), torch.bfloat16, device=0, requires_grad=True, size=[8, None], stride=[None, 1])  # y = x * n  # t.py:5 in f
| +- GuardManager: source=L['flag'], accessed_by=FrameLocalsGuardAccessor(key='flag', framelocals_idx=1), type=<class 'bool'>, tag_safe=(False, False)
| | +- TRUE_MATCH: L['flag'] == True                                             # if flag:  # t.py:6 in f
| | +- TYPE_MATCH: ___check_type_id(L['n'], 140170280402144), type=<class 'int'>  # y = x * n  # t.py:5 in f (HINT: type int)
| | +- LENGTH_CHECK: len(L['items']) == 2                                          # for t in items:  # t.py:10 in f
| | | +- EQUALS_MATCH: list(dict.keys(L['parts']))[1] == 'b'   # for v in parts.values():  # t.py:17 in total
| | | +- EQUALS_MATCH: list(dict.keys(L['parts']))[0] == 'a'   # for v in parts.values():  # t.py:17 in total
| | | +- EQUALS_MATCH: L['self']._modules['drop'].training == False   # x  # t.py:3 in forward
"""


def test_the_facts_of_a_compiles_guards() -> None:
    facts = parse_facts(GUARDS)
    assert facts[("L['x']", Aspect.DTYPE)] == "bfloat16"
    assert facts[("L['x']", Aspect.DEVICE)] == "cuda:0"
    assert facts[("L['x']", Aspect.REQUIRES_GRAD)] == "True"
    assert facts[("L['x']", Aspect.SIZE)] == "[8, None]"
    assert facts[("L['flag']", Aspect.VALUE)] == "True"
    assert facts[("L['n']", Aspect.VALUE)] == "dynamic"  # typed, never compared: a graph input
    assert facts[("L['items']", Aspect.LENGTH)] == "2"
    assert facts[("L['parts']", Aspect.KEYS)] == "['a', 'b']"  # in order, whatever the lines'
    assert facts[("global state.grad_mode", Aspect.GLOBAL)] == "true"
    assert facts[("global state.autocast_state", Aspect.GLOBAL)] == "off"
    assert facts[("utils_device.CURRENT_DEVICE", Aspect.VALUE)] == "None"


def test_derived_differences_are_left_out_and_alike_ones_folded() -> None:
    old = {
        ("L['items']", Aspect.LENGTH): "1",
        ("L['items'][0]", Aspect.VALUE): "1.0",
        ("L['x']", Aspect.SIZE): "[4, 8]",
        ("L['x']", Aspect.STRIDE): "[8, 1]",
        ("L['self']._modules['a']._parameters['weight']", Aspect.DTYPE): "float32",
        ("L['self']._modules['a']._parameters['bias']", Aspect.DTYPE): "float32",
        ("L['self'].training", Aspect.VALUE): "True",
        ("L['self']._modules['drop'].training", Aspect.VALUE): "True",
    }
    new = {
        ("L['items']", Aspect.LENGTH): "2",
        ("L['items'][0]", Aspect.VALUE): "3.0",  # an item of a list of another length
        ("L['x']", Aspect.SIZE): "[4, 16]",
        ("L['x']", Aspect.STRIDE): "[16, 1]",  # follows the size
        ("L['self']._modules['a']._parameters['weight']", Aspect.DTYPE): "bfloat16",
        ("L['self']._modules['a']._parameters['bias']", Aspect.DTYPE): "bfloat16",
        ("L['self'].training", Aspect.VALUE): "False",
        ("L['self']._modules['drop'].training", Aspect.VALUE): "False",
    }
    changes = diff(old, new)
    # the function's own arguments first, then what hangs off them
    assert [(user_name(c.source), c.aspect, c.old, c.new, c.count) for c in changes] == [
        ("x", Aspect.SIZE, "[4, 8]", "[4, 16]", 1),
        ("items", Aspect.LENGTH, "1", "2", 1),
        ("self.parameters (2)", Aspect.DTYPE, "float32", "bfloat16", 1),
        ("self.training", Aspect.VALUE, "True", "False", 2),  # and its submodule's
    ]


def test_names_and_values_in_the_users_words() -> None:
    assert user_name("L['self']._modules['layers']._modules['3'].scale") == "self.layers.3.scale"
    assert user_name("G['hyper']['lr']") == "hyper['lr']"
    assert user_name("L['___stack0'][0]") == "a value carried across the graph break"
    assert show("0.009000000000000001") == "0.009"
    assert show("[8, None]") == "[8, dynamic]"
    assert covers("[8, None]", "[8, 3]") and not covers("[8, 2]", "[8, 3]")
    assert (
        Change("L['x']", Aspect.DTYPE, "float32", "float64").text() == "x dtype float32 → float64"
    )


@pytest.fixture(scope="module")
def back_and_forth() -> Model:
    return load_source(str(run_dir(CORPUS / "rc_back_forth")), cache=False)


def test_calls_that_go_back_are_named_by_what_changed_not_by_what_was_undone(
    back_and_forth: Model,
) -> None:
    """Base call, one change, base call, the next change…: torch logs each recompile's
    failure against the newest compile first, which is the previous change being undone."""
    steps = []
    for comp in back_and_forth.compiles:
        if comp.key.is_recompile:
            cause = recompile_cause(comp)
            assert cause.guarded and cause.closest is not None
            steps.append([(user_name(c.source), c.old, c.new) for c in cause.changes])
    assert steps == [
        [("flag", "True", "False")],
        [("x", "float32", "float64")],
        [("n", "2", "3 (dynamic from now on)")],
        [("mode", "'a'", "'b'")],
        [("items", "3", "2")],
        [("scale", "1.0", "0.5 (dynamic from now on)")],
        [("x", "False", "True")],
    ]
    # each recompile counted once, under its true cause
    assert guard_families(back_and_forth.compiles) == {
        "dtype": 1,
        "requires_grad": 1,
        "value": 4,
        "length": 1,
    }


def test_the_call_that_hit_the_limit_is_named_from_the_failures_logged() -> None:
    """That call has no guards of its own: a failure on a value every compile holds alike
    (the list's length) is what it changed for sure."""
    model = load_source(str(run_dir(CORPUS / "rc_eight_reasons")), cache=False)
    limit = next(c for c in model.compiles if any(f.is_recompile_limit for f in c.failures))
    cause = recompile_cause(limit)
    assert not cause.guarded and cause.closest is not None and cause.closest.id_label == "0/7"
    assert [(user_name(c.source), c.aspect, c.old) for c in cause.changes] == [
        ("chunks", Aspect.LENGTH, "2")
    ]


def test_the_reference_kinds_are_the_registrys() -> None:
    """docs/reference/findings.md's table is the registry's (`python -m tcview.analysis.rules
    docs/reference/findings.md` remakes it)."""
    from conftest import REPO

    page = (REPO / "docs" / "reference" / "findings.md").read_text()
    assert with_table(page) == page
    block = page.split(BEGIN, 1)[1].split(END, 1)[0]
    assert block.strip().split("\n") == kinds_table()


def test_a_trace_cut_mid_record_says_so_first_and_where_it_ends(tmp_path: Path) -> None:
    from conftest import SAMPLES

    from tcview.analysis.findings import findings

    src = next((SAMPLES / "cpu_breaks_recompiles" / "trace").iterdir())
    data = src.read_bytes()
    (tmp_path / src.name).write_bytes(data[: len(data) // 2])
    found = findings(load_source(str(tmp_path), cache=False))
    kinds = [f.kind.value for f in found]
    assert "trace_cut" in kinds and "died_in_compile" not in kinds  # the cut may be why
    cut = found[kinds.index("trace_cut")]
    assert cut.evidence["inside_compile"] == ["0/1 (`scale_shift`)"]
    whole = findings(load_source(str(src.parent), cache=False))
    assert {"trace_cut", "died_in_compile"}.isdisjoint(f.kind.value for f in whole)


def test_a_librarys_function_that_recompiled_says_whose_it_is() -> None:
    """Regional compilation of transformers' decoder layers: the frame is the library's."""
    from tcview.analysis.findings import findings

    model = load_source(str(run_dir(CORPUS / "gpu_hf_regional")), cache=False)
    (found,) = [f for f in findings(model) if f.kind.value.startswith("recompile")]
    assert found.title.startswith("`forward` (in transformers) recompiled 3 times")
    assert found.where is not None and found.where["file"].endswith("script.py")


def test_what_a_library_does_to_itself_gets_no_advice_for_the_users_code() -> None:
    """transformers' static cache and its generate() calls: CUDA graphs skipped for its own
    CPU tensor and mutated cache, its wrapper recompiled on its own keyword arguments."""
    from tcview.analysis.findings import findings

    model = load_source(str(run_dir(CORPUS / "gpu_hf_static_generate_nopart")), cache=False)
    found = findings(model)
    assert {f.kind.value for f in found} >= {"cudagraphs", "recompile_storm"}
    for f in found:
        if f.kind.value in ("cudagraphs", "recompile_storm"):
            assert f.fix == "", (f.title, f.fix)
            assert "transformers' code" in f.detail or "transformers'," in f.detail
