"""`tcview grep PATTERN PATH`: the global search for scripts.

One line per matching line, ``compile · artifact · line: text`` (the compile with its rank or
file first when the input has several), or JSON Lines with ``--json``. Exit status as grep's:
0 when something matched, 1 when nothing did, 2 on an error.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tcview.commands.helptext import INPUT_HELP
from tcview.commands.pager import Pager
from tcview.model.objects import Model
from tcview.report.search import Case, Hit, Query, QueryError, Search, place_of
from tcview.text.safe import safe_line
from tcview.text.term import Painter, use_color

# Styles of the parts of a result line (grep's own: a purple name, green numbers, red match).
STYLE = {"compile": "magenta", "artifact": "cyan", "line": "green", "match": "bold red"}


def result_line(hit: Hit, model: Model, paint: Painter) -> str:
    """``0/0 · output code › kernel triton_poi_x · 57: text`` with the matches marked."""
    comp = hit.compile
    where = " ".join(p for p in (place_of(hit, model), comp.id_label if comp else "-") if p)
    text = marked(hit, paint)
    return (
        f"{paint(safe_line(where), STYLE['compile'])} · "
        f"{paint(safe_line(hit.where), STYLE['artifact'])} · "
        f"{paint(str(hit.line), STYLE['line'])}: {text}"
    )


def marked(hit: Hit, paint: Painter) -> str:
    """The line made safe to print, each match painted."""
    out: list[str] = []
    pos = 0
    text = hit.text
    for start, end in hit.spans:
        out.append(safe_line(text[pos:start]))
        out.append(paint(safe_line(text[start:end]), STYLE["match"]))
        pos = end
    out.append(safe_line(text[pos:]))
    return "".join(out)


def result_json(hit: Hit, model: Model) -> dict[str, Any]:
    rec = hit.record
    source = hit.source
    comp = hit.compile
    return {
        "file": str(hit.path) if hit.path is not None else None,
        "source": source.display if source is not None else None,
        "rank": source.rank if source is not None else None,
        "place": place_of(hit, model) or None,
        "compile": comp.id_label if comp is not None else None,
        "artifact": hit.artifact,
        "kind": rec.label if rec is not None else None,
        "kernel": hit.kernel.name if hit.kernel is not None else None,
        "line": hit.line,
        "text": hit.text,
        "spans": [list(span) for span in hit.spans],
        "offset": hit.offset,
    }


def cmd_grep(args: argparse.Namespace) -> int:
    from tcview.commands.inputs import open_input

    case: Case = "ignore" if args.ignore_case else "match" if args.case_sensitive else "smart"
    query = Query(args.pattern, regex=bool(args.regex), case=case)
    try:
        query.byte_pattern()
    except QueryError as exc:
        print(f"tcview grep: {exc}", file=sys.stderr)
        return 2
    model = open_input(args.path)
    if model is None:
        return 2
    search = Search(model, query, limit=max(0, args.max_count or 0))
    paint = Painter(use_color(args.color, sys.stdout))
    found = 0
    with Pager() as out:
        for hit in search.run():
            found += 1
            if args.json:
                out.write(json.dumps(result_json(hit, model), ensure_ascii=False) + "\n")
            else:
                out.write(result_line(hit, model, paint) + "\n")
    for problem in search.problems:
        print(f"tcview grep: {safe_line(problem)}", file=sys.stderr)
    model.close()
    return 0 if found else 1


def add_parser(sub: Any) -> None:
    """`tcview grep`'s arguments (sub: the CLI's subparsers)."""
    from tcview.text.term import COLOR_MODES

    p = sub.add_parser(
        "grep",
        help="search every payload of a trace (graphs, guards, code, kernels, logs)",
        description="Print each matching line as `compile · artifact · line: text`. Not "
        "searched: chromium timing events, the string table, describe_* input metadata. "
        "Exit status 0 when a line matched, 1 when none did, 2 on an error.",
    )
    p.add_argument("pattern", help="text to find (a regex with -E)")
    p.add_argument("path", help=INPUT_HELP)
    p.add_argument("-E", "--regex", action="store_true", help="PATTERN is a regular expression")
    case = p.add_mutually_exclusive_group()
    case.add_argument(
        "-i", "--ignore-case", action="store_true", help="ignore case (default: smart case)"
    )
    case.add_argument(
        "-s", "--case-sensitive", action="store_true", help="match case even without capitals"
    )
    p.add_argument("-m", "--max-count", type=int, metavar="N", help="stop after N lines")
    p.add_argument("--json", action="store_true", help="one JSON object per matching line")
    p.add_argument("--color", choices=COLOR_MODES, default="auto", help="colour (default: auto)")
    p.set_defaults(func=cmd_grep)
