"""A stand-in for nvidia-ml-py's `pynvml`, for tests on machines without a GPU.

Put this folder first on sys.path (or PYTHONPATH, for a subprocess) and describe the GPUs in
TCVIEW_FAKE_NVML as JSON: {"driver": "580.1", "gpus": [{"name": "NVIDIA H100 80GB HBM3",
"util": 87, "used": 1073741824, "total": 85899345920, "procs": [[pid, bytes], ...],
"mem_mhz": 2619, "bus_bits": 5120}]}. Without it, nvmlInit fails as it does with no driver.
Each call is recorded in CALLS (name, thread name) so a test can tell where NVML was read.
"""

from __future__ import annotations

import json
import os
import threading
from types import SimpleNamespace
from typing import Any

NVML_CLOCK_MEM = 2
CALLS: list[tuple[str, str]] = []


class NVMLError(Exception):
    pass


def _config() -> dict[str, Any]:
    raw = os.environ.get("TCVIEW_FAKE_NVML")
    if not raw:
        raise NVMLError("NVML Shared Library Not Found")
    return json.loads(raw)


def _gpu(handle: int) -> dict[str, Any]:
    return _config()["gpus"][handle]


def _call(name: str) -> None:
    CALLS.append((name, threading.current_thread().name))


def nvmlInit() -> None:
    _call("nvmlInit")
    _config()


def nvmlShutdown() -> None:
    _call("nvmlShutdown")


def nvmlDeviceGetCount() -> int:
    return len(_config()["gpus"])


def nvmlDeviceGetHandleByIndex(index: int) -> int:
    return index


def nvmlDeviceGetName(handle: int) -> bytes:
    return _gpu(handle)["name"].encode()


def nvmlSystemGetDriverVersion() -> str:
    return _config().get("driver", "580.0")


def nvmlDeviceGetUtilizationRates(handle: int) -> Any:
    _call("nvmlDeviceGetUtilizationRates")
    return SimpleNamespace(gpu=_gpu(handle).get("util", 0), memory=0)


def nvmlDeviceGetMemoryInfo(handle: int) -> Any:
    gpu = _gpu(handle)
    return SimpleNamespace(used=gpu.get("used", 0), total=gpu.get("total", 1), free=0)


def nvmlDeviceGetComputeRunningProcesses(handle: int) -> list[Any]:
    procs = _gpu(handle).get("procs", [])
    return [SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in procs]


def nvmlDeviceGetMaxClockInfo(handle: int, kind: int) -> int:
    return int(_gpu(handle).get("mem_mhz", 0))


def nvmlDeviceGetMemoryBusWidth(handle: int) -> int:
    return int(_gpu(handle).get("bus_bits", 0))
