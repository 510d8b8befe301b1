"""The app's bench key: benchmark the selected compile's output code (or a kernel's) on this
machine, after a dialog that shows exactly what will run (run/bench.py does the work).

`Bencher` holds the session's results: each benchmarked kernel's time, which the kernels view
shows in a column (and sorts by) for as long as the app runs.
"""

from __future__ import annotations

from collections.abc import Hashable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.dom import DOMNode
from textual.screen import ModalScreen
from textual.widgets import Static

from tcview.ingest.session import ModelSession
from tcview.model.keys import stable_key
from tcview.model.objects import Compile, Kernel, Record
from tcview.report.detail import Detail, Section
from tcview.run.bench import (
    BenchJob,
    BenchPlan,
    BenchRefused,
    BenchResult,
    KernelTime,
    exec_refusal,
    plan_bench,
)
from tcview.text.safe import safe_line
from tcview.ui.content import lit, styled_doc
from tcview.ui.messages import BenchFinished

BENCH_BINDINGS = [
    Binding(
        "B",
        "bench",
        "Bench",
        show=False,
        id="bench.run",
        tooltip="benchmark the selected compile (or a kernel's graph) on this machine: asks"
        " first; while one runs, offers to cancel it",
    ),
]


class BenchDialog(ModalScreen[bool]):
    """What the benchmark will run, and the question."""

    BINDINGS = [
        Binding("y", "answer(True)", "Run it", id="bench.yes", tooltip="run the benchmark"),
        Binding("n,escape", "answer(False)", "Cancel", id="bench.no", tooltip="run nothing"),
    ]

    def __init__(self, plan: BenchPlan) -> None:
        super().__init__()
        self.plan = plan

    def compose(self) -> ComposeResult:
        with Vertical(id="bench-dialog"):
            yield Static(Text("Run code from this trace on this machine?", style="bold"))
            for line in self.plan.describe():
                yield Static(lit(line))
            yield Static(
                Text.assemble(("y", "bold"), " run it   ", ("n", "bold"), " / esc: run nothing")
            )

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class CancelBenchDialog(ModalScreen[bool]):
    """The bench key while a benchmark runs: cancel it (kill its process group), or not."""

    BINDINGS = [
        Binding(
            "y", "answer(True)", "Cancel it", id="bench.cancel", tooltip="kill its process group"
        ),
        Binding("n,escape", "answer(False)", "Keep it", id="bench.keep", tooltip="let it run"),
    ]

    def __init__(self, labels: str) -> None:
        super().__init__()
        self.labels = labels

    def compose(self) -> ComposeResult:
        with Vertical(id="bench-dialog"):
            yield Static(Text("A benchmark is running. Cancel it?", style="bold"))
            yield Static(lit(self.labels))
            yield Static(
                Text.assemble(("y", "bold"), " cancel it   ", ("n", "bold"), " / esc: let it run")
            )

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


def bench_section(time: KernelTime) -> Section:
    """A kernel's benchmark, as a section of its detail."""
    section = Section("benchmark (this machine, this session)", "time")
    section.label_width = 10
    section.row("time", f"{time.ms:.4f} ms per call of its graph ({time.calls:g} launch(es))")
    section.row("share", f"{time.share:.1%} of the graph's time")
    if time.gb_s is not None:
        peak = time.peak
        rate = f"{time.gb_s:,.0f} GB/s"
        if peak is not None and time.of_peak is not None:
            rate += f" = {time.of_peak:.0%} of {peak.gb_s:,.0f} GB/s ({peak.source})"
        section.row("bandwidth", rate)
    return section


def with_bench(detail: Detail, time: KernelTime | None) -> Detail:
    """The detail with the kernel's benchmark, when it has one, right after its source."""
    if time is not None:
        code = (i + 1 for i, s in enumerate(detail.sections) if s.language)
        detail.sections.insert(next(code, len(detail.sections)), bench_section(time))
    return detail


def result_doc(result: BenchResult) -> list[Text]:
    style = "bold" if result.ok else "bold red"
    out = [Text("benchmark", style=style)]
    out.extend(lit(line) for line in result.lines())
    if not result.ok and result.output:
        out.append(Text(""))
        out.append(Text("its output (the end)", style="bold underline"))
        out.extend(lit(line) for line in result.output.splitlines()[-60:])
    return out


class Bencher:
    """The bench key's state: the running job, and the times of every kernel benchmarked.

    It works for `host` (the browser screen): its dialogs and notes go to host's app, and
    `BenchFinished` is posted to host when a benchmark ends.
    """

    def __init__(self, host: DOMNode, python: str | None, no_exec: bool) -> None:
        self.host = host
        self.python = python
        self.no_exec = no_exec
        self.job: BenchJob | None = None
        self.planning = False
        self.times: dict[Hashable, KernelTime] = {}  # a kernel (any version) -> its latest time
        self.results: list[BenchResult] = []

    def time_of(self, kernel: Kernel) -> KernelTime | None:
        return self.times.get(stable_key(kernel))

    def start(self, target: Compile | Kernel | Record | None, session: ModelSession) -> None:
        app = self.host.app
        refusal = exec_refusal(self.no_exec)
        if refusal is not None:
            app.notify(
                markup=False,
                message=f"{refusal}: nothing from the trace is run",
                severity="warning",
            )
            return
        if self.job is not None:
            labels = "; ".join(g.label for g in self.job.plan.graphs)
            app.push_screen(CancelBenchDialog(labels), self._cancel_answered)
            return
        if self.planning:
            app.notify(markup=False, message="a benchmark is being prepared")
            return
        if target is None or session.model is None:
            app.notify(
                markup=False,
                message="select a compile, an output code or a kernel to benchmark",
                severity="warning",
            )
            return
        self.planning = True
        app.run_worker(
            lambda: self._plan(target, session),
            thread=True,
            group="bench",
            exit_on_error=False,
            description="bench plan",
        )

    def _plan(self, target: Compile | Kernel | Record, session: ModelSession) -> None:
        app = self.host.app
        try:
            model = session.model
            if model is None:
                raise BenchRefused("nothing is loaded")
            plan = plan_bench(model, target, self.python)
        except BenchRefused as exc:
            app.call_from_thread(self._refused, str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - never end the app over a bad trace
            app.call_from_thread(self._refused, f"cannot plan the benchmark: {exc!r}")
            return
        app.call_from_thread(self._ask, plan)

    def _refused(self, why: str) -> None:
        self.planning = False
        self.host.app.notify(
            markup=False,
            message=safe_line(why),
            title="not benchmarked",
            severity="error",
            timeout=12,
        )

    def _ask(self, plan: BenchPlan) -> None:
        self.host.app.push_screen(BenchDialog(plan), lambda yes: self._answered(plan, bool(yes)))

    def _answered(self, plan: BenchPlan, yes: bool) -> None:
        self.planning = False
        if not yes:
            plan.discard()
            self.host.app.notify(markup=False, message="not benchmarked: nothing was run")
            return
        self.job = BenchJob(plan)
        labels = "; ".join(g.label for g in plan.graphs)
        self.host.app.notify(
            markup=False, message=safe_line(f"benchmarking {labels}… (B again to cancel)")
        )
        job = self.job
        self.host.app.run_worker(
            lambda: self._run(job),
            thread=True,
            group="bench",
            exit_on_error=False,
            description="bench",
        )

    def _run(self, job: BenchJob) -> None:
        result = job.run()
        self.host.app.call_from_thread(self._finished, result)

    def _finished(self, result: BenchResult) -> None:
        self.job = None
        self.results.append(result)
        for time in result.kernel_times():
            if time.kernel is not None:
                self.times[stable_key(time.kernel)] = time
        app = self.host.app
        if result.ok:
            graphs = result.graphs
            summary = "; ".join(
                f"{g.graph.label}: {g.graph_ms:.4f} ms, kernels {g.kernels_ms / g.graph_ms:.0%}"
                for g in graphs
                if g.graph_ms
            )
            app.notify(markup=False, message=safe_line(f"benchmarked: {summary}"), timeout=10)
        else:
            app.notify(
                markup=False,
                message=safe_line(result.problem or "the benchmark failed"),
                title="benchmark failed",
                severity="error",
                timeout=12,
            )
        self.host.post_message(BenchFinished(result, styled_doc("benchmark", result_doc(result))))

    def _cancel_answered(self, yes: bool | None) -> None:
        if yes:
            self.cancel()

    def cancel(self) -> None:
        job = self.job
        if job is None:
            self.host.app.notify(markup=False, message="no benchmark is running")
            return
        job.cancel()
        self.host.app.notify(
            markup=False, message="cancelling the benchmark (killing its process group)"
        )
