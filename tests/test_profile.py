"""Profiles joined to traces: the streaming reader, the join of a real CPU run with
Inductor's C++ kernels profiled (tests/fixtures/profile, made by its script.py), the GPU join
through correlation ids, and `--profile` of the CLI."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, REPO, TCVIEW_CLI, needs_torch

import tcview.ingest.profile as ingest_profile
from tcview.analysis.profile import join_profile
from tcview.ingest.profile import load_profile, read_events
from tcview.ingest.source import load_source

FIX = FIXTURES / "profile"
PROFILES = [FIX / "profile.json.gz", FIX / "tb"]
CPP_EVENT = re.compile(r"^graph_\d+_cpp_")


def _events(path: Path) -> list[dict[str, Any]]:
    files = sorted(path.glob("*.pt.trace.json.gz")) if path.is_dir() else [path]
    out: list[dict[str, Any]] = []
    for f in files:
        with gzip.open(f) as data:
            out.extend(json.load(data)["traceEvents"])
    return out


def _leaf_total(events: list[dict[str, Any]]) -> tuple[float, int]:
    """The sum and count of the CPU ops that contain no other op on their thread, computed
    here apart from tcview's walk."""
    threads: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation"):
            threads[(e["pid"], e["tid"], e["ts"] // 1e12)].append(e)
    total, count = 0.0, 0
    for ops in threads.values():
        for op in ops:
            end = op["ts"] + op["dur"]
            inside = any(
                o is not op and op["ts"] <= o["ts"] < end and o["ts"] + o["dur"] <= end for o in ops
            )
            if not inside:
                total += op["dur"]
                count += 1
    return total, count


@pytest.fixture(scope="module")
def model() -> Any:
    return load_source(str(FIX / "trace"))


@pytest.mark.parametrize("path", PROFILES, ids=["export_chrome_trace", "tensorboard"])
def test_cpu_join_matches_every_compiled_kernel(model: Any, path: Path) -> None:
    events = _events(path)
    join = join_profile(model, load_profile(path))
    cpp = [e for e in events if e.get("ph") == "X" and CPP_EVENT.match(e["name"])]
    assert cpp, "the fixture's profile has C++ kernel events"
    rows = [r for r in join.rows if r.kind == "cpp"]
    # every C++ kernel event is matched to its kernel in compile 0/0, forward or backward
    assert sum(r.calls for r in rows) == len(cpp)
    assert all(r.kernel is not None and r.compile is not None for r in rows)
    assert {r.compile.id_text for r in rows if r.compile} == {"0/0"}
    assert {r.kernel.role for r in rows if r.kernel} == {"forward", "backward"}
    assert sum(r.time_us for r in rows) == pytest.approx(sum(e["dur"] for e in cpp))
    assert {r.kernel.name for r in rows if r.kernel} == {k.name for k in model.kernels}
    # the total is the profile's own sum of its kernels (on CPU: ops that call no other)
    total, count = _leaf_total(events)
    assert join.events == count
    assert join.total_us == pytest.approx(total)
    assert sum(r.time_us for r in join.rows) == pytest.approx(total)
    assert 0 < join.compiled_share < 1
    assert join.unmatched == 0 and join.ambiguous == 0
    # the user lines the kernels came from (provenance tracking was on)
    lines = {ln.line for ln, _, _ in join.by_line}
    assert {27, 28} <= lines
    # torch.compile's own ranges (guards, wrappers) are its overhead, not eager ops
    kinds = {r.name: r.kind for r in join.rows}
    assert kinds["TorchDynamo Cache Lookup"] == "overhead"
    assert kinds["AOTDispatcher Runtime Wrapper Prologue"] == "overhead"
    # eager ops outside the compiled frame (the loss and the optimizer)
    assert any(o.op == "aten::mean" or o.op.startswith("aten::") for o in join.eager_ops)


def test_tensorboard_folder_merges_steps() -> None:
    prof = load_profile(FIX / "tb")
    assert len(prof.files) == 2
    assert sorted(s for f in prof.files for s in f.steps) == [1, 3]


def test_reader_over_chunk_boundaries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Events cut across reads are decoded whole: the same events as json.load, at any chunk
    size (the reader never holds the file)."""
    want = _events(FIX / "profile.json.gz")
    for size in (1, 7, 4096):
        monkeypatch.setattr(ingest_profile, "CHUNK_CHARS", size)
        got = list(read_events(FIX / "profile.json.gz"))
        assert got == want


def test_reader_counts_bad_events(tmp_path: Path) -> None:
    good = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 2}
    text = (
        '{"deviceProperties": [{"name": "NVIDIA H100 80GB HBM3"}], "traceEvents": [\n'
        + json.dumps(good)
        + ",\n{oops not json},\n"
        + '"a string",\n'
        + json.dumps({"ph": "X", "cat": "cpu_op", "name": "no ts"})
        + ",\n"
        + json.dumps(good)
        + ",\n"
        + '{"ph": "X", "cat": "cpu_op", "name": "cut'  # the file ends mid-event
    )
    path = tmp_path / "bad.json"
    path.write_text(text)
    prof = load_profile(path)
    assert len(prof.cpu_ops) == 2
    assert prof.bad_events == 4  # not an object, a string, no time, cut short
    assert prof.device_name == "NVIDIA H100 80GB HBM3"
    (tmp_path / "empty.json").write_text("")
    with pytest.raises(ingest_profile.ProfileError):
        load_profile(tmp_path / "nothing")
    with pytest.raises(ingest_profile.ProfileError, match="not a JSON Chrome trace"):
        load_profile(tmp_path / "empty.json")


# ---------------------------------------------------------------------- GPU join


def _gpu_profile(path: Path) -> list[dict[str, Any]]:
    """A profile in Kineto's shape (kernels on a stream, cudaLaunchKernel calls with the same
    correlation id on the CPU thread, the CPU ops around them) for kernels of the real H200
    recompiles trace, whose kernel names repeat across compiles 1/0…1/3."""
    cpu = {"pid": 100, "tid": 100}
    events: list[dict[str, Any]] = []
    corr = [0]

    def op(name: str, ts: float, dur: float) -> None:
        events.append({"ph": "X", "cat": "cpu_op", "name": name, "ts": ts, "dur": dur, **cpu})

    def kernel(name: str, launch_ts: float, ts: float, dur: float) -> None:
        corr[0] += 1
        c = corr[0]
        events.append(
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": launch_ts,
             "dur": 1, "args": {"correlation": c}, **cpu}
        )  # fmt: skip
        events.append(
            {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
             "args": {"device": 0, "stream": 7, "correlation": c}}
        )  # fmt: skip

    # compile 1/2 runs its gelu kernel (a name four compiles define)
    op("Torch-Compiled Region: 1/2", 0, 100)
    op("## Call CompiledFxGraph fabc ##", 10, 80)
    op("triton_poi_fused_gelu_mul_0", 20, 10)
    kernel("triton_poi_fused_gelu_mul_0", 22, 50, 30)
    # compile 3/0: its kernel, and a cuBLAS gemm from an extern mm
    op("Torch-Compiled Region: 3/0", 200, 100)
    op("## Call CompiledFxGraph fdef ##", 210, 80)
    op("triton_poi_fused_add_relu_0", 215, 10)
    kernel("triton_poi_fused_add_relu_0", 220, 240, 5)
    op("aten::mm", 230, 20)
    kernel("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32", 235, 250, 40)
    # without unique kernel names the GPU calls it `triton_`: the launcher's record function
    # names it
    op("Torch-Compiled Region: 3/0", 300, 50)
    op("## Call CompiledFxGraph fdef ##", 305, 40)
    op("triton_poi_fused_add_relu_0", 310, 10)
    kernel("triton_", 312, 330, 6)
    # eager: an add outside any compiled graph
    op("aten::add", 400, 10)
    kernel("void at::native::vectorized_elementwise_kernel<4>(...)", 402, 420, 8)
    # the gelu kernel launched with no compiled region around it: ambiguous
    kernel("triton_poi_fused_gelu_mul_0", 500, 510, 20)
    # a generated name that no compile of the trace defines
    kernel("triton_poi_fused_cat_9", 600, 610, 2)
    doc = {"deviceProperties": [{"name": "NVIDIA H100 80GB HBM3"}], "traceEvents": events}
    path.write_text(json.dumps(doc))
    return events


def test_gpu_join_through_correlation(shared_traces: Path, tmp_path: Path) -> None:
    model = load_source(str(shared_traces / "h200-torch2.11" / "recompiles" / "trace"))
    events = _gpu_profile(tmp_path / "gpu.json")
    join = join_profile(model, load_profile(tmp_path / "gpu.json"))
    assert join.device == "gpu"
    assert join.total_us == sum(e["dur"] for e in events if e["cat"] == "kernel")
    rows = {(r.name, r.compile_label, r.kind): r for r in join.rows}
    gelu = rows[("triton_poi_fused_gelu_mul_0", "1/2", "triton")]
    assert gelu.kernel is not None and gelu.kernel.compile is not None
    assert gelu.kernel.compile.id_text == "1/2" and gelu.time_us == 30
    relu = rows[("triton_poi_fused_add_relu_0", "3/0", "triton")]
    assert relu.time_us == 5 + 6 and relu.calls == 2 and relu.kernel is not None
    gemm = rows[("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32", "3/0", "extern")]
    assert gemm.op == "aten::mm"
    eager = [r for r in join.rows if r.kind == "eager"]
    assert {r.op for r in eager} == {"aten::add", None}
    ambiguous = [r for r in join.rows if r.ambiguous]
    assert len(ambiguous) == 1 and ambiguous[0].compile_label == "1/0 or 1/1 or 1/2 or 1/3"
    assert join.ambiguous == 1 and join.unmatched == 1
    assert join.compiled_share == pytest.approx((30 + 5 + 6 + 40 + 20) / join.total_us)


# ---------------------------------------------------------------------- CLI


def _tcview(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TCVIEW_CLI, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )


def test_summary_json_profile() -> None:
    done = _tcview("summary", str(FIX / "trace"), "--json", "--profile", str(FIX / "tb"))
    assert done.returncode == 0, done.stderr
    prof = json.loads(done.stdout)["profile"]
    assert prof["source"] == str(FIX / "tb")
    assert {"gpu_time_us", "compiled_share", "kernels", "eager_ops", "source"} <= prof.keys()
    assert prof["gpu_time_us"] == pytest.approx(sum(k["time_us"] for k in prof["kernels"]), 1e-3)
    cpp = [k for k in prof["kernels"] if k["kind"] == "cpp"]
    assert len(cpp) == 5 and all(k["compile"] == "0/0" and k["calls"] == 2 for k in cpp)
    for k in prof["kernels"]:
        assert {"name", "compile", "kind", "calls", "time_us", "share"} <= k.keys()
    assert prof["eager_ops"] and "op" in prof["eager_ops"][0]


def test_show_profile_and_measured() -> None:
    done = _tcview("show", str(FIX / "trace"), "profile", "--profile", str(FIX / "profile.json.gz"))
    assert done.returncode == 0, done.stderr
    assert "Kernels by measured CPU-kernel time" in done.stdout
    assert "graph_0_cpp_fused_sum_2" in done.stdout
    done = _tcview(
        "show", str(FIX / "trace"), "cpp_fused_sum_2", "--profile", str(FIX / "profile.json.gz")
    )
    assert done.returncode == 0, done.stderr
    assert "3 calls" in done.stdout.split("Measured", 1)[1]
    done = _tcview("summary", str(FIX / "trace"), "--profile", str(FIX / "nothing"))
    assert done.returncode == 2 and "no such file" in done.stderr


def test_run_profile_options_need_profile() -> None:
    done = _tcview("run", "--no-tui", "--profile-window", "1,2", "x.py")
    assert done.returncode == 2 and "go with --profile" in done.stderr
    done = _tcview("run", "--no-tui", "--profile", "--profile-window", "1,-2", "x.py")
    assert done.returncode == 2 and "SECONDS > 0" in done.stderr


# ---------------------------------------------------------------------- the app


@pytest.mark.slow
def test_kernels_view_measured_column() -> None:
    """The kernels view gains the measured column with --profile, and `s` sorts by it."""
    import asyncio

    from textual.widgets import DataTable
    from ui_helpers import pane, ready, settle

    from tcview.analysis.kernels import KernelGroup
    from tcview.ui.app import TcviewApp
    from tcview.ui.options import OpenOptions
    from tcview.ui.views import KernelsView

    async def go() -> None:
        app = TcviewApp(OpenOptions(str(FIX / "trace"), profile=str(FIX / "profile.json.gz")))
        async with app.run_test(size=(200, 45)) as pilot:
            await ready(app, pilot)
            await pilot.press("K")
            await settle(app, pilot)
            view = pane(app)
            assert isinstance(view, KernelsView)
            assert KernelsView.MEASURED_COLUMN in view.shown_columns
            col = view.shown_columns.index(KernelsView.MEASURED_COLUMN)
            table = view.query_one("#view-table", DataTable)
            cells = [str(table.get_row_at(i)[col]) for i in range(table.row_count)]
            assert len(cells) == 5 and all("×3" in c for c in cells)
            view.query_one("#view-table").focus()
            await pilot.press("s")
            await settle(app, pilot)
            assert view.sort == "measured"
            first = view.objects[0]

            def measured_us(group: KernelGroup) -> float:
                measured = view.measured_time(group)
                assert measured is not None
                return measured[0]

            top = max(view.objects, key=measured_us)
            assert first is top

    asyncio.run(go())


@pytest.mark.slow
def test_profile_in_the_app(fixture_runs: Path) -> None:
    """With a profile joined (an H100 reduce-overhead run): the overview leads with the
    measured GPU time, the compiled share and the top kernels; `M` lists every kernel, extern
    GEMMs and eager ops included, with its compile; at 120 columns the kernels view shows its
    measured column whole, before the names; the profile is not among the skipped files."""
    import asyncio

    from textual.widgets import DataTable
    from ui_helpers import pane, ready, settle, viewer_shown
    from waits import until

    from tcview.ui.app import TcviewApp
    from tcview.ui.options import OpenOptions
    from tcview.ui.views import KernelsView, ProfileView

    run = fixture_runs / "h100_cudagraph_profile_train"
    profile = run / "prof.json.gz"

    def overview(app: TcviewApp) -> str:
        doc = viewer_shown(app).doc
        return "\n".join(doc.plain(i) for i in range(doc.count))

    async def go() -> None:
        app = TcviewApp(OpenOptions(str(run), profile=str(profile)))
        async with app.run_test(size=(120, 40)) as pilot:
            await ready(app, pilot)
            await until(pilot, lambda: "GPU time" in overview(app), 30, "the measured lead")
            lines = overview(app).splitlines()
            lead = next(i for i, line in enumerate(lines) if "GPU time" in line)
            assert lead <= 2, lines[:5]  # right under the title
            assert "compiled 8" in lines[lead] and "overhead" in lines[lead]
            assert "CUDA graph" in lines[lead + 1] and "0/0" in lines[lead + 1]
            assert "skipped files" not in overview(app)
            await pilot.press("M")
            await settle(app, pilot)
            view = pane(app)
            assert isinstance(view, ProfileView)
            table = view.query_one("#view-table", DataTable)
            kinds = {r.kind for r in view.objects}
            assert {"triton", "extern", "eager", "overhead"} <= kinds
            assert table.row_count == len(view.objects) > 20
            times = [r.time_us for r in view.objects]
            assert times == sorted(times, reverse=True)
            gemm = view.objects[0]
            assert gemm.kind == "extern" and gemm.compile_label == "0/0"
            assert str(table.get_row_at(0)[3]) == "0/0"
            await pilot.press("escape", "K")
            await settle(app, pilot)
            kernels = pane(app)
            assert isinstance(kernels, KernelsView)
            assert kernels.shown_columns[0] == KernelsView.MEASURED_COLUMN
            ktable = kernels.query_one("#view-table", DataTable)
            shown = [str(ktable.get_row_at(i)[0]) for i in range(ktable.row_count)]
            assert any("×" in c and not c.endswith("…") for c in shown)

    asyncio.run(go())


@pytest.mark.slow
@pytest.mark.parametrize("key", ["M", "K"])
def test_profile_and_kernels_views_fit_80_by_24(fixture_runs: Path, key: str) -> None:
    """At 80×24 with a profile joined: no sideways scrolling, the measured numbers whole, the
    long names cut instead."""
    import asyncio

    from textual.widgets import DataTable
    from ui_helpers import pane, ready, settle

    from tcview.ui.app import TcviewApp
    from tcview.ui.options import OpenOptions
    from tcview.ui.table_view import TableView

    run = fixture_runs / "h100_cudagraph_profile_infer"

    async def go() -> None:
        app = TcviewApp(OpenOptions(str(run), profile=str(run / "prof.json.gz")))
        async with app.run_test(size=(80, 24)) as pilot:
            await ready(app, pilot)
            await pilot.press(key)
            await settle(app, pilot)
            view = pane(app)
            assert isinstance(view, TableView)
            table = view.query_one(DataTable)
            assert table.row_count and table.virtual_size.width <= table.size.width
            first = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
            assert all(c and not c.endswith("…") for c in first), first  # time, or measured

    asyncio.run(go())


def test_hostile_events_are_counted(model: Any, tmp_path: Path) -> None:
    """Odd values where numbers, names and ids belong: counted or kept, never raised."""
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "a", "pid": [1], "tid": {"x": 1}, "ts": 1, "dur": 5},
        {"ph": "X", "cat": "cpu_op", "name": ["b"], "pid": 1, "tid": 1, "ts": "2", "dur": 1},
        {"ph": "X", "cat": "cpu_op", "name": "c", "pid": 1, "tid": 1, "ts": "soon", "dur": 1},
        {"ph": "X", "cat": "kernel", "name": "triton_x\x1b[2J", "pid": 0, "tid": 7, "ts": 3,
         "dur": None, "args": {"correlation": "9"}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
         "ts": 2, "dur": 1, "args": [1, 2]},
        [1, 2, 3],
        None,
    ]  # fmt: skip
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"traceEvents": events}))
    prof = load_profile(path)
    assert prof.bad_events == 4  # "soon", dur None, the list and null
    join = join_profile(model, prof)
    assert join.device == "cpu" and join.events == 2


def test_gpu_backward_found_through_sequence_number(shared_traces: Path, tmp_path: Path) -> None:
    """A backward kernel runs on autograd's thread, outside any Torch-Compiled Region: its
    compile comes from the forward's CompiledFunction with the same sequence number. The real
    H200 gpt_train trace compiles the same kernels in 0/0 and 0/1."""
    model = load_source(str(shared_traces / "h200-torch2.11" / "gpt_train" / "trace"))
    name = "triton_per_fused_native_layer_norm_backward_view_1"
    main = {"pid": 100, "tid": 100}
    autograd = {"pid": 100, "tid": 200}
    events: list[dict[str, Any]] = [
        {"ph": "X", "cat": "cpu_op", "name": "Torch-Compiled Region: 0/1", "ts": 0, "dur": 50,
         **main},
        {"ph": "X", "cat": "cpu_op", "name": "CompiledFunction", "ts": 5, "dur": 40,
         "args": {"Sequence number": 5}, **main},
        {"ph": "X", "cat": "cpu_op", "name": "CompiledFunctionBackward", "ts": 100, "dur": 50,
         "args": {"Sequence number": 5}, **autograd},
        {"ph": "X", "cat": "cpu_op", "name": "## Call CompiledFxGraph fbwd ##", "ts": 105,
         "dur": 40, **autograd},
        {"ph": "X", "cat": "cuda_runtime", "name": "cuLaunchKernelEx", "ts": 110, "dur": 2,
         "args": {"correlation": 1}, **autograd},
        {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": 120, "dur": 9,
         "args": {"correlation": 1}},
    ]  # fmt: skip
    (tmp_path / "bwd.json").write_text(json.dumps({"traceEvents": events}))
    join = join_profile(model, load_profile(tmp_path / "bwd.json"))
    [row] = join.rows
    assert row.kernel is not None and row.kernel.role == "backward"
    assert row.compile_label == "0/1" and join.ambiguous == 0


@needs_torch
def test_run_profile_without_a_compile_says_so(tmp_path: Path) -> None:
    done = _tcview(
        "run", "--no-tui", "--dir", str(tmp_path / "D"), "--profile", "--", sys.executable,
        "-c", "print('no compile')",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "profile: none recorded (no compile ended" in done.stdout
    assert json.loads((tmp_path / "D" / "run.json").read_text())["profile"]["seconds"] == 3.0


@pytest.mark.slow
def test_live_run_shows_the_profile_once_written(tmp_path: Path) -> None:
    """`tcview run --profile` writes the profile while the app follows the run directory: the
    kernels view gains its measured column without being opened again."""
    import asyncio
    import shutil
    import time

    from ui_helpers import pane, ready, settle

    from tcview.ui.app import TcviewApp
    from tcview.ui.options import OpenOptions
    from tcview.ui.views import KernelsView

    run = tmp_path / "run"
    shutil.copytree(FIX / "trace", run / "trace")

    async def go() -> None:
        app = TcviewApp(OpenOptions(str(run), follow=True))
        async with app.run_test(size=(200, 45)) as pilot:
            await ready(app, pilot)
            await pilot.press("K")
            await settle(app, pilot)
            view = pane(app)
            assert isinstance(view, KernelsView)
            assert KernelsView.MEASURED_COLUMN not in view.shown_columns
            (run / "profile").mkdir()
            tb = next((FIX / "tb").glob("*.pt.trace.json.gz"))
            shutil.copy(tb, run / "profile" / tb.name)
            deadline = time.monotonic() + 30
            while KernelsView.MEASURED_COLUMN not in view.shown_columns:
                assert time.monotonic() < deadline, "the measured column never came"
                await pilot.pause(0.1)

    asyncio.run(go())


def test_open_refuses_a_missing_profile() -> None:
    done = _tcview("open", str(FIX / "trace"), "--profile", str(FIX / "nothing\x1b[2J"))
    assert done.returncode == 2 and "no such file or folder" in done.stderr
    assert "\x1b" not in done.stderr  # the path is shown safely


def test_ranks_told_apart_by_pid(shared_traces: Path, tmp_path: Path) -> None:
    """Two ranks compile the same kernels: the profile's process id picks the rank's trace
    file (the real gloo run of cpu-torch2.13; its pids 21912 and 21913)."""
    model = load_source(str(shared_traces / "cpu-torch2.13" / "i_ranks_gloo" / "trace"))
    rank1 = {"pid": 21913, "tid": 1}
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "Torch-Compiled Region: 0/0", "ts": 0, "dur": 50,
         **rank1},
        {"ph": "X", "cat": "cpu_op", "name": "## Call CompiledFxGraph f1 ##", "ts": 5, "dur": 40,
         **rank1},
        {"ph": "X", "cat": "cpu_op", "name": "graph_0_cpp_fused_relu_0", "ts": 10, "dur": 7,
         **rank1},
    ]  # fmt: skip
    (tmp_path / "r1.json").write_text(json.dumps({"traceEvents": events}))
    join = join_profile(model, load_profile(tmp_path / "r1.json"))
    [row] = [r for r in join.rows if r.kind == "cpp"]
    assert row.kernel is not None and row.compile is not None
    assert row.compile.file.rank == 1 and join.ambiguous == 0


@needs_torch
def test_window_waits_for_a_safe_point() -> None:
    """The in-job timer starts or stops the profiler only outside torch's guarded code: in
    autograd, an optimizer step or Dynamo it crashed the job (2 runs in 8 of the CPU job, none
    in 16 since)."""
    import importlib.util
    import os

    import torch

    site = REPO / "tcview" / "run" / "profile_site" / "sitecustomize.py"
    spec = importlib.util.spec_from_file_location("tcview_profile_site", site)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    saved = os.environ.pop("TCVIEW_PROFILE_DIR", None)
    try:
        spec.loader.exec_module(module)
    finally:
        if saved is not None:
            os.environ["TCVIEW_PROFILE_DIR"] = saved
    here = Path(torch.__file__).parent

    def frame_in(path: Path, source: str = "f = sys._getframe()") -> Any:
        scope: dict[str, Any] = {"sys": sys}
        exec(compile(source, str(path), "exec"), scope)
        return scope["f"]

    assert module._safe(sys._getframe())
    assert module._safe(frame_in(here / "cuda" / "__init__.py"))
    assert module._safe(frame_in(here / "nn" / "modules" / "linear.py"))
    assert not module._safe(frame_in(here / "autograd" / "__init__.py"))
    assert not module._safe(frame_in(here / "optim" / "optimizer.py"))
    assert not module._safe(frame_in(here / "_dynamo" / "eval_frame.py"))
    assert not module._safe(frame_in(Path("/tmp/torchinductor_u/ab/cab.py")))
    transformed = "__compiled_fn_1 = None\nf = sys._getframe()\n__compiled_fn_1"
    assert not module._safe(frame_in(Path("/home/u/train.py"), transformed))
