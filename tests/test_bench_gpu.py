"""On a machine with an NVIDIA GPU and the trace's torch (the device tool's H100/H200 with torch
2.11; skipped everywhere else, CI included): a Triton graph benchmarked from the kernels view,
and `tcview run`'s status bar showing the job's GPU use through the real NVML.

    python -m pytest -s tests/test_bench_gpu.py   (TCVIEW_BENCH_OUT=DIR keeps the results)
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest
from conftest import find_as
from ui_helpers import REPO, pane, ready, settle, sync
from waits import until

from tcview.ingest.source import load_source
from tcview.model.objects import Compile
from tcview.run.bench import BenchRefused, plan_bench
from tcview.run.gpu import gpus_here, load_nvml

GPUS = gpus_here()
pytestmark = pytest.mark.skipif(not GPUS, reason="no NVIDIA GPU on this machine")
BUSY_JOB = REPO / "tests" / "fixtures" / "jobs" / "gpu" / "busy.py"


def keep(name: str, data: object) -> None:
    out = os.environ.get("TCVIEW_BENCH_OUT")
    if out:
        Path(out, name).write_text(
            json.dumps(data, indent=2) if not isinstance(data, str) else data
        )


@pytest.mark.app
@sync
async def test_triton_graph_benchmarked_from_the_kernels_view(fixture_runs: Path) -> None:
    from textual.widgets import DataTable

    from tcview.ui.app import TcviewApp
    from tcview.ui.bench import BenchDialog
    from tcview.ui.views import KernelsView

    run = fixture_runs / "autotune"  # H100, torch 2.11: compile 0/0 is two matmul templates
    model = load_source(str(run))
    try:
        plan_bench(model, find_as(model, "0/0", Compile)).discard()
    except BenchRefused as exc:
        pytest.skip(f"this machine cannot run the trace's code: {exc}")
    app = TcviewApp(str(run))
    async with app.run_test(size=(180, 45)) as pilot:
        await ready(app, pilot)
        await pilot.press("K")
        await settle(app, pilot)
        await pilot.press("down", "B")
        await until(
            pilot, lambda: isinstance(app.screen, BenchDialog), 120, seen=lambda: app.screen
        )
        assert isinstance(app.screen, BenchDialog)
        await pilot.press("y")
        await until(pilot, lambda: app.browser.bencher.results, 400, "the benchmark's result")
        await settle(app, pilot)
        result = app.browser.bencher.results[-1]
        keep("pilot_result.json", result.to_json())
        print("\n".join(result.lines()))
        assert result.ok, f"{result.problem}\n{result.output[-3000:]}"
        view = pane(app)
        assert isinstance(view, KernelsView)
        table = view.query_one(DataTable)
        assert [c.label.plain for c in table.columns.values()][0] == KernelsView.BENCH_COLUMN
        rows = {
            str(table.get_row_at(r)[1]): str(table.get_row_at(r)[0]) for r in range(table.row_count)
        }
        print(json.dumps(rows, indent=2))
        for name in ("triton_tem_fused_addmm_relu_t_0", "triton_tem_fused_addmm_relu_t_1"):
            assert " ms · " in rows[name], rows
        (graph,) = result.graphs
        assert graph.graph_ms and graph.device == "cuda" and graph.gpu
        print(
            f"graph {graph.graph_ms:.4f} ms · kernels {graph.kernels_ms:.4f} ms"
            f" · ratio {graph.kernels_ms / graph.graph_ms:.3f}"
        )


@sync
async def test_status_bar_shows_the_jobs_gpu_with_the_real_nvml(tmp_path: Path) -> None:
    from tcview.run.session import Launcher
    from tcview.run.spec import RunOptions, build_spec
    from tcview.ui.run_app import RunApp

    nvml = load_nvml()
    if nvml is None:
        pytest.skip("nvidia-ml-py is not installed")
    nvml.close()
    spec = build_spec([str(BUSY_JOB)], python=sys.executable)
    launcher = Launcher(spec, RunOptions(run_dir=tmp_path / "D", grace_s=1.0))
    launcher.preflight()
    session = launcher.start()
    app = RunApp(launcher, session)
    seen: list[tuple[float, str]] = []
    async with app.run_test(size=(180, 30)) as pilot:
        start = time.monotonic()
        while not session.done and time.monotonic() - start < 240:
            if app.job.gpu_text and (not seen or seen[-1][1] != app.job.gpu_text):
                seen.append((round(time.monotonic() - start, 1), app.job.gpu_text))
            await pilot.pause(0.1)
        await pilot.pause(0.5)
    keep("status_bar_gpu.json", seen)
    print("\n".join(f"{t:6.1f}s  {text}" for t, text in seen))
    assert seen and all(text.startswith("GPU") for _, text in seen)
    data = json.loads((session.run_dir / "run.json").read_text())
    print({k: data[k] for k in ("torch", "triton", "cuda", "gpus", "gpu_driver", "gpu_use")})
    assert data["gpus"] and data["gpu_use"] and data["gpu_use"]["peak_util_percent"] > 0
