"""Times Inductor output code: run by `tcview bench` (and the app's bench key) in the user's
Python, in a private temporary directory, only after the user said yes. Never imported by
tcview itself; it needs torch and the standard library only.

    python _bench_driver.py [--times N] [--repeat N] OUTPUT_CODE.py [...]

For each file it loads the module (its ``__main__`` block does not run) and
- calls the module's own harness, ``benchmark_compiled_module``, as ``python output_code.py``
  does (a synchronize after each call: what that command prints);
- times ``call`` back to back (CUDA events, or the clock on CPU): the graph's time per call;
- times each kernel: on CUDA with torch.profiler, as ``python output_code.py -p`` does (each
  GPU kernel's self time per call); on CPU by wrapping each kernel the module defines.
It prints one line ``TCVIEW-BENCH {json}`` per file; each kernel's share is of the graph's time
in the loop that timed the kernels (``profiled_ms``), so that noise between two loops cannot
make the shares add up to more than the whole.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import re
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

MARK = "TCVIEW-BENCH "
KERNEL_DEF = re.compile(r"^([A-Za-z_]\w*) = async_compile\.([A-Za-z_]\w*)\(", re.M)
TRITON_DEF = re.compile(r"^def (\w+)\(", re.M)


def load(path: Path) -> Any:
    name = f"tcview_bench_{re.sub(r'[^0-9A-Za-z_]', '_', path.stem)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def kernel_names(text: str) -> tuple[list[str], dict[str, str]]:
    """The kernels the module defines, and the Triton function name of each (the name the
    profiler shows) when it differs from the variable."""
    names = [m.group(1) for m in KERNEL_DEF.finditer(text) if m.group(2) != "wait"]
    defs: dict[str, str] = {}
    starts = [(m.start(), m.group(1)) for m in KERNEL_DEF.finditer(text)]
    for i, (start, name) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        found = TRITON_DEF.search(text, start, end)
        if found is not None and found.group(1) != name:
            defs[found.group(1)] = name
    return names, defs


def bench_file(path: Path, times: int, repeat: int) -> dict[str, Any]:
    import torch

    text = path.read_text(encoding="utf-8", errors="replace")
    names, defs = kernel_names(text)
    module = load(path)
    args = module.get_args()
    cuda = any(isinstance(a, torch.Tensor) and a.is_cuda for a in args)
    out: dict[str, Any] = {
        "file": path.name,
        "device": "cuda" if cuda else "cpu",
        "gpu": torch.cuda.get_device_name() if cuda else None,
        "torch": torch.__version__,
        "times": times,
        "repeat": repeat,
    }

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    def call() -> None:
        module.call(list(args))

    for _ in range(3):  # Triton compiles and autotunes on the first calls
        call()
    sync()
    harness = getattr(module, "benchmark_compiled_module", None)
    if callable(harness):
        params = list(inspect.signature(harness).parameters)
        if params and params[0] == "args":
            seconds = harness(args, times=times, repeat=repeat)
        else:
            seconds = harness(times=times, repeat=repeat)
        if isinstance(seconds, (int, float)):
            out["harness_ms"] = seconds * 1e3
    per_call = []
    for _ in range(repeat):
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(times):
                call()
            end.record()
            sync()
            per_call.append(start.elapsed_time(end) / times)
        else:
            t0 = time.perf_counter()
            for _ in range(times):
                call()
            per_call.append((time.perf_counter() - t0) * 1e3 / times)
    out["graph_ms"] = statistics.median(per_call)
    runs = times * repeat
    if cuda:
        kernels, other, loop_s = profile_cuda(call, sync, runs, set(names), defs)
    else:
        (kernels, loop_s), other = time_cpu(module, call, runs, names), []
    out["kernels"], out["other"] = kernels, other
    # The graph's time in the loop that timed its kernels: what their shares are of.
    out["profiled_ms"] = loop_s * 1e3 / runs
    return out


def profile_cuda(
    call: Any, sync: Any, runs: int, names: set[str], defs: dict[str, str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], float]:
    """Each GPU kernel's self time per call, from torch.profiler (as wrapper_benchmark -p)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        sync()
        t0 = time.perf_counter()
        for _ in range(runs):
            call()
        sync()
        loop_s = time.perf_counter() - t0
    kernels: list[dict[str, Any]] = []
    other: list[dict[str, Any]] = []
    for ev in prof.key_averages():
        if ev.device_type == DeviceType.CPU:
            continue
        ms = ev.self_device_time_total / 1e3 / runs
        if ms <= 0:
            continue
        key = str(ev.key)
        name = key if key in names else defs.get(key)
        row = {"name": name or key, "ms": ms, "calls": ev.count / runs}
        (kernels if name is not None else other).append(row)
    return kernels, other, loop_s


def time_cpu(
    module: Any, call: Any, runs: int, names: list[str]
) -> tuple[list[dict[str, Any]], float]:
    """Each kernel's time per call: the module's kernels wrapped with a clock (``call``
    finds them as module globals)."""
    totals = dict.fromkeys(names, 0.0)
    counts = dict.fromkeys(names, 0)
    originals = {n: getattr(module, n) for n in names if callable(getattr(module, n, None))}

    def timed(name: str, fn: Any) -> Any:
        def run(*a: Any, **k: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                totals[name] += time.perf_counter() - t0
                counts[name] += 1

        return run

    for name, fn in originals.items():
        setattr(module, name, timed(name, fn))
    try:
        t0 = time.perf_counter()
        for _ in range(runs):
            call()
        loop_s = time.perf_counter() - t0
    finally:
        for name, fn in originals.items():
            setattr(module, name, fn)
    rows = [
        {"name": n, "ms": totals[n] * 1e3 / runs, "calls": counts[n] / runs}
        for n in originals
        if counts[n]
    ]
    return rows, loop_s


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="tcview-bench-driver")
    parser.add_argument("--times", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("files", nargs="+")
    opts = parser.parse_args(argv)
    failed = 0
    for file in opts.files:
        path = Path(file)
        try:
            result = bench_file(path, max(opts.times, 1), max(opts.repeat, 1))
        except BaseException as exc:  # report any failure of trace code as data
            if isinstance(exc, KeyboardInterrupt):
                raise
            traceback.print_exc()
            result = {"file": path.name, "error": f"{type(exc).__name__}: {exc}"[:2000]}
            failed += 1
        print(MARK + json.dumps(result), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
