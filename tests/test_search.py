"""The search engine (tcview.report.search) and `tcview grep`, on real traces and captures.

Every hit is checked against an independent reading: the record's payload split into lines
(the line the hit names must be the line it shows), and the output code split into kernels
by tcview.analysis.kernels (the kernel a hit names must be the one whose span holds its line).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, SAMPLES, TCVIEW_CLI, shared_run_dirs

import tcview.report.search as engine
from tcview.analysis.kernels import split_output_code
from tcview.ingest.source import load_source
from tcview.ingest.tracefile import TraceFile
from tcview.report.detail import record_name
from tcview.report.search import Query, QueryError, Search, search

GPU_RUN = SAMPLES / "gpu_tinyblock"
CPU_RUN = SAMPLES / "cpu_breaks_recompiles"
QUERIES = ("tmp", "def ", "guard", "x = ", "Graph", "error")
ESC = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _inputs() -> list[Path]:
    runs = shared_run_dirs()
    picked = runs[:4] + runs[-4:] if runs else []
    return [GPU_RUN, CPU_RUN, CPU_RUN / "torch_logs.txt", *picked]


def _check_hit(hit: engine.Hit) -> None:
    rec = hit.record
    assert rec is not None
    if hit.line == 0:  # the header line: its JSON, after the log prefix
        header = rec.source.header_line(rec).decode("utf-8", "replace")
        assert hit.text.strip("…") in header and header.index("{") <= header.index(
            hit.text.strip("…")
        )
        return
    lines = rec.payload().split("\n")
    shown = lines[hit.line - 1]
    if hit.text.startswith("…") or hit.text.endswith("…"):
        assert hit.text.strip("…") in shown
    else:
        assert hit.text == shown
    if rec.kind in engine.OUTPUT_CODE_KINDS:
        spans = split_output_code("\n".join(lines))
        inside = [s for s in spans if s.start <= hit.line - 1 <= s.end]
        want = inside[0].name if inside else None
        assert (hit.kernel.name if hit.kernel else None) == want, (hit, hit.text)


@pytest.mark.parametrize("path", _inputs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_each_hit_is_its_payload_line_and_kernel(path: Path) -> None:
    model = load_source(str(path))
    seen = 0
    for text in QUERIES:
        query = Query(text)
        pattern = query.text_pattern()
        for hit in search(model, query, limit=4000):
            seen += 1
            assert hit.spans, hit
            for start, end in hit.spans:
                assert pattern.fullmatch(hit.text[start:end]), (hit, hit.text)
            if hit.record is not None:
                _check_hit(hit)
    assert seen > 0


def test_chunk_edges_change_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines, kernels and record boundaries that straddle a chunk are found the same."""
    model = load_source(str(GPU_RUN))

    def run() -> list[tuple[int, int, str | None, str]]:
        out = []
        for text in ("tmp", "def ", "x"):
            for h in search(model, Query(text)):
                out.append((h.offset, h.line, h.kernel.name if h.kernel else None, h.text))
        return out

    whole = run()
    monkeypatch.setattr(engine, "CHUNK", 1 << 16)
    assert run() == whole
    assert len(whole) > 300


def test_smart_case_and_regex() -> None:
    model = load_source(str(GPU_RUN / "trace"))
    lower = list(search(model, Query("graphmodule")))
    exact = list(search(model, Query("GraphModule")))
    wrong = list(search(model, Query("GRAPHMODULE")))
    forced = list(search(model, Query("GRAPHMODULE", case="ignore")))
    assert exact and len(lower) == len(exact) == len(forced)
    assert wrong == []
    regex = list(search(model, Query(r"tmp\d+ = tl\.where", regex=True)))
    plain = list(search(model, Query(r"tmp\d+ = tl\.where")))
    assert regex and plain == []
    assert all(re.search(r"tmp\d+ = tl\.where", h.text) for h in regex)
    with pytest.raises(QueryError):
        Query("(", regex=True).byte_pattern()
    with pytest.raises(QueryError):
        Query("").byte_pattern()


def test_a_kernel_line_names_its_kernel() -> None:
    model = load_source(str(GPU_RUN / "trace"))
    kernel = model.kernels[0]
    hits = list(search(model, Query(f"def {kernel.name}(")))
    assert len(hits) == 1
    assert hits[0].kernel is kernel and hits[0].compile is kernel.compile
    assert hits[0].where == f"{record_name(kernel.output)} › kernel {kernel.name}"


def test_timing_events_and_string_table_are_not_searched() -> None:
    model = load_source(str(GPU_RUN / "trace"))
    assert isinstance(model.files[0], TraceFile)
    raw = model.files[0].path.read_bytes()
    assert raw.count(b"dynamo_timed") > 50  # every chromium event's category
    assert list(search(model, Query("dynamo_timed"))) == []
    name = model.files[0].strings  # the string table's file names
    assert name
    hits = list(search(model, Query('{"str": [')))
    assert hits == []


def test_metrics_headers_are_searched() -> None:
    model = load_source(str(GPU_RUN / "trace"))
    hits = list(search(model, Query("entire_frame_compile_time_s")))
    assert hits and all(h.line == 0 for h in hits)
    assert {h.artifact for h in hits} == {"metrics", "runtime metrics"}
    assert not any(h.text.startswith("V1121") for h in hits), "the log prefix is not shown"


def test_torch_logs_prefix_is_not_matched_and_other_output_is() -> None:
    path = CPU_RUN / "torch_logs.txt"
    model = load_source(str(path))
    lines = path.read_text().split("\n")
    source_file = "torch/_inductor/graph.py"  # in the prefix of the output code lines
    prefixed = [ln for ln in lines if source_file in ln.split("]", 1)[0]]
    assert len(prefixed) > 3
    hits = list(search(model, Query(source_file)))
    assert len(hits) < len(prefixed)
    for hit in hits:
        assert source_file in hit.text
    capture = FIXTURES / "torch_logs_small.txt"  # a warning the program printed, at line 139
    lines = capture.read_text().split("\n")
    warned = [i + 1 for i, ln in enumerate(lines) if "Converting a tensor" in ln]
    assert warned == [139]
    found = list(search(load_source(str(capture)), Query("converting a tensor")))
    assert [(h.line, h.artifact, h.record) for h in found] == [(139, "other output", None)]
    assert found[0].text == lines[138]


def test_search_stops_at_its_limit_and_when_cancelled() -> None:
    model = load_source(str(GPU_RUN))
    s = Search(model, Query("tmp"), limit=5)
    assert len(list(s.run())) == 5 and s.stopped
    s = Search(model, Query("tmp"))
    it = s.run()
    next(it)
    s.cancel()
    rest = list(it)
    assert len(rest) < 5 and s.stopped


@pytest.mark.e2e
def test_hostile_text_is_found_and_shown_literally() -> None:
    model = load_source(str(FIXTURES / "hostile" / "escapes.log"))
    hits = list(search(model, Query("pwned title")))
    assert hits
    assert any("\x1b" in h.text for h in hits), "the engine keeps the text as it is"
    out = _grep("pwned title", FIXTURES / "hostile" / "escapes.log", "--color=always")
    assert out.returncode == 0
    assert "\x1b]" not in out.stdout and "\x07" not in out.stdout
    assert "␛]0;PWNED TITLE␇" in out.stdout


# ---------------------------------------------------------------- tcview grep


def _grep(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TCVIEW_CLI, "grep", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )


@pytest.mark.e2e
def test_grep_prints_compile_artifact_line_text() -> None:
    model = load_source(str(GPU_RUN / "trace"))
    kernel = model.kernels[0]
    out = _grep(f"def {kernel.name}(", GPU_RUN / "trace")
    assert out.returncode == 0, out.stderr
    hit = next(iter(search(model, Query(f"def {kernel.name}("))))
    assert kernel.compile is not None
    assert out.stdout == (f"{kernel.compile.id_label} · {hit.where} · {hit.line}: {hit.text}\n")
    assert hit.where == f"{record_name(kernel.output)} › kernel {kernel.name}" and (
        hit.kernel is kernel
    )
    assert "\x1b[" not in out.stdout, "no colour into a pipe"


@pytest.mark.e2e
def test_grep_exit_status_json_and_flags() -> None:
    assert _grep("no-such-text-anywhere", CPU_RUN).returncode == 1
    bad = _grep("-E", "(", CPU_RUN)
    assert bad.returncode == 2 and "invalid regex" in bad.stderr
    assert _grep("x", SAMPLES / "nope").returncode == 2
    out = _grep("--json", "-E", r"Recompiling function \w+", CPU_RUN)
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert rows and out.returncode == 0
    for row in rows:
        assert re.search(r"Recompiling function \w+", row["text"])
        start, end = row["spans"][0]
        assert row["text"][start:end].startswith("Recompiling function ")
        assert {"compile", "artifact", "line", "file", "kernel", "offset"} <= set(row)
    text = [r for r in rows if r["place"] == "log"]
    assert text and all(r["artifact"] == "recompiles" for r in text)
    sensitive = _grep("-s", "recompiling function", CPU_RUN)
    insensitive = _grep("-i", "RECOMPILING FUNCTION", CPU_RUN)
    assert sensitive.returncode == 1
    assert insensitive.stdout.count("\n") == len(rows)
    first = _grep("-m", "2", "tmp", GPU_RUN)
    assert first.stdout.count("\n") == 2


@pytest.mark.e2e
def test_grep_reads_stdin() -> None:
    capture = CPU_RUN / "torch_logs.txt"
    from_file = _grep("Recompiling function", capture)
    piped = subprocess.run(
        [*TCVIEW_CLI, "grep", "Recompiling function", "-"],
        input=capture.read_bytes(),
        capture_output=True,
        cwd=REPO,
    )
    assert piped.returncode == 0
    assert piped.stdout.decode() == from_file.stdout and from_file.stdout.count("\n") == 3
