"""Watching the GPU while a job runs (NVML, through a fake `pynvml` here: no GPU in CI), and
what run.json records of the job's Python, torch's CUDA build and the GPUs."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from ui_helpers import REPO, sync
from waits import until

from tcview.run import gpu
from tcview.run.gpu import GpuSample, GpuSampler, load_nvml, peak_bandwidth, table_peak
from tcview.run.session import Launcher
from tcview.run.spec import PythonInfo, RunOptions, build_spec, probe_python

FAKE = REPO / "tests" / "fake_nvml"
H100: dict[str, Any] = {
    "name": "NVIDIA H100 80GB HBM3",
    "util": 87,
    "used": 12 << 30,
    "total": 80 << 30,
    "mem_mhz": 2619,
    "bus_bits": 5120,
}
CONFIG = {"driver": "580.159.04", "gpus": [H100, {**H100, "util": 3, "used": 1 << 30}]}
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


@pytest.fixture
def fake_nvml(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The fake `pynvml` importable, describing two H100s."""
    monkeypatch.syspath_prepend(str(FAKE))
    monkeypatch.setenv("TCVIEW_FAKE_NVML", json.dumps(CONFIG))
    monkeypatch.delitem(sys.modules, "pynvml", raising=False)
    import pynvml

    pynvml.CALLS.clear()
    yield pynvml
    sys.modules.pop("pynvml", None)


def test_no_package_or_no_gpu_means_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu, "NVML_MODULE", "tcview_no_such_nvml_module")
    assert load_nvml() is None
    sampler = GpuSampler(lambda s: None)
    sampler.start()
    sampler.stop()
    assert sampler.samples == 0 and sampler.summary() is None


def test_no_driver_means_nothing(fake_nvml: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TCVIEW_FAKE_NVML")  # nvmlInit fails, as without a driver
    assert load_nvml() is None


def test_sample_of_the_job_and_of_all_gpus(fake_nvml: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    nvml = load_nvml()
    assert nvml is not None and nvml.names() == [H100["name"]] * 2
    everything = nvml.sample([])
    assert everything.gpus == 2 and everything.job_bytes is None
    assert everything.util_percent == pytest.approx(45.0)
    assert everything.text == "GPU×2 45% · 13.0/160 GiB"
    config = json.loads(json.dumps(CONFIG))
    config["gpus"][1]["procs"] = [[4242, 3 << 30]]
    monkeypatch.setenv("TCVIEW_FAKE_NVML", json.dumps(config))
    mine = nvml.sample([4242, 4243])
    assert (mine.gpus, mine.util_percent, mine.job_bytes) == (1, 3, 3 << 30)
    assert mine.text == "GPU 3% · 3.0 GiB"


def test_peak_bandwidth_from_nvml_else_the_table(
    fake_nvml: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    peak = peak_bandwidth(H100["name"])
    assert peak is not None and peak.gb_s == pytest.approx(3352.3, rel=1e-3)
    assert peak.source.startswith("NVML: memory clock 2619 MHz × 5120-bit bus")
    monkeypatch.delenv("TCVIEW_FAKE_NVML")
    peak = peak_bandwidth(H100["name"])
    assert peak is not None and peak.gb_s == 3350.0 and "datasheet" in peak.source
    h200, a100 = table_peak("NVIDIA H200"), table_peak("NVIDIA A100-SXM4-80GB")
    assert h200 is not None and h200.gb_s == 4800.0
    assert a100 is not None and a100.gb_s == 2039.0
    assert table_peak("Some Unknown GPU") is None


def test_sampler_reads_off_the_calling_thread_at_most_twice_a_second(fake_nvml: Any) -> None:
    got: list[GpuSample] = []
    sampler = GpuSampler(got.append, interval=0.01)  # asks for 100/s: gets 2/s at most
    start = time.monotonic()
    sampler.start()
    time.sleep(1.3)
    sampler.stop()
    took = time.monotonic() - start
    assert 1 <= len(got) <= int(took / gpu.SAMPLE_S) + 1
    reads = [t for name, t in fake_nvml.CALLS if name == "nvmlDeviceGetUtilizationRates"]
    assert reads and all(t == "tcview-gpu" for t in reads)
    assert sampler.summary() == {
        "samples": len(got),
        "peak_util_percent": 45.0,
        "peak_memory_bytes": 13 << 30,
        "memory_of": "the whole GPU(s)",
    }


@pytest.mark.e2e
def test_probe_reports_cuda_gpus_and_driver_without_torch(tmp_path: Path) -> None:
    """probe_python reads torch's CUDA build from torch/version.py (no import) and the GPUs
    through the job Python's pynvml (the fake, on its PYTHONPATH)."""
    site = tmp_path / "site"
    torch_dir = site / "torch"
    torch_dir.mkdir(parents=True)
    (torch_dir / "__init__.py").write_text("raise SystemExit('torch must not be imported')\n")
    (torch_dir / "version.py").write_text(
        "from typing import Optional\n__version__ = '2.11.0+cu130'\n"
        "cuda: Optional[str] = '13.0'\nhip: Optional[str] = None\n"
    )
    env = dict(
        os.environ,
        PYTHONPATH=f"{FAKE}{os.pathsep}{site}",
        TCVIEW_FAKE_NVML=json.dumps(CONFIG),
    )
    info = probe_python(sys.executable, env)
    assert info.error is None
    assert info.cuda == "13.0" and info.hip is None
    assert info.gpus == (H100["name"], H100["name"])
    assert info.gpu_driver == "580.159.04"


@pytest.mark.e2e
def test_run_json_records_gpus_and_the_jobs_peak_use(tmp_path: Path, fake_nvml: Any) -> None:
    spec = build_spec(["--", sys.executable, "-c", "import time; time.sleep(1.5)"])
    launcher = Launcher(spec, RunOptions(run_dir=tmp_path / "D", grace_s=1.0))
    launcher.python_info = PythonInfo(
        spec.python,
        "3.11",
        "2.11.0+cu130",
        "3.6.0",
        cuda="13.0",
        gpus=("NVIDIA H100",),
        gpu_driver="580.1",
    )
    seen: list[GpuSample] = []
    launcher.on_gpu = seen.append
    session = launcher.start()
    assert session.wait(20) is not None
    data = json.loads((session.run_dir / "run.json").read_text())
    assert (data["cuda"], data["gpus"], data["gpu_driver"]) == ("13.0", ["NVIDIA H100"], "580.1")
    assert (data["torch"], data["triton"]) == ("2.11.0+cu130", "3.6.0")
    use = data["gpu_use"]
    assert use is not None and use["samples"] >= 1 and use["peak_util_percent"] == 45.0
    assert seen and seen[0].text == "GPU×2 45% · 13.0/160 GiB"


@pytest.mark.e2e
def test_run_json_without_nvml_says_nothing_of_gpu_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gpu, "NVML_MODULE", "tcview_no_such_nvml_module")
    spec = build_spec(["--", sys.executable, "-c", "pass"])
    launcher = Launcher(spec, RunOptions(run_dir=tmp_path / "D", grace_s=1.0))
    launcher.python_info = PythonInfo(spec.python)
    session = launcher.start()
    assert session.wait(20) is not None
    data = json.loads((session.run_dir / "run.json").read_text())
    assert data["gpu_use"] is None and data["gpus"] == []


@pytest.mark.e2e
@sync
async def test_status_bar_shows_the_jobs_gpu_use(tmp_path: Path, fake_nvml: Any) -> None:
    from tcview.ui.run_app import RunApp

    flag = tmp_path / "flag"
    code = (
        f"import time, pathlib\nwhile not pathlib.Path({str(flag)!r}).exists(): time.sleep(0.05)\n"
    )
    spec = build_spec(["--", sys.executable, "-c", code])
    launcher = Launcher(spec, RunOptions(run_dir=tmp_path / "D", grace_s=1.0))
    launcher.python_info = PythonInfo(spec.python)
    session = launcher.start()
    app = RunApp(launcher, session)
    async with app.run_test(size=(140, 30)) as pilot:
        await until(pilot, lambda: "GPU×2 45%" in app.status_left, seen=lambda: app.status_left)
        assert "GPU×2 45% · 13.0/160 GiB" in app.status_left
        assert app.status_left.startswith("running pid")
        flag.write_text("go")
        await until(pilot, lambda: app.job._ended, what="the job's end")
        # the job ended: no GPU use to show
        await until(pilot, lambda: "GPU" not in app.status_left, seen=lambda: app.status_left)
