"""The profile join on a real H100 run: a compiled GPT-2 trained with AdamW, profiled with
export_chrome_trace and with tensorboard_trace_handler, with and without unique kernel names
(tests/fixtures/runs/h100_gpt2_profile*, made by tests/benchmarks/gpu_runs/gpt2_profile.py)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tcview.analysis.profile import join_profile
from tcview.ingest.profile import load_profile
from tcview.ingest.source import load_source
from tcview.report.profile import profile_json


def _kernel_events(path: Path) -> list[dict[str, Any]]:
    """The profile's GPU kernel events, read with json alone (the independent count)."""
    files = [path] if path.is_file() else sorted(path.glob("*.pt.trace.json.gz"))
    return [
        e
        for f in files
        for e in json.loads(gzip.decompress(f.read_bytes()))["traceEvents"]
        if e.get("cat") == "kernel"
    ]


@pytest.mark.parametrize("run", ["h100_gpt2_profile", "h100_gpt2_profile_unique"])
@pytest.mark.parametrize("made_by", ["prof.json.gz", "tb"])
def test_every_triton_kernel_is_matched_and_the_total_is_the_profiles(
    fixture_runs: Path, run: str, made_by: str
) -> None:
    path = fixture_runs / run / made_by
    profile = load_profile(path)
    data = profile_json(join_profile(load_source(str(fixture_runs / run)), profile), profile)
    events = _kernel_events(path)
    assert data["kernel_events"] == len(events)
    assert data["gpu_time_us"] == pytest.approx(sum(float(e["dur"]) for e in events))
    triton = [k for k in data["kernels"] if k["kind"] == "triton"]
    assert triton and all(k["compile"] == "0/0" for k in triton)
    assert sum(k["calls"] for k in triton) == sum(
        1 for e in events if str(e["name"]).startswith("triton")
    )
    assert data["unmatched_generated"] == 0 and data["ambiguous_events"] == 0
    assert 0.5 < data["compiled_share"] < 0.6  # the optimizer (eager AdamW) is the rest
    assert data["device_name"] == "NVIDIA H100 80GB HBM3"


def _graph_launched(path: Path) -> tuple[set[int], set[int]]:
    """The correlation ids of the profile's cudaGraphLaunch calls, and of the kernels they
    launched (read with json alone)."""
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    launches = {
        e["args"]["correlation"]
        for e in events
        if e.get("cat") == "cuda_runtime" and e.get("name") == "cudaGraphLaunch"
    }
    kernels = [e for e in events if e.get("cat") == "kernel"]
    return launches, {i for i, e in enumerate(kernels) if e["args"]["correlation"] in launches}


@pytest.mark.parametrize("mode", ["infer", "train"])
def test_kernels_a_cuda_graph_replayed_are_the_compiles_work(fixture_runs: Path, mode: str) -> None:
    """mode="reduce-overhead" on an H100 (tests/benchmarks/gpu_runs/cudagraph_profile.py): one
    cudaGraphLaunch replays every kernel of the graph. Each of them (Triton and cuBLAS alike) is
    0/0's, the input copies before the replay are CUDA-graph overhead, not compiled work."""
    run = fixture_runs / f"h100_cudagraph_profile_{mode}"
    path = run / "prof.json.gz"
    launches, replayed = _graph_launched(path)
    assert launches and replayed
    profile = load_profile(path)
    join = join_profile(load_source(str(run)), profile)
    assert join.replayed == len(replayed)
    graph_rows = [r for r in join.rows if r.op == "CUDA graph"]
    assert {r.kind for r in graph_rows} == {"extern"}  # cuBLAS / CUTLASS GEMMs
    assert all(r.compile is not None and r.compile.id_text == "0/0" for r in graph_rows)
    triton = [r for r in join.rows if r.kind == "triton"]
    assert triton and all(r.compile is not None for r in triton)
    copies = [r for r in join.rows if r.op == "aten::_foreach_copy_"]
    assert copies and {r.kind for r in copies} == {"overhead"}
    data = profile_json(join, profile)
    assert data["time_by_kind_us"]["overhead"] == pytest.approx(sum(r.time_us for r in copies))
    extern = sum(r.time_us for r in graph_rows)
    assert extern / join.total_us > 0.75  # the GEMMs are most of the GPU time


def test_a_replay_without_cpu_ranges_is_joined_by_its_graph(
    fixture_runs: Path, tmp_path: Path
) -> None:
    """Without the compiled graph's CPU ranges around the launch (a profile whose CPU side
    lacks them), the GEMMs of a replay still belong to the compile its Triton kernels name."""
    run = fixture_runs / "h100_cudagraph_profile_infer"
    data = json.loads(gzip.decompress((run / "prof.json.gz").read_bytes()))
    data["traceEvents"] = [
        e
        for e in data["traceEvents"]
        if not str(e.get("name", "")).startswith(("## Call ", "Torch-Compiled Region"))
    ]
    stripped = tmp_path / "stripped.json.gz"
    stripped.write_bytes(gzip.compress(json.dumps(data).encode()))
    join = join_profile(load_source(str(run)), load_profile(stripped))
    gemms = [r for r in join.rows if r.op == "CUDA graph"]
    assert gemms and all(r.compile is not None and r.kind == "extern" for r in gemms)
    assert join.compiled_share > 0.9


def test_profiles_beside_the_trace_are_named_not_skipped(
    fixture_runs: Path, tmp_path: Path
) -> None:
    """A run directory holding torch.profiler traces (export_chrome_trace's prof.json.gz, a
    tensorboard folder's *.pt.trace.json.gz) says they are profiles --profile joins, never
    "skipped files"; a JSON file that is not a profile is still skipped."""
    from tcview.report.summary import summary_document, summary_text

    run = tmp_path / "run"
    shutil.copytree(fixture_runs / "h100_gpt2_profile", run)
    (run / "metrics.json").write_text('{"loss": [1.0, 0.5]}')
    model = load_source(str(run), cache=False)
    data = summary_document(model)
    assert sorted(Path(p).name for p in data["profiles_found"]) == [
        "prof.json.gz",
        "vm_541.1795587557574178922.pt.trace.json.gz",
    ]
    assert [Path(s["path"]).name for s in data["skipped"]] == ["metrics.json"]
    text = summary_text(model)
    assert "Profiles here, not joined (2): --profile PATH joins one" in text
    skipped = text.split("Skipped files", 1)[1]
    assert "metrics.json" in skipped and "prof.json.gz" not in skipped
