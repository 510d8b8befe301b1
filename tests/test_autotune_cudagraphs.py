"""Autotuning (max-autotune) and CUDA graphs (reduce-overhead) per compile, on fresh H100 runs
with torch 2.11 (tests/fixtures/runs/autotune and cudagraphs: trace/ and torch_logs.txt)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import TCVIEW_CLI, find_as
from ui_helpers import REPO, pane, ready, settle, sync

from tcview.analysis.autotune import NO_TABLES, autotuned_ops
from tcview.analysis.cudagraphs import cudagraph_counts, fold_reason, model_cudagraphs
from tcview.ingest.source import load_source
from tcview.model.objects import Compile
from tcview.report.detail import compile_detail, render_text
from tcview.report.summary import summary_json, summary_text

WINNERS = {
    "0/0": [
        ("addmm", "triton_mm_18", "triton_tem_fused_addmm_relu_t_0"),
        ("addmm", "triton_mm_28", "triton_tem_fused_addmm_relu_t_1"),
    ],
    "1/0": [("bmm", "triton_bmm_52", "triton_tem_fused_bmm_0")],
}


def show(*args: str) -> str:
    done = subprocess.run(
        [*TCVIEW_CLI, "show", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


# ---------------------------------------------------------------------- autotuning


def test_run_directory_shows_each_choice_table_with_its_winner_and_kernel(
    fixture_runs: Path,
) -> None:
    model = load_source(str(fixture_runs / "autotune"))
    for cid, expected in WINNERS.items():
        ops, tables = autotuned_ops(find_as(model, cid, Compile), model)
        assert tables
        assert [(o.op, o.winner, o.kernel.name if o.kernel else None) for o in ops] == expected
        for op in ops:
            assert op.sources == ["trace", "TORCH_LOGS"]
            assert op.num_choices == 21 and len(op.choices) == 10  # torch prints the 10 fastest
            times = [c.ms for c in op.choices if c.ms is not None]
            assert len(times) == len(op.choices) and times == sorted(times)
            assert op.choices[0].name == op.winner
            assert op.autotune_s and op.precompile_s is not None
    first = autotuned_ops(find_as(model, "0/0", Compile), model)[0][0]
    assert first.shapes == "512x4096, 512x1024, 1024x4096"
    assert first.choices[0].ms == 0.0208 and "BLOCK_M=128" in first.choices[0].desc
    assert first.lineno == 61  # the table's line in torch_logs.txt


@pytest.mark.e2e
def test_a_trace_alone_has_the_winners_and_says_where_the_tables_are(fixture_runs: Path) -> None:
    model = load_source(str(fixture_runs / "autotune" / "trace"))
    ops, tables = autotuned_ops(find_as(model, "0/0", Compile), model)
    assert not tables and all(not op.choices for op in ops)
    assert [(o.winner, o.kernel.name if o.kernel else None) for o in ops] == [
        (w, k) for _, w, k in WINNERS["0/0"]
    ]
    assert ops[0].winner_ms == pytest.approx(0.0208, rel=1e-3) and ops[0].num_choices == 21
    text = show(str(fixture_runs / "autotune" / "trace"), "0/0")
    assert "winner triton_mm_18  0.0208 ms" in text
    assert NO_TABLES in text.replace("\n", " ")


def test_a_capture_alone_places_each_table_in_its_compile(fixture_runs: Path) -> None:
    model = load_source(str(fixture_runs / "autotune" / "torch_logs.txt"))
    for cid, expected in WINNERS.items():
        ops, tables = autotuned_ops(find_as(model, cid, Compile), model)
        assert tables and [(o.op, o.winner) for o in ops] == [(op, w) for op, w, _ in expected]
        assert all(o.sources == ["TORCH_LOGS"] and len(o.choices) == 10 for o in ops)


PREFIX = "V1122 16:23:42.816000 478 torch/_inductor/select_algorithm.py:12]"


def test_a_table_goes_to_the_compile_of_the_records_before_it(tmp_path: Path) -> None:
    """No compile id on the table: the records around it say whose it is; a table before any
    record with an id goes to the first compile after it."""
    table = [
        "AUTOTUNE mm(64x64, 64x64)",
        "strides: [64, 1], [64, 1]",
        "dtypes: torch.float16, torch.float16",
        "  triton_mm_2 0.0100 ms 100.0% BLOCK_M=64, num_warps=4",
        "  mm 0.0200 ms 50.0% ",
        "  triton_mm_1 inf ms 0.0% BLOCK_M=128, num_warps=8",
        "SingleProcess AUTOTUNE benchmarking takes 0.1000 seconds and 0.2000 seconds precompiling for 3 choices",
    ]
    lines = [
        *[t.replace("mm(", "bmm(").replace("triton_mm", "triton_bmm") for t in table],
        f"{PREFIX} [0/0] [__autotuning] start",
        f"{PREFIX} [0/0] [__autotuning] more",
        *table,
        "an unrelated print",
        f"{PREFIX} [1/0] [__autotuning] next compile",
    ]
    path = tmp_path / "torch_logs.txt"
    path.write_text("\n".join(lines) + "\n")
    model = load_source(str(path))
    first = autotuned_ops(find_as(model, "0/0", Compile), model)[0]
    assert [o.op for o in first] == ["bmm", "mm"]  # the leading table: the first compile's
    op = first[1]
    assert [c.name for c in op.choices] == ["triton_mm_2", "mm", "triton_mm_1"]
    assert op.choices[-1].ms is None  # inf: failed, listed last
    assert (op.num_choices, op.autotune_s, op.precompile_s) == (3, 0.1, 0.2)
    assert autotuned_ops(find_as(model, "1/0", Compile), model)[0] == []


def test_an_extern_winner_has_no_template_kernel(shared_traces: Path) -> None:
    model = load_source(str(shared_traces / "h200-torch2.11" / "tinyblock_max_autotune"))
    ops, tables = autotuned_ops(model.compiles[0], model)
    assert tables and [o.winner for o in ops] == ["bias_addmm", "bias_addmm"]
    assert all(o.extern and o.kernel is None for o in ops)
    text = render_text(compile_detail(model.compiles[0], model))
    assert "none: an ATen kernel won" in text


@pytest.mark.e2e
def test_show_json_tags_the_autotune_rows(fixture_runs: Path) -> None:
    data = json.loads(show(str(fixture_runs / "autotune"), "1/0", "--json"))
    (section,) = [s for s in data["sections"] if s["heading"].startswith("autotuning")]
    rows = section["rows"]
    assert {
        "label": "winner",
        "value": "triton_bmm_52  0.0077 ms",
        "tag": "winner",
        "depth": 1,
    } in rows
    assert any(r["tag"] == "kernel" and r["value"] == "triton_tem_fused_bmm_0" for r in rows)
    assert sum(1 for r in rows if r["tag"] in ("choice", "winner") and r.get("depth") == 2) == 10


@pytest.mark.app
@sync
async def test_time_view_shows_the_total_autotune_time(fixture_runs: Path) -> None:
    from textual.widgets import Static

    from tcview.ui.app import TcviewApp
    from tcview.ui.views import TimeView

    app = TcviewApp(str(fixture_runs / "autotune"))
    async with app.run_test(size=(160, 40)) as pilot:
        await ready(app, pilot)
        await pilot.press("t")
        await settle(app, pilot)
        assert isinstance(pane(app), TimeView)
        head = str(pane(app).query_one("#view-head", Static).content)
        # compile_time_autotune_time_us: 8355136 (0/0) + 1/0's
        model = app.model
        assert model is not None
        us = sum((c.metrics or {})["compile_time_autotune_time_us"] for c in model.compiles)
        total = us / 1e6
        assert f"autotune {total:.2f}s in 2 compiles" in head


# ---------------------------------------------------------------------- CUDA graphs


def states(path: Path) -> dict[str, str]:
    model = load_source(str(path))
    out = {}
    for comp in model.compiles:
        found = model_cudagraphs(model, comp)
        out[comp.id_label] = found.text if found is not None else "-"
    return out


def test_run_directory_says_which_compiles_used_cuda_graphs_and_why_not(fixture_runs: Path) -> None:
    got = states(fixture_runs / "cudagraphs")
    assert got == {
        "0/0": "used",
        "1/0": "skipped: mutated inputs (1 instances) at cudagraphs.py:19 in mutates",
        "2/0": "partly: cpu ops (+1 more)",
        "3/0": "used",
        "3/1": "used",
    }
    model = load_source(str(fixture_runs / "cudagraphs"))
    assert summary_json(model)["cudagraphs"] == {"used": 4, "skipped": 1}
    text = summary_text(model)
    assert "CUDA graphs: used by 4 compile(s), skipped by 1" in text
    assert "[1/0] skipped: mutated inputs (1 instances) at cudagraphs.py:19 in mutates" in text


@pytest.mark.e2e
def test_the_trace_alone_misses_the_runtime_skip_and_says_so(fixture_runs: Path) -> None:
    """torch 2.11 leaves `mutated inputs` out of the metrics (cudagraph_skip_reason: null)."""
    assert set(states(fixture_runs / "cudagraphs" / "trace").values()) == {"used"}
    text = show(str(fixture_runs / "cudagraphs" / "trace"), "1/0")
    assert "state         used" in text and "the cudagraphs or perf_hints log has them" in text


def test_the_capture_alone(fixture_runs: Path) -> None:
    got = states(fixture_runs / "cudagraphs" / "torch_logs.txt")
    assert got["1/0"].startswith("skipped: mutated inputs") and got["2/0"].startswith("partly")
    assert got["0/0"] == got["3/1"] == "used"


@pytest.mark.e2e
def test_show_prints_the_skip_with_its_stack(fixture_runs: Path) -> None:
    text = show(str(fixture_runs / "cudagraphs"), "1/0")
    section = text.split("CUDA graphs\n", 1)[1].split("\n\n", 1)[0]
    assert section.splitlines()[:2] == [
        "  state         skipped",
        "  why           mutated inputs (1 instances). Found from:",
    ]
    assert 'File "/workspace/examples/cudagraphs.py", line 19, in mutates' in section
    assert "cudagraphify  185µs" in section


def test_a_skip_reason_in_the_metrics_is_folded_and_kept_whole(
    fixture_runs: Path, tmp_path: Path
) -> None:
    """cudagraph_skip_reason in compilation_metrics (long: kept whole though the header is
    slimmed), with torch's prefix repeated when one skip wraps another."""
    run = tmp_path / "run"
    shutil.copytree(fixture_runs / "cudagraphs", run)
    (run / "torch_logs.txt").unlink()
    reason = (
        "skipping cudagraphs due to skipping cudagraphs due to cpu device (arg1_1) " + "x" * 500
    )
    for path in (run / "trace").iterdir():
        lines = path.read_bytes().split(b"\n")
        for i, line in enumerate(lines):
            if b'"compilation_metrics": {"compile_id": "2/0"' in line:
                new = b'"cudagraph_skip_reason": ' + json.dumps(reason).encode()
                lines[i] = line.replace(b'"cudagraph_skip_reason": null', new)
        path.write_bytes(b"\n".join(lines))
    assert fold_reason(reason).startswith("cpu device (arg1_1) xxx")
    model = load_source(str(run))
    found = model_cudagraphs(model, find_as(model, "2/0", Compile))
    assert found is not None and found.state == "skipped"
    assert found.reasons == [fold_reason(reason)] and found.reasons[0].endswith("x" * 500)
    assert cudagraph_counts(model) == {"used": 4, "skipped": 1}


def test_no_cuda_graph_facts_without_reduce_overhead(fixture_runs: Path) -> None:
    model = load_source(str(fixture_runs / "autotune"))
    assert summary_json(model)["cudagraphs"] == {"used": 0, "skipped": 0}
    assert "CUDA graphs" not in render_text(compile_detail(model.compiles[0], model))


def test_shared_reduce_overhead_run(shared_traces: Path) -> None:
    run = shared_traces / "h200-torch2.11" / "tinyblock_reduce_overhead"
    assert states(run) == {"0/0": "used"}
    model = load_source(str(run))
    assert summary_json(model)["cudagraphs"] == {"used": 1, "skipped": 0}


@pytest.mark.app
@sync
async def test_tree_marks_cuda_graphs(fixture_runs: Path) -> None:
    from textual.widgets.tree import TreeNode

    from tcview.ui.app import TcviewApp
    from tcview.ui.tree import Item, TraceTree

    app = TcviewApp(str(fixture_runs / "cudagraphs"))
    async with app.run_test(size=(160, 40)) as pilot:
        await ready(app, pilot)
        tree = app.query_one(TraceTree)
        labels: dict[str, str] = {}

        def walk(node: TreeNode[Item]) -> None:
            if node.data is not None and node.data.kind == "compile":
                assert isinstance(node.data.obj, Compile)
                labels[node.data.obj.id_label] = str(node.label)
            for child in node.children:
                walk(child)

        walk(tree.root)
        assert "◇ no cudagraphs" in labels["1/0"]
        assert "◈ cudagraphs (partly)" in labels["2/0"]
        assert "◆ cudagraphs" in labels["0/0"] and "no cudagraphs" not in labels["0/0"]
