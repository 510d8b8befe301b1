"""`tcview run` in the TUI: live output, status, x / q / r, the real job's counts, a real terminal.

The Pilot tests drive `RunApp` with small Python jobs (no torch); one Pilot test and one
terminal test run the real torch job. The terminal tests check the process table.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from rich.console import Console
from rich.style import Style
from run_helpers import alive, assert_group_gone, job_pids, wait_for
from textual import events
from tmux_helpers import Terminal, need_tmux
from ui_helpers import REPO, counts_text, pane, summary_json, sync
from waits import holds, until

from tcview.run._supervisor import group_members
from tcview.run.session import Launcher, OutputLine
from tcview.run.spec import PythonInfo, RunOptions, build_spec
from tcview.ui.run_app import RunApp
from tcview.ui.run_pane import ConfirmStop, OutputView, output_text

JOBS = REPO / "tests" / "fixtures" / "jobs"
LONG_JOB = JOBS / "long_job.py"
TORCH_JOB = JOBS / "breaks_recompile.py"
HAS_TORCH = importlib.util.find_spec("torch") is not None
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

CHATTY_JOB = """\
import sys, time
from pathlib import Path
print("hello from the job", flush=True)
print("to stderr", file=sys.stderr, flush=True)
print("[bold]not markup[/bold] \\x1b[31mred\\x1b[0m \\x07bell", flush=True)
for i in range(100):
    print(f"line {i}", flush=True)
flag = Path(sys.argv[1])
deadline = time.monotonic() + 30
while not flag.exists() and time.monotonic() < deadline:
    time.sleep(0.05)
print("bye", flush=True)
"""


def launcher_for(tmp_path: Path, *argv: str, grace_s: float = 1.0) -> Launcher:
    spec = build_spec(["--", sys.executable, *argv])
    launcher = Launcher(spec, RunOptions(run_dir=tmp_path / "D", grace_s=grace_s))
    launcher.python_info = PythonInfo(spec.python)  # skip the probe: these jobs need no torch
    return launcher


def status_history(app: RunApp) -> list[str]:
    """Every value the status bar's left part takes from now on: a passing state ("stopping…"
    for the second of a stop's grace) is seen even when the loaded machine draws it late."""
    seen = [app.status_left]
    app.watch(app, "status_left", lambda value: seen.append(value), init=False)
    return seen


def output_of(app: RunApp) -> list[str]:
    return [text.plain for _, text in app.job.lines]


# -- the job's colours, and nothing else --------------------------------------------------

HOSTILE = (
    "\x1b]0;pwned title\x07\x1b[2J\x1b[H\x1b[31mred\x1b[0m \x1b[10;10Hmoved "
    "\x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\ \x9b31mc1\x07 \x1b[1;38;5;33mblue\ttab"
)


@pytest.mark.unit
def test_output_line_keeps_colours_and_nothing_else() -> None:
    """A title (OSC), cursor moves and erases (CSI), a link (OSC 8), a C1 CSI and a bell:
    the colours are shown, the rest is dropped or made visible; the terminal gets only
    colour codes."""
    text = output_text(OutputLine(0, "stdout", HOSTILE, 0.0))
    assert text.plain == "red moved link <U+009B>31mc1\u2407 blue  tab"  # tab stops of 4
    console = Console(color_system="256", force_terminal=True, width=200)
    segments = list(text.render(console))
    red = next(s for s in segments if s.text == "red")
    assert red.style is not None and red.style.color is not None
    assert red.style.color.number == 1
    blue = next(s for s in segments if s.text.startswith("blue"))
    assert blue.style is not None and blue.style.bold and blue.style.color is not None
    assert blue.style.color.number == 33
    for segment in segments:
        assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in segment.text), segment
        assert segment.style is None or segment.style.link is None
    with console.capture() as capture:
        console.print(text)
    sent = re.sub(r"\x1b\[[0-9;]*m", "", capture.get())  # what remains besides colour codes
    assert not any(ord(c) < 0x20 and c != "\n" or 0x7F <= ord(c) <= 0x9F for c in sent), sent
    assert "pwned" not in sent and "evil.example" not in sent


@pytest.mark.unit
def test_stderr_lines_are_orange_under_the_jobs_colours() -> None:
    text = output_text(OutputLine(0, "stderr", "plain \x1b[32mgreen\x1b[0m", 0.0))
    assert "dark_orange" in str(text.style) and text.plain == "plain green"
    assert [(span.start, span.end, span.style) for span in text.spans] == [
        (6, 11, Style(color="color(2)"))
    ]


# -- Pilot: fake jobs ---------------------------------------------------------------------


@sync
async def test_output_is_live_safe_and_follows_the_end(tmp_path: Path) -> None:
    job, flag = tmp_path / "job.py", tmp_path / "flag"
    job.write_text(CHATTY_JOB)
    launcher = launcher_for(tmp_path, str(job), str(flag))
    session = launcher.start()
    app = RunApp(launcher, session)
    async with app.run_test(size=(120, 40)) as pilot:
        # stdout and stderr are two pipes, read apart: either may be shown first.
        def both_shown() -> bool:
            return {"line 99", "to stderr"} <= set(output_of(app))

        assert await until(pilot, both_shown)
        assert not session.done, "the output is shown while the job still runs"
        assert app.status_left.startswith(f"running pid {session.pid} · 0:0")
        assert app.status_left.endswith(str(session.run_dir))
        view = app.job
        lines = [(stream, text.plain) for stream, text in view.lines]
        assert ("stderr", "to stderr") in lines
        assert ("stdout", "hello from the job") in lines
        shown = next(t for t in output_of(app) if "not markup" in t)
        assert shown == "[bold]not markup[/bold] red \u2407bell"  # no markup, no escapes
        plain = "".join(seg.text for seg in view.render_line(0))
        assert "\x1b" not in plain and "\x07" not in plain
        coloured = next(text for _, text in view.lines if "not markup" in text.plain)
        start = coloured.plain.index("red")
        assert any(
            span.start == start and span.end == start + 3 and span.style == Style(color="color(1)")
            for span in coloured.spans
        ), "the job's colours are shown"
        # (stdout and stderr are separate pipes: their relative order is not kept)
        assert view.visible_text()[-1] == output_of(app)[-1], "the pane follows the end"

        # Scrolled up, the pane stays put while lines arrive; G follows again.
        view.focus()
        await pilot.press("k", "k", "k")
        assert not view.stick and "scrolled up" in str(view.border_subtitle)
        flag.touch()
        assert await until(pilot, lambda: "exited 0" in app.status_left)
        assert app.status_left.startswith("exited 0 · live")
        assert "bye" in output_of(app) and "bye" not in view.visible_text()
        await pilot.press("G")
        assert view.visible_text()[-1] == "bye"
        # The wheel: up leaves the end, down back to the end follows it again.
        view.post_message(events.MouseScrollUp(view, 1, 1, 0, -1, 0, False, False, False))
        await until(
            pilot,
            lambda: not view.stick and view.scroll_offset.y < view.max_scroll_y,
            seen=lambda: (view.stick, view.scroll_offset.y, view.max_scroll_y),
        )
        for _ in range(5):
            view.post_message(events.MouseScrollDown(view, 1, 1, 0, 1, 0, False, False, False))
        await until(
            pilot,
            lambda: view.stick and view.scroll_offset.y == view.max_scroll_y,
            seen=lambda: (view.stick, view.scroll_offset.y, view.max_scroll_y),
        )
        # After the exit, the run stays browsable; `x` is gone from the footer, `u` is there.
        bindings = app.screen.active_bindings
        assert "x" not in bindings and bindings["u"].binding.action == "rerun"
        await pilot.press("q")
    assert app.return_value is None


@sync
async def test_x_stops_a_long_job_and_leaves_nothing(tmp_path: Path) -> None:
    launcher = launcher_for(tmp_path, str(LONG_JOB))
    session = launcher.start()
    app = RunApp(launcher, session)
    async with app.run_test(size=(120, 40)) as pilot:
        pids = job_pids(session.run_dir)
        assert session.pid is not None
        assert set(pids) <= set(group_members(session.pid))
        assert await until(pilot, lambda: any(t.startswith("tick") for t in output_of(app)))
        seen = status_history(app)
        await pilot.press("x")
        # "stopping…" for the grace's second, unless the job obeyed its SIGTERM at once
        await until(
            pilot,
            lambda: any("stopping…" in text for text in seen) or session.done,
            seen=lambda: seen,
        )
        assert await until(pilot, lambda: session.done)
        assert await until(pilot, lambda: app.status_left.startswith(("killed", "exited")))
        assert_group_gone(session.pid, pids)
        assert "x" not in app.screen.active_bindings
        await pilot.press("q")


@sync
async def test_the_users_keymap_moves_run_modes_keys(tmp_path: Path) -> None:
    """The keymap `tcview run` reads from the user's config: stop moved to `z`, `x` no longer
    stops the job."""
    launcher = launcher_for(tmp_path, str(LONG_JOB))
    session = launcher.start()
    app = RunApp(launcher, session, keymap={"run.stop": "z"})
    async with app.run_test(size=(120, 40)) as pilot:
        assert await until(pilot, lambda: any(t.startswith("tick") for t in output_of(app)))
        await pilot.press("x")
        await holds(pilot, lambda: not session.done, 0.3, "the job runs on after x")
        await pilot.press("z")
        assert await until(pilot, lambda: session.done)
        await pilot.press("q")


@sync
async def test_q_asks_first_then_stops_the_job(tmp_path: Path) -> None:
    launcher = launcher_for(tmp_path, str(LONG_JOB), "--ignore-int")  # stop must escalate
    session = launcher.start()
    app = RunApp(launcher, session)
    async with app.run_test(size=(120, 40)) as pilot:
        pids = job_pids(session.run_dir)
        await pilot.press("q")
        assert isinstance(app.screen, ConfirmStop)
        await pilot.press("n")
        assert not isinstance(app.screen, ConfirmStop)
        await holds(
            pilot,
            lambda: not session.done and "running pid" in app.status_left,
            0.3,
            "the job runs on after n",
            seen=lambda: app.status_left,
        )
        await pilot.press("q")
        assert isinstance(app.screen, ConfirmStop)
        seen = status_history(app)
        await pilot.press("y")
        assert await until(pilot, lambda: any("stopping…" in text for text in seen)), seen
        await until(pilot, lambda: not app.is_running, timeout=10)
    assert session.done
    assert session.status.text == "killed (SIGTERM)"  # SIGINT was ignored
    assert_group_gone(session.pid, pids)


@sync
async def test_u_reruns_into_a_new_directory(tmp_path: Path) -> None:
    job = tmp_path / "job.py"
    job.write_text("import os\nprint('run', os.getpid())\n")
    launcher = launcher_for(tmp_path, str(job))
    first = launcher.start()
    app = RunApp(launcher, first)
    async with app.run_test(size=(120, 40)) as pilot:
        assert await until(pilot, lambda: "exited 0" in app.status_left)
        shown = output_of(app)
        await pilot.press("r")  # recompiles, as in `tcview open` (issue 40: one meaning a key)
        assert type(pane(app)).__name__ == "RecompilesView"
        await pilot.press("u")  # from a view: back to the browser, following the new run
        assert len(launcher.sessions) == 2
        second = launcher.sessions[1]
        assert second.run_dir == tmp_path / "D-2" and second.run_dir != first.run_dir
        assert app.job.session is second and app.browser.source_path == str(second.run_dir)
        assert len(app.screen_stack) == 1 and pane(app).id == "browse"
        assert await until(pilot, lambda: second.done and "exited 0" in app.status_left)
        assert await until(pilot, lambda: bool(output_of(app)) and output_of(app) != shown)
        assert output_of(app) == [f"run {_job_pid(second.run_dir)}"]
        assert app.status_left.endswith(str(second.run_dir))
        assert (second.run_dir / "run.json").is_file()
        await pilot.press("q")


def _job_pid(run_dir: Path) -> int:
    return int((run_dir / "stdout.txt").read_text().split()[1])


@sync
async def test_u_while_running_says_why_not_and_R_cycles_the_pane(tmp_path: Path) -> None:
    launcher = launcher_for(tmp_path, str(LONG_JOB))
    session = launcher.start()
    app = RunApp(launcher, session)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("u")
        assert len(launcher.sessions) == 1
        assert any("still running" in str(n.message) for n in app._notifications)
        output = app.screen_stack[0].query_one(OutputView)
        assert output.display and app.job.layout_mode == "split"
        await pilot.press("R")
        assert app.job.layout_mode == "full" and app.focused is output
        assert not app.screen_stack[0].query_one("#main").display
        await pilot.press("R")
        assert app.job.layout_mode == "hidden" and not output.display
        await pilot.press("R")
        assert app.job.layout_mode == "split" and output.display
        session.kill()
        assert await until(pilot, lambda: session.done)
        await pilot.press("q")


# -- Pilot: the real torch job ----------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")
@sync
async def test_real_job_live_tree_and_counts_match_the_trace(tmp_path: Path) -> None:
    from tcview.ingest.index import TraceSet

    spec = build_spec([str(TORCH_JOB)])
    launcher = Launcher(spec, RunOptions(run_dir=tmp_path / "D"))
    launcher.preflight()
    session = launcher.start()
    app = RunApp(launcher, session)
    async with app.run_test(size=(120, 40)) as pilot:
        assert await until(pilot, lambda: session.done, timeout=240)
        assert session.status.text == "exited 0"
        expected = counts_text(TraceSet.load(session.trace_dir).counts())
        assert await until(pilot, lambda: app.status_right == expected, timeout=10), (
            app.status_right,
            expected,
        )
        assert expected == counts_text(summary_json(session.trace_dir))
        assert await until(pilot, lambda: app.status_left.startswith("exited 0 · live"))
        assert "done" in output_of(app)
        assert any(t.startswith("step 2 scale 3") for t in output_of(app))
        assert app.model is not None and len(app.model.compiles) >= 3
        assert app.main_tree.root.children, "the live tree shows the run"
        await pilot.press("q")
    counts = summary_json(session.trace_dir)
    assert counts["graph_breaks"] >= 1 and counts["recompiles"] >= 1 and counts["kernels"] >= 1


# -- a real terminal ----------------------------------------------------------------------------


def _tcview_run(run_dir: Path, job_argv: list[str]) -> Terminal:
    """`tcview run` of `job_argv` in a real terminal; the pane's process is tcview itself."""
    command = (
        f"cd {shlex.quote(str(REPO))} && exec {shlex.quote(sys.executable)} -m tcview.commands.cli run "
        f"--dir {shlex.quote(str(run_dir))} -- {shlex.join(job_argv)}"
    )
    return Terminal(command, size=(120, 40))


def _processes_running(name: str) -> list[str]:
    out = subprocess.run(
        ["ps", "-ww", "-eo", "pid,pgid,args"], capture_output=True, text=True
    ).stdout
    return [line for line in out.splitlines() if name in line and "tcview.commands.cli" not in line]


@need_tmux
@pytest.mark.slow
@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")
def test_real_terminal_real_job_counts_equal_the_trace(tmp_path: Path) -> None:
    run_dir = tmp_path / "D"
    with _tcview_run(run_dir, ["python3", str(TORCH_JOB)]) as term:
        term.wait_for(lambda s: "running pid" in s or "exited" in s, what="the job's status")
        term.wait_for("exited 0", timeout=240)
        expected = counts_text(summary_json(run_dir / "trace"))
        screen = term.wait_for(expected)
        assert "step 2 scale 3" in screen and "done" in screen, screen
        # the footer after the end (it is redrawn a moment after the status line)
        term.wait_for(lambda s: " x Stop " not in s and " u Rerun " in s, what="u Rerun, no x")
        term.keys("q")
        term.wait_ended(what="q to quit")


def _long_job_command(tmp_path: Path) -> Path:
    """long_job.py as an executable with a unique name: findable in `ps`, needs no torch."""
    exe = tmp_path / f"long_job_{uuid.uuid4().hex[:8]}"
    exe.write_text(f"#!{sys.executable}\n" + LONG_JOB.read_text())
    exe.chmod(0o755)
    return exe


@need_tmux
@pytest.mark.slow
def test_real_terminal_x_leaves_no_process(tmp_path: Path) -> None:
    exe = _long_job_command(tmp_path)
    run_dir = tmp_path / "D"
    with _tcview_run(run_dir, [str(exe)]) as term:
        term.wait_for(lambda s: "tick 3" in s and "running pid" in s, what="tick 3, running")
        pids = job_pids(run_dir)
        assert len(_processes_running(exe.name)) == 2  # the supervisor and the job
        term.keys("x")
        term.wait_for(lambda s: "killed (" in s or "exited " in s, what="the job's end")
        assert wait_for(lambda: not _processes_running(exe.name), 10), _processes_running(exe.name)
        assert not any(alive(p) for p in pids)
        term.keys("q")
        term.wait_ended(what="q to quit")


@need_tmux
@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_real_terminal_signal_to_tcview_takes_the_job_down(tmp_path: Path, sig: int) -> None:
    exe = _long_job_command(tmp_path)
    run_dir = tmp_path / "D"
    with _tcview_run(run_dir, [str(exe)]) as term:
        term.wait_for("tick 3")
        pids = job_pids(run_dir)
        tcview_pid = int(term.pane("#{pane_pid}"))
        assert "tcview.commands.cli" in Path(f"/proc/{tcview_pid}/cmdline").read_text()
        os.kill(tcview_pid, sig)
        assert wait_for(lambda: not alive(tcview_pid), 15), "tcview did not end"
        assert wait_for(lambda: not _processes_running(exe.name), 10), _processes_running(exe.name)
        assert not any(alive(p) for p in pids)
        meta = json.loads((run_dir / "run.json").read_text())
        assert meta["status"].startswith("killed"), meta
