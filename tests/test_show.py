"""Forward/backward labels, kernels told apart (what they fuse, how
they launch, identical sources collapsed), why a frame recompiled in words (guard failures,
config, symbolic shapes, metrics), and `tcview show` printing what the detail pane shows.

On real traces: the repo's fixture runs (recompile_dim, recompile_limit: CPU, torch 2.13) and
../shared (skipped when absent)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from conftest import REPO, TCVIEW_CLI, find_as, unpack_shared
from ui_helpers import pane, ready, settle, sync, viewer_shown
from waits import until

from tcview.analysis.guard_failures import CHANGES, GuardFamily, parse_guard_failure
from tcview.analysis.kernels import OUTPUT_CODES, fuses, group_kernels, launch_info
from tcview.analysis.recompiles import diagnose
from tcview.ingest.source import load_source
from tcview.model.objects import Compile, Frame, Kernel, Model
from tcview.report.detail import (
    Detail,
    compile_detail,
    frame_detail,
    kernel_detail,
    record_name,
    render_text,
)
from tcview.report.show import ShowError, find, show_detail

SHARED = unpack_shared()
BAR_CELLS = " █▏▎▍▌▋▊▉"
AOT_ID = re.compile(r"^\t# AOT ID: \['\d+_(forward|backward|inference)'\]$")
TOPO = re.compile(r"# Topologically Sorted Source Nodes: \[(.*?)\], Original ATen: \[(.*?)\]")


def shared(*parts: str) -> Path:
    if SHARED is None:
        pytest.skip("../shared/traces.tar.xz is absent")
    return SHARED.joinpath(*parts)


def show(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TCVIEW_CLI, "show", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
    )


def compile_of(model: Model, label: str) -> Compile:
    return next(c for c in model.compiles if c.id_label == label)


def frame_of(model: Model, label: str) -> Frame:
    return next(fr for f in model.files for fr in f.frames.values() if fr.id_label == label)


def rows(detail: Detail) -> dict[str, list[str]]:
    """heading -> the plain rows under it ("" for the head)."""
    out: dict[str, list[str]] = {}
    for section in detail.sections:
        out.setdefault(section.heading, []).extend(f"{r.label} {r.value}" for r in section.rows)
    return out


@pytest.fixture(scope="module")
def dim(fixture_runs: Path) -> Path:
    return fixture_runs / "recompile_dim"


@pytest.fixture(scope="module")
def dim_model(dim: Path) -> Model:
    return load_source(str(dim))


@pytest.fixture(scope="module")
def limit(fixture_runs: Path) -> Path:
    return fixture_runs / "recompile_limit"


# ---------------------------------------------------------------------- 4. fwd / bwd


def aot_roles(path: Path) -> list[str]:
    """The role each output code's first payload line names, read from the file directly."""
    lines = path.read_text(errors="replace").split("\n")
    return [
        m.group(1) if (m := AOT_ID.match(lines[i + 1])) else "?"
        for i, line in enumerate(lines[:-1])
        if '{"inductor_output_code"' in line[:300]
    ]


@pytest.mark.parametrize(
    "run",
    [
        "cpu-torch2.13/e_training",
        "cpu-torch2.13/k_compiled_autograd",
        "cpu-torch2.13/i_ranks_gloo",
        "h200-torch2.11/gpt_train",
        "h200-torch2.11/compiled_autograd",
        "h200-torch2.11/breaks",
    ],
)
def test_output_code_roles_are_the_aot_graphs_they_came_from(run: str) -> None:
    """Each output code is labelled forward, backward or inference, as its first line says;
    its post-grad graph takes the same label, and the AOT graphs are labelled by kind."""
    trace = shared(*run.split("/"), "trace")
    model = load_source(str(trace))
    want = [r for f in sorted(trace.glob("*.log")) for r in aot_roles(f)]
    got = [r.role for f in model.files for r in f.records if r.kind == "inductor_output_code"]
    assert got == want and "?" not in want
    for comp in model.compiles:
        outputs = comp.output_codes
        posts = [r for r in comp.records if r.label == "inductor_post_grad_graph"]
        assert [comp.graph_role(r) for r in posts] == [r.role for r in outputs][: len(posts)]
        for rec in comp.records:
            if rec.kind.startswith("aot_") and rec.kind != "aot_joint_graph":
                assert rec.role == rec.kind.split("_")[1]
            if rec in outputs:
                assert record_name(rec) == f"output code ({rec.role})"


def test_training_compile_has_a_forward_and_a_backward() -> None:
    """e_training compiles 0/0 for training (the backward compiled lazily, after the forward's
    metrics) and 3/0 for inference; the TORCH_LOGS capture of the run says the same."""
    run = shared("cpu-torch2.13", "e_training")
    for source in (run / "trace", run / "torch_logs.txt"):
        model = load_source(str(source))
        roles = {c.id_label: [r.role for r in c.output_codes if r.role] for c in model.compiles}
        assert roles["0/0"] == ["forward", "backward"]
        assert roles["3/0"] == ["inference"]
        kernels = {k.name: k.role for k in model.kernels}
        assert set(kernels.values()) == {"forward", "backward", "inference"}


def test_roles_without_aot_id_lines_come_from_record_order(tmp_path: Path) -> None:
    """Output code of torch before 2.4 does not name its AOT graph: the role comes from the
    compile's AOT graphs and whether its compilation_metrics came first."""
    src = next(shared("cpu-torch2.13", "e_training", "trace").glob("*.log"))
    text = "\n".join(ln for ln in src.read_text().split("\n") if not AOT_ID.match(ln))
    (tmp_path / src.name).write_text(text)
    model = load_source(str(tmp_path))
    roles = {c.id_label: [r.role for r in c.output_codes] for c in model.compiles}
    assert roles["0/0"] == ["forward", "backward"] and roles["3/0"] == ["inference"]


@pytest.mark.app
@sync
async def test_tree_labels_output_code_with_its_role() -> None:
    from tcview.ui.app import TcviewApp
    from tcview.ui.options import OpenOptions
    from tcview.ui.tree import TraceTree

    app = TcviewApp(OpenOptions(str(shared("h200-torch2.11", "gpt_train", "trace")), goto="0/0"))
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        tree = app.query_one(TraceTree)
        node = tree.cursor_node
        assert node is not None and node.data is not None and node.data.kind == "compile"
        tree.ensure_loaded(node)
        labels = [str(c.label) for c in node.children]
        assert any(lb.startswith("output code (forward)  ") for lb in labels)
        assert any(lb.startswith("output code (backward)  ") for lb in labels)
        assert "Inductor post-grad graph (backward)" in labels
        assert "AOT backward graph" in labels


# ---------------------------------------------------------------------- 4. kernels


def test_kernel_source_starts_with_its_header_and_says_what_it_fuses() -> None:
    """A Triton kernel's source includes the comment above its definition; the detail lists
    the ATen ops and source nodes of its `# Topologically Sorted Source Nodes` line."""
    model = load_source(str(shared("h200-torch2.11", "gpt_train", "trace")))
    checked = 0
    for kernel in model.kernels:
        code = OUTPUT_CODES.get(kernel.output)
        span = code.span_of(kernel)
        assert span is not None
        source = code.lines[span.first : span.end + 1]
        assert source[0].startswith("# kernel path: ")
        header = next(m for ln in source if (m := TOPO.search(ln)))
        found = fuses(code, span)
        assert found.source_nodes == [s.strip() for s in header.group(1).split(",")]
        assert found.aten_ops == [s.strip() for s in header.group(2).split(",")]
        checked += 1
    assert checked == len(model.kernels) == 54


# tlparse 0.4.3 -i on the corpus's JIT provenance logs: kernel -> (post-grad nodes, pre-grad nodes)
TLPARSE_PROVENANCE = [
    (
        "inductor_provenance_jit_debug_handle_log.txt",
        "triton_poi_fused_addmm_gelu_2",
        ["mul_3", "mul_1", "add_tensor", "add", "erf", "mul_2"],
        ["z", "y"],
    ),
    (
        "inductor_provenance_jit_debug_handle_log.txt",
        "triton_poi_fused_addmm_relu_sigmoid_threshold_backward_0",
        ["sigmoid", "relu", "add_tensor_1", "le"],
        ["x_2", "x_1", "x"],
    ),
    ("inductor_provenance_jit_debug_handle_log.txt", "triton_poi_fused_mul_1", ["mul"], ["d"]),
    (
        "inductor_provenance_jit_log.txt",
        "cpp_fused_gelu_1",
        ["mul_3", "mul_1", "add", "erf", "mul_2"],
        ["z"],
    ),
    (
        "inductor_provenance_jit_log.txt",
        "cpp_fused_mul_relu_sigmoid_0",
        ["sigmoid", "relu", "mul"],
        ["x_2", "x_1", "d"],
    ),
]


@pytest.mark.parametrize(("log", "name", "post", "pre"), TLPARSE_PROVENANCE)
def test_fused_nodes_agree_with_tlparse_provenance(
    log: str, name: str, post: list[str], pre: list[str]
) -> None:
    """The nodes a kernel fuses, as tlparse -i maps them (from the provenance artifacts): the
    kernel's detail shows the artifact's (`provenance`), and where the output code has a
    comment, what it says agrees (post-grad nodes: its graph fragment); C++ kernels have none,
    and no "fuses" section then."""
    model = load_source(str(shared("tlparse-corpus", log)))
    kernel = next(k for k in model.kernels if k.name == name)
    detail = rows(kernel_detail(kernel, model))
    mapped = {k.split(" (")[0]: v for k, v in detail.items()}
    assert set(mapped["post-grad nodes"][0].strip().split(", ")) == set(post)
    assert set(mapped["pre-grad nodes"][0].strip().split(", ")) == set(pre)
    if name.startswith("cpp_"):  # no comment: the mapping alone says what it fuses
        assert "fuses" not in detail
        return
    got = {r.split(" ", 1)[0]: r.split(" ", 1)[1] for r in detail["fuses"]}
    assert set(got["post-grad"].split(", ")) == set(post)
    assert set(got["nodes"].split(", ")) == set(pre)


def test_launch_metadata_of_triton_kernels() -> None:
    """Numels from the kernel body and its launch, the grid, and the autotuned warps and
    stages from the trace's triton_kernel_info (templates: from their decorator)."""
    model = load_source(str(shared("h200-torch2.11", "gpt_train", "trace")))
    kernel = next(
        k
        for k in model.kernels
        if k.name
        == "triton_per_fused_add_addmm_native_layer_norm_native_layer_norm_backward_view_3"
    )
    launch = rows(kernel_detail(kernel, model))["launch"]
    for row in (
        "heuristic persistent_reduction",
        "xnumel 1024",
        "r0_numel 256",
        "grid (256, 1, 1)  Grid1D",
        "num_warps 1",
        "num_stages 1",
        "blocks XBLOCK=4",
        "autotune only 1 config",
    ):
        assert row in launch, (row, launch)
    # Dynamic shapes: the launch passes a variable that call() computed from a symbol.
    dynamic = next(
        k
        for k in model.kernels
        if k.name == "triton_per_fused_embedding_dense_backward_nll_loss_forward_sum_view_16"
    )
    assert "xnumel 256*s75" in rows(kernel_detail(dynamic, model))["launch"]
    user = load_source(str(shared("h200-torch2.11", "triton_user", "trace")))
    by_name = {k.name: k for k in user.kernels}
    code = OUTPUT_CODES.get(by_name["add_kernel_0"].output)
    span = code.span_of(by_name["add_kernel_0"])
    assert span is not None
    user_launch = launch_info(code, span, None)
    assert (
        user_launch.get("grid") == "(4, 1, 1)" and user_launch.get("heuristic") == "user_autotune"
    )
    template = rows(kernel_detail(by_name["triton_tem_fused_addmm_t_0"], user))["launch"]
    assert "num_warps 4" in template and "num_stages 5" in template
    assert "grid (128, 1, 1)" in template
    # Older torch (the tlparse corpus) passes the grid to run() as a keyword.
    old = load_source(str(shared("tlparse-corpus", "simple.log")))
    launches = [rows(kernel_detail(k, old))["launch"] for k in old.kernels]
    assert "grid grid(16384, 320)" in launches[1] and "ynumel 16384" in launches[1]


def test_cpp_kernel_says_what_it_has(dim_model: Model) -> None:
    kernel = dim_model.kernels[0]
    detail = rows(kernel_detail(kernel, dim_model))
    assert "argument types const int64_t*, float*" in detail["launch"]
    assert any(r.startswith("runs on CPU") for r in detail["launch"])
    assert detail["fuses"] == [" the output code does not say (no source-node comment)"]


def test_identical_kernels_across_recompiles_are_one_group(dim_model: Model) -> None:
    """`scale` compiled 6 times with the same kernel source: one group of 6; the 14 compiles of
    `step` differ in their sizes: 14 groups of 1."""
    from tcview.analysis.kernels import needs_digests, source_digests

    for batch in needs_digests(dim_model.kernels):
        source_digests(batch)
    groups = group_kernels(dim_model.kernels)
    assert len(dim_model.kernels) == 20 and len(groups) == 15
    big = [g for g in groups if g.count > 1]
    assert [(g.name, g.count) for g in big] == [("cpp_fused_add_mul_tanh_0", 6)]
    assert big[0].compile_ids == ["1/0", "1/1", "1/2", "1/3", "1/4", "1/5"]
    assert big[0].roles == ["inference"]
    detail = rows(kernel_detail(big[0].first, dim_model))[""]
    assert "same in 6 compiles: 1/0, 1/1, 1/2, 1/3, 1/4, 1/5" in [
        r.replace(" (inference)", "") for r in detail
    ]


@pytest.mark.app
@sync
async def test_kernels_view_collapses_identical_sources(dim: Path) -> None:
    from textual.widgets import DataTable

    from tcview.ui.app import TcviewApp
    from tcview.ui.reader import Reader
    from tcview.ui.views import KernelsView

    app = TcviewApp(str(dim))
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(app, pilot)
        await pilot.press("K")
        await settle(app, pilot)
        view = pane(app)
        assert isinstance(view, KernelsView)
        assert len(view.objects) == 15 and sum(g.count for g in view.objects) == 20
        table = view.query_one("#view-table", DataTable)
        cells = [[c.plain for c in table.get_row_at(i)] for i in range(table.row_count)]
        tanh = next(c for c in cells if c[0] == "cpp_fused_add_mul_tanh_0")
        assert tanh[1:] == ["cpp", "×6 1/0, 1/1, 1/2 … +3", "inference"]
        assert "20 kernels (15 distinct sources)" in str(view.query_one("#view-head").render())
        await pilot.press(*"tanh")
        await settle(app, pilot)
        assert [g.name for g in view.objects] == ["cpp_fused_add_mul_tanh_0"]
        doc = view.query_one(Reader).viewer.doc
        shown = [doc.plain(i) for i in range(doc.count)]
        assert any(ln.startswith("same in   6 compiles: 1/0 (inference)") for ln in shown)


@pytest.mark.app
@sync
async def test_kernels_view_shows_fwd_and_bwd() -> None:
    from tcview.ui.app import TcviewApp
    from tcview.ui.views import KernelsView

    app = TcviewApp(str(shared("h200-torch2.11", "gpt_train", "trace")))
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(app, pilot)
        await pilot.press("K")
        await settle(app, pilot)
        view = pane(app)
        assert isinstance(view, KernelsView)
        graphs = {g.name: g.roles for g in view.objects}
        assert {tuple(r) for r in graphs.values()} == {("forward",), ("backward",)}
        await pilot.press(*"bwd")
        await settle(app, pilot)
        assert view.objects and all(g.roles == ["backward"] for g in view.objects)


# ---------------------------------------------------------------------- 5. why it recompiled


def all_guard_failures() -> list[str]:
    out: list[str] = []
    if SHARED is None:
        return out
    for group in ("h200-torch2.11", "cpu-torch2.13"):
        for run in sorted((SHARED / group).iterdir()):
            trace = run / "trace"
            if trace.is_dir():
                model = load_source(str(trace))
                out += [r for rc in model.recompiles for r in rc.reasons]
    return out


def test_every_guard_failure_of_the_shared_traces_is_understood() -> None:
    """Every guard failure logged in the shared traces parses into (input, what changed)."""
    reasons = all_guard_failures()
    if not reasons:
        pytest.skip("../shared/traces.tar.xz is absent")
    parsed = [parse_guard_failure(r) for r in reasons]
    assert all(p.change in CHANGES and p.change is not GuardFamily.OTHER for p in parsed), [
        p.text for p in parsed if p.change is GuardFamily.OTHER
    ]
    changes = {p.change for p in parsed}
    assert {
        GuardFamily.SIZE,
        GuardFamily.DTYPE,
        GuardFamily.VALUE,
        GuardFamily.GLOBAL_STATE,
    } <= changes
    assert all(p.input for p in parsed)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("0/0: tensor 'x' size mismatch at index 0. expected 8, actual 16", ("x", "size", 0)),
        (
            "0/3: tensor 'kwargs['input_ids']' size mismatch at index 1. expected 8, actual 9",
            ("kwargs['input_ids']", "size", 1),
        ),
        ("0/0: L['x'].size()[1] == 64", ("x", "size", 1)),
        ("0/0: L['x'].stride()[0] == 1", ("x", "stride", 0)),
        ("0/0: tensor 'x' stride mismatch at index 0. expected 1, actual 8", ("x", "stride", 0)),
        ("0/0: tensor 'x' dtype mismatch. expected Float, actual Half", ("x", "dtype", None)),
        (
            "0/0: tensor 'x' requires_grad mismatch. expected requires_grad=1",
            ("x", "requires_grad", None),
        ),
        ("0/0: ___check_type_id(L['x'], 9412345)", ("x", "type", None)),
        ("0/0: ___check_obj_id(L['fn'], 1234)", ("fn", "identity", None)),
        ("0/0: L['n'] == 3", ("n", "value", None)),
        ("1/0: k == 2                   # return x * k + 1  # s.py:10 in f", ("k", "value", None)),
        ("0/0: GLOBAL_STATE changed: grad_mode ", ("grad_mode", "global_state", None)),
        ("0/0: len(L['xs']) == 3", ("xs", "length", None)),
    ],
)
def test_guard_failure_forms(text: str, want: tuple[str, str, int | None]) -> None:
    failure = parse_guard_failure(text)
    assert (failure.input, failure.change, failure.index) == want


def test_diagnosis_names_the_input_and_dimension(dim_model: Model) -> None:
    """13 recompiles of `step`, all on kwargs['input_ids'] size at index 1, limit 64 not hit,
    automatic dynamic shapes off: the fix is named."""
    detail = frame_detail(frame_of(dim_model, "0"))
    text = render_text(detail)
    assert (
        "  • 13 recompiles, all on `kwargs['input_ids']` size at index 1 (new values 9, 10, 11,"
        " 12, 13, 14, …); limit 64 not hit." in text.split("\n")
    )
    assert (
        "automatic_dynamic_shapes is off (or `dynamic=False`): `dynamic=True` or"
        " `torch._dynamo.mark_dynamic(kwargs['input_ids'], 1)` would avoid them." in text
    )
    scale = render_text(frame_detail(frame_of(dim_model, "1")))
    assert "5 recompiles, all on `layer` value (it was 0, 1, 2, 3, 4); limit 64 not hit." in scale


def test_diagnosis_says_first_that_the_limit_was_hit(limit: Path) -> None:
    model = load_source(str(limit))
    frame = frame_of(model, "0")
    sentences = diagnose(frame, None).sentences
    assert sentences[0].startswith("The recompile limit was hit")
    text = render_text(frame_detail(frame)).split("\n")
    first = next(i for i, ln in enumerate(text) if ln.startswith("  • "))
    assert text[first] == (
        "  • The recompile limit was hit (recompile_limit = 4) at 0/4: Dynamo stopped compiling"
        " `score` and runs it eagerly from then on."
    )
    assert (
        text[first + 1] == "  • 4 recompiles, all on `x` size at index 0 (new values 3, 4, 5, 6)."
    )


def test_diagnosis_from_the_torch_logs_capture(dim: Path) -> None:
    """The capture has the guard failures but not the config: the same input and dimension,
    without the limit."""
    model = load_source(str(dim / "torch_logs.txt"))
    text = render_text(frame_detail(frame_of(model, "0")))
    assert "13 recompiles, all on `kwargs['input_ids']` size at index 1" in text
    assert "`torch._dynamo.mark_dynamic(kwargs['input_ids'], 1)` would avoid them" in text


def test_config_that_matters_comes_first(dim_model: Model) -> None:
    config = rows(compile_detail(compile_of(dim_model, "0/3"), dim_model))["config"]
    assert config[:5] == [
        "recompile_limit 64",
        "accumulated_recompile_limit 256",
        "automatic_dynamic_shapes false",
        "assume_static_by_default true",
        "specialize_int false",
    ]
    assert "inductor.max_autotune false" in config


def test_mark_dynamic_is_in_the_config() -> None:
    model = load_source(str(shared("cpu-torch2.13", "d_dynamic", "trace")))
    marked = [
        c.id_label
        for c in model.compiles
        if "mark_dynamic x dims {0}" in rows(compile_detail(c, model)).get("config", [])
    ]
    assert len(marked) == 1
    frame = compile_of(model, marked[0]).frame
    assert frame is not None and frame.co_name == "m"


def test_symbolic_shapes_are_read_when_shown() -> None:
    """gpt_train's 0/1 (automatic dynamic after 0/0): its create_symbol and guard_added_fast
    records in a table, their values read from disk (the index keeps none)."""
    model = load_source(str(shared("h200-torch2.11", "gpt_train", "trace")))
    comp = compile_of(model, "0/1")
    fast = [r for r in comp.records if r.kind == "guard_added_fast"]
    assert fast and all(r.meta is None for r in fast)
    detail = compile_detail(comp, model)
    section = next(s for s in detail.sections if s.heading.startswith("symbolic shapes"))
    shown = [r for r in section.rows if r.label == "guard_added_fast"]
    assert len(shown) == len(fast)
    assert all(r.value and r.value != "None" for r in shown)
    symbols = [r.value for r in section.rows if r.label == "create_symbol"]
    assert symbols and all(" from L[" in v for v in symbols)
    trace = next(shared("h200-torch2.11", "gpt_train", "trace").glob("*.log"))
    raw = trace.read_text().count('] {"guard_added_fast": ')
    assert sum(1 for _ in model.records_of("guard_added_fast")) == raw == 12


def test_more_of_the_metrics() -> None:
    model = load_source(str(shared("cpu-torch2.13", "e_training", "trace")))
    metrics = [rows(compile_detail(c, model)).get("metrics", []) for c in model.compiles]
    assert any("non-compliant ops prims::fma" in m for m in metrics)
    first = next(m for m in metrics if m)
    for label in ("cache size", "accumulated cache size", "shape-env guards", "backend compile"):
        assert any(r.startswith(label + " ") for r in first), (label, first)


# ---------------------------------------------------------------------- 7. tcview show


@pytest.mark.e2e
def test_show_prints_the_diagnosis_as_text_and_json(dim: Path) -> None:
    out = show(str(dim), "0/13")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("compile 0/13  ok  recompile  ")
    assert "  • 13 recompiles, all on `kwargs['input_ids']` size at index 1" in out.stdout
    model = load_source(str(dim))
    assert out.stdout == render_text(compile_detail(compile_of(model, "0/13"), model))
    data = json.loads(show(str(dim), "0/13", "--json").stdout)
    assert data["kind"] == "compile" and data["id"] == "0/13"
    why = next(s for s in data["sections"] if s["heading"] == "why its frame recompiles")
    assert why["rows"][0]["tag"] == "diagnosis"
    assert "kwargs['input_ids']` size at index 1" in why["rows"][0]["value"]
    assert data == compile_detail(compile_of(model, "0/13"), model).to_json()


@pytest.mark.e2e
def test_show_a_frame_and_a_kernel(dim: Path) -> None:
    frame = show(str(dim), "frame", "1")
    assert frame.returncode == 0 and frame.stdout.startswith("frame scale (script.py:26)  [1]")
    kernel = show(str(dim), "cpp_fused_add_mul_tanh_0")
    assert kernel.returncode == 0, kernel.stderr
    lines = kernel.stdout.split("\n")
    # its kind on the title's line, its compile and graph on the next, then its source
    assert lines[:3] == [
        "kernel cpp_fused_add_mul_tanh_0  cpp",
        "compile 1/0 · graph inference",
        "output code lines 33-62 · launch #1",
    ]
    assert lines[3].startswith("same in   6 compiles: 1/0 (inference), 1/1")
    assert lines[4:6] == ["", "source"]
    assert any(
        ln.endswith(
            "│ cpp_fused_add_mul_tanh_0 = async_compile.cpp_pybinding(['const float*', 'float*'], r'''"
        )
        for ln in lines
    )
    data = json.loads(show(str(dim), "cpp_fused_add_mul_tanh_0@1/4", "--json").stdout)
    head = {r["label"]: r["value"] for r in data["sections"][0]["rows"]}
    assert head["compile"] == "1/4" and head["same in"].startswith("6 compiles")
    source = next(s for s in data["sections"] if s["heading"] == "source")
    assert source["language"] == "python" and source["lines"][0].startswith("cpp_fused")


@pytest.mark.e2e
def test_show_asks_which_rank_when_an_id_is_in_several() -> None:
    ddp = shared("h200-torch2.11", "ddp2")
    out = show(str(ddp), "0/0")
    assert out.returncode == 2
    assert "'rank 0 0/0', 'rank 1 0/0'" in out.stderr
    one = show(str(ddp), "rank", "1", "0/0")
    assert one.returncode == 0 and "\nrank      1\n" in one.stdout
    model = load_source(str(ddp))
    assert find_as(model, "rank 1 0/0", Compile).file.rank == 1
    with pytest.raises(ShowError, match="no kernel is named|neither"):
        show_detail(model, "triton_nothing")


@sync
async def test_goto_resolves_like_show(fixture_runs: Path) -> None:
    """`--goto` reads an item as `tcview show` does (one grammar): the same item for
    `rank 1 0/0` and `rank 1 frame 0`, and for an id that both ranks have, show's question
    (which rank?) instead of a silent pick of rank 0."""
    from tcview.ui.app import TcviewApp
    from tcview.ui.options import OpenOptions
    from tcview.ui.tree import TraceTree

    def ident(obj: object) -> tuple[str, str, int | None]:
        assert isinstance(obj, (Compile, Frame)), obj
        return type(obj).__name__, obj.id_label, obj.file.rank

    ddp = fixture_runs / "ranks_ddp2"
    model = load_source(str(ddp))
    for item in ("rank 1 0/0", "rank 1 frame 0", "rank 0 0/0"):
        app = TcviewApp(OpenOptions(str(ddp), goto=item))
        async with app.run_test(size=(140, 40)) as pilot:
            await ready(app, pilot)
            node = app.query_one(TraceTree).cursor_node
            assert node is not None and node.data is not None, item
            assert ident(node.data.obj) == ident(find(model, item)), item
    for item in ("0/0", "frame 0"):
        printed = show(str(ddp), *item.split())
        assert printed.returncode == 2 and "say which" in printed.stderr
        question = printed.stderr.strip().removeprefix("tcview: ")
        app = TcviewApp(OpenOptions(str(ddp), goto=item))
        async with app.run_test(size=(140, 40)) as pilot:
            await ready(app, pilot)
            shown = app._notifications
            await until(pilot, lambda: list(shown), what="the --goto question")  # noqa: B023
            assert [str(n.message) for n in shown] == [f"--goto {item}: {question}"]
            node = app.query_one(TraceTree).cursor_node
            assert node is None or node.data is None or node.data.kind not in ("compile", "frame")


@sync
async def test_palette_reads_an_item_like_show(fixture_runs: Path) -> None:
    """ctrl+p, `rank 1 frame 0`: the first hit goes where `tcview show` and `--goto` go."""
    from textual.command import CommandList

    from tcview.ui.app import TcviewApp
    from tcview.ui.tree import TraceTree

    ddp = fixture_runs / "ranks_ddp2"
    want = find(load_source(str(ddp)), "rank 1 frame 0")
    assert isinstance(want, Frame)
    app = TcviewApp(str(ddp))
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(app, pilot)
        await pilot.press("ctrl+p")
        await pilot.press(*"rank 1 frame 0")
        first = ""
        for _ in range(100):  # the hits come from a worker: wait for the first one
            hits = app.screen.query(CommandList)
            if hits and hits.first().option_count:
                first = str(hits.first().get_option_at_index(0).prompt)
                if first.startswith("go to"):
                    break
            await pilot.pause(0.05)
        assert first == "go to rank 1 frame 0"
        await pilot.press("enter")
        await settle(app, pilot)
        node = app.query_one(TraceTree).cursor_node
        assert node is not None and node.data is not None and node.data.kind == "frame"
        assert isinstance(node.data.obj, Frame) and node.data.obj.file.rank == want.file.rank == 1


@pytest.mark.e2e
def test_show_an_episode(fixture_runs: Path) -> None:
    out = show(str(fixture_runs / "resets"), "1/0 #3")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == [
        out.stdout.split("\n")[0],
        "episode   3: torch._dynamo.reset() made the process number its compiles from 0 again",
    ]
    assert out.stdout.startswith("compile 1/0 #3  ok")


@pytest.mark.e2e
def test_show_names_near_kernels(dim: Path) -> None:
    out = show(str(dim), "tanh")
    assert out.returncode == 2
    assert "cpp_fused_add_mul_tanh_0" in out.stderr


@pytest.mark.app
@sync
async def test_pane_and_show_agree(dim: Path) -> None:
    """The detail pane shows the same lines `tcview show` prints, for a compile (styled lines)
    and a kernel (rows, then its numbered source)."""
    from tcview.ui.app import TcviewApp
    from tcview.ui.options import OpenOptions

    model = load_source(str(dim))
    for item in ("0/13", "cpp_fused_add_mul_tanh_0"):
        app = TcviewApp(OpenOptions(str(dim), goto=item))
        async with app.run_test(size=(140, 40)) as pilot:
            await ready(app, pilot)
            doc = viewer_shown(app).doc
            pane = []
            for i in range(doc.count):
                number = doc.lineno(i) if doc.styled is None else None
                line = doc.plain(i).rstrip(BAR_CELLS)  # time bars are drawn, not printed
                pane.append(line if number is None else f"{number} │ {line}")
        printed = render_text(show_detail(model, item)).rstrip("\n").split("\n")
        assert pane == printed, item


@pytest.mark.app
@sync
async def test_recompiles_view_says_why_per_frame(dim: Path) -> None:
    from textual.widgets import DataTable

    from tcview.ui.app import TcviewApp
    from tcview.ui.reader import Reader

    app = TcviewApp(str(dim))
    async with app.run_test(size=(160, 40)) as pilot:
        await ready(app, pilot)
        await pilot.press("r")
        await settle(app, pilot)
        view = pane(app)
        table = view.query_one("#view-table", DataTable)
        first = [c.plain for c in table.get_row_at(0)]
        assert first[3].startswith("13 recompiles, all on `kwargs['input_ids']` size at index 1")
        doc = view.query_one(Reader).viewer.doc
        shown = [doc.plain(i) for i in range(doc.count)]
        assert shown[0] == "frame step (script.py:20)  [0]  ok  recompile"
        assert any("limit 64 not hit" in ln for ln in shown)


def test_kernel_of_a_detail_is_a_kernel(dim_model: Model) -> None:
    assert isinstance(find(dim_model, "cpp_fused_add_mul_tanh_0"), Kernel)


def test_kernel_num_gb_where_inductor_wrote_it(fixture_runs: Path) -> None:
    """A GPU training step compiled with benchmark_kernel (tests/fixtures/runs/benchmark_kernel,
    H100, torch 2.11): each Triton kernel shows the kernel_num_gb of its inductor_meta, and the
    backward's kernels say so."""
    run = fixture_runs / "benchmark_kernel"
    model = load_source(str(run))
    raw = next((run / "trace").glob("*.log")).read_text()
    written = re.findall(r"'kernel_name': '(\w+)'.*?'kernel_num_gb': ([0-9.e+-]+)", raw)
    assert len(written) == 6
    for name, gb in written:
        kernel = next(k for k in model.kernels if k.name == name)
        launch = rows(kernel_detail(kernel, model))["launch"]
        assert f"kernel_num_gb {gb}" in launch
        assert any(r.startswith("configs ") for r in launch)  # autotuned when it first runs
    assert {k.role for k in model.kernels} == {"forward", "backward"}


HOSTILE = sorted((REPO / "tests" / "fixtures" / "hostile").glob("*.log"))


@pytest.mark.e2e
@pytest.mark.parametrize("path", HOSTILE + sorted((REPO / "sample_traces").iterdir()), ids=str)
def test_every_detail_builds_on_hostile_and_sample_traces(path: Path) -> None:
    """Broken, hostile and odd inputs: every compile, frame and kernel still has a detail
    (text and JSON), and control characters never reach the text unescaped."""
    model = load_source(str(path))
    details = [compile_detail(c, model) for c in model.compiles]
    details += [frame_detail(fr) for f in model.files for fr in f.frames.values()]
    details += [kernel_detail(k, model) for k in model.kernels]
    for detail in details:
        json.dumps(detail.to_json())
        render_text(detail)
    out = subprocess.run(
        [
            *TCVIEW_CLI,
            "show",
            str(path),
            *(["0/0"] if model.compiles else ["x"]),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert out.returncode in (0, 2)
    assert "\x1b" not in out.stdout and "Traceback" not in out.stderr
