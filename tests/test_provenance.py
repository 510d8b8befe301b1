"""Provenance: kernel -> post-grad nodes -> pre-grad nodes -> user lines and
back, on every provenance input we hold, compared with what tlparse 0.4.3 -i maps
(tests/fixtures/tlparse_provenance.json, extracted from tlparse's own output files)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from conftest import FIXTURES, REPO, TCVIEW_CLI, unpack_shared
from ui_helpers import SnapCompare, pane, ready, settle, sync, viewer_shown

from tcview.analysis.provenance import (
    LINES_FROM_GRAPH,
    LINES_FROM_TRACES,
    MAPPINGS,
    Unit,
    graph_lines_of,
    kernel_provenance,
    model_provenance,
    node_name,
    parse_stack_strings,
    pure_name,
    tracking_hint,
)
from tcview.ingest.index import TraceSet

if TYPE_CHECKING:
    from textual.app import App
    from textual.pilot import Pilot

    from tcview.ui.content import Document

TLPARSE = json.loads((FIXTURES / "tlparse_provenance.json").read_text())["inputs"]


def _input(where: str, fixture_runs: Path) -> Path:
    group, _, rel = where.partition(":")
    if group == "runs":
        return fixture_runs / rel
    shared = unpack_shared()
    if shared is None:
        pytest.skip("../shared/traces.tar.xz is absent")
    return shared / rel


def _units_by_compile(units: list[Unit]) -> dict[str, list[Unit]]:
    out: dict[str, list[Unit]] = {}
    for unit in units:
        if unit.mapping is None:
            continue
        cid = f"[{unit.compile.id_text}]" if unit.compile is not None else "[-/-]"
        out.setdefault(cid, []).append(unit)
    return out


@pytest.mark.parametrize("name", sorted(TLPARSE))
def test_mapping_equals_tlparse(name: str, fixture_runs: Path) -> None:
    """Every mapping tlparse read: the same kernels, post-grad nodes, pre-grad nodes, and the
    user lines of the stack traces (tcview keeps the mappings of a compile apart)."""
    ref = TLPARSE[name]
    prov = model_provenance(TraceSet.load(_input(ref["input"], fixture_runs)))
    units = _units_by_compile(prov.units)
    seen: dict[str, int] = {}
    for mapping in ref["mappings"]:
        cid = mapping["compile_id"]
        index = seen.get(cid, 0)
        seen[cid] = index + 1
        unit = units[cid][index]
        mapped = {k: kp for k, kp in unit.kernels.items() if kp.post_grad}
        assert set(mapped) == set(mapping["kernels"]), (cid, index)
        for key, want in mapping["kernels"].items():
            kp = unit.kernels[key]
            assert kp.post_grad == want["post_grad_nodes"], key
            assert kp.pre_grad == want["pre_grad_nodes"], key
            traced = kp.lines if kp.lines_from == LINES_FROM_TRACES else []
            assert [[s.file, s.line, s.code] for s in traced] == want["user_source_lines"], key


def test_training_compile_keeps_forward_and_backward_apart(fixture_runs: Path) -> None:
    """tlparse keeps only the last mapping of [0/0] (the backward's empty one) and links
    nothing; tcview links the forward's kernels to their lines, and the backward's kernels to
    theirs through its stack traces."""
    ts = TraceSet.load(fixture_runs / "gpu_provenance" / "trace")
    fwd, bwd = (u for u in model_provenance(ts).units if u.compile and u.compile.id_text == "0/0")
    assert (fwd.label, bwd.label) == ("0/0 forward", "0/0 backward")
    assert bwd.empty_mapping and not fwd.empty_mapping
    kp = fwd.kernels["triton_poi_fused_gelu_mul_sigmoid_1:3"]
    assert kp.kernel is not None and kp.kernel.name == "triton_poi_fused_gelu_mul_sigmoid_1"
    assert [(s.short, s.code) for s in kp.lines] == [
        ("provenance.py:27", "h = h * torch.sigmoid(h)"),
        ("provenance.py:26", "h = torch.nn.functional.gelu(h)"),
    ]
    back = bwd.kernels["triton_per_fused_native_layer_norm_native_layer_norm_backward_2:5"]
    assert back.kernel is not None and [s.short for s in back.lines] == ["provenance.py:24"]
    # A kernel of the model finds its unit through its output code.
    unit, found = kernel_provenance(kp.kernel)
    assert unit is not None and found is not None and found.key == kp.key


def test_user_line_to_kernels(fixture_runs: Path) -> None:
    """The reverse map: provenance.py:28 (``return x + self.down(h)``) is the down
    projection's matmul and the residual add in the forward, and three kernels of the
    backward (the stack traces of the backward's kernels name it)."""
    prov = model_provenance(TraceSet.load(fixture_runs / "gpu_provenance" / "trace"))
    keys = {
        (k.unit.label if k.unit else "", k.key) for k in prov.kernels_of_line("provenance.py", 28)
    }
    assert keys == {
        ("0/0 forward", "extern_kernels.mm:4"),
        ("0/0 forward", "triton_poi_fused_add_addmm_2:5"),
        ("0/0 backward", "triton_per_fused_sum_0:1"),
        ("0/0 backward", "extern_kernels.mm:2"),
        ("0/0 backward", "extern_kernels.mm:8"),
    }
    # By full path as well as by file name; a line no kernel implements has none.
    assert len(prov.kernels_of_line("/workspace/examples/provenance.py", 28)) == 5
    assert prov.kernels_of_line("provenance.py", 99) == []
    # FX node -> kernels.
    fwd = next(u for u in prov.units if u.label == "0/0 forward")
    assert [k.key for k in fwd.kernels_of_pre("linear_1")] == [
        "extern_kernels.mm:4",
        "triton_poi_fused_add_addmm_2:5",
    ]
    assert [k.key for k in fwd.kernels_of_post("rsqrt")] == [
        "triton_per_fused_native_layer_norm_0:1"
    ]


def _without_mappings(src: Path, dest: Path) -> Path:
    """A copy of a trace without its node-mappings records (an older trace: legacy only)."""
    lines = src.read_text().split("\n")
    out, skip = [], False
    for line in lines:
        if not line.startswith("\t"):
            skip = f'"name": "{MAPPINGS}"' in line
        if not skip:
            out.append(line)
    dest.write_text("\n".join(out))
    return dest


def test_legacy_artifacts_give_the_same_mapping(shared_traces: Path, tmp_path: Path) -> None:
    """Without node mappings, the legacy kernel->post-grad and post->pre-grad artifacts give
    the same kernels, post-grad and pre-grad nodes (the pre-grad nodes are the roots of the
    from_node chains)."""
    for name in ("inductor_provenance_jit_log.txt", "inductor_provenance_aot_cuda_log.txt"):
        src = shared_traces / "tlparse-corpus" / name
        new = model_provenance(TraceSet.load(src)).units
        old = model_provenance(TraceSet.load(_without_mappings(src, tmp_path / name))).units
        assert [u.mapping is None and bool(u.legacy) for u in old] == [True] * len(new)
        for a, b in zip(new, old, strict=True):
            assert {k: (v.post_grad, v.pre_grad) for k, v in a.kernels.items()} == {
                k: (v.post_grad, v.pre_grad) for k, v in b.kernels.items()
            }


_SOURCE_NODES = re.compile(r"# Topologically Sorted Source Nodes: \[([^\]]*)\]")


def test_fallback_when_tracking_was_off(shared_traces: Path) -> None:
    """No provenance artifact: the kernels' source-node comments give the pre-grad nodes,
    the pre-grad graph's ``# File:`` comments the user lines; the hint says how to turn
    tracking on."""
    ts = TraceSet.load(shared_traces / "h200-torch2.11" / "tinyblock_default" / "trace")
    prov = model_provenance(ts)
    assert prov.units and not prov.tracked
    text = ts.compiles[0].output_codes[0].payload()
    # Independent: the comments in order; the kernels' definitions come first (each
    # launch in call() has a comment too).
    want = _SOURCE_NODES.findall(text)
    got = [", ".join(kp.pre_grad) for kp in prov.kernels()]
    assert len(got) == len(ts.kernels) == 3
    assert got == want[:3]
    kp = next(k for k in prov.kernels() if k.name == "triton_poi_fused_add_gelu_mul_view_1")
    assert kp.lines_from == LINES_FROM_GRAPH
    assert [s.line for s in kp.lines] == [13, 14, 15]
    assert "INDUCTOR_PROVENANCE=1" in tracking_hint(None)
    assert "provenance_tracking_level" in tracking_hint("2.13.0+cpu")
    assert "TORCH_COMPILE_DEBUG=1" in tracking_hint("2.8.0")


def test_graph_lines_of_mark_the_kernel_nodes(fixture_runs: Path) -> None:
    ts = TraceSet.load(fixture_runs / "gpu_provenance" / "trace")
    unit = model_provenance(ts).units[0]
    kp = unit.kernels["triton_per_fused_native_layer_norm_0:1"]
    assert unit.post_graph is not None
    lines = unit.post_graph.payload().split("\n")
    marked = graph_lines_of(unit.post_graph, kp.post_grad)
    assert sorted(node_name(lines[i]) for i in marked) == sorted(kp.post_grad)


def test_parsing_rules() -> None:
    assert pure_name("triton_poi_fused_mul_1:2") == ("triton_poi_fused_mul_1", "2")
    assert pure_name("extern_kernels.mm") == ("extern_kernels.mm", "")
    assert pure_name("a:b") == ("a:b", "")
    lines = parse_stack_strings(
        [
            '  File "/a/m.py", line 74, in f\n    q = (q * c)\n  File "/a/m.py", line 50, in g\n'
            "    return x\n",
            '  File "/x.py", line 2\\n  bar()\\n',  # a literal backslash-n (the extended log)
            7,
        ]
    )
    assert [(s.short, s.function, s.code) for s in lines] == [
        ("m.py:74", "f", "q = (q * c)"),
        ("m.py:50", "g", "return x"),
        ("x.py:2", "", "bar()"),
    ]
    assert node_name('        mul_2: "f32[8]" = torch.ops.aten.mul.Tensor(x, 0.5)') == "mul_2"
    assert node_name("        # File: /a.py:3 in f, code: x = 1") == ""
    assert node_name("        return (add,)") == ""


def _tcview(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TCVIEW_CLI, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
    )


@pytest.mark.e2e
def test_show_kernel_and_file_line(fixture_runs: Path) -> None:
    trace = str(fixture_runs / "gpu_provenance" / "trace")
    out = _tcview("show", trace, "triton_poi_fused_gelu_mul_sigmoid_1")
    assert out.returncode == 0, out.stderr
    assert "post-grad nodes (7)" in out.stdout and "mul_5, mul_4, mul_2" in out.stdout
    assert (
        "/workspace/examples/provenance.py:27 in forward    h = h * torch.sigmoid(h)" in out.stdout
    )
    out = _tcview("show", trace, "provenance.py:28")
    assert out.returncode == 0, out.stderr
    assert "triton_poi_fused_add_addmm_2:5  [0/0 forward]" in out.stdout
    assert "extern_kernels.mm:8  [0/0 backward]" in out.stdout
    out = _tcview("show", trace, "no_such_kernel_or_line")
    assert out.returncode == 2
    assert "is neither a compile id, a frame, a kernel, FILE:LINE, 'export'" in out.stderr


def _show_json(*args: str) -> dict:
    out = _tcview("show", *args, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _rows_of(data: dict, heading: str) -> list[str]:
    return [
        r["value"]
        for s in data["sections"]
        if s["heading"].startswith(heading)
        for r in s.get("rows", [])
    ]


@pytest.mark.e2e
def test_show_json_kernel_line_and_mapping_key(fixture_runs: Path) -> None:
    """The same lookup answers a kernel, a mapping key (an extern kernel has nothing else)
    and FILE:LINE, as JSON too; the nodes and lines are the mapping's (tlparse's -i)."""
    trace = str(fixture_runs / "gpu_provenance" / "trace")
    ref = TLPARSE["fresh__provenance__dedicated_log_torch_trace_olcue69u"]["mappings"][0]
    want = ref["kernels"]["triton_poi_fused_gelu_mul_sigmoid_1:3"]
    data = _show_json(trace, "triton_poi_fused_gelu_mul_sigmoid_1")
    assert data["kind"] == "kernel"
    assert _rows_of(data, "post-grad nodes")[0] == ", ".join(want["post_grad_nodes"])
    assert _rows_of(data, "pre-grad nodes")[0] == ", ".join(want["pre_grad_nodes"])
    assert [v.split(" in ")[0] for v in _rows_of(data, "user lines")] == [
        f"{f}:{n}" for f, n, _ in want["user_source_lines"]
    ]
    # The forward and the backward both have an extern_kernels.mm:4: the bare key is refused.
    both = _tcview("show", trace, "extern_kernels.mm:4")
    assert both.returncode == 2 and both.stderr.strip() == (
        "tcview: 'extern_kernels.mm:4' is in 2 graphs: say which, e.g."
        " 'extern_kernels.mm:4@0/0 forward', 'extern_kernels.mm:4@0/0 backward'"
    )
    extern = _show_json(trace, "extern_kernels.mm:4@0/0 forward")
    assert extern["kind"] == "provenance" and extern["title"] == "provenance · extern_kernels.mm:4"
    assert _rows_of(extern, "post-grad nodes")[0] == ", ".join(
        ref["kernels"]["extern_kernels.mm:4"]["post_grad_nodes"]
    )
    line = _show_json(trace, "provenance.py:27")
    assert line["kind"] == "line"
    kernels = [r["value"] for s in line["sections"] for r in s["rows"] if r["tag"] == "kernel"]
    assert kernels == [
        "triton_poi_fused_gelu_mul_sigmoid_1:3  [0/0 forward]",
        "triton_per_fused_add_gelu_gelu_backward_mul_sigmoid_sigmoid_backward_sum_1:3"
        "  [0/0 backward]",
    ]


@pytest.mark.e2e
def test_show_kernel_without_tracking_says_how_to_turn_it_on(shared_traces: Path) -> None:
    """No provenance artifact: the kernel's source-node comment gives its nodes, and the
    provenance says tracking was off and how to turn it on."""
    trace = shared_traces / "h200-torch2.11" / "tinyblock_default" / "trace"
    out = _tcview("show", str(trace), "triton_poi_fused_add_gelu_mul_view_1")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "nodes      x_1, x_2, mul, x_3" in text  # the comment's
    assert "from        the kernels' source-node comments (provenance tracking was off)" in text
    assert "INDUCTOR_PROVENANCE=1" in text and "provenance_tracking_level = 1" in text
    assert (
        "/workspace/examples/tinyblock.py:14 in forward    x = torch.nn.functional.gelu(x)" in text
    )
    data = _show_json(str(trace), "triton_poi_fused_add_gelu_mul_view_1")
    hint = [r for s in data["sections"] for r in s.get("rows", []) if r["label"] == "turn it on"]
    assert len(hint) == 1 and hint[0]["tag"] == "hint"


# ---------------------------------------------------------------------- UI


def _pane(app: App[Any]) -> tuple[Document, list[str]]:

    doc = viewer_shown(app).doc
    return doc, [doc.plain(i) for i in range(doc.count)]


@pytest.mark.app
@sync
async def test_kernel_provenance_one_key_away(fixture_runs: Path) -> None:
    from tcview.ui.app import TcviewApp
    from tcview.ui.options import OpenOptions

    trace = str(fixture_runs / "gpu_provenance" / "trace")
    app = TcviewApp(OpenOptions(trace, goto="triton_poi_fused_gelu_mul_sigmoid_1"))
    async with app.run_test(size=(140, 45)) as pilot:
        await ready(app, pilot)
        doc, _ = _pane(app)
        assert doc.title.startswith("kernel triton_poi_fused_gelu_mul_sigmoid_1")
        await pilot.press("i")
        await settle(app, pilot)
        doc, text = _pane(app)
        assert doc.title == "provenance · triton_poi_fused_gelu_mul_sigmoid_1"
        assert "  mul_5, mul_4, mul_2, add_2, erf, mul_3, sigmoid" in text
        assert "  h_3, h_2, sigmoid" in text
        assert (
            "  /workspace/examples/provenance.py:27 in forward    h = h * torch.sigmoid(h)" in text
        )
        await pilot.press("i")  # again: back to the kernel's source
        await settle(app, pilot)
        assert _pane(app)[0].title.startswith("kernel triton_poi_fused_gelu_mul_sigmoid_1")
        # The post-grad graph of the same compile marks the picked kernel's nodes.
        kernel = app.browser.controller.picked_kernel
        assert kernel is not None and kernel.compile is not None
        graph = next(r for r in kernel.compile.records if r.label == "inductor_post_grad_graph")
        app.browser.reveal("record", graph)
        await settle(app, pilot)
        doc, text = _pane(app)
        names = sorted(node_name(text[i]) for i in doc.marked)
        assert names == sorted(["mul_5", "mul_4", "mul_2", "add_2", "erf", "mul_3", "sigmoid"])
        assert doc.focus == min(doc.marked)


@pytest.mark.app
@sync
async def test_provenance_view_enter_jumps_to_the_kernel(fixture_runs: Path) -> None:
    from tcview.ui.app import TcviewApp
    from tcview.ui.views import ProvenanceView

    app = TcviewApp(str(fixture_runs / "gpu_provenance" / "trace"))
    async with app.run_test(size=(140, 45)) as pilot:
        await ready(app, pilot)
        await pilot.press("P")
        await settle(app, pilot)
        view = pane(app)
        assert isinstance(view, ProvenanceView)
        head = str(view.query_one("#view-head").render())
        assert "14 mapping keys in 3 graphs: 8 generated kernels, 6 extern calls" in head, head
        assert app.model is not None
        assert len(app.model.kernels) == 8  # the kernels view's count, which the head agrees with
        rows = view.objects
        first_line = rows[0].line
        assert first_line is not None and first_line.short == "provenance.py:24"
        assert rows[1].kernel is not None
        assert rows[1].kernel.key == "triton_per_fused_native_layer_norm_0:1"
        await pilot.press("down", "enter")
        await settle(app, pilot)
        assert not isinstance(pane(app), ProvenanceView)
        assert app.browser.controller.picked_kernel is not None
        assert app.browser.controller.picked_kernel.name == "triton_per_fused_native_layer_norm_0"
        # By FX node: headings name a graph's node, the rows under it its kernels.
        await pilot.press("P")
        await settle(app, pilot)
        await pilot.press("N")
        await settle(app, pilot)
        view = pane(app)
        assert isinstance(view, ProvenanceView)
        heads = [r for r in view.objects if r.node]
        assert (
            heads[0].unit is not None
            and f"{heads[0].unit.label} {heads[0].node}" == "0/0 forward var_mean"
        )


@pytest.mark.app
@sync
async def test_e_opens_the_user_lines_of_a_kernel(
    fixture_runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`e` on a user line of the provenance view, on a kernel under it, and on a kernel of
    the tree (its provenance shown) opens the user's file at that line."""
    from tcview.analysis.paths import PathMap
    from tcview.ui.app import TcviewApp
    from tcview.ui.options import OpenOptions
    from tcview.ui.take import LocationPicker
    from tcview.ui.views import ProvenanceView

    argv = tmp_path / "argv.txt"
    editor = tmp_path / "editor.sh"
    editor.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {argv}\n')
    editor.chmod(0o755)
    monkeypatch.setenv("EDITOR", str(editor))
    monkeypatch.delenv("VISUAL", raising=False)
    checkout = tmp_path / "src"
    checkout.mkdir()
    local = checkout / "provenance.py"
    local.write_text("x = 1\n" * 60)
    app = TcviewApp(
        OpenOptions(
            str(fixture_runs / "gpu_provenance" / "trace"),
            path_map=PathMap.parse([f"/workspace/examples={checkout}"]),
        )
    )
    async with app.run_test(size=(140, 45)) as pilot:
        await ready(app, pilot)
        await pilot.press("P")
        await settle(app, pilot)
        assert isinstance(pane(app), ProvenanceView)
        await pilot.press("e")  # the first user line: provenance.py:24
        await settle(app, pilot)
        assert argv.read_text().split("\n")[:2] == ["+24", str(local)]
        argv.unlink()
        await pilot.press("j", "e")  # its kernel: the line it is listed under
        await settle(app, pilot)
        assert argv.read_text().split("\n")[:2] == ["+24", str(local)]
        await pilot.press("escape")
        await settle(app, pilot)
        argv.unlink()
        assert app.model is not None
        kernel = next(
            k for k in app.model.kernels if k.name == "triton_poi_fused_gelu_mul_sigmoid_1"
        )
        assert app.browser.reveal("kernel", kernel)
        app.main_tree.focus()
        await pilot.press("e")  # the tree's kernel: its first user line
        await settle(app, pilot)
        assert argv.read_text().split("\n")[:2] == ["+27", str(local)]
        argv.unlink()
        node = app.main_tree.cursor_node
        assert node is not None and node.data is not None
        app.browser.show_item(node.data)
        await settle(app, pilot)
        await pilot.press("i")
        await settle(app, pilot)
        viewer_shown(app).focus()
        await pilot.press("e")  # from its provenance in the pane: pick among its lines
        await settle(app, pilot)
        assert isinstance(app.screen, LocationPicker)
        labels = [(loc.text, loc.label) for loc in app.screen.locations[:2]]
        assert labels == [
            ("/workspace/examples/provenance.py:27", "user line: forward"),
            ("/workspace/examples/provenance.py:26", "user line: forward"),
        ]
        await pilot.press("down", "enter")
        await settle(app, pilot)
        assert argv.read_text().split("\n")[:2] == ["+26", str(local)]


@pytest.mark.app
def test_snapshot_kernel_provenance(
    snap_compare: SnapCompare, fixture_runs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`i` on a Triton kernel: its graph, where the facts come from, its user lines, its
    post- and pre-grad nodes and the other kernels of its lines."""
    from tcview.ui.app import TcviewApp
    from tcview.ui.options import OpenOptions

    monkeypatch.chdir(fixture_runs / "gpu_provenance")

    async def before(pilot: Pilot[Any]) -> None:
        await ready(pilot.app, pilot)
        await pilot.press("i")
        await settle(pilot.app, pilot)

    app = TcviewApp(OpenOptions("trace", goto="triton_poi_fused_gelu_mul_sigmoid_1"))
    assert snap_compare(app, terminal_size=(120, 40), run_before=before)
