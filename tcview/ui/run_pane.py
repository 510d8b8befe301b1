"""`tcview run` in the TUI: the job's output in a Run pane, its status, stop, quit and rerun.

The browser follows the run directory (follow mode) while the job writes it. The launcher's
threads only post messages (`OutputArrived`, merged while one is pending, and `JobEnded`); the
UI thread then reads the new lines with `lines_since`, so no launcher thread touches a widget.
A one-second timer runs the status bar's clock while the job runs; nothing polls.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.geometry import Size
from textual.screen import ModalScreen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.timer import Timer
from textual.widgets import Static

from tcview.run.gpu import GpuSample
from tcview.run.session import Launcher, OutputLine, RunSession
from tcview.run.spec import LaunchError
from tcview.text.safe import colours_only, safe_line
from tcview.ui.messages import GpuSampled, JobEnded, JobMoved, JobRestarted, OutputArrived
from tcview.ui.viewer import SCROLL_BINDINGS, text_strip

MAX_LINES = 20_000  # lines kept in the pane, as many as the session keeps
QUIT_KILL_AFTER_S = 3.0  # after the stop escalation's own time, when quitting
CLOCK_S = 1.0  # the status bar's elapsed time while the job runs
_STDERR = Style(color="dark_orange")
_STDERR_MARK = Segment("▎", Style(color="dark_orange"))
_STDOUT_MARK = Segment(" ")
LAYOUTS = ("split", "full", "hidden")  # what `R` cycles through


def output_text(line: OutputLine) -> Text:
    """A line of the job's output in its own colours; every other escape sequence is dropped
    and the control characters are shown (␇), so nothing else reaches the terminal."""
    text = Text.from_ansi(colours_only(line.raw), no_wrap=True, end="", tab_size=4)
    text.expand_tabs()
    if line.stream == "stderr":
        text.style = _STDERR  # under the job's own colours
    return text


class OutputView(ScrollView, can_focus=True):
    """The job's output: only visible lines are rendered; follows the end unless scrolled up."""

    BINDINGS = [*SCROLL_BINDINGS]

    DEFAULT_CSS = """
    OutputView { background: $surface; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines: list[tuple[str, Text]] = []  # (stream, the line in the job's colours)
        # Keep the last line in view. Only the user's scrolling changes it: a horizontal
        # scrollbar appearing must not count as "scrolled up".
        self.stick = True
        self._width = 0

    def append(self, new: Sequence[OutputLine]) -> None:
        if not new:
            return
        for line in new:
            text = output_text(line)
            self.lines.append((line.stream, text))
            self._width = max(self._width, text.cell_len + 2)
        dropped = len(self.lines) - MAX_LINES
        if dropped > 0:
            del self.lines[:dropped]
        self.virtual_size = Size(self._width, len(self.lines))
        if self.stick:
            self._to_end()
            self.call_after_refresh(self._to_end)  # again once a new scrollbar took its row
        elif dropped > 0:
            y = max(0, self.scroll_offset.y - dropped)
            self.scroll_to(y=y, animate=False, immediate=True, force=True)
        self._update_subtitle()
        self.refresh()

    def clear(self) -> None:
        self.lines = []
        self._width = 0
        self.stick = True
        self.virtual_size = Size(0, 0)
        self.scroll_to(0, 0, animate=False, immediate=True, force=True)
        self._update_subtitle()
        self.refresh()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        base = self.rich_style
        if index >= len(self.lines):
            return Strip.blank(width, base)
        stream, line = self.lines[index]
        err = stream == "stderr"
        content = text_strip(line, self.app.console)
        content = content.crop_extend(scroll_x, scroll_x + max(width - 1, 0), None)
        mark = Strip([_STDERR_MARK if err else _STDOUT_MARK], 1)
        return Strip.join([mark, content]).apply_style(base)

    def _to_end(self) -> None:
        if self.stick:
            self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True, force=True)

    def on_resize(self) -> None:
        self.call_after_refresh(self._to_end)

    def _update_subtitle(self) -> None:
        where = "" if self.stick else " · scrolled up (G: follow the end)"
        self.border_subtitle = f"{len(self.lines)} lines{where}"

    def visible_text(self) -> list[str]:
        """The plain text of the lines on screen (for tests)."""
        top = self.scroll_offset.y
        height = self.scrollable_content_region.height
        return [text.plain for _, text in self.lines[top : top + height]]

    # ------------------------------------------------------------ actions

    def _scrolled(self, x: float | None = None, y: float | None = None) -> None:
        self.scroll_to(x, y, animate=False, immediate=True)
        self.stick = self.scroll_offset.y >= self.max_scroll_y
        self._update_subtitle()

    def action_line(self, step: int) -> None:
        self._scrolled(y=self.scroll_offset.y + step)

    def action_column(self, step: int) -> None:
        self._scrolled(x=max(0, self.scroll_offset.x + step))

    def action_page(self, step: int) -> None:
        height = max(self.scrollable_content_region.height - 1, 1)
        self._scrolled(y=self.scroll_offset.y + step * height)

    def action_top(self) -> None:
        self._scrolled(0, 0)

    def action_bottom(self) -> None:
        self._scrolled(y=self.max_scroll_y)

    # Textual calls these before its own handler (on Widget) scrolls the view.
    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        self.stick = False  # the wheel up leaves the end
        self._update_subtitle()

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        self.call_after_refresh(self._restick)  # back at the end: follow it again

    def _restick(self) -> None:
        self.stick = self.scroll_offset.y >= self.max_scroll_y
        self._update_subtitle()


class ConfirmStop(ModalScreen[bool]):
    """`q` while the job runs: stop it and quit?"""

    BINDINGS = [
        Binding("y,enter", "answer(True)", "Stop and quit", id="confirm.yes"),
        Binding("n,escape", "answer(False)", "Keep running", id="confirm.no"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm"):
            yield Static(Text(self.question))
            yield Static(Text.assemble(("y", "bold"), " stop it and quit   ", ("n", "bold"), " no"))

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


STOP = Binding(
    "x",
    "stop",
    "Stop",
    id="run.stop",
    tooltip="stop the job: SIGINT, then SIGTERM, then SIGKILL (again: now)",
)
# `u`, not `r`: r opens Recompiles in every tcview app (one meaning per key, issue 40).
RERUN = Binding(
    "u",
    "rerun",
    "Rerun",
    id="run.rerun",
    tooltip="after the job ended: rerun it into a new run directory",
)
RUN_BINDINGS = [
    STOP,
    RERUN,
    # While the job runs `rerun` is disabled (and out of the footer); this one says why.
    replace(
        RERUN,
        action="rerun_busy",
        show=False,
        id="run.rerun-busy",
        tooltip="while the job runs: says that the stop key stops it first",
    ),
    Binding(
        "R",
        "output",
        "Output",
        id="run.output",
        tooltip="the job's output: beside the browser, full screen, hidden",
    ),
]
# Run mode's keys for the browser's bindings, by binding id (none: every key means there
# what it means in `tcview open`).
RUN_KEYMAP: dict[str, str] = {}
RUN_HIDDEN = {"app.search"}  # out of the footer, which has 120 columns for the run keys


def run_mode(bindings: list[Binding]) -> list[Binding]:
    """The browser's bindings with run mode's keys (RUN_KEYMAP) and footer (RUN_HIDDEN)."""
    out = []
    for binding in bindings:
        if binding.id in RUN_KEYMAP:
            binding = binding.with_key(RUN_KEYMAP[binding.id])
        if binding.id in RUN_HIDDEN:
            binding = replace(binding, show=False)
        out.append(binding)
    return out


class JobPane(OutputView):
    """The job beside the browser: its output, its status (which leads the status bar), its
    end, stop, rerun, the pane's layout and quitting while it runs.

    The launcher's threads only post messages to it; it tells the browser what changed with
    messages up (`JobMoved`, `JobRestarted`).
    """

    def __init__(self, launcher: Launcher, session: RunSession) -> None:
        super().__init__(id="run-output")
        self.launcher = launcher
        self.session = session
        self.layout_mode = "split"
        self.quitting = False
        self._seq = 0
        self._ended = False
        self._run_text = ""
        self._output_pending = False  # an OutputArrived is on its way: no need for another
        self._clock: Timer | None = None
        self.gpu_text = ""  # the job's GPU use (NVML), while it runs

    # ------------------------------------------------------------ for the browser (Job)

    def status_text(self) -> str:
        """The status bar's first part: the job's status, and its GPU use while it runs."""
        self._run_text = self.run_status_text()
        return f"{self._run_text} · {self.gpu_text}" if self.gpu_text else self._run_text

    def running(self) -> bool:
        return not self.session.done

    def run_status_text(self) -> str:
        status = self.session.status
        text = status.text
        if status.stopping:
            text = text.replace(" · stopping", " · stopping…")
        return text

    def _moved(self, ended: bool = False) -> None:
        self.post_message(JobMoved(ended))

    # ------------------------------------------------------------ told by the job's threads

    def on_mount(self) -> None:
        self._title()
        self.launcher.on_line = self._line_written
        self.launcher.on_exit = self._session_ended
        self.launcher.on_gpu = self._gpu_sampled
        self._start_clock()
        # What the job wrote, or how it ended, before the callbacks were in place.
        self._line_written(None)
        if self.session.done:
            self._session_ended(self.session)

    def on_unmount(self) -> None:
        self.launcher.on_line = None
        self.launcher.on_exit = None
        self.launcher.on_gpu = None

    def _title(self) -> None:
        self.border_title = Text(safe_line(f"output · {self.launcher.spec.display}"))

    def _line_written(self, line: OutputLine | None) -> None:
        """A launcher thread delivered a line: one message until the UI has read them."""
        if self._output_pending:
            return
        self._output_pending = True
        self.post_message(OutputArrived())

    def _session_ended(self, session: RunSession) -> None:
        self.post_message(JobEnded(session))

    def _gpu_sampled(self, sample: GpuSample) -> None:
        """NVML read the job's GPUs (a launcher thread): one message, merged while pending."""
        self.post_message(GpuSampled(sample))

    @on(GpuSampled)
    def _show_gpu(self, message: GpuSampled) -> None:
        message.stop()
        if self.session.done:
            return
        text = message.sample.text
        if text != self.gpu_text:
            self.gpu_text = text
            self._moved()

    @on(OutputArrived)
    def _read_output(self, message: OutputArrived | None = None) -> None:
        if message is not None:
            message.stop()
        # Cleared before reading: a line delivered from now on posts again, or is read here.
        self._output_pending = False
        lines, self._seq = self.session.lines_since(self._seq)
        if lines:
            self.append(lines)

    @on(JobEnded)
    def _ended_message(self, message: JobEnded) -> None:
        message.stop()
        if message.session is not self.session or self._ended:
            return  # a previous run's session, or already handled
        self._read_output()
        self._ended = True
        self.gpu_text = ""
        if self._clock is not None:
            self._clock.stop()
            self._clock = None
        self._moved(ended=True)  # the counts too: no longer waiting for traces
        if not self.quitting:
            status = self.session.status
            self.notify(
                markup=False,
                message=f"job {status.text}: {self._key(RERUN)} reruns it, q quits",
                severity="information" if status.exit_code == 0 else "warning",
            )

    def _start_clock(self) -> None:
        if self._clock is None:
            self._clock = self.set_interval(CLOCK_S, self._tick_clock)

    def _tick_clock(self) -> None:
        if self.run_status_text() != self._run_text:
            self._moved()

    # ------------------------------------------------------------ keys (the screen's, handed here)

    def allows(self, action: str) -> bool | None:
        """Whether a run key applies now (None: not a run key)."""
        if action in ("stop", "rerun_busy"):
            return not self.session.done
        if action == "rerun":
            return self.session.done
        return None

    def stop_job(self) -> None:
        session = self.session
        if session.done:
            return
        if session.status.stopping:
            session.kill()
            self.notify(markup=False, message="killing the job now (SIGKILL)", severity="warning")
        else:
            session.stop()
            grace = self.launcher.options.grace_s
            self.notify(
                markup=False,
                message=f"stopping the job: SIGINT, then SIGTERM and SIGKILL {grace:g}s apart",
            )
        self._moved()

    def rerun_busy(self) -> None:
        stop, rerun = self._key(STOP), self._key(RERUN)
        self.notify(
            markup=False,
            message=f"the job is still running: {stop} stops it, then {rerun} reruns it",
        )

    def _key(self, binding: Binding) -> str:
        """The key of a run binding as the footer shows it (hints come from the bindings)."""
        return self.app.get_key_display(binding)

    def rerun(self) -> None:
        if not self.session.done:
            self.rerun_busy()
            return
        try:
            fresh = self.session.rerun()
        except LaunchError as exc:
            self.notify(
                markup=False, message=safe_line(str(exc)), title="cannot rerun", severity="error"
            )
            return
        self.session = fresh
        self._seq = 0
        self._ended = False
        self.clear()
        self._title()
        self.post_message(JobRestarted(str(fresh.run_dir)))  # the browser follows it
        self._start_clock()
        self._read_output()
        self.notify(markup=False, message=safe_line(f"rerunning into {fresh.run_dir}"))

    def cycle_layout(self, full: bool = False) -> None:
        """Cycle the Run pane: beside the browser, full screen, hidden (`full`: full screen)."""
        mode = "full" if full else LAYOUTS[(LAYOUTS.index(self.layout_mode) + 1) % len(LAYOUTS)]
        self.set_layout(mode)

    def set_layout(self, mode: str) -> None:
        screen = self.screen
        for name in LAYOUTS:
            screen.set_class(name == mode, f"-run-{name}")
        self.layout_mode = mode
        if mode == "full":
            self.focus()
        elif mode == "hidden" or self.app.focused is self:
            screen.query_one("#tree").focus()

    def quit(self) -> None:
        """Quit; while the job runs, ask first, then stop it (q again: kill it now)."""
        session = self.session
        app = self.app
        if session.done:
            app.exit()
            return
        if self.quitting:  # q again while stopping: do not wait for the escalation
            session.kill()
            return
        if isinstance(app.screen, ConfirmStop):
            return
        question = f"The job is still running (pid {session.pid}). Stop it and quit?"
        app.push_screen(ConfirmStop(question), self._quit_answer)

    def _quit_answer(self, yes: bool | None) -> None:
        if not yes or self.session.done:
            if yes:
                self.app.exit()
            return
        self.quitting = True
        self.session.stop()
        self._moved()
        self._stop_then_exit(self.session)

    @work(thread=True, group="quit", exit_on_error=False, description="stop the job")
    def _stop_then_exit(self, session: RunSession) -> None:
        escalation = 2 * self.launcher.options.grace_s + 1.0
        if session.wait(escalation) is None:
            session.kill()
            session.wait(QUIT_KILL_AFTER_S)
        self.app.call_from_thread(self.app.exit)
