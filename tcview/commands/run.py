"""`tcview run`: the command line around `Launcher`, headless (--no-tui) or in the TUI."""

from __future__ import annotations

import argparse
import contextlib
import sys
from dataclasses import replace
from pathlib import Path

from tcview.analysis.checks import fail_on as found_kinds
from tcview.analysis.paths import PathMap
from tcview.commands.failon import SUMMARY_CHECKS, fail_on_exit, found_message, parse_fail_on
from tcview.ingest.profile import PROFILE_DIR
from tcview.run.cleanup import install_cleanup
from tcview.run.profiling import (
    DEFAULT_SECONDS,
    DEFAULT_SKIP_S,
    ProfileOptions,
    parse_activities,
    parse_window,
)
from tcview.run.report import finish_report, load_counts
from tcview.run.session import Launcher, RunSession, RunStatus
from tcview.run.spec import DEFAULT_LOGS, LaunchError, RunOptions, build_spec


def run_command(args: argparse.Namespace) -> int:
    try:
        path_map = PathMap.parse(args.map_path)
    except ValueError as exc:
        print(f"tcview: {exc}", file=sys.stderr)
        return 2
    try:
        launcher, fail_on = launcher_from_args(args)
    except LaunchError as exc:
        print(f"tcview: {exc}", file=sys.stderr)
        return 2
    if not args.no_tui:
        if sys.stdin.isatty() and sys.stdout.isatty():
            from tcview.commands.config import keymap_or_say
            from tcview.ui.run_app import run_live  # Textual loads only for the TUI

            keymap = keymap_or_say("tcview run")  # before the job starts
            if keymap is None:
                return 2

            # The TUI owns the terminal: the job must not read from it.
            launcher.options = replace(launcher.options, inherit_stdin=False)
            install_cleanup()
            try:
                code = run_live(launcher, path_map, no_exec=bool(args.no_exec), keymap=keymap)
                return _fail_on_live(launcher, fail_on, code)
            finally:
                if launcher.sessions:
                    _print_quietly(launcher.sessions[-1].reopen_hint)
        print("tcview: running headless (no terminal); same as --no-tui", file=sys.stderr)
    return run_headless(launcher, fail_on)


def launcher_from_args(args: argparse.Namespace) -> tuple[Launcher, list[str]]:
    """The Launcher for `tcview run` arguments, and the --fail-on kinds (LaunchError if bad)."""
    env: dict[str, str] = {}
    for item in args.env or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise LaunchError(f"--env wants K=V, got {item!r}")
        env[key] = value
    try:
        fail_on = parse_fail_on(args.fail_on, SUMMARY_CHECKS)
    except ValueError as exc:
        raise LaunchError(str(exc)) from exc
    profile = profile_options(args)
    spec = build_spec(args.target or [], args.module, args.python)
    logs = args.logs if args.logs is not None else DEFAULT_LOGS
    options = RunOptions(
        run_dir=Path(args.dir) if args.dir else None,
        logs=logs,
        env=env,
        inherit_stdin=True,
        profile=profile,
    )
    return Launcher(spec, options), fail_on


def profile_options(args: argparse.Namespace) -> ProfileOptions | None:
    """--profile and its window and activities (LaunchError if bad)."""
    if not getattr(args, "profile", False):
        if args.profile_window or args.profile_activities:
            raise LaunchError("--profile-window and --profile-activities go with --profile")
        return None
    try:
        skip, seconds = (
            parse_window(args.profile_window)
            if args.profile_window
            else (DEFAULT_SKIP_S, DEFAULT_SECONDS)
        )
        activities = parse_activities(args.profile_activities or "")
    except ValueError as exc:
        raise LaunchError(str(exc)) from exc
    return ProfileOptions(skip, seconds, activities)


def add_profile_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--profile",
        action="store_true",
        help="record a torch.profiler window of the job (no change to its script) into the run"
        f" directory's {PROFILE_DIR}/, and join it to the compiled kernels",
    )
    parser.add_argument(
        "--profile-window",
        metavar="SKIP,SECONDS",
        help=f"start SKIP seconds after the first compile ends, record SECONDS"
        f" (default {DEFAULT_SKIP_S:g},{DEFAULT_SECONDS:g})",
    )
    parser.add_argument(
        "--profile-activities",
        metavar="KINDS",
        help="cpu,cuda (default: cpu, and cuda when the job has a GPU)",
    )


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
    code = fail_on_exit(code, found_message(found_kinds(report.summary, fail_on)))
    print(session.reopen_hint)
    return code


def _fail_on_live(launcher: Launcher, fail_on: list[str], code: int) -> int:
    """The TUI's exit code under --fail-on (its summary read from the run directory)."""
    if not fail_on or not launcher.sessions:  # none: it could not start
        return code
    _, summary, _ = load_counts(launcher.sessions[-1].run_dir)
    return fail_on_exit(code, found_message(found_kinds(summary, fail_on)))


def _print_quietly(text: str) -> None:
    with contextlib.suppress(OSError, ValueError):  # the terminal is gone (SIGHUP)
        print(text, flush=True)


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
