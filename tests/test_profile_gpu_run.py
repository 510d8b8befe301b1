"""The profile join on a real H100 run: a compiled GPT-2 trained with AdamW, profiled with
export_chrome_trace and with tensorboard_trace_handler, with and without unique kernel names
(tests/fixtures/runs/h100_gpt2_profile*, made by tests/benchmarks/gpu_runs/gpt2_profile.py)."""

from __future__ import annotations

import gzip
import json
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
