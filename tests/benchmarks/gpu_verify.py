"""The GPU features checked on a GPU machine, in one command (about 3 to 5 minutes on an
H100): compile small jobs, benchmark a Triton graph headless and from the app, watch a job's
GPU, and show the autotuning and CUDA-graph facts. Results go to $OUT (the device tool's
folder; else ./bench_out): log.txt (everything printed), results.json (each check's data and
verdict), traces.tar.xz (the run directories made, for fixtures). Exit status 1 when a check
failed.

On the device machine (torch 2.11 and nvidia-ml-py are there; Textual and watchdog are not),
from the repo root, with the wheels carried in the git-ignored `.whl/`:

    bash tests/benchmarks/gpu_verify.sh      (installs .whl/*.whl into /tmp/site, runs this)

The wheels, fetched once on a machine with pip and network (Python 3.12, x86-64):

    python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
      --implementation cp --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
      --platform manylinux_2_28_x86_64 -d .whl textual==8.2.8 rich==15.0.0 \
      markdown-it-py==4.3.0 mdit-py-plugins==0.7.0 mdurl==0.1.2 linkify-it-py==2.2.0 \
      uc-micro-py==2.0.0 platformdirs==4.14.7 pygments==2.20.0 typing-extensions==4.15.0 \
      watchdog==7.1.0

(2.7 MB; `.whl/` is in .gitignore. The device tool: carry [".whl"], command
`OUT=$OUT bash tests/benchmarks/gpu_verify.sh`.)

Steps (each one's failure is recorded and the next one still runs):
  a. jobs: tests/fixtures/jobs/gpu/bench_triton.py (a GPU-bound Triton graph),
     autotune.py (max-autotune, TORCH_LOGS autotuning) and cudagraphs.py (reduce-overhead,
     TORCH_LOGS cudagraphs), side by side under `tcview run --no-tui`, cold caches;
  b. `tcview bench RUN --compile 0/0 --json --yes`: each graph's time and the sum of its
     kernels' times (pass: within 20%);
  c. the app under Pilot: kernels view, B, the dialog's text, y, the result, the kernels view;
  d. `tcview run`'s app on busy.py with NVML: status-bar samples, run.json's GPU fields;
  e. `tcview show RUN ID --json` for every compile of the autotune and cudagraphs runs (choice
     tables with their winner; CUDA graphs used or skipped and why), `summary --json`'s
     cudagraphs key, and the compile-time view's autotune total.

Here, without a GPU, `python3 tests/benchmarks/gpu_verify.py --cpu` runs the same steps on CPU
stand-ins (the C++ graph of tests/fixtures/jobs/cpu_bench.py, the fixtures' H100 runs for e,
the fake NVML of tests/fake_nvml for d), so that the script itself is tested.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
JOBS = REPO / "tests" / "fixtures" / "jobs"
RUNS = REPO / "tests" / "fixtures" / "runs"
sys.path[:0] = [str(REPO), str(REPO / "tests")]
PY = sys.executable
BUDGET_S = 450.0  # the whole script: the device tool allows 10 minutes a command
START = time.monotonic()
TOLERANCE = 0.20  # kernels' times against the graph's: they agree within 20%
FAKE_NVML = {
    "driver": "580.159.04",
    "gpus": [
        {
            "name": "NVIDIA H100 80GB HBM3",
            "util": 87,
            "used": 12 << 30,
            "total": 80 << 30,
            "mem_mhz": 2619,
            "bus_bits": 5120,
        }
    ],
}
BASE_LOGS = "graph_breaks,recompiles,output_code,perf_hints"


class Out:
    """Where the results go: a log (also printed) and one JSON of every step."""

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.log_file = open(root / "log.txt", "w", encoding="utf-8")  # noqa: SIM115
        self.results: dict[str, Any] = {}

    def log(self, *lines: str) -> None:
        for line in lines:
            print(line, flush=True)
            self.log_file.write(line + "\n")
        self.log_file.flush()

    def step(self, name: str, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        self.log("", f"=== {name}  (t={time.monotonic() - START:.0f}s)")
        t0 = time.monotonic()
        try:
            data = fn()
        except Exception as exc:  # noqa: BLE001 - record it, go on with the next step
            self.log(traceback.format_exc())
            data = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        data["seconds"] = round(time.monotonic() - t0, 1)
        self.results[name] = data
        self.log(f"--- {name}: {'PASS' if data.get('ok') else 'FAIL'} ({data['seconds']}s)")
        self.save()
        return data

    def save(self) -> None:
        text = json.dumps(self.results, indent=2, default=str)
        (self.root / "results.json").write_text(text, encoding="utf-8")


def left(limit: float) -> float:
    """Seconds a step may take: its own limit, within what is left of the budget."""
    return max(5.0, min(limit, BUDGET_S - (time.monotonic() - START)))


def cli(out: Out, *args: str, timeout: float = 120, env: dict[str, str] | None = None) -> str:
    """`tcview ARGS` (this checkout's), its stdout; its stderr's end goes to the log."""
    done = subprocess.run(
        [PY, "-m", "tcview.commands.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=left(timeout),
        env={**os.environ, **(env or {}), "PYTHONPATH": pythonpath()},
        stdin=subprocess.DEVNULL,
    )
    if done.returncode != 0:
        out.log(f"tcview {' '.join(args)} -> exit {done.returncode}", done.stderr[-3000:])
    return done.stdout


def pythonpath() -> str:
    return os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])


# ---------------------------------------------------------------------- a. jobs


def environment(out: Out, cpu: bool) -> dict[str, Any]:
    code = (
        "import json, torch, importlib.util as u\n"
        "d = {'python': __import__('sys').version.split()[0], 'torch': torch.__version__,"
        " 'cuda': torch.version.cuda, 'gpu': torch.cuda.is_available()"
        " and torch.cuda.get_device_name(),"
        " 'triton': u.find_spec('triton') is not None, 'pynvml': u.find_spec('pynvml')"
        " is not None, 'textual': u.find_spec('textual') is not None}\n"
        "print(json.dumps(d))"
    )
    done = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=120)
    data = json.loads(done.stdout.strip().splitlines()[-1])
    out.log(json.dumps(data))
    data["ok"] = bool(data["textual"]) and (cpu or bool(data["gpu"]))
    return data


def run_jobs(out: Out, work: Path, cpu: bool) -> dict[str, Any]:
    """The run directories: made by `tcview run --no-tui` (GPU), or the CPU stand-ins."""
    if cpu:
        specs = {"bench": (JOBS / "cpu_bench.py", "graph_breaks,recompiles,output_code")}
        for name in ("autotune", "cudagraphs"):  # the fixtures' H100 runs
            with tarfile.open(RUNS / f"{name}.tar.xz") as tar:
                tar.extractall(work, filter="data")
    else:
        gpu = JOBS / "gpu"
        specs = {
            "bench": (gpu / "bench_triton.py", "graph_breaks,recompiles,output_code"),
            "autotune": (gpu / "autotune.py", f"{BASE_LOGS},autotuning"),
            "cudagraphs": (gpu / "cudagraphs.py", f"{BASE_LOGS},cudagraphs"),
        }
    procs = {}
    for name, (script, logs) in specs.items():
        caches = work / "caches" / name
        env = [
            f"TORCHINDUCTOR_CACHE_DIR={caches / 'inductor'}",
            f"TRITON_CACHE_DIR={caches / 'triton'}",
        ]
        args = [PY, "-m", "tcview.commands.cli", "run", "--no-tui", "--dir", str(work / name)]
        args += ["--logs", logs, *(a for e in env for a in ("--env", e)), str(script)]
        log = open(work / f"{name}.out", "w")  # noqa: SIM115 - closed below
        procs[name] = (
            subprocess.Popen(
                args,
                cwd=work,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "PYTHONPATH": pythonpath()},
            ),
            log,
        )
    data: dict[str, Any] = {}
    for name, (proc, log) in procs.items():
        try:
            rc = proc.wait(timeout=left(300))
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        log.close()
        tail = (work / f"{name}.out").read_text(errors="replace").splitlines()[-8:]
        out.log(f"[{name}] exit {rc}", *(f"    {line}" for line in tail))
        data[name] = {"rc": rc, "dir": str(work / name)}
    data["ok"] = all(v["rc"] == 0 for v in data.values() if isinstance(v, dict))
    return data


# ---------------------------------------------------------------------- b. headless bench


def check_graph(out: Out, graph: dict[str, Any]) -> bool:
    """Print a graph's time and its kernels'; True when they agree within 20%."""
    out.log(
        f"graph {graph['graph']} [{graph['compile']}] on {graph['device']} {graph['gpu'] or ''}",
    )
    if graph.get("error"):
        out.log(f"  error: {graph['error']}")
        return False
    out.log(
        f"  graph {graph['graph_ms']:.4f} ms back to back · harness {graph['harness_ms'] or 0:.4f}"
        f" ms · profiled loop {graph['profiled_ms'] or 0:.4f} ms"
    )
    for k in graph["kernels"] + graph["other_kernels"]:
        rate = f"{k['gb_s']:8.0f} GB/s" if k.get("gb_s") else " " * 13
        peak = f" ({k['of_peak']:.0%} of peak)" if k.get("of_peak") else ""
        where = "" if k["in_trace"] else "  (not in the trace)"
        out.log(
            f"    {k['name']:<44} {k['ms']:.4f} ms {k['share']:6.1%} ×{k['calls']:g}"
            f" {rate}{peak}{where}"
        )
    ratio = graph["kernels_ms"] / graph["graph_ms"]
    out.log(f"  sum of kernels {graph['kernels_ms']:.4f} ms = {ratio:.1%} of the graph's time")
    graph["ratio"] = ratio
    return abs(ratio - 1) <= TOLERANCE


def headless_bench(out: Out, work: Path, cpu: bool) -> dict[str, Any]:
    tmp = work / "tmp"
    tmp.mkdir(exist_ok=True)
    text = cli(
        out,
        *("bench", str(work / "bench"), "--compile", "0/0", "--json", "--yes"),
        timeout=240,
        env={"TMPDIR": str(tmp)},
    )
    data = json.loads(text)
    out.log(f"torch here {data.get('torch_local')} · trace {data.get('torch_trace')}")
    out.log(f"peak {data.get('peak_gb_s')} GB/s ({data.get('peak_source')})")
    checks = [check_graph(out, g) for g in data["graphs"]]
    data["ok"] = bool(data["ok"] and checks and (cpu or all(checks)))
    data["within_20_percent"] = checks
    data["tmp_left"] = sorted(p.name for p in tmp.iterdir())
    if data["tmp_left"]:
        out.log(f"left in TMPDIR: {data['tmp_left']}")
        data["ok"] = False
    return data


# ---------------------------------------------------------------------- c. the app's bench


async def pilot_bench(out: Out, run: Path) -> dict[str, Any]:
    from textual.widgets import DataTable
    from ui_helpers import ready, screen_text, settle

    from tcview.ui.app import TcviewApp
    from tcview.ui.bench import BenchDialog
    from tcview.ui.options import OpenOptions
    from tcview.ui.views import KernelsView

    app = TcviewApp(OpenOptions(str(run), python=PY))
    data: dict[str, Any] = {}
    async with app.run_test(size=(200, 50)) as pilot:
        await ready(app, pilot)
        await pilot.press("K")
        await settle(app, pilot)
        assert isinstance(app.browser.shown_pane(), KernelsView), app.browser.shown_pane()
        await pilot.press("down", "B")
        deadline = time.monotonic() + left(120)
        while not isinstance(app.screen, BenchDialog) and time.monotonic() < deadline:
            await pilot.pause(0.05)
        dialog = screen_text(app)
        out.log("the dialog:", dialog)
        assert isinstance(app.screen, BenchDialog), [n.message for n in app._notifications]
        await pilot.press("y")
        deadline = time.monotonic() + left(240)
        while not app.browser.bencher.results and time.monotonic() < deadline:
            await pilot.pause(0.2)
        await settle(app, pilot)
        assert app.browser.bencher.results, "no result in time"
        result = app.browser.bencher.results[-1]
        out.log("the result:", *result.lines())
        if not result.ok:
            out.log(result.output[-4000:])
        shown = screen_text(app)
        out.log("the kernels view:", shown)
        view = app.browser.shown_pane()
        assert isinstance(view, KernelsView)
        table = view.query_one(DataTable)
        rows = {
            str(table.get_row_at(r)[0]): str(table.get_row_at(r)[-1])
            for r in range(table.row_count)
        }
        await pilot.press("s")  # slowest first
        await settle(app, pilot)
        first = str(table.get_row_at(0)[0]) if table.row_count else None
        times = [t for t in result.kernel_times() if t.kernel is not None]
        data = {
            "result": result.to_json(),
            "bench_column": rows,
            "slowest_first": first,
            "ok": result.ok
            and bool(times)
            and all(" ms · " in rows.get(t.name, "") for t in times)
            and first == max(times, key=lambda t: t.ms).name,
        }
    return data


# ---------------------------------------------------------------------- d. GPU watch


async def watch_gpu(out: Out, work: Path, cpu: bool) -> dict[str, Any]:
    from tcview.run.gpu import load_nvml
    from tcview.run.session import Launcher
    from tcview.run.spec import RunOptions, build_spec
    from tcview.ui.run_app import RunApp

    nvml = load_nvml()
    out.log(f"NVML: {'loaded' if nvml is not None else 'absent'}")
    if nvml is not None:
        nvml.close()
    busy = [str(JOBS / "gpu" / "busy.py")]
    job = ["--", PY, "-c", "import time; time.sleep(4)"] if cpu else busy
    spec = build_spec(job, python=PY)
    caches = work / "caches" / "busy"
    options = RunOptions(
        run_dir=work / "busy",
        grace_s=2.0,
        env={
            "TORCHINDUCTOR_CACHE_DIR": str(caches / "inductor"),
            "TRITON_CACHE_DIR": str(caches / "triton"),
        },
    )
    launcher = Launcher(spec, options)
    launcher.preflight()
    session = launcher.start()
    app = RunApp(launcher, session)
    seen: list[tuple[float, str, str]] = []
    async with app.run_test(size=(160, 30)) as pilot:
        start = time.monotonic()
        limit = left(240)
        while not session.done and time.monotonic() - start < limit:
            if not seen or seen[-1][1] != app.job.gpu_text:
                seen.append((round(time.monotonic() - start, 1), app.job.gpu_text, app.status_left))
            await pilot.pause(0.1)
        await pilot.pause(0.5)
    out.log("status bar (seconds · GPU text · whole left part):")
    out.log(*(f"  {t:6.1f}s  {g or '-':<28} {s}" for t, g, s in seen))
    run_json = json.loads((session.run_dir / "run.json").read_text())
    keys = ("python", "torch", "triton", "cuda", "gpus", "gpu_driver", "gpu_use", "exit_code")
    fields = {k: run_json.get(k) for k in keys}
    out.log("run.json:", json.dumps(fields, indent=2))
    use = fields.get("gpu_use") or {}
    gpu_samples = [g for _, g, _ in seen if g]
    ok = bool(gpu_samples) and all(g.startswith("GPU") for g in gpu_samples)
    ok = ok and bool(fields["gpus"]) and bool(fields["gpu_driver"])
    if not cpu:
        ok = ok and bool(fields["cuda"]) and (use.get("peak_util_percent") or 0) > 0
    return {"status_bar": seen, "run_json": fields, "nvml": nvml is not None, "ok": ok}


# ---------------------------------------------------------------------- e. show


def compile_ids(run: Path) -> list[str]:
    from tcview.ingest.source import load_source

    model = load_source(str(run))
    try:
        return [c.id_label for c in model.compiles]
    finally:
        model.close()


def sections_of(out: Out, run: Path, tags: tuple[str, ...]) -> dict[str, list[dict[str, Any]]]:
    """Each compile's detail sections with these tags, from `tcview show RUN ID --json`; the
    text form of those sections goes to the log."""
    found = {}
    for cid in compile_ids(run):
        data = json.loads(cli(out, "show", str(run), cid, "--json"))
        found[cid] = [s for s in data["sections"] if s["tag"] in tags]
        text = cli(out, "show", str(run), cid).splitlines()
        headings = {s["heading"] for s in found[cid]}
        # A section is its heading and the lines after it up to a blank line: its top-level
        # rows are not indented either (the autotune section's ``time`` row).
        keep, first, lines = False, True, []
        for line in text:
            if not line:
                keep, first = False, True
                continue
            if first:
                keep, first = line in headings, False
            if keep:
                lines.append(line)
        out.log(f"[{cid}] " + (text[0] if text else ""), *lines)
    return found


# The autotune section's summary row: ``2 op(s) 7.57s + benchmarking fused kernels 420ms``.
_OPS_SUMMARY = re.compile(r"(\d+) op\(s\)")


def autotune_ops(found: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The autotuned ops of `show --json`'s autotune sections (`sections_of`), and whether
    each is shown whole: its winner, and its choices with the winner first.

    An op is a bullet row tagged ``autotune`` at the section's top level; its winner and kernel
    are the rows under it (depth 1), its choices the rows under those (depth 2, tagged
    ``choice`` or ``winner``). The section's other top-level rows are no op: the summary
    (label ``time``, also tagged ``autotune``: ``2 op(s) 7.57s + benchmarking fused kernels
    420ms``, whose op count must be the ops listed), the forward/backward split, the notes.
    """
    ops: list[dict[str, Any]] = []
    summaries: list[dict[str, Any]] = []
    for cid, sections in found.items():
        for section in sections:
            op: dict[str, Any] | None = None
            listed = 0
            summary: dict[str, Any] | None = None
            for row in section.get("rows", []):
                tag, label, value = row.get("tag"), row.get("label", ""), row.get("value", "")
                depth = row.get("depth", 0)
                if depth == 0:
                    op = None  # a top-level row ends the op above it
                    if tag == "autotune" and (row.get("bullet") or not label):
                        op = {"compile": cid, "op": value, "choices": []}
                        ops.append(op)
                        listed += 1
                    elif tag == "autotune" and label == "time":
                        m = _OPS_SUMMARY.match(value)
                        summary = {"compile": cid, "text": value, "ops": m and int(m.group(1))}
                elif op is None:
                    continue
                elif depth == 1 and label == "winner":
                    op["winner"] = value
                elif depth == 1 and label == "kernel":
                    op["kernel"] = value
                elif depth == 2 and tag in ("choice", "winner"):
                    op["choices"].append((tag, value))
            if summary is not None:
                summary["listed"] = listed
                summaries.append(summary)
    for op in ops:
        first = op["choices"][0] if op["choices"] else None
        op["winner_first"] = bool(first and first[0] == "winner")
    ok = (
        bool(ops)
        and all(op.get("winner") and op["winner_first"] for op in ops)
        and all(s["ops"] == s["listed"] for s in summaries)
    )
    return {"ops": ops, "summaries": summaries, "ok": ok}


def show_autotune(out: Out, work: Path) -> dict[str, Any]:
    run = work / "autotune"
    return {**autotune_ops(sections_of(out, run, ("autotune",))), **time_view(out, run)}


def time_view(out: Out, run: Path) -> dict[str, Any]:
    """The compile-time view's head (t): the autotune total."""

    async def go() -> str:
        from textual.widgets import Static
        from ui_helpers import ready, settle

        from tcview.ui.app import TcviewApp

        app = TcviewApp(str(run))
        async with app.run_test(size=(160, 40)) as pilot:
            await ready(app, pilot)
            await pilot.press("t")
            await settle(app, pilot)
            return str(app.browser.shown_pane().query_one("#view-head", Static).content)

    head = asyncio.run(go())
    out.log("compile-time view:", head)
    return {"time_view": head}


def show_cudagraphs(out: Out, work: Path) -> dict[str, Any]:
    run = work / "cudagraphs"
    summary = json.loads(cli(out, "summary", "--json", str(run)))["cudagraphs"]
    out.log(f"summary cudagraphs: {summary}")
    found = sections_of(out, run, ("cudagraphs",))
    states = {}
    for cid, sections in found.items():
        for section in sections:
            rows = section.get("rows", [])
            state = next((r["value"] for r in rows if r["tag"].startswith("cudagraphs:")), None)
            why = [r["value"] for r in rows if r["label"] in ("why", "left out")]
            states[cid] = {"state": state, "why": why}
    skipped = [s for s in states.values() if s["state"] == "skipped"]
    ok = summary["used"] > 0 and summary["skipped"] > 0 and all(s["why"] for s in skipped)
    return {"summary": summary, "compiles": states, "ok": bool(ok and skipped)}


# ---------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpu", action="store_true", help="CPU stand-ins (no GPU here)")
    parser.add_argument("--out", help="results folder (default: $OUT, else ./bench_out)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    opts = parser.parse_args(argv)
    out = Out(Path(opts.out or os.environ.get("OUT") or REPO / "bench_out"))
    cpu = bool(opts.cpu)
    if cpu:
        fake = str(REPO / "tests" / "fake_nvml")
        sys.path.insert(0, fake)  # here, and in the Pythons tcview asks (run.json's GPUs)
        os.environ["PYTHONPATH"] = os.pathsep.join(
            filter(None, [fake, os.environ.get("PYTHONPATH")])
        )
        os.environ["TCVIEW_FAKE_NVML"] = json.dumps(FAKE_NVML)
    work = Path(tempfile.mkdtemp(prefix="tcview-gpu-verify-"))
    out.log(f"work directory {work} · results {out.root} · {'CPU stand-ins' if cpu else 'GPU'}")
    out.step("environment", lambda: environment(out, cpu))
    jobs = out.step("a_jobs", lambda: run_jobs(out, work, cpu))
    if (work / "bench" / "trace").is_dir():
        out.step("b_bench_headless", lambda: headless_bench(out, work, cpu))
        out.step("c_bench_from_kernels_view", lambda: asyncio.run(pilot_bench(out, work / "bench")))
    out.step("d_gpu_watch", lambda: asyncio.run(watch_gpu(out, work, cpu)))
    if (work / "autotune").is_dir():
        out.step("e_autotune", lambda: show_autotune(out, work))
    if (work / "cudagraphs").is_dir():
        out.step("e_cudagraphs", lambda: show_cudagraphs(out, work))
    with tarfile.open(out.root / "traces.tar.xz", "w:xz") as tar:
        for name in ("bench", "autotune", "cudagraphs", "busy"):
            if (work / name).is_dir():
                tar.add(work / name, arcname=f"gpu_verify/{name}")
    if not opts.keep:
        shutil.rmtree(work, ignore_errors=True)
    failed = [k for k, v in out.results.items() if not v.get("ok")]
    out.log("", f"jobs: {jobs.get('ok')} · failed steps: {failed or 'none'}")
    out.log(f"total {time.monotonic() - START:.0f}s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
