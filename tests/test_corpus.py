"""The findings of every run of the labelled corpus (tests/fixtures/corpus), scored against
what a careful engineer expects: no finding is wrong, none is unaccounted for, and every
must-say is said."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest
from corpus import cases, labels, run_dir, score
from extract import extract

from tcview.analysis.findings import findings
from tcview.ingest.source import load_source

CASES = cases()


def test_the_corpus_has_thirty_runs_cpu_and_gpu() -> None:
    assert len(CASES) >= 30
    devices = {(c / "expect.json").read_text().count('"device": "gpu"') > 0 for c in CASES}
    assert devices == {True, False}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_findings_on_the_corpus(case: Path) -> None:
    found = findings(load_source(str(run_dir(case)), cache=False))
    result = score(case, found)
    assert result.ok, result.report()


RECORDED = [c for c in CASES if "recorded" in labels(c).get("fix_check", {})]


@pytest.mark.parametrize("case", RECORDED, ids=[c.name for c in RECORDED])
def test_a_fix_made_on_the_gpu_removes_the_problem(case: Path, tmp_path: Path) -> None:
    """A GPU run's fix cannot run in CI: the same script with its fix applied was run on the
    GPU beside the run itself, and its trace is kept."""
    check = labels(case)["fix_check"]
    with tarfile.open(case / check["recorded"]) as tar:
        extract(tar, tmp_path)
    model = load_source(str(tmp_path), cache=False)
    assert model.compiles  # the fixed run compiled
    fixed = findings(model)
    assert not [f.title for f in fixed if f.kind.value in check["gone"]]
    assert not [f for f in fixed if f.severity.value == "error"]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_stderr_capture_alone_says_nothing_wrong(case: Path) -> None:
    """Users often have only the TORCH_LOGS text (`2> log.txt`): it holds less (no frames'
    stacks, no output code), so a must-say may be missed, but nothing said may be wrong."""
    found = findings(load_source(str(run_dir(case) / "torch_logs.txt"), cache=False))
    result = score(case, found)
    assert not result.wrong, result.report()
