"""Entry point: ``tcview open | run | summary | show | diff | grep | export | bench | doctor``."""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeGuard

from tcview.commands.helptext import BENCH_INPUT_HELP, INPUT_HELP
from tcview.commands.pager import emit, emit_json
from tcview.text.safe import safe_line, safe_text
from tcview.text.term import COLOR_MODES, Painter, use_color

if TYPE_CHECKING:
    from tcview.ingest.load import Progress


def _progress_printer(enabled: bool) -> Progress | None:
    if not enabled:
        return None
    state = {"last": 0.0}

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if now - state["last"] < 0.2 and done < total:
            return
        state["last"] = now
        pct = f"{100 * done / total:5.1f}%" if total else ""
        sys.stderr.write(f"\rindexing {done / 1e6:8.1f} MB {pct}")
        if total and done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return progress


def cmd_summary(args: argparse.Namespace) -> int:
    from tcview.commands.failon import SUMMARY_CHECKS, fail_on_exit, found_message, parse_fail_on
    from tcview.commands.results import Kept

    try:
        kinds = parse_fail_on(args.fail_on, SUMMARY_CHECKS)
        path = _summary_path(args)
    except ValueError as exc:
        print(f"tcview: {exc}", file=sys.stderr)
        return 2
    if args.jsonl:
        from tcview.commands.jsonl import jsonl_command

        return jsonl_command(
            args.path,
            verify=args.verify,
            cache=not args.no_cache,
            quiet=args.quiet,
            progress=args.progress,
            kinds=kinds,
        )
    # An unchanged input's report is kept; never one that --verify or --profile asks for.
    what = "summary --json" if args.json else "summary"
    kept = None
    if not (args.no_cache or args.verify or args.profile):
        kept = Kept.of(path, what)
    report = kept.lookup() if kept is not None else None
    if not _is_report(report):
        report = _summary_report(args, path)
        if report is None:
            return 2
        if kept is not None:
            kept.store_report(report)
    data, text = report["document"], report["text"]
    if args.json:
        emit_json(data)
    else:
        emit(paint_summary(safe_text(text), Painter(use_color(args.color, sys.stdout))))
    from tcview.analysis.checks import fail_on

    return fail_on_exit(0, found_message(fail_on(data, kinds)))


def _summary_path(args: argparse.Namespace) -> str:
    """The one input of a report; ValueError for what --jsonl alone takes (several inputs) or
    what it cannot take (--json's indented document, one profile for many runs)."""
    if args.jsonl and args.json:
        raise ValueError("--jsonl and --json: choose one (--jsonl: a compact line per run)")
    if args.jsonl and args.profile:
        raise ValueError("--profile names one run's profile: not with --jsonl")
    if len(args.path) > 1 and not args.jsonl:
        raise ValueError("several inputs need --jsonl (a line per run)")
    path: str = args.path[0]
    return path


def _is_report(report: Any) -> TypeGuard[dict[str, Any]]:
    return (
        isinstance(report, dict)
        and isinstance(report.get("document"), dict)
        and isinstance(report.get("text"), str)
    )


def _summary_report(args: argparse.Namespace, path: str) -> dict[str, Any] | None:
    """`tcview summary`'s JSON document and text report (only the document with --json);
    None when the input cannot be read (said on stderr)."""
    from tcview.commands.inputs import open_input
    from tcview.commands.profile import ProfileMissing, joined
    from tcview.report.summary import input_state, summary_document, summary_parts, summary_text

    # `\r` progress only where a terminal shows it: never in CI logs or redirected stderr.
    show = (args.progress or sys.stderr.isatty()) and not args.quiet
    ts = open_input(path, _progress_printer(show), cache=not args.no_cache)
    if ts is None:
        return None
    from tcview.ingest.parallel import in_child

    parts = summary_parts(ts, verify=args.verify, aside=in_child)
    data = summary_document(ts, verify=args.verify, parts=parts)
    try:
        prof = joined(ts, path, args.profile)
    except ProfileMissing:
        return None
    if prof is not None:
        data["profile"] = prof.json()
    state = input_state(ts, path, live=False, finished=True)
    if state is not None and not args.quiet:  # the counts below are all 0: say why
        print(f"tcview: {safe_line(state.text)}. {state.help}".rstrip(), file=sys.stderr)
    text = ""
    if not args.json:
        text = summary_text(ts, verify=args.verify, parts=parts)
        if prof is not None:
            from tcview.report.detail import render_text

            text += "\n\n" + render_text(prof.detail())
    return {"document": data, "text": text}


def paint_summary(text: str, paint: Painter) -> str:
    """The summary report with its section headings (lines that start a section: not
    indented, after a blank line) in bold, and "The run crashed" in red."""
    lines = text.split("\n")
    out = []
    for i, line in enumerate(lines):
        if line.startswith("The run crashed") or line.startswith("  ERROR "):
            line = paint(line, "bold red")
        elif (
            line.startswith("  WARNING ")
            or line
            and not line[0].isspace()
            and (i == 0 or not lines[i - 1])
        ):
            line = paint(line, "bold")
        out.append(line)
    return "\n".join(out)


def cmd_show(args: argparse.Namespace) -> int:
    """Print what the app shows for one item: a compile, frame or kernel (with its
    provenance), the kernels of FILE:LINE, or the export report."""
    from tcview.commands.inputs import open_input
    from tcview.commands.profile import ProfileMissing, joined
    from tcview.model.objects import Compile, Kernel
    from tcview.report.detail import render_json, render_text
    from tcview.report.profile import PROFILE_ITEM, measured_section
    from tcview.report.show import ShowError, find, show_detail

    model = open_input(args.path)
    if model is None:
        return 2
    text = " ".join(args.item)
    try:
        prof = joined(model, args.path, args.profile)
        if text.strip() == PROFILE_ITEM:
            if prof is None:
                raise ShowError("'profile' needs --profile P (or a run directory holding one)")
            detail = prof.detail()
        else:
            detail = show_detail(model, text)
            item = find(model, text) if prof is not None else None
            if prof is not None and isinstance(item, (Compile, Kernel)):
                measured_section(detail, prof.join, item)
    except ProfileMissing:
        return 2
    except ShowError as exc:
        print(f"tcview: {safe_line(str(exc))}", file=sys.stderr)
        return 2
    finally:
        model.close()
    if args.json:
        emit(render_json(detail))
    else:
        emit(safe_text(render_text(detail)))
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    from tcview.commands.diff import diff_command

    return diff_command(args)


def cmd_open(args: argparse.Namespace) -> int:
    from tcview.commands.open import open_app
    from tcview.ingest.cache import NO_CACHE_ENV

    if args.no_cache:  # the app loads in its own thread: tell it the way the user can
        os.environ[NO_CACHE_ENV] = "1"
    return open_app(args)


def cmd_run(args: argparse.Namespace) -> int:
    from tcview.commands.run import run_command

    return run_command(args)


def cmd_bench(args: argparse.Namespace) -> int:
    from tcview.commands.bench import bench_command

    return bench_command(args)


def cmd_doctor(args: argparse.Namespace) -> int:
    from tcview.commands.doctor import doctor

    return doctor(args.python)


NO_CACHE_HELP = "index every file again; keep nothing in the index cache (TCVIEW_NO_CACHE=1)"


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line; with `only` (a command's name), that command's parser alone, so that
    a command's start imports what its own arguments need and nothing more."""
    parser = argparse.ArgumentParser(
        prog="tcview", description="A terminal UI for torch.compile traces and logs."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, add in COMMANDS.items():
        if only is None or only == name:
            add(sub)
    return parser


def _add_open(sub: Any) -> None:
    from tcview.commands.profile import add_profile_arg

    p_open = sub.add_parser("open", help="browse a trace directory, trace file or TORCH_LOGS text")
    p_open.add_argument("path", nargs="?", help=INPUT_HELP)
    p_open.add_argument("--goto", metavar="TARGET", help="compile id (0/1, !0/1/0) or kernel name")
    p_open.add_argument("--follow", action="store_true", help="keep reading as files grow")
    p_open.add_argument("--poll", action="store_true", help="poll instead of inotify (NFS)")
    p_open.add_argument("--no-cache", action="store_true", help=NO_CACHE_HELP)
    p_open.add_argument("--python", help="Python the bench key (B) runs code with")
    _no_exec(p_open)
    p_open.add_argument(
        "--map-path",
        action="append",
        default=[],
        metavar="FROM=TO",
        help="open trace paths under FROM from TO in $EDITOR (repeatable; longest wins)",
    )
    add_profile_arg(p_open)
    p_open.set_defaults(func=cmd_open)


def _add_summary(sub: Any) -> None:
    from tcview.analysis.checks import FAIL_ON_KINDS
    from tcview.commands.profile import add_profile_arg

    p_sum = sub.add_parser(
        "summary",
        help="print what the compiler did",
        description="Print what went wrong, worst first, then a report; --json for scripts."
        " --jsonl PATH...: one compact line per run, for a fleet's runs (docs/guide/fleet.md):"
        " the --json object with the run's input, started, ended and time_source first; a"
        " directory that holds no trace itself but whose subdirectories do is read as its"
        " subdirectories, a run each; a run that cannot be read gives a line"
        ' {"input", "error"} and the next run is read. Exit codes: 0 done, 1 --fail-on'
        " tripped (with --jsonl: in any run), 2 an input cannot be used (with --jsonl: any"
        " run's; its line says why).",
    )
    p_sum.add_argument("path", nargs="+", help=f"{INPUT_HELP}; several only with --jsonl")
    p_sum.add_argument("--json", action="store_true", help="machine-readable output")
    p_sum.add_argument(
        "--jsonl",
        action="store_true",
        help="one compact JSON line per run (each PATH, or each run of a directory of runs),"
        " on stdout; progress and errors on stderr",
    )
    p_sum.add_argument("--verify", action="store_true", help="hash every payload (md5)")
    p_sum.add_argument(
        "--fail-on",
        metavar="KINDS",
        help=f"exit 1 if any of these exist: {','.join(FAIL_ON_KINDS)}",
    )
    p_sum.add_argument("--no-cache", action="store_true", help=NO_CACHE_HELP)
    p_sum.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    p_sum.add_argument(
        "--progress",
        action="store_true",
        help="progress on stderr even when it is not a terminal",
    )
    p_sum.add_argument(
        "--color", choices=COLOR_MODES, default="auto", help="colour (default: auto)"
    )
    add_profile_arg(p_sum)
    p_sum.set_defaults(func=cmd_summary)


def _add_show(sub: Any) -> None:
    from tcview.commands.profile import add_profile_arg

    p_show = sub.add_parser(
        "show",
        help="print what the app shows for a compile, frame, kernel, FILE:LINE, export or stacks",
        description="Print, as plain text or JSON, the detail the app shows for one item: a"
        " compile id (1/0, [1/0], 0/0 #2 for a later compile episode), 'frame N', a kernel"
        " name (NAME@ID for the one in compile ID; its provenance included) or a provenance"
        " mapping's key (extern_kernels.mm:4), FILE:LINE (the kernels of a user line), or"
        " 'export' (the draft-export report), 'stacks' (the tree of user stacks that led"
        " to every compile), 'findings' (what went wrong, worst first), or 'profile' (with"
        " --profile P: kernels by measured time). Start with 'rank N' or 'pid N' to pick a"
        " process.",
    )
    p_show.add_argument("path", help=INPUT_HELP)
    p_show.add_argument(
        "item", nargs="+", help="compile id, 'frame N', kernel, FILE:LINE, export or stacks"
    )
    p_show.add_argument("--json", action="store_true", help="the same as data")
    add_profile_arg(p_show)
    p_show.set_defaults(func=cmd_show)


def _add_diff(sub: Any) -> None:
    from tcview.analysis.checks import FAIL_ON_CHECKS

    p_diff = sub.add_parser("diff", help="what changed between two runs")
    p_diff.add_argument("a", help="the first run: trace dir/file or TORCH_LOGS capture")
    p_diff.add_argument("b", help="the second run")
    p_diff.add_argument("--json", action="store_true", help="machine-readable output")
    p_diff.add_argument("--text", action="store_true", help="print the report (no viewer)")
    p_diff.add_argument(
        "--fail-on",
        metavar="CHECKS",
        help=f"exit 1 when any trips: {','.join(FAIL_ON_CHECKS).replace('%', '%%')}",
    )
    p_diff.set_defaults(func=cmd_diff)


def _add_run(sub: Any) -> None:
    from tcview.commands.run import add_profile_args

    p_run = sub.add_parser("run", help="run a script under tracing and watch it live")
    p_run.add_argument("--dir", help="run directory (default ./tcview_runs/<time>-<name>/)")
    p_run.add_argument("--logs", default="graph_breaks,recompiles", help="TORCH_LOGS for the child")
    p_run.add_argument("--env", action="append", default=[], metavar="K=V", help="extra env")
    p_run.add_argument("--python", help="Python to run the script with")
    p_run.add_argument("--no-tui", action="store_true", help="headless: stream output, summary")
    p_run.add_argument("--fail-on", metavar="KINDS", help="with --no-tui: exit 1 on these")
    _no_exec(p_run)
    p_run.add_argument(
        "--map-path",
        action="append",
        default=[],
        metavar="FROM=TO",
        help="open trace paths under FROM from TO in $EDITOR (repeatable; longest wins)",
    )
    add_profile_args(p_run)
    p_run.add_argument(
        "-m",
        dest="module",
        nargs=argparse.REMAINDER,
        metavar="MODULE [ARGS]",
        help="run a module, like python -m (the rest of the line is its arguments)",
    )
    p_run.add_argument("target", nargs=argparse.REMAINDER, help="script.py [args] or -- CMD...")
    p_run.set_defaults(func=cmd_run)


def _add_bench(sub: Any) -> None:
    from tcview.run.bench import DEFAULT_REPEAT, DEFAULT_TIMEOUT_S, DEFAULT_TIMES

    p_bench = sub.add_parser(
        "bench",
        help="time a compiled graph on this machine, and each kernel's share (asks first)",
        description="Run a compile's output code (or the one that defines --kernel) with its"
        " own benchmark harness in your Python, in a private temporary directory and a process"
        " group of its own, and print the graph's time and each kernel's time, share and GB/s."
        " This runs code from the trace: it shows what will run and asks first (--yes to"
        " confirm without a terminal). Refused when this machine lacks the code's device or"
        " its torch differs from the trace's.",
    )
    p_bench.add_argument("path", help=BENCH_INPUT_HELP)
    p_bench.add_argument("--compile", metavar="ID", help="compile id (1/0, 'rank 1 0/0')")
    p_bench.add_argument("--kernel", metavar="NAME", help="the graph that defines this kernel")
    p_bench.add_argument("--json", action="store_true", help="the result as data")
    p_bench.add_argument("--python", help="Python to run it with (default: this one)")
    p_bench.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S", help="seconds"
    )
    p_bench.add_argument("--times", type=int, default=DEFAULT_TIMES, help="calls per timing")
    p_bench.add_argument("--repeat", type=int, default=DEFAULT_REPEAT, help="timings (median)")
    p_bench.add_argument("--yes", action="store_true", help="run without asking")
    _no_exec(p_bench)
    p_bench.set_defaults(func=cmd_bench)


def _add_grep(sub: Any) -> None:
    from tcview.commands import grep

    grep.add_parser(sub)


def _add_export(sub: Any) -> None:
    from tcview.commands import export

    export.add_parser(sub)


def _add_doctor(sub: Any) -> None:
    p_doc = sub.add_parser("doctor", help="show the Python, torch, triton, CUDA and GPU seen")
    p_doc.add_argument("--python", help="Python to ask (default: this one)")
    p_doc.set_defaults(func=cmd_doctor)


# Each command's parser, in the order the help lists them.
COMMANDS: dict[str, Callable[[Any], None]] = {
    "open": _add_open,
    "summary": _add_summary,
    "show": _add_show,
    "diff": _add_diff,
    "run": _add_run,
    "bench": _add_bench,
    "grep": _add_grep,
    "export": _add_export,
    "doctor": _add_doctor,
}


def _no_exec(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-exec",
        action="store_true",
        help="never run code from the trace (benchmarks); also TCVIEW_NO_EXEC=1",
    )


# An index is millions of objects that live as long as the process, and the collector's
# defaults (700, 10, 10) walked them again and again: `summary` of a 541 MB trace 8% and of
# 128 ranks 9% faster with these (medians of 5-6, tests/benchmarks/PROFILE.md). What the
# index makes is freed by reference counts; few of its objects are ever garbage cycles.
GC_THRESHOLDS = (100_000, 20, 100)


def main(argv: list[str] | None = None) -> int:
    """The `tcview` command; without `argv`, the process's entry point (it exits after)."""
    entry = argv is None
    if argv is None:
        argv = sys.argv[1:]
        gc.set_threshold(*GC_THRESHOLDS)
    # Bare `tcview` opens what `tcview open` would: $TORCH_TRACE or the newest trace under `.`.
    argv = argv or ["open"]
    args, unknown = build_parser(argv[0] if argv[0] in COMMANDS else None).parse_known_args(argv)
    if unknown:  # the whole command line says so, with its usage
        args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    finally:
        if entry:
            # The process ends now: its last garbage collection would walk the whole model
            # (a 541 MB trace's reopen: 85 ms of about 0.5 s, 14 ms frozen; medians of 6).
            gc.freeze()


if __name__ == "__main__":
    sys.exit(main())
