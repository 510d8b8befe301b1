"""The machine's NVIDIA GPUs, through NVML (the optional ``nvidia-ml-py`` package, ``pip install
'tcview[gpu]'``): what they are, what a job uses of them, their peak memory bandwidth.

Nothing here needs the package: without it (or without a GPU, or a driver) `load_nvml` gives
None and each caller shows nothing. Names of GPUs can also be read from the driver's /proc
files. tcview never imports torch for any of this.
"""

from __future__ import annotations

import contextlib
import glob
import importlib
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

SAMPLE_S = 0.5  # NVML is read at most twice a second
NVML_MODULE = "pynvml"  # what nvidia-ml-py installs
NVML_CLOCK_MEM = 2  # pynvml.NVML_CLOCK_MEM
GIB = 1 << 30

# Peak DRAM bandwidth of known GPUs, GB/s (vendors' datasheets), for when NVML cannot say
# (no nvidia-ml-py): the first entry whose words all occur in the device name wins.
PEAK_GB_S: tuple[tuple[tuple[str, ...], float], ...] = (
    (("H200",), 4800.0),
    (("GH200",), 4000.0),
    (("H100", "NVL"), 3900.0),
    (("H100", "PCIe"), 2000.0),
    (("H100",), 3350.0),  # SXM5 80GB HBM3
    (("H800",), 3350.0),
    (("H20",), 4000.0),
    (("B200",), 8000.0),
    (("A100", "80GB", "PCIe"), 1935.0),
    (("A100", "80GB"), 2039.0),
    (("A100",), 1555.0),  # 40GB
    (("A800",), 2039.0),
    (("L40S",), 864.0),
    (("L40",), 864.0),
    (("L4",), 300.0),
    (("A10G",), 600.0),
    (("A10",), 600.0),
    (("V100",), 900.0),
    (("T4",), 320.0),
    (("RTX", "4090"), 1008.0),
    (("RTX", "3090"), 936.0),
)


@dataclass(frozen=True)
class Peak:
    """A GPU's peak memory bandwidth and where the number came from."""

    gb_s: float
    source: str


@dataclass(frozen=True)
class GpuSample:
    """One NVML reading: utilisation (percent) and memory of the GPUs a job uses (all of
    them when NVML cannot tell which), and whether the job's processes were found on them."""

    gpus: int
    util_percent: float
    used_bytes: int
    total_bytes: int
    job_bytes: int | None  # the job's processes' memory, when NVML lists them
    time: float

    @property
    def text(self) -> str:
        """``GPU 87% · 12.3 GiB`` (the job's memory), ``GPU×2 63% · 20.1/160 GiB``."""
        which = "GPU" if self.gpus == 1 else f"GPU×{self.gpus}"
        if self.job_bytes is not None:
            memory = f"{self.job_bytes / GIB:.1f} GiB"
        else:
            memory = f"{self.used_bytes / GIB:.1f}/{self.total_bytes / GIB:.0f} GiB"
        return f"{which} {self.util_percent:.0f}% · {memory}"


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


class Nvml:
    """An initialised NVML (`load_nvml`); every call may raise the module's NVMLError."""

    def __init__(self, module: ModuleType) -> None:
        self.module = module
        self.handles = [
            module.nvmlDeviceGetHandleByIndex(i) for i in range(module.nvmlDeviceGetCount())
        ]

    def names(self) -> list[str]:
        return [_text(self.module.nvmlDeviceGetName(h)) for h in self.handles]

    def driver(self) -> str | None:
        try:
            return _text(self.module.nvmlSystemGetDriverVersion())
        except Exception:  # noqa: BLE001 - the field is optional
            return None

    def peak(self, index: int = 0) -> Peak | None:
        """2 × the maximum memory clock × the bus width (DDR: two transfers a clock)."""
        try:
            handle = self.handles[index]
            mhz = self.module.nvmlDeviceGetMaxClockInfo(handle, NVML_CLOCK_MEM)
            bits = self.module.nvmlDeviceGetMemoryBusWidth(handle)
        except Exception:  # noqa: BLE001 - older drivers lack these
            return None
        if not mhz or not bits:
            return None
        gb_s = 2 * mhz * 1e6 * bits / 8 / 1e9
        return Peak(gb_s, f"NVML: memory clock {mhz} MHz × {bits}-bit bus × 2")

    def sample(self, pids: Iterable[int] = ()) -> GpuSample:
        """Utilisation and memory; with `pids` (the job's processes), of the GPUs they use."""
        module = self.module
        wanted = set(pids)
        chosen: list[Any] = []
        job_bytes = 0
        for handle in self.handles:
            try:
                procs = module.nvmlDeviceGetComputeRunningProcesses(handle)
            except Exception:  # noqa: BLE001 - not supported in some containers
                procs = []
            mine = [p for p in procs if getattr(p, "pid", None) in wanted]
            if mine:
                chosen.append(handle)
                job_bytes += sum(int(getattr(p, "usedGpuMemory", 0) or 0) for p in mine)
        handles = chosen or self.handles
        util = used = total = 0
        for handle in handles:
            util += module.nvmlDeviceGetUtilizationRates(handle).gpu
            memory = module.nvmlDeviceGetMemoryInfo(handle)
            used += int(memory.used)
            total += int(memory.total)
        return GpuSample(
            len(handles),
            util / max(len(handles), 1),
            used,
            total,
            job_bytes if chosen else None,
            time.time(),
        )

    def close(self) -> None:
        # shutting down what may be half there
        with contextlib.suppress(Exception):
            self.module.nvmlShutdown()


def load_nvml() -> Nvml | None:
    """NVML with at least one GPU, or None: no nvidia-ml-py, no driver, no GPU."""
    try:
        module = importlib.import_module(NVML_MODULE)
        module.nvmlInit()
    except Exception:  # noqa: BLE001 - any failure means: no GPU to show
        return None
    try:
        nvml = Nvml(module)
    except Exception:  # noqa: BLE001
        _shutdown(module)
        return None
    if not nvml.handles:
        nvml.close()
        return None
    return nvml


def _shutdown(module: ModuleType) -> None:
    with contextlib.suppress(Exception):
        module.nvmlShutdown()


PROC_GPUS = "/proc/driver/nvidia/gpus/*/information"


def gpus_here() -> list[str]:
    """The names of this machine's NVIDIA GPUs: from NVML, else from the driver's /proc
    files; [] when there is none (or no driver)."""
    nvml = load_nvml()
    if nvml is not None:
        try:
            return nvml.names()
        except Exception:  # noqa: BLE001
            return []
        finally:
            nvml.close()
    names = []
    for path in sorted(glob.glob(PROC_GPUS)):
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    if line.startswith("Model:"):
                        names.append(line.split(":", 1)[1].strip())
        except OSError:
            continue
    return names


def peak_bandwidth(name: str | None) -> Peak | None:
    """The peak memory bandwidth of the GPU called `name`: NVML's clock and bus width when
    nvidia-ml-py is there, else the datasheet figure of a known GPU; None when unknown."""
    nvml = load_nvml()
    if nvml is not None:
        try:
            names = nvml.names()
            index = names.index(name) if name in names else 0
            found = nvml.peak(index)
        except Exception:  # noqa: BLE001
            found = None
        finally:
            nvml.close()
        if found is not None:
            return found
    return table_peak(name)


def datasheet_peak(name: str | None) -> tuple[float, str] | None:
    """(GB/s, where the figure comes from) of the GPU a profile names: the datasheet table
    only (the profile may come from another machine than this one)."""
    found = table_peak(name)
    return (found.gb_s, found.source) if found is not None else None


def table_peak(name: str | None) -> Peak | None:
    if not name:
        return None
    words = set(re.split(r"[\s_-]+", name))
    for needed, gb_s in PEAK_GB_S:
        if all(w in words for w in needed):
            return Peak(gb_s, f"datasheet figure for {name} (tcview's table: {' '.join(needed)})")
    return None


class GpuSampler:
    """Reads NVML in a thread of its own, at most every `interval` seconds (never faster than
    twice a second), and hands each sample to `on_sample`; keeps the peak use. Without NVML
    (`load` gives None) the thread ends at once and nothing is sampled."""

    def __init__(
        self,
        on_sample: Callable[[GpuSample], None] | None = None,
        pids: Callable[[], Iterable[int]] = tuple,
        interval: float = SAMPLE_S,
        load: Callable[[], Nvml | None] = load_nvml,
    ) -> None:
        self.on_sample = on_sample
        self.pids = pids
        self.interval = max(interval, SAMPLE_S)
        self.load = load
        self.peak_util = 0.0
        self.peak_bytes = 0
        self.samples = 0
        self.job_seen = False  # NVML listed the job's processes
        self.last: GpuSample | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tcview-gpu", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=2.0)

    def summary(self) -> dict[str, Any] | None:
        """The peak use, for run.json (None when nothing was sampled)."""
        if not self.samples:
            return None
        return {
            "samples": self.samples,
            "peak_util_percent": round(self.peak_util, 1),
            "peak_memory_bytes": self.peak_bytes,
            "memory_of": "the job's processes" if self.job_seen else "the whole GPU(s)",
        }

    def _run(self) -> None:
        nvml = self.load()
        if nvml is None:
            return
        try:
            while not self._stop.is_set():
                try:
                    sample = nvml.sample(self.pids())
                except Exception:  # noqa: BLE001 - a GPU that went away: stop quietly
                    return
                self.samples += 1
                self.last = sample
                self.peak_util = max(self.peak_util, sample.util_percent)
                self.job_seen = self.job_seen or sample.job_bytes is not None
                used = sample.job_bytes if sample.job_bytes is not None else sample.used_bytes
                self.peak_bytes = max(self.peak_bytes, used)
                if self.on_sample is not None:
                    # a UI bug must not stop the sampling
                    with contextlib.suppress(Exception):
                        self.on_sample(sample)
                self._stop.wait(self.interval)
        finally:
            nvml.close()
