"""``tcview diff RUN_A RUN_B``: what changed between two runs (trace dirs or captures).

Interactive on a terminal (the frames of both runs side by side, leading to their compiles and
the compile diffs, above the rest of the report); ``--text`` (or a pipe) prints the report,
``--json`` the same as data (both through `pager.emit`, as the other commands' text), and
``--fail-on CHECKS`` makes it a CI gate (exit 1, naming what tripped).
"""

from __future__ import annotations

import argparse
import sys

from tcview.commands.pager import emit, emit_json
from tcview.text.safe import safe_text


def diff_command(args: argparse.Namespace) -> int:
    from tcview.analysis.rundiff import diff_fail_on, run_diff
    from tcview.commands.failon import DIFF_CHECKS, fail_on_exit, parse_fail_on
    from tcview.commands.inputs import open_input
    from tcview.report.diffreport import run_diff_lines

    try:
        checks = parse_fail_on(args.fail_on, DIFF_CHECKS)
    except ValueError as exc:
        print(f"tcview: {exc}", file=sys.stderr)
        return 2
    for path in (args.a, args.b):
        if path == "-":
            print("tcview: diff reads two files or directories, not stdin", file=sys.stderr)
            return 2
    a, b = open_input(args.a), None
    b = open_input(args.b) if a is not None else None
    if a is None or b is None:
        if a is not None:
            a.close()
        return 2
    diff = run_diff(a, b, args.a, args.b)
    if args.json:
        emit_json(diff.to_json())
    elif args.text or checks or not (sys.stdout.isatty() and sys.stdin.isatty()):
        emit(safe_text("\n".join(row[1] for row in run_diff_lines(diff))))
    else:
        from tcview.commands.config import keymap_or_say
        from tcview.ui.diffview import DiffApp

        keymap = keymap_or_say("tcview diff")
        if keymap is None:
            return 2
        DiffApp(diff, keymap).run()
    return fail_on_exit(0, [f"diff --fail-on {m}" for m in diff_fail_on(diff, checks)])
