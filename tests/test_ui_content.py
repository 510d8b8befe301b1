"""The UI's pure parts: documents, goto targets, counts, launcher paths, the loader."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest
from refcount import count
from ui_helpers import CPU_SAMPLE, GPU_SAMPLE

from tcview.commands.open import NO_INPUT_HELP, newest_trace_dir, open_app, resolve_path
from tcview.ingest.session import ModelSession
from tcview.ingest.source import load_source
from tcview.report.items import ShowError, locate
from tcview.report.summary import counts_line
from tcview.ui.content import kernel_doc, metrics_table, record_doc
from tcview.ui.docs import doc_for
from tcview.ui.tree import Item
from tcview.ui.viewer import highlight_line

FOUR = ("compiles", "graph_breaks", "recompiles", "kernels")
# The shipped samples' numbers, as tests/refcount.py counts them from the raw files.
SAMPLE_COUNTS = {
    GPU_SAMPLE.name: {"compiles": 1, "graph_breaks": 0, "recompiles": 0, "kernels": 3},
    CPU_SAMPLE.name: {"compiles": 5, "graph_breaks": 3, "recompiles": 3, "kernels": 5},
}


def test_counts_line_words_and_numbers() -> None:
    counts = load_source(str(CPU_SAMPLE)).counts()
    assert counts_line(counts) == "compiles 5 · breaks 3 · recompiles 3 · kernels 5"
    distinct = {"compiles": 1, "graph_breaks": 2, "recompiles": 3, "kernels": 4}
    assert counts_line(distinct) == "compiles 1 · breaks 2 · recompiles 3 · kernels 4"


def test_compile_detail_shows_the_fusion_decisions_of_the_text_log() -> None:
    """A run directory (trace/ + torch_logs.txt with `fusion` messages): the compile's detail
    lists what Inductor fused and, counted by reason, what it did not."""
    model = load_source(str(GPU_SAMPLE))  # the run directory, not its trace/
    comp = next(c for c in model.compiles if c.id_text == "0/0")
    doc = doc_for(Item("compile", comp, "c"), model, str(GPU_SAMPLE))
    shown = [doc.plain(i) for i in range(doc.count)]
    assert "fusion decisions (2 fused, 5 not)" in shown
    assert "  fused  op0 + op1" in shown and "  fused  op0_op1 + op3" in shown
    assert "      5× not fused: intermediate nodes between node1 & node2" in shown
    trace_only = load_source(str(GPU_SAMPLE / "trace"))  # no text log: no fusion section
    comp = next(c for c in trace_only.compiles if c.id_text == "0/0")
    doc = doc_for(Item("compile", comp, "c"), trace_only, "trace")
    assert not any("fusion" in doc.plain(i) for i in range(doc.count))


def test_a_files_other_records_say_what_is_not_listed() -> None:
    """A file's records without a compile id: the string table, timing events and inputs'
    metadata are located, not listed; the pane says how many of each, so that an empty list
    does not look like a loss."""
    model = load_source(str(GPU_SAMPLE / "trace"))
    tf = model.files[0]
    doc = doc_for(Item("others", tf, "o"), model, "trace")
    shown = [doc.plain(i) for i in range(doc.count)]
    n_str, n_chromium = tf.kinds["str"], tf.kinds["chromium_event"]
    assert n_str and n_chromium
    assert f"chromium_event {n_chromium:,} · str {n_str:,}" in shown[1]
    assert shown[1].startswith("in this file, located, never listed: ")


@pytest.mark.parametrize("sample", [GPU_SAMPLE, CPU_SAMPLE], ids=lambda p: p.name)
def test_loader_builds_the_counted_model(sample: Path) -> None:
    loader = ModelSession(str(sample))
    loader.run()
    assert loader.error is None and loader.finished and loader.model is not None
    counts = loader.model.counts()
    ref = count(sorted((sample / "trace").glob("dedicated_log_torch_trace*.log")))
    assert {k: counts[k] for k in FOUR} == {k: ref[k] for k in FOUR}
    assert {k: counts[k] for k in FOUR} == SAMPLE_COUNTS[sample.name]
    assert len(loader.model.compiles) == ref["compiles"]
    assert loader.done == loader.total > 0


def test_kernel_doc_has_its_facts_then_its_source_then_the_rest() -> None:
    """A few lines of facts (kind, compile, graph) come first, then its source, numbered as in
    its output code, starting with the comment above its definition; the view opens at its
    ``def``; what it fuses and its launch follow the source."""
    ts = load_source(str(GPU_SAMPLE))
    assert len(ts.kernels) == SAMPLE_COUNTS[GPU_SAMPLE.name]["kernels"]
    for kernel in ts.kernels:
        doc = kernel_doc(kernel)
        assert doc.head[0].plain == f"kernel {kernel.name}  {kernel.kind}"
        assert doc.head[1].plain.startswith("compile 0/0 · graph inference")
        assert len(doc.head) <= 6
        assert doc.plain(doc.focus).startswith(f"def {kernel.name}(")
        tail = [t.plain for t in doc.tail]
        assert "fuses" in tail and "launch" in tail
        assert doc.count == len(doc.head) + len(doc.lines) + len(doc.tail)
        assert doc.lineno(doc.count - 1) is None
        assert doc.lines[0].startswith("# kernel path: ")
        assert any(ln.startswith(f"{kernel.name} = async_compile.") for ln in doc.lines)
        assert any(ln.startswith(f"def {kernel.name}(") for ln in doc.lines)
        assert doc.lineno(len(doc.head)) == doc.first_lineno and doc.lineno(0) is None
        assert doc.language == "python"


def test_cpp_kernel_doc_is_cpp_inside() -> None:
    ts = load_source(str(CPU_SAMPLE))
    kernel = ts.kernels[0]
    doc = kernel_doc(kernel)
    assert kernel.kind == "cpp"
    start = len(doc.head)
    assert doc.plain(start).startswith(f"{kernel.name} = async_compile.cpp")
    assert doc.language_at(start) == "python"
    entry = next(i for i in range(start, doc.count) if 'extern "C"' in doc.plain(i))
    assert doc.language_at(entry) == "cpp"


def test_locate_forms() -> None:
    ts = load_source(str(CPU_SAMPLE))
    first = ts.compiles[0]
    for text in (first.id_text, f"[{first.id_text}]", f" {first.id_text} "):
        assert locate(ts, text) is first
    kernel = ts.kernels[1]
    assert locate(ts, kernel.name) is kernel
    with pytest.raises(ShowError):
        locate(ts, "no_such_thing_anywhere")


def test_output_code_is_python_with_cpp_regions() -> None:
    ts = load_source(str(CPU_SAMPLE))
    rec = ts.kernels[0].output
    doc = record_doc(rec)
    assert doc.language == "python"
    assert doc.regions and all(lang == "cpp" for _a, _b, lang in doc.regions)


def test_metrics_are_a_table() -> None:
    ts = load_source(str(GPU_SAMPLE))
    comp = ts.compiles[0]
    assert comp.metrics is not None
    rows = metrics_table(comp.metrics)
    plain = [r.plain for r in rows]
    assert plain[0] == "timings"
    assert any(p.startswith("entire_frame_compile_time_s") for p in plain)
    rec = next(r for r in comp.records if r.kind == "compilation_metrics")
    assert record_doc(rec).styled is not None


def test_highlighting_is_literal() -> None:
    text = highlight_line("x = '[bold]not markup[/]' # [link=http://x]y[/link]", "python")
    assert text.plain == "x = '[bold]not markup[/]' # [link=http://x]y[/link]"
    assert text.spans  # highlighted


def test_newest_trace_dir(tmp_path: Path) -> None:
    old = tmp_path / "a" / "trace"
    new = tmp_path / "b" / "c" / "trace"
    for i, d in enumerate((old, new)):
        d.mkdir(parents=True)
        f = d / "dedicated_log_torch_trace_x.log"
        f.write_text("")
        os.utime(f, (1000 + i, 1000 + i))
    assert newest_trace_dir(tmp_path) == new


def test_resolve_path_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TORCH_TRACE", raising=False)
    assert resolve_path(None) is None
    monkeypatch.setenv("TORCH_TRACE", "/some/where")
    assert resolve_path(None) == "/some/where"
    assert resolve_path("given") == "given"


def test_open_without_input_prints_help(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TORCH_TRACE", raising=False)
    args = argparse.Namespace(path=None, goto=None, follow=False, poll=False, map_path=[])
    assert open_app(args) == 2
    err = capsys.readouterr().err
    assert err == NO_INPUT_HELP
    assert "sample_traces/" in err


def test_open_missing_path(capsys: pytest.CaptureFixture) -> None:
    args = argparse.Namespace(
        path="/no/such/trace", goto=None, follow=False, poll=False, map_path=[]
    )
    assert open_app(args) == 2
    assert "no such file" in capsys.readouterr().err


def test_multi_line_text_keeps_its_lines_and_stays_safe() -> None:
    """A message's line breaks become lines (the rest indented); control characters in a line
    are still made safe, and trailing blank lines go."""
    from tcview.text.safe import safe_line
    from tcview.ui.content import lit_lines

    lines = [t.plain for t in lit_lines("boom\n\x1b[2Jwiped\n\nmore\n\n")]
    assert lines == ["boom", "  " + safe_line("\x1b[2Jwiped"), "", "  more"]
    assert not any("\x1b" in ln or "\u2424" in ln for ln in lines)
