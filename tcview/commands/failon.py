"""The one ``--fail-on`` policy of the commands (`summary`, `run --no-tui` and the TUI, `diff`).

A value is a comma-separated list of checks; a name outside what the command can check is an
error (exit 2, listing the names it knows) before any work is done. After the work, each check
that tripped is printed on stderr and the exit code becomes 1 (a job that failed keeps its own
code). What each check means stays with its data: `tcview.analysis.checks.fail_on` for a
summary's kinds, `tcview.analysis.rundiff.diff_fail_on` for a run diff.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

from tcview.analysis.checks import FAIL_ON_CHECKS, FAIL_ON_KINDS, SLOWER
from tcview.text.safe import safe_line


@dataclass(frozen=True)
class Checks:
    """What a command's ``--fail-on`` can name."""

    names: tuple[str, ...]  # as the help and the error list them
    pattern: re.Pattern[str] | None = None  # the names with a parameter (``slower:N%``)

    def known(self, name: str) -> bool:
        if self.pattern is not None:
            return bool(self.pattern.match(name)) or name in self.names[:-1]
        return name in self.names


SUMMARY_CHECKS = Checks(FAIL_ON_KINDS)
DIFF_CHECKS = Checks(FAIL_ON_CHECKS, SLOWER)  # its last name is the pattern's: slower:N%


def parse_fail_on(text: str | None, checks: Checks) -> list[str]:
    """The checks of a ``--fail-on`` value; ValueError names the unknown ones."""
    names = [c.strip() for c in (text or "").split(",") if c.strip()]
    unknown = [c for c in names if not checks.known(c)]
    if unknown:
        raise ValueError(f"--fail-on: unknown {', '.join(unknown)} (use {','.join(checks.names)})")
    return names


def found_message(present: list[str]) -> list[str]:
    """The stderr message for summary kinds that are present (none when none are)."""
    return [f"found {', '.join(present)}"] if present else []


def fail_on_exit(code: int, tripped: list[str]) -> int:
    """Print what tripped; the exit code (1 when something tripped and the code was 0)."""
    for message in tripped:
        print(f"tcview: {safe_line(message)}", file=sys.stderr)
    return 1 if tripped and code == 0 else code
