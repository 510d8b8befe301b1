"""A compile one of whose graphs ran as a CUDA graph is not "no cudagraphs" (H100 runs, torch
2.11, graph_partition on): cudagraphs_partial, a training step whose forward mutates an input
(its CUDA graph skipped when it first runs) while its backward's partition_0 is recorded; and
partitions, whose custom op tagged cudagraph_unsafe is left out of the CUDA graphs around it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import TCVIEW_CLI
from ui_helpers import REPO

from tcview.analysis.cudagraphs import cudagraph_counts, model_cudagraphs
from tcview.ingest.source import load_source


def test_a_skipped_forward_and_a_recorded_backward_is_partly_used(fixture_runs: Path) -> None:
    model = load_source(str(fixture_runs / "cudagraphs_partial"))
    (comp,) = model.compiles
    found = model_cudagraphs(model, comp)
    assert found is not None
    assert found.state == "partly" and found.mark == "cudagraphs (partly)"
    assert found.skips == ["mutated inputs (1 instances)"]
    assert found.text == "partly: mutated inputs (1 instances)"
    assert cudagraph_counts(model) == {"used": 1, "skipped": 0}
    shown = subprocess.run(
        [
            *TCVIEW_CLI,
            "show",
            str(fixture_runs / "cudagraphs_partial"),
            "0/0",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    section = shown[shown.index("CUDA graphs") :].split("\n\n")[0].splitlines()
    assert section[1].split() == ["state", "used", "for", "part", "of", "the", "compile"]
    assert "skipped       a graph of this compile was not recorded: mutated inputs" in section[2]


def test_an_unsafe_op_between_partitions_is_left_out(fixture_runs: Path) -> None:
    model = load_source(str(fixture_runs / "partitions"))
    split, whole = model.compiles
    found = model_cudagraphs(model, split)
    assert found is not None and found.state == "partly" and not found.skips
    assert found.reasons == ["CUDAGraph-unsafe custom ops"]
    assert found.partitions == "3 graph partitions: 2 cudagraphable, 1 non-cudagraphable"
    other = model_cudagraphs(model, whole)
    assert other is not None and other.state == "used"
