"""`tcview export`: the Perfetto (Chrome trace) JSON and the Markdown report.

The B/E pairs are counted here from the raw files, without tcview: every ``chromium_event``
header's payload lines are joined and parsed, and a ``B`` and the next ``E`` of the same name
on the same thread of the same file make a pair.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tarfile
from collections import Counter
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, SAMPLES, TCVIEW_CLI
from extract import extract
from ui_helpers import summary_json

GPU_RUN = SAMPLES / "gpu_tinyblock"
CPU_RUN = SAMPLES / "cpu_breaks_recompiles"
HEADER = re.compile(r"^(?:\[rank\d+\]:)?[A-Z]\d{4} [\d:.]+ +\d+ [^\]]*\] (\{.*)$")


def _tcview(*args: object, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TCVIEW_CLI, *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )


def raw_events(path: Path) -> list[dict]:
    """The chromium events of one trace file, read without tcview."""
    events: list[dict] = []
    lines = path.read_text(errors="replace").split("\n")
    i = 0
    while i < len(lines):
        m = HEADER.match(lines[i])
        i += 1
        if not m or '"chromium_event"' not in m.group(1)[:20]:
            continue
        body = []
        while i < len(lines) and lines[i].startswith("\t"):
            body.append(lines[i][1:])
            i += 1
        events.append(json.loads("\n".join(body)))
    return events


def be_pairs(events: list[dict]) -> int:
    open_: dict[object, list[str | None]] = {}
    pairs = 0
    for ev in events:
        stack = open_.setdefault(ev.get("tid"), [])
        if ev.get("ph") == "B":
            stack.append(ev.get("name"))
        elif ev.get("ph") == "E" and ev.get("name") in stack:
            stack.reverse()
            stack.remove(ev.get("name"))  # the innermost one of that name
            stack.reverse()
            pairs += 1
    return pairs


def _trace_files(path: Path) -> list[Path]:
    return sorted(path.rglob("dedicated_log_torch_trace*.log")) if path.is_dir() else [path]


def _perfetto_inputs() -> list[Path]:
    from conftest import unpack_shared

    out = [GPU_RUN, CPU_RUN]
    root = unpack_shared()
    if root is not None:
        out += [
            root / "h200-torch2.11" / "ddp2" / "trace",
            root / "cpu-torch2.13" / "i_ranks_gloo",
            root / "tlparse-corpus" / "multi_rank_messy_input",
            root / "h200-torch2.11" / "breaks" / "trace",
        ]
    return out


@pytest.mark.parametrize("path", _perfetto_inputs(), ids=lambda p: p.parent.name + "/" + p.name)
def test_perfetto_is_valid_json_one_process_per_rank_and_every_pair_complete(
    path: Path, tmp_path: Path
) -> None:
    out = tmp_path / "trace.json"
    result = _tcview("export", "--perfetto", out, path)
    assert result.returncode == 0, result.stderr
    data = json.loads(out.read_text())
    events = data["traceEvents"]
    files = _trace_files(path)
    raw = [raw_events(f) for f in files]
    want_pairs = sum(be_pairs(evs) for evs in raw)
    assert want_pairs > 0
    phases = Counter(e["ph"] for e in events)
    assert phases["X"] == want_pairs
    assert phases["B"] + phases["E"] == sum(len(evs) for evs in raw) - 2 * want_pairs - sum(
        1 for evs in raw for e in evs if e.get("ph") not in ("B", "E")
    )
    for e in events:
        if e["ph"] == "X":
            assert isinstance(e["ts"], (int, float)) and e["dur"] >= 0
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert len(names) == len(files), "one process per trace file"
    ranks = summary_json(path)["ranks"]
    if len(ranks) == len(files) > 1:
        assert sorted(names) == ranks, "pid = rank"
        assert all(names[r] == f"rank {r}" for r in ranks)
    assert {e["pid"] for e in events} == set(names)
    assert "complete events" in result.stderr


def test_perfetto_never_writes_into_the_trace_directory(tmp_path: Path) -> None:
    import shutil

    trace = tmp_path / "t"
    shutil.copytree(GPU_RUN / "trace", trace)
    before = sorted(p.name for p in trace.iterdir())
    result = _tcview("export", "--perfetto", trace / "out.json", trace)
    assert result.returncode == 2 and "trace directory" in result.stderr
    result = _tcview("export", "--perfetto", "out.json", trace, cwd=trace)
    assert result.returncode == 2
    result = _tcview("export", "--markdown", "-o", trace / "r.md", trace)
    assert result.returncode == 2
    assert sorted(p.name for p in trace.iterdir()) == before


# ---------------------------------------------------------------- markdown


def _count_table(text: str) -> dict[str, str]:
    rows = re.findall(r"^\| ([a-z ]+) \| ([^|]+) \|$", text, re.M)
    return {k: v.strip() for k, v in rows}


@pytest.mark.parametrize("path", [CPU_RUN, GPU_RUN], ids=lambda p: p.name)
def test_markdown_numbers_are_summary_json(path: Path) -> None:
    result = _tcview("export", "--markdown", path)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    s = summary_json(path)
    table = _count_table(text)
    for key, label in (
        ("compiles", "compiles"),
        ("frames", "frames"),
        ("graph_breaks", "graph breaks"),
        ("recompiles", "recompiles"),
        ("empty_graphs", "empty graphs"),
        ("failures", "failures"),
        ("errors", "errors"),
        ("kernels", "kernels"),
        ("output_codes", "output codes"),
        ("files", "files"),
    ):
        assert table[label] == str(s[key]), label
    assert "### Slowest compiles" in text
    if s["graph_breaks"]:
        groups = len({(b["reason"], b["location"]) for b in _breaks(path)})
        assert f"### Graph breaks ({s['graph_breaks']}, {groups} distinct)" in text
    if s["recompiles"]:
        assert f"### Recompiles ({s['recompiles']})" in text
        assert "guard failed: " in text
        from tcview.analysis.recompiles import diagnose
        from tcview.ingest.source import load_source
        from tcview.report.markdown import md_prose, md_text

        model = load_source(str(path))
        frames = {rc.compile.frame for rc in model.recompiles}
        assert "Why each frame recompiled" in text
        for frame in frames:
            assert frame is not None
            sentence = " ".join(diagnose(frame).sentences)
            assert (
                sentence and f"- {md_text(frame.label)}: {md_prose(sentence, cell=False)}" in text
            )


def _breaks(path: Path) -> list[dict]:
    from tcview.ingest.source import load_source

    return [{"reason": b.reason, "location": b.location} for b in load_source(str(path)).breaks]


def test_markdown_failures_and_errors(shared_traces: Path) -> None:
    run = shared_traces / "h200-torch2.11" / "compile_failures"
    result = _tcview("export", "--markdown", run)
    s = summary_json(run)
    assert s["failures"] > 0
    assert f"### Failures ({s['failures']})" in result.stdout
    crashed = shared_traces / "cpu-torch2.13" / "f_compile_errors"
    s = summary_json(crashed)
    text = _tcview("export", "--markdown", crashed).stdout
    if s["errors"]:
        assert f"### Errors: the run crashed ({s['errors']})" in text
        assert "**The run crashed:**" in text
        assert "\n  ```text\n" in text, "the stack is a fenced block"


def test_markdown_escapes_trace_text(tmp_path: Path) -> None:
    sys.path.insert(0, str(FIXTURES / "hostile"))
    try:
        import make_hostile
    finally:
        sys.path.pop(0)
    nasty = "a | b `c` <details> **bold** @user #1 ``` x\x1b[31m"
    trace = tmp_path / "trace"
    trace.mkdir()
    (trace / "dedicated_log_torch_trace_x.log").write_bytes(make_hostile.compile_records(nasty))
    out = tmp_path / "report.md"
    result = _tcview("export", "--markdown", "-o", out, trace)
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert "\x1b" not in text
    rows = [ln for ln in text.split("\n") if ln.startswith("| 1 |")]
    assert len(rows) == 1, text
    # the row keeps its 4 cells: no unescaped pipe inside
    cells = re.split(r"(?<!\\)\|", rows[0].strip()[1:-1])
    assert len(cells) == 4, rows[0]
    assert "<details>" not in rows[0] and "\\<details\\>" in rows[0]
    assert "\\*\\*bold\\*\\*" in rows[0] and "\\@user" in rows[0]
    fences = re.findall(r"^(`{3,})", text, re.M)
    assert all(len(f) == 3 for f in fences) or "````" in text


def test_perfetto_pid_is_the_rank(tmp_path: Path, shared_traces: Path) -> None:
    """A lone rank 1 is process 1, named so (not process 0, its place among the files)."""
    import shutil

    source = shared_traces / "h200-torch2.11" / "ddp2" / "trace"
    rank1 = next(source.glob("dedicated_log_torch_trace_rank_1_*.log"))
    trace = tmp_path / "trace"
    trace.mkdir()
    shutil.copy(rank1, trace)
    out = tmp_path / "out.json"
    assert _tcview("export", "--perfetto", out, trace).returncode == 0
    events = json.loads(out.read_text())["traceEvents"]
    assert {e["pid"] for e in events} == {1}
    assert [e["args"]["name"] for e in events if e["name"] == "process_name"] == ["rank 1"]


def test_markdown_compile_ids_keep_their_rank(tmp_path: Path) -> None:
    with tarfile.open(FIXTURES / "runs" / "ranks_diverge.tar.xz") as tar:
        extract(tar, tmp_path)
    text = _tcview("export", "--markdown", tmp_path / "ranks_diverge").stdout
    slowest = text.split("### Slowest compiles", 1)[1].split("\n\n")[1].split("\n")
    assert slowest[0] == "| time | rank | compile | frame | status |"
    # Each rank has its own 0/0: the rows say which.
    zeros = [row.split(" | ")[1] for row in slowest[2:] if "| `0/0` |" in row]
    assert sorted(zeros) == ["0", "1"]
    recompiles = text.split("### Recompiles", 1)[1]
    assert "| `rank 1 0/1` | step (ranks\\_diverge.py:18) |" in recompiles


def test_markdown_single_rank_ids_stay_plain() -> None:
    text = _tcview("export", "--markdown", SAMPLES / "cpu_breaks_recompiles").stdout
    assert "| time | compile | frame | status |" in text
    assert "| `0/1` | scale\\_shift (script.py:11) |" in text


def test_markdown_code_spans_in_tcview_words() -> None:
    text = _tcview("export", "--markdown", SAMPLES / "cpu_breaks_recompiles").stdout
    assert "- **info**: `scale_shift` took " in text
    assert "on `scale`, `x` dtype" in text
    assert "(e.g. `.float()`)" in text
    assert "\\`" not in text  # GitHub would show the backticks themselves


def test_markdown_names_the_torch_version(tmp_path: Path) -> None:
    traced = _tcview("export", "--markdown", SAMPLES / "cpu_breaks_recompiles").stdout
    assert "\ntorch `2.13.0+cpu` (from the trace)\n" in traced
    # A TORCH_LOGS capture names no version: a run directory's run.json may.
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(FIXTURES / "torch_logs_small.txt", run / "torch_logs.txt")
    assert "\ntorch `" not in _tcview("export", "--markdown", run).stdout
    (run / "run.json").write_text(json.dumps({"status": "exited 0", "torch": "2.9.1+cu128"}))
    assert "\ntorch `2.9.1+cu128` (from run.json)\n" in _tcview("export", "--markdown", run).stdout
