"""`tcview doctor`: what the chosen Python sees (torch, triton, CUDA, GPU) and whether
TORCH_TRACE works there. tcview never imports torch: it asks that Python in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tcview import run as run_package
from tcview.run.spec import probe_python

TIMEOUT_S = 180.0

# Runs in the chosen Python with TORCH_TRACE set (its text, by `-c`: tcview imports no torch).
PROBE = Path(run_package.__file__).parent / "_doctor_probe.py"


def probe(python: str, timeout: float = TIMEOUT_S) -> tuple[dict[str, Any], list[Path], float]:
    """(what `python` reported, the trace files a tiny compile wrote, seconds taken)."""
    with tempfile.TemporaryDirectory(prefix="tcview-doctor-") as tmp:
        trace = Path(tmp) / "trace"
        env = dict(os.environ, TORCH_TRACE=str(trace))
        env.pop("TORCH_LOGS", None)
        start = time.monotonic()
        try:
            done = subprocess.run(
                [python, "-c", PROBE.read_text(encoding="utf-8")],
                env=env,
                cwd=tmp,
                capture_output=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
            )
        except FileNotFoundError:
            return {"error": f"no such Python: {python}"}, [], 0.0
        except OSError as exc:
            return {"error": f"cannot run {python}: {exc}"}, [], 0.0
        except subprocess.TimeoutExpired:
            return {"error": f"{python} took more than {timeout:.0f}s"}, [], timeout
        took = time.monotonic() - start
        lines = done.stdout.decode("utf-8", "replace").strip().splitlines()
        try:
            data = json.loads(lines[-1])
        except (ValueError, IndexError):
            tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
            data = {"error": f"{python} did not answer: {tail[0] if tail else 'no output'}"}
        files = sorted(trace.glob("dedicated_log_torch_trace*.log")) if trace.is_dir() else []
        return data, [Path(f"{p.name} ({p.stat().st_size} bytes)") for p in files], took


def doctor(python: str | None = None) -> int:
    """Print the report; 0 when torch imports and TORCH_TRACE writes a trace, else 1."""
    python = python or sys.executable
    print(f"asking {python} (imports torch, compiles a tiny function) …", file=sys.stderr)
    data, files, took = probe(python)
    if "error" in data:
        print(f"python       {python}")
        print(f"problem      {data['error']}")
        return 1
    print(f"python       {data.get('executable') or python} (Python {data.get('version')})")
    torch = data.get("torch")
    if not torch:
        print(f"torch        not importable: {data.get('torch_error', 'unknown error')}")
        print(f"triton       {data.get('triton') or 'not installed'}")
        return 1
    print(f"torch        {torch}")
    print(f"triton       {data.get('triton') or 'not installed'}")
    if data.get("hip_build"):
        print(f"ROCm build   {data['hip_build']}")
    print(f"CUDA build   {data.get('cuda_build') or 'none (CPU-only torch)'}")
    gpus = data.get("gpus") or []
    if "cuda_error" in data:
        print(f"GPU          error: {data['cuda_error']}")
    elif gpus:
        names = ", ".join(sorted(set(gpus)))
        print(f"GPU          {len(gpus)} × {names}")
    else:
        print("GPU          none visible")
    driver = probe_python(python).gpu_driver
    if driver:
        print(f"GPU driver   {driver}")
    if "compile_error" in data:
        print(f"TORCH_TRACE  could not compile: {data['compile_error']}")
        return 1
    if not files:
        print(f"TORCH_TRACE  does not work: a compile wrote no trace file ({took:.1f}s)")
        return 1
    print(f"TORCH_TRACE  works: {', '.join(str(f) for f in files)} ({took:.1f}s)")
    return 0
