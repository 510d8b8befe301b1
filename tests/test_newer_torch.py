"""The artifacts newer torch (2.12-2.14) writes, each shown by name where it belongs: real runs
of tests/fixtures/runs/torch2_1*_artifacts.tar.xz (CPU; script.py and command.txt say how
they were made) and, for compilation_metrics_runtime, which CPU runs never log, a real GPU run.

torch_version: the summary (text and --json), the app's overview, the index cache;
*_ORIGINAL_BYTECODE / *_MODIFIED_BYTECODE: their compile's detail and main tree children;
subgraph_name: the compile's detail (its regions, its graphs); dynamo_cache_entries: the frame's
detail and the summary; compilation_metrics_runtime: the compile's detail, with its metrics."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest
from conftest import FIXTURES, RUNS
from extract import extract

from tcview.ingest import snapshot
from tcview.ingest.source import load_source
from tcview.ingest.tracefile import TraceFile
from tcview.model.objects import Compile, Frame, Model
from tcview.report.detail import Detail, compile_detail, frame_detail, render_json, render_text
from tcview.report.show import show_detail
from tcview.report.summary import summary_document, summary_text
from tcview.ui.content import detail_lines, model_summary
from tcview.ui.items import Item
from tcview.ui.tree import children_of

# Real runs of one script: archive name -> the torch that made it. torch 2.13 (CPU) logs
# what 2.14 does; 2.12 logs no subgraph_name. No version logged compile_worker_status on CPU
# (only Triton and CuteDSL compiles go to the compile workers it reports on).
RUNS_MADE = {"torch2_12_artifacts": "2.12.1+cu130", "torch2_14_artifacts": "2.14.1+cu130"}
SUBGRAPHS = {"torch2_14_artifacts"}
RESUME = "torch_dynamo_resume_in_f_at_18"
REGION = "__marked_inductor_submod0"
CUDAGRAPHS = FIXTURES / "findings/cudagraph_overwrite/trace"


@pytest.fixture(scope="module", params=sorted(RUNS_MADE))
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("newer")
    with tarfile.open(RUNS / f"{request.param}.tar.xz") as tar:
        extract(tar, dest)
    return dest / request.param


@pytest.fixture(scope="module")
def model(run: Path) -> Model:
    return load_source(str(run / "trace"), cache=False)


def compile_named(model: Model, text: str) -> Compile:
    (comp,) = [c for c in model.compiles if c.id_label == text]
    return comp


def text_and_json(detail: Detail) -> tuple[str, str]:
    return render_text(detail), render_json(detail)


def test_the_fixture_is_what_its_run_says(run: Path, model: Model) -> None:
    assert RUNS_MADE[run.name] in (run / "versions.txt").read_text()
    assert (run / "script.py").is_file() and (run / "command.txt").is_file()
    assert (RUNS / f"{run.name}.tar.xz").stat().st_size < 400_000


def test_torch_version_in_the_summary_and_the_overview(run: Path, model: Model) -> None:
    version = RUNS_MADE[run.name]
    assert [f.torch_version for f in model.files] == [version]
    assert f"torch {version} (the trace's torch_version)" in summary_text(model)
    assert summary_document(model)["torch_versions"] == [version]
    overview = "\n".join(t.plain for t in model_summary(model, "title"))
    assert f"torch {version}" in overview


def test_torch_version_survives_the_index_cache(model: Model) -> None:
    (path,) = [f.path for f in model.files]
    assert path is not None
    direct = TraceFile(path)
    direct.feed(path.read_bytes())
    body = snapshot.encode(direct, direct.builder.facts)
    again = TraceFile(path)
    snapshot.restore(again, body, path.stat().st_size)
    assert again.torch_version == direct.torch_version is not None


def test_bytecode_dumps_under_their_compile(model: Model) -> None:
    comp = compile_named(model, "1/0")  # the resume function after the graph break
    text, js = text_and_json(show_detail(model, "1/0"))  # what `tcview show` prints
    assert f"original  {RESUME}  ({RESUME}_ORIGINAL_BYTECODE" in text
    assert f"modified  {RESUME}  ({RESUME}_MODIFIED_BYTECODE" in text
    (section,) = [s for s in json.loads(js)["sections"] if s["heading"] == "bytecode"]
    assert [r["label"] for r in section["rows"]] == ["original", "modified"]
    # In the tree: among the compile's main children (not under "other artifacts"), by name,
    # each opening its record (the viewer shows its dis text).
    specs = children_of(Item("compile", comp, "k"))
    named = {s.label.plain: s.obj for s in specs}
    original = named[f"original bytecode: {RESUME}"]
    assert getattr(original, "name", None) == f"{RESUME}_ORIGINAL_BYTECODE"
    assert f"modified bytecode: {RESUME}" in named
    assert "LOAD_" in original.payload()  # type: ignore[union-attr]


def test_subgraph_name_labels_the_compiles_graphs(run: Path, model: Model) -> None:
    detail = show_detail(model, "3/0")  # regional inductor: g's marked region
    text, js = text_and_json(detail)
    if run.name not in SUBGRAPHS:  # this torch names no region
        assert "subgraph" not in text
        return
    assert f"subgraphs {REGION} (" in text
    assert f"output code (inference)  1 kernel  [subgraph {REGION}]" in text
    assert "Dynamo graph\n" in text  # the frame's own graph is no region's
    assert f"[subgraph {REGION}]" in js
    app = "\n".join(t.plain for t in detail_lines(detail))  # what the app's viewer shows
    assert f"[subgraph {REGION}]" in app


def test_dynamo_cache_entries_with_their_frame(model: Model) -> None:
    frames: list[Frame] = [f for tf in model.files for f in tf.frames.values()]
    shown = {f.id_label: render_text(frame_detail(f)) for f in frames}
    saved = [k for k, text in shown.items() if "dynamo cache entries (caching precompile)" in text]
    assert saved and all("h (script.py:61)" in shown[k] for k in saved)
    assert "code object(s)" in shown[saved[0]]
    (entry,) = summary_document(model)["dynamo_cache_entries"]
    assert entry["function"] == "h" and entry["device"] == "cpu" and entry["code_objects"] == 1
    assert "Dynamo cache entries (1, saved by caching precompile)" in summary_text(model)


def test_runtime_metrics_with_the_compiles_metrics() -> None:
    gpu = load_source(str(CUDAGRAPHS), cache=False)
    comp = next(c for c in gpu.compiles if c.runtime_records)
    text = render_text(compile_detail(comp, gpu))
    metrics = text.index("\nmetrics\n")
    runtime = text.index("\nruntime metrics (compilation_metrics_runtime)\n")
    assert metrics < runtime
    assert "cudagraphify" in text[runtime:]
