"""What ``--fail-on`` can name, and how a summary's kinds are judged: names and plain data
only, so that a command reads them without loading the analyses (`tcview.commands.failon`
parses the values; `tcview.analysis.rundiff.diff_fail_on` judges a run diff's checks)."""

from __future__ import annotations

import re
from typing import Any

SEVERITIES = ("error", "warning", "info")  # of findings, worst first

# What summary --fail-on can name: a count of summary --json, "divergence" (its ranks compiled
# differently: a check of its `divergence` has more than one group), or a severity of its
# `findings`: "errors" (a finding of severity error: a crash, a recompile limit hit, a compile
# that failed), "warnings" (one of severity warning or error).
FAIL_ON_KINDS = ("graph_breaks", "recompiles", "failures", "errors", "warnings", "divergence")
FINDING_KINDS = {"errors": "error", "warnings": "warning"}

# What diff --fail-on can name.
FAIL_ON_CHECKS = (
    "new-breaks",
    "new-recompiles",
    "new-failures",
    "new-errors",
    "new-frames",
    "changed-kernels",
    "new-kernels",
    "slower:N%",
)
SLOWER = re.compile(r"^slower:(\d+(?:\.\d+)?)%?$")  # the one check with a parameter


def fail_on(summary: dict[str, Any], kinds: list[str]) -> list[str]:
    """The named kinds that are present in a summary document (non-zero; for "divergence", a
    check with more than one group of ranks)."""
    return [k for k in kinds if _present(summary, k)]


def _present(summary: dict[str, Any], kind: str) -> bool:
    if kind in FINDING_KINDS:
        worst = SEVERITIES.index(FINDING_KINDS[kind])
        return any(SEVERITIES.index(f["severity"]) <= worst for f in summary.get("findings", []))
    if kind == "divergence":
        checks = [*summary.get("divergence", {}).values(), summary.get("exec_order_groups", [])]
        return any(len(groups) > 1 for groups in checks)
    return bool(summary.get(kind))
