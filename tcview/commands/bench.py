"""`tcview bench PATH --compile 1/0`: benchmark a compiled graph headless (see run/bench.py).

It prints what will run, then asks on a terminal; in a pipe it runs only with ``--yes``.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading

from tcview.commands.inputs import open_input
from tcview.model.objects import Compile, Kernel, Model
from tcview.report.items import ShowError, find
from tcview.run.bench import BenchJob, BenchPlan, BenchRefused, BenchResult, plan_bench
from tcview.text.safe import safe_line, safe_text

EXIT_REFUSED = 2  # nothing ran: refused, not confirmed, or a bad argument
EXIT_FAILED = 1  # declined, or the benchmark failed


def pick_target(model: Model, compile_id: str | None, kernel: str | None) -> Compile | Kernel:
    """The compile (or kernel) the arguments name; without either, the input's only compile
    with output code. ShowError when it names nothing or several things."""
    if kernel:
        item = find(model, kernel)
        if not isinstance(item, Kernel):
            raise ShowError(f"{kernel!r} is not a kernel")
        return item
    if compile_id:
        item = find(model, compile_id)
        if not isinstance(item, Compile):
            raise ShowError(f"{compile_id!r} is not a compile id")
        return item
    with_code = [c for c in model.compiles if c.output_codes]
    if len(with_code) == 1:
        return with_code[0]
    if not with_code:
        raise ShowError("no compile of this input has output code")
    ids = ", ".join(c.id_label for c in with_code[:12])
    raise ShowError(f"{len(with_code)} compiles have output code: say which with --compile ({ids})")


def confirm(plan: BenchPlan, yes: bool) -> str | None:
    """None when the user agreed; else why it will not run."""
    if yes:
        return None
    if not sys.stdin.isatty():
        return (
            "not run: this runs code from the trace, and there is no terminal to ask;"
            " pass --yes to confirm"
        )
    try:
        answer = input("Run it? [y/N] ")
    except EOFError:
        answer = ""
    return None if answer.strip().lower() in ("y", "yes") else "not run: declined"


def run_job(job: BenchJob) -> BenchResult:
    """Run the benchmark in a thread; Ctrl-C kills its process group."""
    box: list[BenchResult] = []
    worker = threading.Thread(target=lambda: box.append(job.run()), name="tcview-bench")
    worker.start()
    while worker.is_alive():
        try:
            worker.join(0.2)
        except KeyboardInterrupt:
            print("\ntcview bench: cancelling (killing its process group)", file=sys.stderr)
            job.cancel()
    return box[0]


def bench_command(args: argparse.Namespace) -> int:
    model = open_input(args.path)
    if model is None:
        return EXIT_REFUSED
    try:
        target = pick_target(model, args.compile, args.kernel)
        plan = plan_bench(
            model,
            target,
            python=args.python,
            timeout_s=args.timeout,
            no_exec=args.no_exec,
            times=args.times,
            repeat=args.repeat,
        )
    except (ShowError, BenchRefused) as exc:
        what = "refused" if isinstance(exc, BenchRefused) else "nothing to benchmark"
        print(f"tcview bench: {what}: {safe_line(str(exc))}", file=sys.stderr)
        return EXIT_REFUSED
    for line in plan.describe():
        print(safe_line(line), file=sys.stderr)
    why = confirm(plan, args.yes)
    if why is not None:
        plan.discard()
        print(f"tcview bench: {why}", file=sys.stderr)
        return EXIT_REFUSED if "--yes" in why else EXIT_FAILED
    print("tcview bench: running (Ctrl-C cancels)…", file=sys.stderr)
    result = run_job(BenchJob(plan))
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(safe_text("\n".join(result.lines())))
    if not result.ok and result.output and not args.json:
        print(safe_text(result.output[-2000:]), file=sys.stderr)
    model.close()
    return 0 if result.ok else EXIT_FAILED
