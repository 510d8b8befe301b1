"""`tcview export`: a Chrome trace for Perfetto (`--perfetto OUT.json`), or a Markdown report
(`--markdown`, to stdout or `-o FILE`). Never written into the trace's own directory."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from tcview.commands.helptext import INPUT_HELP
from tcview.commands.pager import emit
from tcview.text.safe import safe_line


def cmd_export(args: argparse.Namespace) -> int:
    from tcview.analysis.paths import inside_trace
    from tcview.commands.inputs import open_input
    from tcview.report.markdown import markdown_report
    from tcview.report.perfetto import write_perfetto

    path = args.path
    out_path = args.perfetto or args.output
    model = open_input(path)
    if model is None:
        return 2
    if out_path and out_path != "-":
        inside = inside_trace(out_path, model)
        if inside is not None:
            print(
                f"tcview export: {safe_line(out_path)} is inside the trace directory "
                f"{safe_line(str(inside))}: tcview never writes there; choose another path",
                file=sys.stderr,
            )
            return 2
    try:
        if args.perfetto:
            with _open_out(args.perfetto) as fh:
                stats = write_perfetto(model, fh)
            where = "stdout" if args.perfetto == "-" else args.perfetto
            if not stats.processes:
                print(
                    "tcview export: no trace files here (TORCH_LOGS text has no timing events)",
                    file=sys.stderr,
                )
            print(
                f"tcview export: {stats.complete} complete events (from B/E pairs), "
                f"{stats.instants} instants, {stats.unmatched} unmatched B/E, "
                f"{stats.processes} process(es) -> {safe_line(where)}",
                file=sys.stderr,
            )
            return 0
        report = markdown_report(model, path=path)
        if args.output and args.output != "-":
            with _open_out(args.output) as fh:
                fh.write(report)
            print(
                f"tcview export: {len(report.encode())} bytes -> {safe_line(args.output)}",
                file=sys.stderr,
            )
        else:
            emit(report)
        return 0
    except OSError as exc:
        print(f"tcview export: {safe_line(str(out_path))}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    finally:
        model.close()


class _open_out:
    """A file to write (stdout for ``-``), replaced only when complete."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.tmp = f"{path}.tcview-tmp"
        self.fh: Any = None

    def __enter__(self) -> Any:
        if self.path == "-":
            return sys.stdout
        self.fh = open(self.tmp, "w", encoding="utf-8")
        return self.fh

    def __exit__(self, kind: object, value: object, tb: object) -> None:
        if self.fh is None:
            return
        self.fh.close()
        if kind is None:
            os.replace(self.tmp, self.path)
        else:
            os.unlink(self.tmp)


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "export",
        help="export for other tools: a Perfetto trace, or a Markdown report",
        description="--perfetto OUT.json writes the compile-time chromium events of every "
        "file as one Chrome trace (ranks as processes) for ui.perfetto.dev or "
        "chrome://tracing; --markdown writes a report to paste into a GitHub issue.",
    )
    p.add_argument("path", help=INPUT_HELP)
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--perfetto", metavar="OUT.json", help="write a Chrome trace JSON file")
    what.add_argument("--markdown", action="store_true", help="write a Markdown report")
    p.add_argument("-o", "--output", metavar="FILE", help="with --markdown: a file (else stdout)")
    p.set_defaults(func=cmd_export)
