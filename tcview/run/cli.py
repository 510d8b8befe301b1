"""`tcview run`: the command line around `Launcher`, headless (--no-tui) or in the TUI."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from .launcher import (
    DEFAULT_LOGS,
    Launcher,
    LaunchError,
    RunOptions,
    RunSession,
    RunStatus,
    build_spec,
    install_cleanup,
)

FAIL_ON_KINDS = ("graph_breaks", "recompiles", "failures")
RUN_FILES = ("run.json", "run.json.tmp", "stdout.txt", "torch_logs.txt")


def run_command(args: argparse.Namespace) -> int:
    try:
        launcher, fail_on = launcher_from_args(args)
    except LaunchError as exc:
        print(f"tcview: {exc}", file=sys.stderr)
        return 2
    if not getattr(args, "no_tui", False):
        run_live = _tui_runner()
        if run_live is not None and sys.stdin.isatty() and sys.stdout.isatty():
            # The TUI owns the terminal: the job must not read from it.
            launcher.options = replace(launcher.options, inherit_stdin=False)
            install_cleanup()
            try:
                return int(run_live(launcher, fail_on) or 0)
            finally:
                if launcher.sessions:
                    _print_quietly(launcher.sessions[-1].reopen_hint)
        why = "no terminal" if run_live is not None else "the TUI Run pane is not built yet"
        print(f"tcview: running headless ({why}); same as --no-tui", file=sys.stderr)
    return run_headless(launcher, fail_on)


def launcher_from_args(args: argparse.Namespace) -> tuple[Launcher, list[str]]:
    """The Launcher for `tcview run` arguments, and the --fail-on kinds (LaunchError if bad)."""
    env: dict[str, str] = {}
    for item in getattr(args, "env", None) or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise LaunchError(f"--env wants K=V, got {item!r}")
        env[key] = value
    fail_on = [k.strip() for k in (getattr(args, "fail_on", None) or "").split(",") if k.strip()]
    unknown = [k for k in fail_on if k not in FAIL_ON_KINDS]
    if unknown:
        raise LaunchError(
            f"--fail-on: unknown {', '.join(unknown)} (use {','.join(FAIL_ON_KINDS)})"
        )
    spec = build_spec(args.target or [], getattr(args, "module", None), args.python)
    logs = args.logs if getattr(args, "logs", None) is not None else DEFAULT_LOGS
    options = RunOptions(
        run_dir=Path(args.dir) if getattr(args, "dir", None) else None,
        logs=logs,
        env=env,
        inherit_stdin=True,
    )
    return Launcher(spec, options), fail_on


def _tui_runner() -> Callable[[Launcher, list[str]], int] | None:
    """`tcview.ui.app.run_live(launcher, fail_on) -> exit code`, once the UI provides it."""
    try:
        from ..ui import app
    except Exception:
        return None
    return getattr(app, "run_live", None)


def run_headless(launcher: Launcher, fail_on: list[str]) -> int:
    """Stream the job's output to this terminal, then print the summary. The job's exit code."""
    install_cleanup()
    launcher.tee_stdout = sys.stdout.buffer
    launcher.tee_stderr = sys.stderr.buffer
    session: RunSession | None = None
    try:
        info = launcher.preflight()
        if not info.torch:
            print(
                f"tcview: note: {info.executable} has no torch; running anyway "
                "(the command is not python itself)",
                file=sys.stderr,
            )
        session = launcher.start()
        print(
            f"tcview: running {launcher.spec.display} (pid {session.pid}) in {session.run_dir}",
            file=sys.stderr,
        )
        status = _wait_headless(session)
    except LaunchError as exc:
        print(f"tcview: {exc}", file=sys.stderr)
        return 2
    except SystemExit:  # SIGTERM or SIGHUP: the cleanup handler has already taken the job down
        if session is not None:
            session.wait(5.0)
            _print_quietly(session.reopen_hint)
        raise
    finally:
        if session is not None and not session.done:
            session.kill()
            session.wait(5.0)
    sys.stdout.flush()
    code = status.exit_code if status.exit_code is not None else 1
    report = finish_report(session, status)
    print(f"\n{report.text}")
    sys.stdout.flush()
    if fail_on:
        present = [k for k in fail_on if report.summary.get(k)]
        if present:
            print(f"tcview: found {', '.join(present)}", file=sys.stderr)
            if code == 0:
                code = 1
    print(session.reopen_hint)
    return code


def _print_quietly(text: str) -> None:
    try:
        print(text, flush=True)
    except (OSError, ValueError):
        pass  # the terminal is gone (SIGHUP)


def _wait_headless(session: RunSession) -> RunStatus:
    """Wait for the job; Ctrl-C stops it (SIGINT, SIGTERM, SIGKILL), twice kills it now."""
    interrupts = 0
    while True:
        try:
            status = session.wait(0.5)
            if status is not None:
                return status
        except KeyboardInterrupt:
            interrupts += 1
            if interrupts == 1:
                print(
                    "\ntcview: stopping the job (Ctrl-C again to kill it now)",
                    file=sys.stderr,
                )
                session.stop()
            else:
                session.kill()


class Report:
    def __init__(self, text: str, summary: dict[str, Any], counts: dict[str, int]) -> None:
        self.text = text
        self.summary = summary
        self.counts = counts


def finish_report(session: RunSession, status: RunStatus) -> Report:
    """The `summary` of the run directory and one status-bar line with the counts."""
    counts, summary, body = load_counts(session.run_dir)
    line = status_line(status, counts)
    return Report(f"{body}\n\n{line}" if body else line, summary, counts)


def status_line(status: RunStatus, counts: dict[str, int]) -> str:
    """``exited 0 · 12.3s · compiles 4 · graph breaks 3 · recompiles 1 · kernels 3``."""
    return (
        f"{status.text} · {status.elapsed_s:.1f}s · compiles {counts.get('compiles', 0)} · "
        f"graph breaks {counts.get('graph_breaks', 0)} · recompiles "
        f"{counts.get('recompiles', 0)} · kernels {counts.get('kernels', 0)}"
    )


def load_counts(run_dir: Path) -> tuple[dict[str, int], dict[str, Any], str]:
    """(status-bar counts of run_dir/trace, summary_json, summary_text) of a finished run."""
    from ..safe import safe_text
    from ..trace.index import TraceSet
    from ..trace.summary import summary_json, summary_text

    trace_dir = run_dir / "trace"
    has_trace = trace_dir.is_dir() and any(trace_dir.iterdir())
    ts = TraceSet.load(trace_dir) if has_trace else TraceSet(trace_dir)
    counts = ts.counts()
    if not has_trace:
        note = f"no trace was written to {trace_dir} (did the job run torch.compile?)"
        return counts, summary_json(ts), note
    whole: Any = ts
    try:
        from ..trace.source import load_source

        whole = load_source(str(run_dir))  # the trace plus torch_logs.txt
        own = {run_dir / name for name in RUN_FILES}
        if hasattr(whole, "skipped"):  # our own files are not damaged traces
            whole.skipped = [(p, why) for p, why in whole.skipped if Path(p) not in own]
        summary = summary_json(whole)
        body = summary_text(whole)
    except Exception:
        summary, body = summary_json(ts), summary_text(ts)
    return counts, summary, safe_text(body)
