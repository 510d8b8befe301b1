"""`tcview run --profile` on CPU: a real job, unchanged, records a profiler window
into its run directory; the report and `summary` of the run directory join it to the compiled
C++ kernels. Slow: real torch.compile."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import TCVIEW_CLI, needs_torch

JOB = Path(__file__).resolve().parent / "fixtures" / "jobs" / "profile_job.py"
pytestmark = [needs_torch, pytest.mark.slow, pytest.mark.xdist_group("run_torch")]
USER_SITE = """
import os
open(os.environ["USER_SITE_MARK"], "a").write(f"{os.getpid()}\\n")
"""


def tcview(cwd: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    return subprocess.run(
        [*TCVIEW_CLI, *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        env=env,
    )


@pytest.fixture(scope="module")
def profiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, Path]:
    """The job run once under `tcview run --profile`, with a sitecustomize of the user's own
    on PYTHONPATH (it must still run)."""
    cwd = tmp_path_factory.mktemp("run")
    site = cwd / "usersite"
    site.mkdir()
    (site / "sitecustomize.py").write_text(USER_SITE)
    mark = cwd / "mark.txt"
    repo = str(Path(__file__).resolve().parent.parent)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([repo, str(site)]),
        "USER_SITE_MARK": str(mark),
    }
    done = tcview(
        cwd,
        "run",
        "--no-tui",
        "--dir",
        "D",
        "--profile",
        "--profile-window",
        "0.5,1",
        str(JOB),
        "3",
        env=env,
    )
    return cwd / "D", done, mark


def test_run_profile_records_a_window(profiled: tuple[Path, Any, Path]) -> None:
    run_dir, done, mark = profiled
    assert done.returncode == 0, done.stderr[-2000:]
    traces = list((run_dir / "profile").glob("*.pt.trace.json"))
    assert len(traces) == 1
    meta = json.loads(next((run_dir / "profile").glob("*.window.json")).read_text())
    assert meta["ended"] == "window" and 0.9 <= meta["recorded_s"] < 3
    assert meta["bytes"] == traces[0].stat().st_size
    # the report states the window's size and cost, and the join
    assert f"recorded {meta['recorded_s']}s" in done.stdout  # about 1 s; more on a busy machine
    assert "writing it stopped the job for" in done.stdout
    assert "Kernels by measured CPU-kernel time" in done.stdout
    assert "graph_0_cpp_fused" in done.stdout
    # the user's own sitecustomize still ran in the job
    assert mark.is_file() and mark.read_text().strip()


def test_run_directory_opens_with_its_profile(profiled: tuple[Path, Any, Path]) -> None:
    run_dir, _, _ = profiled
    done = tcview(run_dir.parent, "summary", "--json", str(run_dir))
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["skipped"] == []
    prof = data["profile"]
    with open(next((run_dir / "profile").glob("*.pt.trace.json"))) as fh:
        events = json.load(fh)["traceEvents"]
    cpp = [e for e in events if e.get("ph") == "X" and e["name"].startswith("graph_0_cpp_")]
    assert cpp, "Inductor's C++ kernels were profiled (TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE)"
    rows = [k for k in prof["kernels"] if k["kind"] == "cpp"]
    assert sum(k["calls"] for k in rows) == len(cpp)
    assert all(k["compile"] == "0/0" for k in rows)
    assert prof["unmatched_generated"] == 0
    assert prof["gpu_time_us"] == pytest.approx(sum(k["time_us"] for k in prof["kernels"]), 1e-3)
