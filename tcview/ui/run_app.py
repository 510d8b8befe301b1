"""`tcview run` in the TUI: the browser screen following the job's run directory with the job's
pane (run_pane.JobPane) composed in, with run mode's keys (`RunScreen`), under the keys every
tcview app has (app.BrowserApp); and the command's entry point `run_live`."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from types import FrameType
from typing import Any, TypeAlias

from tcview.analysis.paths import PathMap
from tcview.run.cleanup import kill_all
from tcview.run.report import status_line
from tcview.run.session import Launcher, RunSession
from tcview.run.spec import LaunchError
from tcview.ui.app import BrowserApp
from tcview.ui.browser import BrowserBase
from tcview.ui.help import HelpPlace, bindings_of
from tcview.ui.keys import BROWSE_BINDINGS, QUIT
from tcview.ui.options import OpenOptions
from tcview.ui.run_pane import RUN_BINDINGS, ConfirmStop, JobPane, OutputView, run_mode

SignalHandler: TypeAlias = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None
SIGNAL_EXIT_DEADLINE_S = 5.0  # a signalled tcview ends this long after the job, at the latest


class RunScreen(BrowserBase):
    """The browser following a job's run directory, with the job's pane (`JobPane`) composed
    in; run mode's keys, handed to the pane, before the browser's."""

    # Run keys first: the footer shows bindings in this order (it has 120 columns for them).
    # Textual's own keymap (App.set_keymap) would do the key change at run time, but it drops
    # every binding that shares a remapped key (the rerun on `r`) and moves remapped keys to
    # the end of the footer, so the keymap is applied here, by binding id.
    BINDINGS = [QUIT, *RUN_BINDINGS, *run_mode(BROWSE_BINDINGS)]

    def __init__(self, options: OpenOptions, job: JobPane) -> None:
        super().__init__(options, panes=[job], job=job)
        self.job_pane = job

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        allowed = self.job_pane.allows(action)
        return allowed if allowed is not None else super().check_action(action, parameters)

    def action_stop(self) -> None:
        self.job_pane.stop_job()

    def action_rerun_busy(self) -> None:
        self.job_pane.rerun_busy()

    def action_rerun(self) -> None:
        self.job_pane.rerun()

    def action_output(self) -> None:
        """Cycle the job's pane: beside the browser, full screen, hidden; from a view, the
        views close and it shows full screen."""
        on_view = not self.controller.at_tree
        self.close_views()
        self.job_pane.cycle_layout(on_view)


class RunApp(BrowserApp):
    """A browser screen following a job's run directory, with the job's pane (`JobPane`)
    composed in (`RunScreen`, with run mode's keys); quitting asks the pane first."""

    SCREEN = RunScreen

    def __init__(
        self,
        launcher: Launcher,
        session: RunSession,
        poll: bool = False,
        path_map: PathMap | None = None,
        no_exec: bool = False,
        keymap: dict[str, str] | None = None,
    ) -> None:
        self.job = JobPane(launcher, session)
        options = OpenOptions(
            str(session.run_dir),
            follow=True,
            poll=poll,
            path_map=path_map,
            no_exec=no_exec,
            python=launcher.spec.python,
            keymap=keymap,
        )
        super().__init__(RunScreen(options, self.job))
        self.signalled: int | None = None  # 128 + signal when SIGTERM/SIGHUP ended tcview

    @classmethod
    def help_places(cls) -> list[HelpPlace]:
        run_ids = {binding.id for binding in RUN_BINDINGS}
        places = super().help_places()
        anywhere = places[0]
        run_keys = bindings_of(cls.SCREEN, inherited=False)
        run = HelpPlace(
            "Run (tcview run)",
            [
                *[b for b in run_keys if b.id in run_ids],
                *bindings_of(OutputView),
                *bindings_of(ConfirmStop, inherited=False),
            ],
            [
                ("output", "the viewer's keys; stderr lines marked orange; G follows the end"),
                ("colours", "the job's colours are shown; other escape codes are not sent"),
            ],
        )
        places[0] = replace(
            anywhere, bindings=[b for b in anywhere.bindings if b.id not in run_ids]
        )
        return [*places[:-2], run, *places[-2:]]  # before the status bar and the help

    async def action_quit(self) -> None:
        self.job.quit()


def final_counts(app: BrowserApp) -> dict[str, int]:
    """The status bar's four numbers as the app last had them (printed after it closed)."""
    model = app.model
    if model is None:
        return {}
    return dict(model.counts())


@contextmanager
def _signals_end(app: RunApp) -> Iterator[None]:
    """SIGTERM and SIGHUP: take every job group down first, then close the TUI cleanly.

    Textual installs no handlers for these; without this, the launcher's handler would raise
    SystemExit in the middle of the event loop and leave the terminal in raw mode.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[signal.Signals, SignalHandler] = {}

    def on_signal(signum: int, frame: FrameType | None) -> None:
        kill_all()
        code = 128 + signum
        app.signalled = code
        # If the terminal is gone (SIGHUP) the UI may not manage to close: do not hang there.
        timer = threading.Timer(SIGNAL_EXIT_DEADLINE_S, os._exit, args=(code,))
        timer.daemon = True
        timer.start()
        app.exit()

    for sig in (signal.SIGTERM, signal.SIGHUP):
        old = signal.getsignal(sig)
        if old is signal.SIG_IGN:
            continue  # e.g. under nohup
        previous[sig] = old
        signal.signal(sig, on_signal)
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def run_live(
    launcher: Launcher,
    path_map: PathMap | None = None,
    no_exec: bool = False,
    keymap: dict[str, str] | None = None,
) -> int:
    """Run the job with the TUI; the job's exit code (2 if it could not start, 128 + signal
    if tcview was signalled; `tcview.commands.run` applies --fail-on)."""
    try:
        if launcher.python_info is None:
            launcher.preflight()
        session = launcher.start()
    except LaunchError as exc:
        print(f"tcview: {exc}", file=sys.stderr)
        return 2
    app = RunApp(launcher, session, path_map=path_map, no_exec=no_exec, keymap=keymap)
    try:
        with _signals_end(app):
            app.run()
    finally:
        for running in launcher.sessions:
            if not running.done:
                running.kill()
                running.wait(5.0)
    if app.signalled is not None:
        return app.signalled
    session = launcher.sessions[-1]
    status = session.wait(5.0) or session.status
    code = status.exit_code if status.exit_code is not None else 1
    print(status_line(status, final_counts(app)))
    return code
