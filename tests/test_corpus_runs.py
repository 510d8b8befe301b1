"""The corpus's CPU runs made again with the torch installed here (CI: `.ci/run` installs
torch 2.13), each twice: as it is, whose findings must still meet the labels, and with the
fix its labels name applied (`TCVIEW_FIX=1`), where the problem must be gone.

Every fix tcview gives on the corpus is shown to work this way: the same small script, the
fix applied, fewer compiles or no break, failure or crash."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import needs_torch
from corpus import cases, labels, score

from tcview.analysis.findings import findings
from tcview.ingest.source import load_source

CPU = [c for c in cases() if labels(c).get("device") != "gpu"]
FIXED = [c for c in CPU if "fix_check" in labels(c)]
pytestmark = [needs_torch, pytest.mark.slow]


def _run(case: Path, tmp: Path, fix: bool) -> Path:
    """The case's script run in `tmp` as make.sh runs it: an empty Inductor cache."""
    (tmp / "script.py").write_bytes((case / "script.py").read_bytes())
    env = {
        **os.environ,
        "TORCH_TRACE": "trace",
        "TORCH_LOGS": "recompiles,graph_breaks,guards",
        "TORCHINDUCTOR_CACHE_DIR": str(tmp / "cache"),
        "TCVIEW_FIX": "1" if fix else "0",
    }
    with open(tmp / "torch_logs.txt", "wb") as err, open(tmp / "stdout.txt", "wb") as out:
        subprocess.run(
            [sys.executable, "script.py"], cwd=tmp, env=env, stdout=out, stderr=err, timeout=240
        )
    return tmp


@pytest.mark.parametrize("case", CPU, ids=[c.name for c in CPU])
def test_a_fresh_run_meets_its_labels(case: Path, tmp_path: Path) -> None:
    run = _run(case, tmp_path, fix=False)
    result = score(case, findings(load_source(str(run), cache=False)))
    assert result.ok, result.report()


@pytest.mark.parametrize("case", FIXED, ids=[c.name for c in FIXED])
def test_the_fix_removes_the_problem(case: Path, tmp_path: Path) -> None:
    check = labels(case)["fix_check"]
    model = load_source(str(_run(case, tmp_path, fix=True)), cache=False)
    left = [f for f in findings(model) if f.kind.value in check.get("gone", [])]
    assert not left, [f.title for f in left]
    per_frame = Counter(id(c.frame) for c in model.compiles if c.frame is not None)
    most = max(per_frame.values(), default=0)
    assert most <= check.get("max_frame_compiles", most), json.dumps(check)
    assert not model.run_errors(), [e.headline for e in model.run_errors()]


def test_every_case_with_a_fix_in_its_labels_checks_it() -> None:
    """A label that asks for a fix has a fix check, so the fix is shown to work."""
    for case in CPU:
        spec = labels(case)
        if any(m.get("fix_any") for m in spec["must_say"]):
            assert "fix_check" in spec, case.name
