"""`tcview bench` and the app's bench key: what is refused (no device, another torch, --no-exec,
no yes), that declining runs nothing, that a job is killed with its group, and (slow: real
torch) that benchmarking a real torch 2.13 CPU run's C++ output code gives the graph's time and
each kernel's share."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import TCVIEW_CLI, find_as, needs_torch
from run_helpers import alive, wait_for
from ui_helpers import REPO, on_top, pane, ready, settle, sync
from waits import holds, until

from tcview.commands.cli import main
from tcview.ingest.source import load_source
from tcview.model.objects import Compile
from tcview.run import bench
from tcview.run.bench import (
    BenchJob,
    BenchRefused,
    check_versions,
    exec_refusal,
    plan_bench,
    trace_torch_version,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
CPP_KERNELS = {"cpp_fused_native_layer_norm_sum_0", "cpp_fused__softmax_add_gelu_1"}


def fake_python(
    tmp_path: Path, name: str = "python-fake", sleep: bool = False
) -> tuple[Path, Path]:
    """A Python that writes each command line it gets to a marker file, then runs the real
    one; with `sleep`, a benchmark (the driver) sleeps instead, with a child, in its group."""
    marker = tmp_path / f"{name}.calls"
    pids = tmp_path / f"{name}.pids"
    script = tmp_path / name
    body = f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{marker}"\n'
    if sleep:
        body += (
            'case "$1" in *_bench_driver.py)\n'
            f'  sleep 60 & echo $! >> "{pids}"; echo $$ >> "{pids}"; exec sleep 60;;\nesac\n'
        )
    body += f'exec "{sys.executable}" "$@"\n'
    script.write_text(body)
    script.chmod(0o755)
    return script, marker


def driver_calls(marker: Path) -> list[str]:
    lines = marker.read_text().splitlines() if marker.exists() else []
    return [line for line in lines if "_bench_driver.py" in line]


def tree_digest(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        h.update(str(path.relative_to(root)).encode())
        if path.is_file():
            h.update(path.read_bytes())
    return h.hexdigest()


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tempfile's directory for this test: where bench directories would appear."""
    where = tmp_path / "tmp"
    where.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(where))
    return where


# ---------------------------------------------------------------------- refusals


@pytest.mark.unit
def test_versions_compare_major_minor_patch() -> None:
    assert check_versions("2.11.0+cu130", "2.11.0", "py") is None
    assert check_versions(None, "2.13.0", "py") is None  # nothing to compare with
    why = check_versions("2.11.0+cu130", "2.13.0+cpu", "/usr/bin/python3")
    assert why is not None and "torch 2.11.0+cu130" in why and "2.13.0+cpu" in why
    assert "--python" in why and "torch 2.11.0" in why
    assert check_versions("2.11.0", "2.11.1", "py") is not None
    assert "no torch" in (check_versions("2.11.0", None, "py") or "")


@pytest.mark.unit
def test_trace_records_its_torch_version(fixture_runs: Path) -> None:
    assert trace_torch_version(load_source(str(fixture_runs / "autotune"))) == "2.11.0+cu130"
    assert trace_torch_version(load_source(str(fixture_runs / "cpu_bench"))) == "2.13.0+cpu"
    text_only = load_source(str(fixture_runs / "autotune" / "torch_logs.txt"))
    assert trace_torch_version(text_only) is None


def test_cuda_code_without_a_gpu_is_refused(
    fixture_runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, private_tmp: Path
) -> None:
    monkeypatch.setattr(bench, "gpus_here", list)  # this machine: no NVIDIA GPU
    python, marker = fake_python(tmp_path)
    model = load_source(str(fixture_runs / "autotune"))
    with pytest.raises(BenchRefused) as refused:
        plan_bench(model, find_as(model, "0/0", Compile), python=str(python))
    assert "runs on CUDA" in str(refused.value) and "no NVIDIA GPU" in str(refused.value)
    assert not marker.exists()  # refused before even asking that Python
    assert not list(private_tmp.iterdir())


@needs_torch
def test_another_torch_is_refused_and_says_why(
    fixture_runs: Path, tmp_path: Path, private_tmp: Path
) -> None:
    run = tmp_path / "older"
    shutil.copytree(fixture_runs / "cpu_bench", run)
    for path in (run / "trace").iterdir():
        path.write_bytes(path.read_bytes().replace(b'"2.13.0+cpu"', b'"2.12.1+cpu"'))
    python, marker = fake_python(tmp_path)
    model = load_source(str(run))
    with pytest.raises(BenchRefused) as refused:
        plan_bench(model, find_as(model, "0/0", Compile), python=str(python))
    why = str(refused.value)
    assert "compiled by torch 2.12.1+cpu" in why and "has torch 2.13.0" in why
    assert "internal APIs" in why
    assert driver_calls(marker) == [] and marker.read_text().startswith("-c")  # probed only
    assert not list(private_tmp.iterdir())


@pytest.mark.parametrize("how", ["flag", "env"])
def test_no_exec_turns_it_off(
    fixture_runs: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    private_tmp: Path,
    how: str,
) -> None:
    python, marker = fake_python(tmp_path)
    argv = ["bench", str(fixture_runs / "cpu_bench"), "--compile", "0/0", "--yes"]
    argv += ["--python", str(python)]
    if how == "flag":
        argv.append("--no-exec")
    else:
        monkeypatch.setenv("TCVIEW_NO_EXEC", "1")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "refused: benchmarking is off" in err
    assert ("--no-exec" if how == "flag" else "TCVIEW_NO_EXEC=1") in err
    assert not marker.exists() and not list(private_tmp.iterdir())


@pytest.mark.unit
def test_exec_refusal_reads_the_environment() -> None:
    assert exec_refusal(False, {}) is None
    assert exec_refusal(False, {"TCVIEW_NO_EXEC": "0"}) is None
    assert exec_refusal(False, {"TCVIEW_NO_EXEC": "yes"}) is not None
    assert exec_refusal(True, {}) is not None


@needs_torch
def test_a_pipe_without_yes_runs_nothing(fixture_runs: Path, tmp_path: Path) -> None:
    python, marker = fake_python(tmp_path)
    where = tmp_path / "tmp"
    where.mkdir()
    run = fixture_runs / "cpu_bench"
    before = tree_digest(run)
    done = subprocess.run(
        [*TCVIEW_CLI, "bench", str(run), "--compile", "0/0"] + ["--python", str(python)],
        cwd=REPO,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=dict(os.environ, TMPDIR=str(where)),
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "pass --yes to confirm" in done.stderr
    assert f"command   {python} " in done.stderr  # it said exactly what would run
    assert driver_calls(marker) == []
    assert not list(where.iterdir())  # the private directory was removed, nothing written
    assert tree_digest(run) == before


@pytest.mark.unit
def test_several_compiles_need_one_named(
    fixture_runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", str(fixture_runs / "cpu_bench"), "--yes", "--no-exec"]) == 2
    assert (
        "2 compiles have output code: say which with --compile (0/0, 1/0)"
        in capsys.readouterr().err
    )


# ---------------------------------------------------------------------- the process group


@needs_torch
@pytest.mark.parametrize("stop", ["cancel", "timeout"])
def test_a_benchmark_is_killed_with_its_group(
    fixture_runs: Path, tmp_path: Path, private_tmp: Path, stop: str
) -> None:
    python, marker = fake_python(tmp_path, "python-slow", sleep=True)
    model = load_source(str(fixture_runs / "cpu_bench"))
    timeout_s = 1.0 if stop == "timeout" else 60
    target = find_as(model, "1/0", Compile)
    plan = plan_bench(model, target, python=str(python), timeout_s=timeout_s)
    assert plan.directory.parent == private_tmp and oct(plan.directory.stat().st_mode)[-3:] == "700"
    job = BenchJob(plan)
    box: list[Any] = []
    worker = threading.Thread(target=lambda: box.append(job.run()))
    worker.start()
    pids_file = tmp_path / "python-slow.pids"
    assert wait_for(lambda: pids_file.exists() and len(pids_file.read_text().split()) == 2)
    pids = [int(p) for p in pids_file.read_text().split()]
    assert (plan.directory / plan.graphs[0].file_name).is_file()  # the payload, written there
    if stop == "cancel":
        job.cancel()
    worker.join(30)
    result = box[0]
    assert result.cancelled == (stop == "cancel") and result.timed_out == (stop == "timeout")
    assert not result.ok and result.problem is not None
    assert wait_for(lambda: not any(alive(p) for p in pids)), "left a process behind"
    assert not plan.directory.exists()
    assert len(driver_calls(marker)) == 1


# ---------------------------------------------------------------------- the app's dialog


@needs_torch
@sync
async def test_declining_the_dialog_runs_nothing(
    fixture_runs: Path, tmp_path: Path, private_tmp: Path
) -> None:
    from textual.widgets import Static

    from tcview.ui.app import TcviewApp
    from tcview.ui.bench import BenchDialog
    from tcview.ui.options import OpenOptions
    from tcview.ui.views import KernelsView

    python, marker = fake_python(tmp_path)
    run = fixture_runs / "cpu_bench"
    before = tree_digest(run)
    app = TcviewApp(OpenOptions(str(run), python=str(python)))
    async with app.run_test(size=(140, 45)) as pilot:
        await ready(app, pilot)
        await pilot.press("K")
        await settle(app, pilot)
        assert isinstance(pane(app), KernelsView)
        await pilot.press("down", "B")
        await until(pilot, lambda: isinstance(app.screen, BenchDialog), 60, seen=lambda: app.screen)
        dialog = app.screen
        assert isinstance(dialog, BenchDialog)

        def text() -> str:
            return "\n".join(str(s.content) for s in dialog.query(Static))

        # The dialog is on screen before its lines are (it failed once under load).
        await until(pilot, lambda: "_bench_driver.py" in text(), 30, seen=text)
        shown = text()
        assert f"command   {python} " in shown and "_bench_driver.py" in shown
        assert f"directory {dialog.plan.directory}" in shown
        assert dialog.plan.directory.is_dir() and not list(dialog.plan.directory.iterdir())
        await pilot.press("n")
        await settle(app, pilot)
        assert isinstance(pane(app), KernelsView)
        assert app.browser.bencher.job is None and not app.browser.bencher.results
    assert driver_calls(marker) == [] and marker.read_text().startswith("-c")  # probed only
    assert not list(private_tmp.iterdir())
    assert tree_digest(run) == before


@sync
async def test_the_key_says_when_it_is_off(fixture_runs: Path, tmp_path: Path) -> None:
    from tcview.ui.app import TcviewApp
    from tcview.ui.options import OpenOptions

    python, marker = fake_python(tmp_path)
    app = TcviewApp(OpenOptions(str(fixture_runs / "cpu_bench"), python=str(python), no_exec=True))
    async with app.run_test(size=(140, 45)) as pilot:
        await ready(app, pilot)
        await pilot.press("K")
        await settle(app, pilot)
        await pilot.press("down", "B")
        await settle(app, pilot)
        messages = [n.message for n in app._notifications]
        assert any("benchmarking is off: tcview was started with --no-exec" in m for m in messages)
    assert not marker.exists()


@needs_torch
@sync
async def test_the_key_again_cancels_a_running_benchmark(
    fixture_runs: Path, tmp_path: Path, private_tmp: Path
) -> None:
    """B while a benchmark runs asks whether to cancel it: n lets it run, y kills its group."""
    from tcview.ui.app import TcviewApp
    from tcview.ui.bench import BenchDialog, CancelBenchDialog
    from tcview.ui.options import OpenOptions
    from tcview.ui.views import KernelsView

    python, marker = fake_python(tmp_path, "python-slow", sleep=True)
    pids_file = tmp_path / "python-slow.pids"
    app = TcviewApp(OpenOptions(str(fixture_runs / "cpu_bench"), python=str(python)))

    async def press_and_wait(key: str, screen: type) -> None:
        await pilot.press(key)
        await until(pilot, lambda: isinstance(on_top(app), screen), 60, seen=lambda: on_top(app))

    async with app.run_test(size=(140, 45)) as pilot:
        await ready(app, pilot)
        await pilot.press("K")
        await settle(app, pilot)
        await pilot.press("down")
        await press_and_wait("B", BenchDialog)
        await press_and_wait("y", KernelsView)
        assert wait_for(lambda: pids_file.exists() and len(pids_file.read_text().split()) == 2)
        pids = [int(p) for p in pids_file.read_text().split()]
        await press_and_wait("B", CancelBenchDialog)
        await press_and_wait("n", KernelsView)
        await holds(
            pilot,
            lambda: app.browser.bencher.job is not None and all(alive(p) for p in pids),
            0.3,
            "the benchmark runs on after n",
            seen=lambda: (app.browser.bencher.job, [alive(p) for p in pids]),
        )
        await press_and_wait("B", CancelBenchDialog)
        await press_and_wait("y", KernelsView)
        await until(
            pilot, lambda: app.browser.bencher.results, 30, "the cancelled benchmark's result"
        )
        assert app.browser.bencher.results[-1].cancelled
        assert app.browser.bencher.job is None
    assert wait_for(lambda: not any(alive(p) for p in pids)), "left a process behind"
    assert len(driver_calls(marker)) == 1


# ---------------------------------------------------------------------- real runs (slow)


@pytest.fixture(scope="module")
def inductor_cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One Inductor cache for the real benchmarks: the C++ is compiled once."""
    return str(tmp_path_factory.mktemp("inductor"))


@pytest.mark.slow
@needs_torch
def test_bench_times_the_cpp_graph_and_each_kernels_share(
    fixture_runs: Path, tmp_path: Path, inductor_cache: str
) -> None:
    run = fixture_runs / "cpu_bench"
    before = tree_digest(run)
    where = tmp_path / "tmp"
    where.mkdir()
    done = subprocess.run(
        [*TCVIEW_CLI, "bench", str(run), "--compile", "0/0", "--json"]
        + ["--yes", "--times", "3", "--repeat", "3"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=dict(os.environ, TMPDIR=str(where), TORCHINDUCTOR_CACHE_DIR=inductor_cache),
        timeout=280,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    data = json.loads(done.stdout)
    assert data["ok"] and data["torch_trace"] == "2.13.0+cpu"
    (graph,) = data["graphs"]
    assert graph["compile"] == "0/0" and graph["device"] == "cpu"
    assert graph["graph_ms"] > 0 and graph["harness_ms"] > 0
    kernels = {k["name"]: k for k in graph["kernels"]}
    assert set(kernels) == CPP_KERNELS
    shares = [k["share"] for k in kernels.values()]
    assert all(0 < s <= 1 for s in shares) and sum(shares) <= 1.0
    assert all(k["ms"] > 0 and k["calls"] == 1 and k["in_trace"] for k in kernels.values())
    assert not Path(data["directory"]).exists()  # removed afterwards
    assert Path(data["directory"]).parent == where  # under TMPDIR, never the trace's directory
    assert tree_digest(run) == before


@pytest.mark.slow
@needs_torch
@sync
async def test_bench_key_fills_the_kernels_column(
    fixture_runs: Path, tmp_path: Path, inductor_cache: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from textual.widgets import DataTable

    from tcview.ui.app import TcviewApp
    from tcview.ui.bench import BenchDialog
    from tcview.ui.options import OpenOptions
    from tcview.ui.views import KernelsView

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", inductor_cache)
    python, marker = fake_python(tmp_path)
    app = TcviewApp(OpenOptions(str(fixture_runs / "cpu_bench"), python=str(python)))
    async with app.run_test(size=(160, 45)) as pilot:
        await ready(app, pilot)
        await pilot.press("K")
        await settle(app, pilot)
        await pilot.press("down", "B")
        await until(pilot, lambda: isinstance(app.screen, BenchDialog), 60, seen=lambda: app.screen)
        await pilot.press("y")
        await until(pilot, lambda: app.browser.bencher.results, 270, "the benchmark's result")
        await settle(app, pilot)
        result = app.browser.bencher.results[-1]
        assert result.ok, result.problem
        view = pane(app)
        assert isinstance(view, KernelsView)
        table = view.query_one(DataTable)
        assert [c.label.plain for c in table.columns.values()][0] == KernelsView.BENCH_COLUMN
        cells = {
            str(table.get_row_at(r)[1]): str(table.get_row_at(r)[0]) for r in range(table.row_count)
        }
        assert all(" ms · " in cells[name] for name in CPP_KERNELS)
        assert cells["cpp_fused_add_mul_relu_0"] == ""  # compile 1/0: not benchmarked
        await pilot.press("s")  # slowest first
        await settle(app, pilot)
        first = str(table.get_row_at(0)[1])
        slowest = max(result.kernel_times(), key=lambda k: k.ms).name
        assert first == slowest
    assert len(driver_calls(marker)) == 1
