"""tests/benchmarks/gpu_verify.py's reading of `tcview show --json`'s autotune section (its step
e_autotune, which only a GPU machine runs): the section's summary row is no op."""

from __future__ import annotations

import sys
import tarfile
from pathlib import Path
from typing import Any

from extract import extract

from tcview.ingest.source import load_source
from tcview.report.show import show_detail

BENCHMARKS = Path(__file__).resolve().parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

from gpu_verify import autotune_ops  # noqa: E402 - from the benchmarks folder, put on the path

RUNS = Path(__file__).resolve().parent / "fixtures" / "runs"


def op_rows(op: str, winner: str, choices: list[str]) -> list[dict[str, Any]]:
    """An op's rows as `show --json` writes them (detail.py's `_autotune_section`)."""
    rows: list[dict[str, Any]] = [
        {"label": "", "value": op, "tag": "autotune", "bullet": True},
        {"label": "winner", "value": f"{winner}  0.0208 ms", "tag": "winner", "depth": 1},
        {"label": "kernel", "value": "triton_tem_fused_addmm_0", "tag": "kernel", "depth": 1},
        {"label": "", "value": "21 choices · benchmarked in 415ms", "tag": "dim", "depth": 1},
    ]
    for name in choices:
        tag = "winner" if name == winner else "choice"
        rows.append({"label": "", "value": f"{name}  0.02 ms", "tag": tag, "depth": 2})
    rows.append({"label": "", "value": "the 2 fastest of 21", "tag": "dim", "depth": 2})
    return rows


def section(*rows: dict[str, Any]) -> dict[str, Any]:
    return {"heading": "autotuning 8.36s", "tag": "autotune", "rows": list(rows)}


SUMMARY = {
    "label": "time",
    "value": "2 op(s) 7.57s + benchmarking fused kernels 420ms",
    "tag": "autotune",
}
SPLIT = {"label": "", "value": "forward 6.1s · backward 2.2s", "tag": "dim"}


def test_the_summary_row_is_no_op() -> None:
    rows = [
        SUMMARY,
        SPLIT,
        *op_rows("addmm(512x4096, 512x1024, 1024x4096)", "triton_mm_18", ["triton_mm_18", "mm_1"]),
        *op_rows("addmm(512x1024, 512x4096, 4096x1024)", "triton_mm_28", ["triton_mm_28", "mm_2"]),
    ]
    got = autotune_ops({"0/0": [section(*rows)]})
    assert [op["op"] for op in got["ops"]] == [
        "addmm(512x4096, 512x1024, 1024x4096)",
        "addmm(512x1024, 512x4096, 4096x1024)",
    ]
    assert all(op["winner_first"] and len(op["choices"]) == 2 for op in got["ops"])
    assert [op["kernel"] for op in got["ops"]] == ["triton_tem_fused_addmm_0"] * 2
    assert got["summaries"] == [{"compile": "0/0", "text": SUMMARY["value"], "ops": 2, "listed": 2}]
    assert got["ok"]


def test_what_fails() -> None:
    choices = ["triton_mm_18", "mm_1"]
    good = op_rows("mm(8x8, 8x8)", "triton_mm_18", choices)
    # the winner is not the fastest choice listed
    late = op_rows("mm(8x8, 8x8)", "triton_mm_18", choices[::-1])
    assert not autotune_ops({"0/0": [section(*late)]})["ok"]
    # the summary counts an op that is not listed
    assert not autotune_ops({"0/0": [section(SUMMARY, *good)]})["ok"]
    # no op at all
    assert not autotune_ops({"0/0": [section(SUMMARY)]})["ok"]
    assert not autotune_ops({})["ok"]
    # without a summary row (a tcview before it), the ops alone decide
    assert autotune_ops({"0/0": [section(*good)]})["ok"]


def test_an_h100_run_of_the_fixtures(tmp_path: Path) -> None:
    """What tcview shows for the fixtures' H100 max-autotune run (gpu_verify --cpu's stand-in
    for the job it runs on a GPU) reads as its three autotuned ops."""
    with tarfile.open(RUNS / "autotune.tar.xz") as tar:
        extract(tar, tmp_path)
    model = load_source(str(tmp_path / "autotune"))
    try:
        found = {
            c.id_label: [
                s
                for s in show_detail(model, c.id_label).to_json()["sections"]
                if s["tag"] == "autotune"
            ]
            for c in model.compiles
        }
    finally:
        model.close()
    got = autotune_ops(found)
    assert got["ok"], got
    assert [(op["compile"], op["op"].split("(")[0]) for op in got["ops"]] == [
        ("0/0", "addmm"),
        ("0/0", "addmm"),
        ("1/0", "bmm"),
    ]
    assert [(s["ops"], s["listed"]) for s in got["summaries"]] == [(2, 2), (1, 1)]
