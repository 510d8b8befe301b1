"""The findings corpus (tests/fixtures/corpus): its cases, their labels, and the score of a
list of findings against them (see the corpus's README for the labels' meaning)."""

from __future__ import annotations

import json
import re
import shutil
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conftest import FIXTURES
from extract import extract

from tcview.analysis.finding import Finding

CORPUS = FIXTURES / "corpus"
ARCHIVE = "run.tar.xz"  # a case's trace/ and torch_logs.txt


def cases() -> list[Path]:
    return sorted(p.parent for p in CORPUS.glob("*/expect.json"))


def labels(case: Path) -> dict[str, Any]:
    value = json.loads((case / "expect.json").read_text())
    assert isinstance(value, dict)
    return value


_UNPACKED: dict[Path, Path] = {}


def run_dir(case: Path) -> Path:
    """The case as a run directory (its trace and torch_logs.txt unpacked from run.tar.xz
    into a temporary folder, once a session; the tests never write into fixtures)."""
    if case not in _UNPACKED:
        dest = Path(tempfile.mkdtemp(prefix=f"corpus-{case.name}-"))
        for item in case.iterdir():
            if item.is_file() and item.name != ARCHIVE:
                shutil.copy(item, dest / item.name)
        with tarfile.open(case / ARCHIVE) as tar:
            extract(tar, dest)
        _UNPACKED[case] = dest
    return _UNPACKED[case]


def _where(f: Finding) -> str | None:
    if not f.where:
        return None
    return f"{str(f.where.get('file', '')).rsplit('/', 1)[-1]}:{f.where.get('line')}"


def _said(f: Finding) -> str:
    return f"{f.title}\n{f.detail}"


def matches(label: dict[str, Any], f: Finding) -> bool:
    """Whether a finding meets a must_say or may_say label."""
    if "kind" in label and f.kind.value not in label["kind"]:
        return False
    if "where" in label and _where(f) not in label["where"]:
        return False
    said = _said(f).lower()
    if any(w.lower() not in said for w in label.get("all", [])):
        return False
    if label.get("any") and not any(w.lower() in said for w in label["any"]):
        return False
    if label.get("no_fix") and f.fix:
        return False
    fix = f.fix.lower()
    return not label.get("fix_any") or any(w.lower() in fix for w in label["fix_any"])


def wrong(label: dict[str, Any], f: Finding) -> bool:
    """Whether a finding says what a must_not_say label forbids (every condition it gives)."""
    conditions = []
    if "kind" in label:
        conditions.append(f.kind.value in label["kind"])
    if "text" in label:
        conditions.append(re.search(label["text"], f"{_said(f)}\n{f.fix}") is not None)
    if "where" in label:
        conditions.append(_where(f) in label["where"])
    return bool(conditions) and all(conditions)


@dataclass
class Score:
    case: str
    right: list[Finding] = field(default_factory=list)
    wrong: list[tuple[Finding, dict[str, Any]]] = field(default_factory=list)
    unlabelled: list[Finding] = field(default_factory=list)
    missed: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.wrong or self.unlabelled or self.missed)

    def report(self) -> str:
        lines = [f"{self.case}: {len(self.right)} right"]
        for f, label in self.wrong:
            lines.append(f"  WRONG {f.kind} {f.title!r} (forbidden: {label})")
        for f in self.unlabelled:
            lines.append(f"  UNLABELLED {f.kind} {f.title!r} at {_where(f)}")
        for label in self.missed:
            shown = {k: v for k, v in label.items() if k != "note"}
            lines.append(f"  MISSED {shown}")
        return "\n".join(lines)


def score(case: Path, found: list[Finding]) -> Score:
    spec = labels(case)
    out = Score(case.name)
    for f in found:
        bad = next((label for label in spec.get("must_not_say", []) if wrong(label, f)), None)
        if bad is not None:
            out.wrong.append((f, bad))
        elif any(matches(label, f) for label in [*spec["must_say"], *spec.get("may_say", [])]):
            out.right.append(f)
        else:
            out.unlabelled.append(f)
    out.missed = [label for label in spec["must_say"] if not any(matches(label, f) for f in found)]
    return out
