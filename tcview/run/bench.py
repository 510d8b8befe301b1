"""Benchmark a compiled graph on this machine: `tcview bench` and the app's bench key.

This runs code that came from a trace, so it is never done without the user's explicit yes,
never by default, and `--no-exec` or ``TCVIEW_NO_EXEC=1`` turns it off entirely. The steps:

1. `plan_bench` picks the output code(s) to time (a compile's, or the one that defines a
   kernel), refuses when this machine cannot run them (their device is missing, the local
   torch is not the trace's) and makes an empty private directory (mkdtemp, mode 0700);
2. the user reads `BenchPlan.describe()` (the command, the Python, the directory) and says yes;
3. `BenchJob` writes the payloads into that directory (never into the trace directory) and
   runs `_bench_driver.py` with the user's Python there, with ``TMPDIR`` pointing there too
   (the harness and Inductor's caches write next to it), in its own process group under the
   launcher's supervisor, with a timeout; `cancel` kills the group. The directory is removed
   afterwards.
4. `BenchResult`: per graph, its time and each kernel's time, share and GB/s against the
   GPU's peak bandwidth.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tcview.analysis.kernels import OUTPUT_CODES, kernel_num_gb, output_devices
from tcview.model.objects import OUTPUT_CODE_KINDS, ROLE_SHORT, Compile, Kernel, Model, Record
from tcview.run import cleanup
from tcview.run.gpu import Peak, gpus_here, peak_bandwidth
from tcview.run.session import supervised
from tcview.run.spec import PythonInfo, probe_python

DRIVER = Path(__file__).with_name("_bench_driver.py")
RESULT_MARK = "TCVIEW-BENCH "  # the driver's result lines (_bench_driver.MARK)
NO_EXEC_ENV = "TCVIEW_NO_EXEC"
DEFAULT_TIMEOUT_S = 600.0
DEFAULT_TIMES = 10  # calls per timing, as the output code's own harness
DEFAULT_REPEAT = 10  # timings (the median is kept)
GRACE_S = 2.0  # between SIGTERM and SIGKILL when a benchmark is cancelled
OUTPUT_TAIL = 8000  # characters of the driver's output kept for the user
HARNESS = "def benchmark_compiled_module("
_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?")


class BenchRefused(Exception):
    """tcview will not run this benchmark; the message says why, for the user."""


def exec_refusal(no_exec: bool = False, env: dict[str, str] | None = None) -> str | None:
    """Why running code from a trace is turned off (``--no-exec``, ``TCVIEW_NO_EXEC=1``), or
    None when it is allowed (still only after a yes)."""
    if no_exec:
        return "benchmarking is off: tcview was started with --no-exec"
    value = (env if env is not None else os.environ).get(NO_EXEC_ENV, "")
    if value and value.lower() not in ("0", "false", "no"):
        return f"benchmarking is off: {NO_EXEC_ENV}={value} is set"
    return None


# ---------------------------------------------------------------------- what to run


@dataclass(frozen=True)
class Graph:
    """One output code to time, and the name its payload gets in the private directory."""

    record: Record
    compile: Compile | None
    kernels: tuple[Kernel, ...]
    devices: tuple[str, ...]
    file_name: str

    @property
    def label(self) -> str:
        """``compile 0/1 · output code (fwd)``."""
        where = self.compile.id_label if self.compile is not None else self.record.compile_text
        role = (
            f" ({ROLE_SHORT.get(self.record.role or '', self.record.role)})"
            if self.record.role
            else ""
        )
        return f"compile {where} · output code{role}"


def graphs_for(model: Model, target: Compile | Kernel | Record) -> list[Graph]:
    """The output codes a target stands for: a compile's (forward and backward), the one that
    defines a kernel, or the output code itself. BenchRefused when there is none."""
    if isinstance(target, Kernel):
        records = [target.output]
    elif isinstance(target, Compile):
        records = target.output_codes
        if not records:
            raise BenchRefused(f"compile {target.id_label} has no output code to benchmark")
    elif target.kind in OUTPUT_CODE_KINDS:
        records = [target]
    else:
        raise BenchRefused("pick a compile, an output code or a kernel to benchmark")
    out = []
    for i, rec in enumerate(records):
        code = OUTPUT_CODES.get(rec)
        text = "\n".join(code.lines)
        comp = rec.compile
        if HARNESS not in text or "def get_args(" not in text:
            raise BenchRefused(
                f"the output code of {comp.id_label if comp else rec.compile_text} has no "
                "benchmark harness (benchmark_compiled_module and get_args: torch before 2.0,"
                " or a capture that cut it off)"
            )
        ident = re.sub(r"[^0-9A-Za-z]+", "_", comp.id_label if comp else f"record{i}").strip("_")
        role = rec.role or "graph"
        kernels = tuple(k for k in (comp.kernels if comp else model.kernels) if k.output is rec)
        out.append(
            Graph(rec, comp, kernels, tuple(output_devices(code)), f"graph_{ident}_{role}_{i}.py")
        )
    return out


def trace_torch_version(model: Model) -> str | None:
    """The torch version the trace was made with: ``pytorch_version`` in its compilation
    metrics (torch 2.4 and later), None when no record says."""
    for comp in model.compiles:
        for m in comp.compilation_metrics():
            if m.pytorch_version:
                return m.pytorch_version
    return None


def version_key(version: str) -> tuple[int, int, int] | None:
    """``2.11.0+cu130`` -> (2, 11, 0): major.minor.patch, without the local build tag."""
    m = _VERSION.match(version.strip())
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def check_versions(trace: str | None, local: str | None, python: str) -> str | None:
    """Why the local torch cannot run the trace's output code (None: it can, as far as the
    versions tell). Output code calls torch's internals (``torch._inductor``,
    ``torch._C._dynamo.guards``), which change between releases."""
    if local is None:
        return f"{python} has no torch: install the torch the trace was made with"
    if trace is None:
        return None
    want, have = version_key(trace), version_key(local)
    if want is None or have is None or want == have:
        return None
    return (
        f"the trace was compiled by torch {trace} and {python} has torch {local}: output code"
        " calls torch's internal APIs (torch._inductor, torch._C._dynamo.guards), which change"
        f" between releases, so it may fail or time something else. Use --python with a"
        f" torch {'.'.join(map(str, want))}"
    )


def check_devices(graphs: Sequence[Graph], gpus: Sequence[str]) -> str | None:
    """Why this machine cannot run the graphs' device (None: it can)."""
    for graph in graphs:
        for device in graph.devices:
            if device == "cuda" and not gpus:
                return (
                    f"{graph.label} runs on CUDA (its inputs are made on a CUDA device) and this"
                    " machine has no NVIDIA GPU (NVML and /proc/driver/nvidia see none)"
                )
            if device not in ("cuda", "cpu"):
                return f"{graph.label} runs on {device!r}: tcview benchmarks CUDA and CPU code"
    return None


@dataclass
class BenchPlan:
    """What will run, before the user says yes: the graphs, the Python, the directory."""

    graphs: list[Graph]
    python: str
    info: PythonInfo
    directory: Path  # made (empty, 0700) by `plan_bench`; the payloads go there after a yes
    timeout_s: float
    trace_torch: str | None
    gpus: list[str]
    times: int = DEFAULT_TIMES
    repeat: int = DEFAULT_REPEAT
    notes: list[str] = field(default_factory=list)

    @property
    def argv(self) -> list[str]:
        """The exact command: the user's Python, the driver, the payloads."""
        files = [str(self.directory / g.file_name) for g in self.graphs]
        return [
            self.python,
            str(DRIVER),
            "--times",
            str(self.times),
            "--repeat",
            str(self.repeat),
            *files,
        ]

    @property
    def command_line(self) -> str:
        return shlex.join(self.argv)

    def env(self) -> dict[str, str]:
        """The user's environment, with the temporary directory pointed at the private one."""
        env = dict(os.environ)
        for key in ("TMPDIR", "TEMP", "TMP"):
            env[key] = str(self.directory)
        env["PYTHONUNBUFFERED"] = "1"
        env.pop("TORCH_TRACE", None)  # the benchmark must not write a trace of its own
        env.pop("TORCH_LOGS", None)
        return env

    def describe(self) -> list[str]:
        """What the user is asked about: every fact needed to say yes or no."""
        torch = self.info.torch or "no torch"
        lines = [
            f"benchmark {len(self.graphs)} graph(s): " + "; ".join(g.label for g in self.graphs),
            f"command   {self.command_line}",
            f"python    {self.info.executable} (torch {torch})",
            f"directory {self.directory} (private, removed afterwards; TMPDIR points there)",
            f"timeout   {self.timeout_s:g} s · process group of its own · each graph called"
            f" {self.times}×{self.repeat} times after 3 warm-up calls",
        ]
        lines.extend(f"note      {note}" for note in self.notes)
        return lines

    def discard(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def plan_bench(
    model: Model,
    target: Compile | Kernel | Record,
    python: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    no_exec: bool = False,
    times: int = DEFAULT_TIMES,
    repeat: int = DEFAULT_REPEAT,
) -> BenchPlan:
    """The plan for benchmarking `target`, or BenchRefused saying why not. Reads output
    code from disk and asks the Python for its versions (a subprocess that imports nothing
    of torch): call it off the UI thread."""
    refusal = exec_refusal(no_exec)
    if refusal is not None:
        raise BenchRefused(refusal)
    graphs = graphs_for(model, target)
    trace_torch = trace_torch_version(model)
    gpus = gpus_here() if any("cuda" in g.devices for g in graphs) else []
    why = check_devices(graphs, gpus)
    if why is not None:
        raise BenchRefused(why)
    python = python or sys.executable
    info = probe_python(python)
    if info.error:
        raise BenchRefused(info.error)
    why = check_versions(trace_torch, info.torch, info.executable)
    if why is not None:
        raise BenchRefused(why)
    notes = []
    if trace_torch is None:
        notes.append("the trace does not record its torch version: it could not be compared")
    directory = Path(tempfile.mkdtemp(prefix="tcview-bench-"))
    os.chmod(directory, 0o700)
    return BenchPlan(
        graphs, python, info, directory, timeout_s, trace_torch, gpus, times, repeat, notes
    )


# ---------------------------------------------------------------------- results


@dataclass
class KernelTime:
    """One kernel's share of a benchmarked graph."""

    name: str
    ms: float  # per call of the graph
    calls: float  # launches per call of the graph
    share: float  # of the graph's time, 0..1
    kernel: Kernel | None = None  # the trace's kernel (None: an extern kernel, cuBLAS…)
    gb: float | None = None  # kernel_num_gb × calls
    peak: Peak | None = None

    @property
    def gb_s(self) -> float | None:
        return self.gb / (self.ms / 1e3) if self.gb is not None and self.ms > 0 else None

    @property
    def of_peak(self) -> float | None:
        rate = self.gb_s
        return rate / self.peak.gb_s if rate is not None and self.peak is not None else None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ms": self.ms,
            "calls": self.calls,
            "share": self.share,
            "gb": self.gb,
            "gb_s": self.gb_s,
            "of_peak": self.of_peak,
            "in_trace": self.kernel is not None,
        }


@dataclass
class GraphTime:
    """A benchmarked graph: its time per call and its kernels' (or why it failed)."""

    graph: Graph
    graph_ms: float | None = None  # back to back (steady state)
    profiled_ms: float | None = None  # per call in the loop that timed the kernels
    harness_ms: float | None = None  # the output code's harness: a sync after each call
    device: str = ""
    gpu: str | None = None
    torch: str | None = None
    kernels: list[KernelTime] = field(default_factory=list)  # the trace's kernels
    other: list[KernelTime] = field(default_factory=list)  # other GPU kernels (extern)
    error: str | None = None

    @property
    def kernels_ms(self) -> float:
        return sum(k.ms for k in self.kernels) + sum(k.ms for k in self.other)

    @property
    def share_base(self) -> float:
        """What the kernels' shares are of: the graph's time while they were timed."""
        return self.profiled_ms or self.graph_ms or 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "graph": self.graph.label,
            "compile": self.graph.compile.id_label if self.graph.compile else None,
            "role": self.graph.record.role,
            "device": self.device,
            "gpu": self.gpu,
            "torch": self.torch,
            "graph_ms": self.graph_ms,
            "harness_ms": self.harness_ms,
            "profiled_ms": self.profiled_ms,
            "kernels_ms": self.kernels_ms if self.graph_ms is not None else None,
            "kernels": [k.to_json() for k in self.kernels],
            "other_kernels": [k.to_json() for k in self.other],
            "error": self.error,
        }


@dataclass
class BenchResult:
    plan: BenchPlan
    graphs: list[GraphTime] = field(default_factory=list)
    peak: Peak | None = None
    returncode: int | None = None
    cancelled: bool = False
    timed_out: bool = False
    output: str = ""  # the tail of the driver's output (errors)
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        return (
            bool(self.graphs)
            and all(g.error is None for g in self.graphs)
            and not (self.cancelled or self.timed_out)
        )

    @property
    def problem(self) -> str | None:
        """What went wrong, in a line (None: nothing)."""
        if self.cancelled:
            return "cancelled: the benchmark's process group was killed"
        if self.timed_out:
            return f"timed out after {self.plan.timeout_s:g} s: its process group was killed"
        errors = [f"{g.graph.label}: {g.error}" for g in self.graphs if g.error]
        if errors:
            return "; ".join(errors)
        if not self.graphs:
            last = self.output.strip().splitlines()[-1:] or ["no output"]
            return f"the benchmark ended ({self.returncode}) without a result: {last[0]}"
        return None

    def kernel_times(self) -> list[KernelTime]:
        return [k for g in self.graphs for k in g.kernels]

    def to_json(self) -> dict[str, Any]:
        return {
            "python": self.plan.info.executable,
            "torch_local": self.plan.info.torch,
            "torch_trace": self.plan.trace_torch,
            "command": self.plan.argv,
            "directory": str(self.plan.directory),
            "peak_gb_s": self.peak.gb_s if self.peak else None,
            "peak_source": self.peak.source if self.peak else None,
            "graphs": [g.to_json() for g in self.graphs],
            "ok": self.ok,
            "problem": self.problem,
            "elapsed_s": round(self.elapsed_s, 3),
        }

    def lines(self) -> list[str]:
        """The result as text (what `tcview bench` prints and the app shows)."""
        out: list[str] = []
        problem = self.problem
        if problem:
            out.append(f"benchmark failed: {problem}")
        if self.peak is not None:
            out.append(f"peak bandwidth {self.peak.gb_s:,.0f} GB/s ({self.peak.source})")
        for g in self.graphs:
            if out:
                out.append("")
            where = g.gpu or g.device or "?"
            out.append(f"{g.graph.label} · {where} · torch {g.torch or '?'}")
            if g.error is not None or g.graph_ms is None:
                continue
            out.append(f"  graph    {g.graph_ms:.4f} ms per call, back to back")
            if g.harness_ms is not None:
                out.append(
                    f"  harness  {g.harness_ms:.4f} ms per call (benchmark_compiled_module:"
                    " a synchronize after each call)"
                )
            what = "GPU kernels" if g.device == "cuda" else "kernels"
            out.append(
                f"  kernels  {g.kernels_ms:.4f} ms = {g.kernels_ms / g.graph_ms:.1%} of the"
                f" graph's time ({what})"
            )
            out.append(
                f"  shares   of the {g.share_base:.4f} ms per call measured while timing the"
                " kernels"
            )
            out.append(
                f"  {'kernel':<48} {'ms':>9} {'share':>7} {'calls':>6} {'GB/s':>9} {'of peak':>8}"
            )
            for k in sorted([*g.kernels, *g.other], key=lambda k: -k.ms):
                rate = f"{k.gb_s:,.0f}" if k.gb_s is not None else "-"
                peak = f"{k.of_peak:.0%}" if k.of_peak is not None else "-"
                name = k.name if k.kernel is not None else f"{k.name} (not in the trace)"
                out.append(
                    f"  {name[:48]:<48} {k.ms:>9.4f} {k.share:>7.1%} {k.calls:>6g} {rate:>9} {peak:>8}"
                )
            rest = g.share_base - g.kernels_ms
            if rest > 0:
                outside = (
                    "launches, Python, idle GPU"
                    if g.device == "cuda"
                    else "extern ops (mm…), Python"
                )
                out.append(
                    f"  {'outside the kernels (' + outside + ')':<48} {rest:>9.4f}"
                    f" {rest / g.share_base:>7.1%}"
                )
        return out


def parse_result(plan: BenchPlan, output: str, peak: Peak | None) -> list[GraphTime]:
    """The driver's result lines, attached to the plan's graphs and kernels."""
    by_file = {g.file_name: g for g in plan.graphs}
    out = []
    for line in output.splitlines():
        if not line.startswith(RESULT_MARK):
            continue
        try:
            data = json.loads(line[len(RESULT_MARK) :])
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        graph = by_file.get(str(data.get("file")))
        if graph is None:
            continue
        out.append(_graph_time(graph, data, peak))
    return out


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _graph_time(graph: Graph, data: dict[str, Any], peak: Peak | None) -> GraphTime:
    result = GraphTime(graph)
    if data.get("error"):
        result.error = str(data["error"])
        return result
    result.graph_ms = _num(data.get("graph_ms"))
    result.harness_ms = _num(data.get("harness_ms"))
    result.profiled_ms = _num(data.get("profiled_ms"))
    result.device = str(data.get("device") or "")
    result.gpu = data.get("gpu") if isinstance(data.get("gpu"), str) else None
    result.torch = data.get("torch") if isinstance(data.get("torch"), str) else None
    total = result.profiled_ms or result.graph_ms or 0.0
    by_name = {k.name: k for k in graph.kernels}
    code = OUTPUT_CODES.get(graph.record)
    for key, into in (("kernels", result.kernels), ("other", result.other)):
        rows = data.get(key)
        for row in rows if isinstance(rows, list) else []:
            if not isinstance(row, dict):
                continue
            ms, calls = _num(row.get("ms")), _num(row.get("calls"))
            if ms is None:
                continue
            name = str(row.get("name"))
            kernel = by_name.get(name) if key == "kernels" else None
            gb = None
            if kernel is not None:
                span = code.span_of(kernel)
                per_launch = kernel_num_gb(code, span) if span is not None else None
                gb = per_launch * (calls or 1.0) if per_launch is not None else None
            share = ms / total if total > 0 else 0.0
            into.append(
                KernelTime(
                    name,
                    ms,
                    calls or 0.0,
                    share,
                    kernel,
                    gb,
                    peak if result.device == "cuda" else None,
                )
            )
    return result


# ---------------------------------------------------------------------- running


class BenchJob:
    """The benchmark's process: started only by `run` (after the user's yes), in a process
    group of its own under the launcher's supervisor; `cancel` kills the group."""

    def __init__(self, plan: BenchPlan) -> None:
        self.plan = plan
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.RLock()
        self._reaped = False
        self._cancelled = threading.Event()

    # cleanup.Job
    @property
    def done(self) -> bool:
        proc = self._proc
        return proc is not None and proc.poll() is not None

    def signal_group(self, sig: int) -> bool:
        with self._lock:
            if self._proc is None or self._reaped:
                return False
            return cleanup.signal_group(self._proc.pid, sig)

    def wait(self, timeout: float | None = None) -> object:
        proc = self._proc
        if proc is None:
            return None
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def cancel(self) -> None:
        """Kill the benchmark's process group (SIGTERM, then SIGKILL)."""
        self._cancelled.set()
        self._kill()

    def _kill(self) -> None:
        if self.signal_group(signal.SIGTERM) and self.wait(GRACE_S) is None:
            self.signal_group(signal.SIGKILL)

    def write_payloads(self) -> None:
        """The output codes, as the trace holds them, into the private directory."""
        for graph in self.plan.graphs:
            path = self.plan.directory / graph.file_name
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(graph.record.payload_bytes())

    def run(self) -> BenchResult:
        """Write the payloads, run the driver, wait (timeout), parse; remove the directory.
        Blocks: call it off the UI thread."""
        plan = self.plan
        result = BenchResult(plan)
        start = time.monotonic()
        try:
            if self._cancelled.is_set():
                result.cancelled = True
                return result
            self.write_payloads()
            argv = supervised(plan.argv, GRACE_S)
            cleanup.install_cleanup()
            with cleanup.registering(self):
                self._proc = subprocess.Popen(
                    argv,
                    cwd=plan.directory,
                    env=plan.env(),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            try:
                raw, _ = self._proc.communicate(timeout=plan.timeout_s)
            except subprocess.TimeoutExpired:
                result.timed_out = not self._cancelled.is_set()
                self._kill()
                raw, _ = self._proc.communicate()
            with self._lock:
                self._reaped = True
            cleanup.forget(self)
            output = raw.decode("utf-8", "replace")
            result.returncode = self._proc.returncode
            result.cancelled = self._cancelled.is_set()
            result.output = output[-OUTPUT_TAIL:]
            gpu = next(
                (json_gpu for json_gpu in _gpus_in(output)),
                plan.gpus[0] if plan.gpus else None,
            )
            result.peak = peak_bandwidth(gpu) if gpu else None
            result.graphs = parse_result(plan, output, result.peak)
        except OSError as exc:
            result.output = f"cannot run the benchmark: {exc}"
        finally:
            result.elapsed_s = time.monotonic() - start
            plan.discard()
        return result


def _gpus_in(output: str) -> list[str]:
    """The GPU names the driver reported."""
    found = []
    for line in output.splitlines():
        if line.startswith(RESULT_MARK):
            try:
                data = json.loads(line[len(RESULT_MARK) :])
            except ValueError:
                continue
            if isinstance(data, dict) and isinstance(data.get("gpu"), str):
                found.append(data["gpu"])
    return found
