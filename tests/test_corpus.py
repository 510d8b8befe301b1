"""The findings of every run of the labelled corpus (tests/fixtures/corpus), scored against
what a careful engineer expects: no finding is wrong, none is unaccounted for, and every
must-say is said."""

from __future__ import annotations

from pathlib import Path

import pytest
from corpus import cases, run_dir, score

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
