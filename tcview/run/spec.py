"""What `tcview run` runs: the command (RunSpec), its options, and the job's Python.

`build_spec` turns `script.py [args]`, `-m module [args]` or `-- COMMAND [args]` into a RunSpec;
`probe_python` asks an interpreter for its versions without importing torch anywhere.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tcview.run.profiling import ProfileOptions

DEFAULT_LOGS = "graph_breaks,recompiles"
DEFAULT_GRACE_S = 5.0
_PYTHON_NAME = re.compile(r"python(\d+(\.\d+)*)?[a-z]?(\.exe)?$")

Kind = Literal["script", "module", "command"]


class LaunchError(Exception):
    """The run cannot start; the message says why, for the user."""


@dataclass(frozen=True)
class RunSpec:
    """What to run. `argv` is the exact command line the job gets."""

    kind: Kind
    argv: tuple[str, ...]
    name: str
    python: str  # the interpreter asked for versions (and, for script/module, the one run)
    needs_torch: bool  # refuse to start when `python` has no torch

    @property
    def display(self) -> str:
        return shlex.join(self.argv)


@dataclass(frozen=True)
class RunOptions:
    run_dir: Path | None = None  # exact directory; None: runs_root/<stamp>-<name>
    runs_root: Path = Path("tcview_runs")
    logs: str = DEFAULT_LOGS  # TORCH_LOGS; "" leaves TORCH_LOGS unset
    env: Mapping[str, str] = field(default_factory=dict)  # --env K=V, applied last
    grace_s: float = DEFAULT_GRACE_S  # stop(): SIGINT, grace, SIGTERM, grace, SIGKILL
    cwd: Path | None = None
    inherit_stdin: bool = False  # headless runs may read the terminal; the TUI must not
    profile: ProfileOptions | None = None  # --profile: record a profiler window


@dataclass(frozen=True)
class PythonInfo:
    executable: str
    version: str | None = None
    torch: str | None = None
    triton: str | None = None
    error: str | None = None
    cuda: str | None = None  # the CUDA torch was built with (torch/version.py)
    hip: str | None = None  # the ROCm torch was built with
    gpus: tuple[str, ...] = ()  # the NVIDIA GPUs that Python's machine has
    gpu_driver: str | None = None


def build_spec(
    target: Sequence[str],
    module: Sequence[str] | str | None = None,
    python: str | None = None,
    env: Mapping[str, str] | None = None,
) -> RunSpec:
    """`script.py [args]`, `-m module [args]` or `[--] COMMAND [args]` as a RunSpec."""
    python = python or sys.executable
    target = list(target)
    if module:
        parts = [module] if isinstance(module, str) else list(module)
        if target and target[0] == "--":
            target = target[1:]
        argv = [python, "-m", *parts, *target]
        return RunSpec("module", tuple(argv), _safe_name(parts[0]), python, True)
    explicit = bool(target) and target[0] == "--"
    if explicit:
        target = target[1:]
    if not target:
        raise LaunchError("nothing to run: give script.py, -m module, or -- COMMAND")
    first = target[0]
    if not explicit and (first.endswith(".py") or Path(first).is_file()):
        if not Path(first).is_file():
            raise LaunchError(f"no such script: {first}")
        argv = [python, *target]
        return RunSpec("script", tuple(argv), _safe_name(Path(first).stem), python, True)
    path = (env or os.environ).get("PATH", os.defpath)
    exe = shutil.which(first, path=path)
    if exe is None:
        raise LaunchError(f"command not found: {first}")
    is_python = bool(_PYTHON_NAME.match(Path(first).name))
    asked = exe if is_python else (_shebang_python(exe, path) or python)
    script = next((a for a in target[1:] if a.endswith(".py")), None)
    name = Path(script).stem if script else Path(first).name
    return RunSpec("command", tuple(target), _safe_name(name), asked, is_python)


def _shebang_python(exe: str, path: str) -> str | None:
    """The interpreter of a Python entry point such as torchrun, for its versions."""
    try:
        with open(exe, "rb") as fh:
            head = fh.readline(512)
    except OSError:
        return None
    if not head.startswith(b"#!") or b"python" not in head:
        return None
    words = head[2:].decode("utf-8", "replace").split()
    if words and Path(words[0]).name == "env" and len(words) > 1:
        return shutil.which(words[1], path=path)
    return words[0] if words else None


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "run"


# Runs in the job's Python: its versions, torch's CUDA build (read from torch/version.py, not
# imported) and the GPUs (NVML when nvidia-ml-py is there, else the driver's /proc files).
# Prints one JSON line; standard library only, and nothing of torch is imported.
PROBE = r"""
import glob, importlib.metadata as m, importlib.util as u, json, os, re, sys
def v(n):
    if u.find_spec(n) is None: return None
    try: return m.version(n)
    except Exception: return 'unknown version'
out = {'executable': sys.executable, 'version': sys.version.split()[0],
       'torch': v('torch'), 'triton': v('triton'), 'cuda': None, 'hip': None,
       'gpus': [], 'gpu_driver': None}
try:
    spec = u.find_spec('torch')
    for root in (spec.submodule_search_locations or []) if spec else []:
        text = open(os.path.join(root, 'version.py'), encoding='utf-8').read()
        for key in ('cuda', 'hip'):
            found = re.search(r"^" + key + r"\b[^=\n]*=\s*'([^']*)'", text, re.M)
            out[key] = found.group(1) if found else None
        break
except Exception:
    pass
def text(x):
    return x.decode('utf-8', 'replace') if isinstance(x, bytes) else str(x)
try:
    import pynvml
    pynvml.nvmlInit()
    try:
        n = pynvml.nvmlDeviceGetCount()
        out['gpus'] = [text(pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i)))
                       for i in range(n)]
        out['gpu_driver'] = text(pynvml.nvmlSystemGetDriverVersion())
    finally:
        pynvml.nvmlShutdown()
except Exception:
    for path in sorted(glob.glob('/proc/driver/nvidia/gpus/*/information')):
        try:
            for line in open(path, encoding='utf-8', errors='replace'):
                if line.startswith('Model:'):
                    out['gpus'].append(line.split(':', 1)[1].strip())
        except OSError:
            pass
    try:
        found = re.search(r'Kernel Module\s+(\S+)', open('/proc/driver/nvidia/version').read())
        out['gpu_driver'] = found.group(1) if found else None
    except OSError:
        pass
print(json.dumps(out))
"""


def probe_python(
    python: str, env: Mapping[str, str] | None = None, timeout: float = 60.0
) -> PythonInfo:
    """Ask `python` for its version, torch, triton, torch's CUDA and the GPUs, without
    importing torch anywhere."""
    code = PROBE
    try:
        done = subprocess.run(
            [python, "-c", code],
            env=dict(env) if env is not None else None,
            capture_output=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return PythonInfo(python, error=f"cannot run {python}: {exc}")
    try:
        data = json.loads(done.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
    except (ValueError, IndexError):
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        return PythonInfo(python, error=f"{python} did not answer: {why[0]}")
    gpus = data.get("gpus")
    return PythonInfo(
        executable=str(data.get("executable") or python),
        version=data.get("version"),
        torch=data.get("torch"),
        triton=data.get("triton"),
        cuda=data.get("cuda"),
        hip=data.get("hip"),
        gpus=tuple(str(g) for g in gpus) if isinstance(gpus, list) else (),
        gpu_driver=data.get("gpu_driver"),
    )
