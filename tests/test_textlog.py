"""The TORCH_LOGS text parser: counts, messages, other output, robustness."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, TCVIEW_CLI, shared_run_dirs
from hypothesis import given, settings
from hypothesis import strategies as st
from textref import count_text

from tcview.ingest.index import TraceSet
from tcview.ingest.source import load_source
from tcview.ingest.textlog import TextLog

SMALL = FIXTURES / "torch_logs_small.txt"
# `TORCH_LOGS=+dynamo,+inductor,+aot python3 tests/fixtures/jobs/breaks_recompile.py 2> FILE`
# (torch 2.13 CPU, a warm FX graph cache), less the AOTAutograd cache-key messages
# (autograd_cache.py:854, 400 KB). No `recompiles` log; compile 0/1 is the one recompile.
DYNAMO_RECOMPILE = FIXTURES / "torch_logs_dynamo_recompile.txt"
FOUR = ("compiles", "graph_breaks", "recompiles", "kernels")

PREFIX = "V1121 05:51:25.943000 25625 torch/_dynamo/symbolic_convert.py:5124]"


def feed_all(data: bytes, sizes: list[int] | None = None) -> TextLog:
    """A TextLog fed `data` in pieces of the given sizes (the rest in one piece)."""
    log = TextLog()
    pos = 0
    for n in sizes or []:
        log.feed(data[pos : pos + n])
        pos += n
    log.feed(data[pos:])
    log.finish()
    return log


def fingerprint(log: TextLog) -> dict:
    """Everything the index holds, as plain data."""
    return {
        "summary": log.summary_counts(),
        "records": [
            (p.display, r.offset, r.end, r.line_number(), r.kind, r.key, r.attempt, r.payload())
            for p in log.files
            for r in p.records
        ],
        "other": list(log.other),
        "kernels": [(k.name, k.method, k.index, k.output.offset) for k in log.kernels],
        "breaks": [(b.location, b.reason, b.url, b.user_stack) for b in log.breaks],
        "recompiles": [(r.compile.id_text, r.reasons) for r in log.recompiles],
        "notices": log.notices,
    }


# ---------------------------------------------------------------------- counts


def test_fixture_counts_match_the_independent_counter() -> None:
    data = SMALL.read_bytes()
    log = TextLog.load(str(SMALL))
    counts = log.counts()
    assert counts == count_text(data)
    # Counted by hand: 0/0 of pid 25625, 0/0 of rank 0 and of rank 1, 0/1 and 0/4 of pid
    # 19906, 0/0 of pid 19541 (0/0_1 is an attempt of 0/0); 0/1 and 0/4 are recompiles.
    assert counts == {"compiles": 6, "graph_breaks": 1, "recompiles": 2, "kernels": 1}


def test_recompiles_count_without_the_recompiles_log() -> None:
    """Without the `recompiles` log a recompile is still one (0/1 here), as in
    the trace and in the tree; the count does not come from `Recompiling function` messages."""
    data = DYNAMO_RECOMPILE.read_bytes()
    assert b"Recompiling function" not in data and b"[0/1]" in data
    log = TextLog.load(str(DYNAMO_RECOMPILE))
    assert (
        log.counts()
        == count_text(data)
        == {
            "compiles": 3,
            "graph_breaks": 2,
            "recompiles": 1,
            "kernels": 0,
        }
    )
    (rc,) = log.recompiles
    assert rc.compile.id_text == "0/1" and rc.compile.recompile is rc
    assert rc.reasons == [] and rc.record is None  # nothing logged why
    assert [c.id_text for c in log.compiles if c.key.is_recompile] == ["0/1"]


def _logs() -> list[Path]:
    return [f for d in shared_run_dirs() for f in sorted(d.glob("torch_logs*.txt"))]


@pytest.mark.parametrize("path", _logs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_shared_logs_match_the_independent_counter(path: Path) -> None:
    log = TextLog.load(str(path))
    assert log.counts() == count_text(path.read_bytes())


def torch_logs_of(run: Path) -> dict[str, set[str]]:
    """Log file name -> TORCH_LOGS components, from the run's command.txt."""
    out: dict[str, set[str]] = {}
    for line in (run / "command.txt").read_text().splitlines():
        if line.startswith("#"):
            continue
        name = re.search(r"2> ([\w.]+)", line)
        logs = re.search(r"TORCH_LOGS=\"?([^\"\s']+)", line)
        if name:
            parts = logs.group(1).split(",") if logs else []
            out[name.group(1)] = {p.strip().lstrip("+") for p in parts if p.strip()}
    return out


# Which TORCH_LOGS component must be on for a count of the text to be complete:
#   graph_breaks <- graph_breaks; kernels <- output_code; compiles <- dynamo (its INFO "Step 1:
#   torchdynamo start tracing" line carries the id of every compile, even one that fails before
#   any artifact is logged); recompiles (compile ids 0/N, N > 0) <- dynamo, or recompiles /
#   recompiles_verbose (whose "Recompiling function" message carries the id of the recompile).
# A count whose component is off must be 0 for graph_breaks/kernels (the text cannot have
# them), and the compiles and recompiles of the text must never exceed the trace's.
NEEDS = {
    "graph_breaks": {"graph_breaks"},
    "recompiles": {"recompiles", "recompiles_verbose", "dynamo"},
    "kernels": {"output_code"},
    "compiles": {"dynamo"},
}
AT_MOST = ("compiles", "recompiles")


def _runs_with_logs() -> list[tuple[Path, Path]]:
    return [
        (run, run / name)
        for run in shared_run_dirs()
        if (run / "trace").is_dir()
        for name in sorted(torch_logs_of(run))
        if (run / name).is_file()
    ]


@pytest.mark.parametrize(
    "run,log_path", _runs_with_logs(), ids=lambda p: p.name if p.suffix else p.parent.name
)
def test_text_agrees_with_trace(run: Path, log_path: Path) -> None:
    components = torch_logs_of(run)[log_path.name]
    trace = TraceSet.load(run / "trace").summary_counts()
    text = TextLog.load(str(log_path)).summary_counts()
    compared = 0
    for key, needs in NEEDS.items():
        if components & needs:
            assert text[key] == trace[key], key
            compared += 1
        elif key in AT_MOST:
            assert text[key] <= trace[key], key
        else:
            assert text[key] == 0, key
    if components:
        assert compared, "a capture with TORCH_LOGS compared nothing"


def test_agreement_covers_every_kind(shared_traces: Path) -> None:
    """The rule above must actually compare non-zero numbers of each kind somewhere."""
    seen = dict.fromkeys(FOUR, 0)
    for run, log_path in _runs_with_logs():
        components = torch_logs_of(run)[log_path.name]
        text = TextLog.load(str(log_path)).summary_counts()
        for key, needs in NEEDS.items():
            if components & needs:
                seen[key] += text[key]
    assert all(seen.values()), seen


# ---------------------------------------------------------------------- stdin


def _summary_json(args: list[str], stdin: bytes | None = None) -> dict:
    out = subprocess.run(
        [*TCVIEW_CLI, "summary", "--json", *args],
        input=stdin,
        capture_output=True,
        cwd=REPO,
        check=True,
        timeout=120,
    )
    return json.loads(out.stdout)


def _stdin_cases() -> list[Path]:
    names = {"i_ranks_gloo", "a_pointwise_ansi", "gpt_train"}
    return [SMALL] + [f for f in _logs() if f.parent.name in names and f.name == "torch_logs.txt"]


@pytest.mark.e2e
@pytest.mark.parametrize("path", _stdin_cases(), ids=lambda p: p.parent.name)
def test_stdin_equals_file(path: Path) -> None:
    from_file = _summary_json([str(path)])
    from_stdin = _summary_json(["-"], stdin=path.read_bytes())
    assert from_stdin == from_file
    assert {k: from_file[k] for k in FOUR} == count_text(path.read_bytes())


def test_stdin_spool_is_outside_any_trace_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    data = SMALL.read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    log = TextLog.load("-")
    assert log.path is None
    assert fingerprint(log) == fingerprint(TextLog.load(str(SMALL)))
    log.close()


# ---------------------------------------------------------------------- messages


def test_graph_break_message() -> None:
    log = TextLog.load(str(SMALL))
    (gb,) = log.breaks
    assert gb.location.endswith("b_graph_breaks/script.py:8")
    assert gb.reason == "Failed to trace builtin operator"
    assert gb.url.endswith("gb0059.html")
    assert gb.hints and gb.explanation.startswith("Dynamo does not know")
    assert any("script.py:8 in f_print" in frame for frame in gb.user_stack)
    assert gb.compile is not None and gb.compile.id_text == "0/0"
    assert gb.record is not None and gb.record.kind == "graph_breaks"
    assert gb.record.payload().startswith("Graph break in user code at ")


def test_recompile_and_recompile_limit() -> None:
    log = TextLog.load(str(SMALL))
    assert [r.compile.id_text for r in log.recompiles] == ["0/1", "0/4"]
    rc = log.recompiles[0]
    assert rc.compile.recompile is rc and rc.record is not None
    assert rc.record.payload().startswith("Recompiling function f in ")
    assert rc.compile.id_text == "0/1"
    assert rc.reasons[0].startswith("0/0: k == 2")
    assert "User stack trace:" in rc.reasons[0]
    assert rc.compile.frame is not None and rc.compile.frame.co_name == "f"
    (failure,) = log.failures
    assert failure.is_recompile_limit
    assert failure.compile is not None and failure.compile.id_text == "0/4"
    assert failure.location.endswith("c_recompiles/script.py:8")


def test_output_code_kernels_and_payload() -> None:
    log = TextLog.load(str(SMALL))
    (kernel,) = log.kernels
    assert (kernel.name, kernel.method, kernel.kind) == ("cpp_fused_mul_0", "cpp_pybinding", "cpp")
    rec = kernel.output
    assert rec.kind == rec.name == "output_code"
    payload = rec.payload()
    assert payload.startswith("Output code: \n# AOT ID:")
    assert "\ncpp_fused_mul_0 = async_compile.cpp_pybinding(" in payload
    assert "] [__output_code]" not in payload
    assert kernel.compile is not None and kernel.compile.id_text == "0/0"
    assert rec in kernel.compile.records_of("output_code")


def test_step_lifecycle_gives_estimated_compile_time() -> None:
    log = TextLog.load(str(SMALL))
    comp = next(c for c in log.compiles if c.id_text == "0/0" and c.file.pid == 25625)
    assert comp.metrics is not None and comp.metrics["estimated"] is True
    assert comp.compile_time_s is not None and 0 < comp.compile_time_s < 60
    assert comp.frame is not None and comp.frame.co_name == "f_print"
    assert {r.attempt for r in comp.records} == {0, 1} and comp.retried  # 0/0 and 0/0_1


def test_extras_stay_reachable() -> None:
    log = TextLog.load(str(SMALL))
    assert log.records_of("perf_hints")[0].payload() == "Skip comprehensive padding on CPU"
    assert log.records_of("step")
    kinds = {r.kind for p in log.files for r in p.records}
    assert {"graph_breaks", "output_code", "recompiles", "step", "graph_code"} <= kinds


def test_fusion_decisions(shared_traces: Path) -> None:
    log = TextLog.load(str(shared_traces / "h200-torch2.11" / "gpt_train" / "torch_logs.txt"))
    decisions = log.fusion_decisions()
    assert any(d.fused for d in decisions) and any(not d.fused and d.reason for d in decisions)
    assert all(d.compile is not None for d in decisions)


def test_launcher_prefix_before_rank() -> None:
    body = (
        b"[default0]:[rank0]:" + PREFIX.encode() + b" [0/0] [__graph_breaks] "
        b"Graph break in user code at /a.py:3\n"
        b"[default0]:hello\n"
    )
    log = feed_all(body)
    assert log.counts()["graph_breaks"] == 1 and log.files[0].rank == 0
    assert [o.text for o in log.other] == ["[default0]:hello"]


def test_identical_prefix_still_splits_messages() -> None:
    body = (
        f"{PREFIX} [0/0] [__graph_breaks] Graph break in user code at /a.py:3\n"
        f"{PREFIX} [0/0] [__graph_breaks] Graph Break Reason: first\n"
        f"{PREFIX} [0/0] [__graph_breaks] Graph break (user stack suppressed due to duplicate "
        "graph break) in user code at /a.py:3\n"
        f"{PREFIX} [0/0] [__graph_breaks] Graph Break Reason: second\n"
    ).encode()
    log = feed_all(body)
    assert [b.reason for b in log.breaks] == ["first", "second"]
    assert log.counts()["graph_breaks"] == count_text(body)["graph_breaks"] == 2


def test_interleaved_processes_keep_their_messages() -> None:
    a = "I1121 05:00:00.000000 11 torch/x.py:1] [0/1] [__recompiles]"
    b = "[rank1]:I1121 05:00:00.000000 22 torch/x.py:1] [0/1] [__recompiles]"
    body = (
        f"{a} Recompiling function f in /a.py:1\n"
        f"{b} Recompiling function g in /b.py:1\n"
        f"{a}     - 0/0: guard a\n"
        "plain print\n"
        f"{b}     - 0/0: guard b\n"
    ).encode()
    log = feed_all(body)
    assert [r.reasons for r in log.recompiles] == [["0/0: guard a"], ["0/0: guard b"]]
    assert log.counts()["recompiles"] == count_text(body)["recompiles"] == 2
    assert [p.display for p in log.files] == ["pid 11", "rank 1 · pid 22"]
    assert [o.text for o in log.other] == ["plain print"]
    assert log.summary_counts()["ranks"] == [1]


# ---------------------------------------------------------------------- ranks, ANSI, other


def test_rank_prefixes_are_separate_processes() -> None:
    log = TextLog.load(str(SMALL))
    ranked = {p.rank: p for p in log.files if p.rank is not None}
    assert set(ranked) == {0, 1}
    for proc in ranked.values():
        assert list(proc.compiles) == [next(iter(proc.compiles))]
        assert next(iter(proc.compiles)).text == "0/0"
    assert {r.label for r in log.runs[0].ranks} == {"rank 0", "rank 1", "no rank"}


def test_shared_ranks_capture(shared_traces: Path) -> None:
    path = shared_traces / "cpu-torch2.13" / "i_ranks_gloo" / "torch_logs.txt"
    log = TextLog.load(str(path))
    assert log.summary_counts()["ranks"] == [0, 1]
    pids = {p.pid for p in log.files if p.rank is not None}
    assert len(pids) == 2
    assert any("UserWarning" in o.text for o in log.other)


def _no_escape(log: TextLog) -> None:
    for proc in log.files:
        for rec in proc.records:
            assert "\x1b" not in rec.payload()
    for line in log.other:
        assert "\x1b" not in line.text


def test_ansi_is_stripped() -> None:
    red = "\x1b[31m"
    reset = "\x1b[0m"
    body = (
        f"{red}{PREFIX} [0/0] [__graph_breaks]{reset} Graph break in user code at /a.py:3\n"
        f"{PREFIX} [0/0] [__graph_breaks] {red}Graph Break Reason:{reset} coloured\n"
        f"{red}a coloured print{reset}\r\n"
    ).encode()
    log = feed_all(body)
    assert [b.reason for b in log.breaks] == ["coloured"]
    assert [o.text for o in log.other] == ["a coloured print"]
    _no_escape(log)
    _no_escape(TextLog.load(str(SMALL)))  # its last lines come from the ANSI capture


def test_shared_ansi_capture(shared_traces: Path) -> None:
    path = shared_traces / "cpu-torch2.13" / "a_pointwise_ansi" / "torch_logs.txt"
    log = TextLog.load(str(path))
    assert log.counts()["compiles"] == 1
    graph = log.records_of("graph_code")[0].payload()
    assert 'L_x_: "f32[1024, 1024][1024, 1]cpu"' in graph
    _no_escape(log)


def test_every_line_is_a_message_line_or_other_output() -> None:
    data = SMALL.read_bytes()
    log = TextLog.load(str(SMALL))
    message_lines = sum(r.payload().count("\n") + 1 for p in log.files for r in p.records)
    assert message_lines + len(log.other) == data.count(b"\n")
    texts = [o.text for o in log.other]
    assert texts[0].endswith(
        "UserWarning: Converting a tensor with requires_grad=True to a "
        "scalar may lead to unexpected behavior."
    )
    assert [o.lineno for o in log.other] == sorted(o.lineno for o in log.other)
    lines = data.decode().split("\n")
    for o in log.other:
        assert lines[o.lineno - 1] == o.text


def test_foreign_lines_in_a_shared_capture(shared_traces: Path) -> None:
    path = shared_traces / "cpu-torch2.13" / "f_compile_errors" / "torch_logs.txt"
    log = TextLog.load(str(path))
    texts = [o.text for o in log.other]
    assert "Traceback (most recent call last):" in texts
    assert any(t.startswith("torch._dynamo.exc.BackendCompilerFailed") for t in texts)
    assert log.summary_counts()["unparsed_lines"] == sum(1 for t in texts if t.strip())


def test_custom_format_notice() -> None:
    body = (
        b"DEBUG|torch._dynamo.output_graph.__graph_code|output_graph.py:2835|TRACED GRAPH\n"
        b" ===== __compiled_fn_1 =====\n"
        b"hello from the program\n"
    )
    log = feed_all(body)
    assert log.custom_format and "TORCH_LOGS_FORMAT" in log.notices[0]
    assert len(log.other) == 3
    assert log.counts() == dict.fromkeys(FOUR, 0)
    plain = feed_all(b"just a program\nthat prints\n")
    assert plain.notices == []


def test_shared_custom_format_capture(shared_traces: Path) -> None:
    path = shared_traces / "cpu-torch2.13" / "a_pointwise_logs_format" / "torch_logs.txt"
    log = TextLog.load(str(path))
    assert log.notices and log.summary_counts()["notices"] == log.notices
    assert len(log.other) == path.read_bytes().count(b"\n")


# ---------------------------------------------------------------------- robustness


def test_invalid_utf8() -> None:
    body = (
        PREFIX.encode()
        + b" [0/0] [__graph_breaks] Graph break in user code at /a\xff.py:3\n"
        + PREFIX.encode()
        + b" [0/0] [__graph_breaks] Graph Break Reason: bad \xfe\xff bytes\n"
        + b"stray \xc3\x28 bytes\n"
    )
    log = feed_all(body)
    assert log.breaks[0].reason == "bad \ufffd\ufffd bytes"
    assert log.other[0].text == "stray \ufffd( bytes"
    assert log.counts() == count_text(body)


def test_ten_megabyte_lines() -> None:
    big = b"x" * (10 << 20)
    body = (
        PREFIX.encode()
        + b" [0/0] [__output_code] Output code: \n"
        + PREFIX.encode()
        + b" [0/0] [__output_code] k_0 = async_compile.triton('k', '''"
        + big
        + b"\n"
        + big
        + b"\n"
        + PREFIX.encode()
        + b" [0/0] [__output_code] tail\n"
    )
    start = time.perf_counter()
    log = feed_all(body, [65536] * (len(body) // 65536))
    elapsed = time.perf_counter() - start
    assert elapsed < 10, elapsed
    assert [k.name for k in log.kernels] == ["k_0"]
    assert len(log.other) == 1 and log.other.ends[0] - log.other.offsets[0] == len(big)
    (rec,) = log.records_of("output_code")
    assert rec.payload().endswith("tail")


def test_partial_last_line_waits_for_more_bytes() -> None:
    line = f"{PREFIX} [0/0] [__graph_breaks] Graph break in user code at /a.py:3\n".encode()
    log = TextLog()
    log.feed(line[:40])
    assert log.counts()["compiles"] == 0 and log.pending_bytes == 40
    log.feed(line[40:])
    assert log.counts()["graph_breaks"] == 1
    log.feed(b"no newline at the end")
    assert len(log.other) == 0
    log.finish()
    assert [o.text for o in log.other] == ["no newline at the end"]


_SMALL_BYTES = SMALL.read_bytes()
_ONE_READ = fingerprint(feed_all(_SMALL_BYTES))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=4000), max_size=30))
def test_any_chunk_split_gives_the_same_index(sizes: list[int]) -> None:
    log = feed_all(_SMALL_BYTES, sizes)
    try:
        assert fingerprint(log) == _ONE_READ
    finally:
        log.close()


# ---------------------------------------------------------------------- integration


@pytest.mark.e2e
def test_cli_summary_text_on_a_capture() -> None:
    out = subprocess.run(
        [*TCVIEW_CLI, "summary", str(SMALL)],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
        timeout=120,
    ).stdout
    assert "breaks 1" in out and "Recompiles (2)" in out and "Kernels (1): cpp 1" in out
    assert "[0/4] f (script.py:8): (reason not logged)" in out


def test_load_source_detects_a_capture() -> None:
    log = load_source(str(SMALL))
    assert isinstance(log, TextLog)


_RANKS = ["", "[rank0]:", "[rank1]:"]
_IDS = [
    "",
    " [0/0]",
    " [0/0_1]",
    " [0/1]",
    " [0/2_1]",
    " [1/0]",
    " [!0]",
    " [!0/1/0]",
    " [!0/1/0_2]",
    " [!0/1/3]",
]
_TAGS = [
    "",
    " [__graph_breaks]",
    " [__recompiles]",
    " [__recompiles_verbose]",
    " [__output_code]",
    " [__guards]",
    " [__fusion]",
]
_TEXTS = [
    "Graph break in user code at /a.py:1",
    "Graph break (user stack suppressed due to duplicate graph break) in user code at /a.py:1",
    "Graph Break Reason: why",
    "Recompiling function f in /a.py:1",
    "    - 0/0: x == 1",
    "Output code: ",
    "k_0 = async_compile.triton('k_0', '''",
    "cpp_fused_0 = async_compile.cpp_pybinding(['float*'], r'''",
    "async_compile.wait(globals())",
    "    x = 1",
    "",
    "[weird] text",
    "Step 1: torchdynamo start tracing f /a.py:1",
    "WON'T CONVERT f /a.py line 1",
]
_OTHER = ["a print", "Traceback (most recent call last):", '  File "x.py", line 1', ""]


@st.composite
def capture_lines(draw: st.DrawFn) -> bytes:
    out = []
    for _ in range(draw(st.integers(1, 40))):
        if draw(st.integers(0, 5)) == 0:
            line = draw(st.sampled_from(_OTHER))
        else:
            line = (
                f"{draw(st.sampled_from(_RANKS))}{draw(st.sampled_from('VIW'))}1121 "
                f"05:00:0{draw(st.integers(0, 1))}.000000 {draw(st.sampled_from([7, 8]))} "
                f"torch/x.py:{draw(st.sampled_from([1, 2]))}]{draw(st.sampled_from(_IDS))}"
                f"{draw(st.sampled_from(_TAGS))} {draw(st.sampled_from(_TEXTS))}"
            )
        if draw(st.integers(0, 9)) == 0:
            line = f"\x1b[2m{line}\x1b[0m"
        out.append(line + draw(st.sampled_from(["\n", "\n", "\r\n"])))
    data = "".join(out).encode()
    if draw(st.booleans()):
        data += b"\xff\xfe"  # invalid UTF-8 in a last line without newline
    return data


@settings(max_examples=150, deadline=None)
@given(capture_lines(), st.lists(st.integers(min_value=0, max_value=300), max_size=8))
def test_generated_captures_match_the_independent_counter(data: bytes, sizes: list[int]) -> None:
    one = feed_all(data)
    split = feed_all(data, sizes)
    try:
        assert one.counts() == count_text(data)
        assert fingerprint(split) == fingerprint(one)
        message_lines = sum(r.payload().count("\n") + 1 for p in one.files for r in p.records)
        assert message_lines + len(one.other) == one.summary_counts()["lines"]
    finally:
        one.close()
        split.close()


@pytest.mark.parametrize(
    "table,kind,phase",
    [("HEADER_HANDLERS", "step", "header"), ("CLOSE_HANDLERS", "graph_breaks", "close")],
)
def test_a_message_handler_that_raises_is_damage_not_the_end(
    monkeypatch: pytest.MonkeyPatch, table: str, kind: str, phase: str
) -> None:
    """A handler that raises on TORCH_LOGS text: one damage entry, every other count unchanged."""
    from tcview.ingest import textmessages
    from tcview.ingest.builder import Builder
    from tcview.ingest.textproc import ProcessLog
    from tcview.model.objects import Record
    from tcview.report.summary import summary_json

    clean = TextLog.load(str(DYNAMO_RECOMPILE))
    target = clean.records_of(kind)[1]
    handler = getattr(textmessages, table)[kind]

    def boom(b: Builder, proc: ProcessLog, rec: Record) -> None:
        if rec.offset == target.offset:
            raise ValueError("boom\nsecond line")
        handler(b, proc, rec)

    monkeypatch.setitem(getattr(textmessages, table), kind, boom)
    hurt = TextLog.load(str(DYNAMO_RECOMPILE))
    got, want = summary_json(hurt), summary_json(clean)
    assert got["damage"].pop("handler_errors") == 1 and want["damage"].pop("handler_errors") == 0
    # the findings are read from the facts, and the record's own fact (a graph break) is lost
    got.pop("findings"), want.pop("findings")
    assert got == want
    (error,) = hurt.handler_errors()
    assert (error.offset, error.line_number(), error.kind, error.phase, error.error) == (
        target.offset,
        target.line_number(),
        kind,
        phase,
        "ValueError",
    )
    assert error.text().endswith(f"{kind} ({phase} handler): ValueError: boom second line")
    assert len(hurt.records_of(kind)) == len(clean.records_of(kind))


def test_a_trace_compile_offers_the_fusion_decisions_of_its_run_text_log() -> None:
    """model.fusion_decisions(compile): a run directory's TraceSet finds a compile's decisions
    in its TORCH_LOGS capture (same pid, same id); without a capture there are none."""
    from conftest import SAMPLES

    run = SAMPLES / "gpu_tinyblock"
    ts = load_source(str(run))
    assert isinstance(ts, TraceSet) and ts.text is not None
    (comp,) = ts.compiles
    decisions = ts.fusion_decisions(comp)

    def plain(found: list) -> list[tuple]:
        return [(d.record.offset, d.first, d.second, d.fused, d.reason) for d in found]

    assert plain(decisions) == plain(ts.fusion_decisions()) == plain(ts.text.fusion_decisions())
    assert decisions and any(d.fused for d in decisions)
    for d in decisions:
        assert d.compile is not None and d.compile.key == comp.key
        assert d.compile.file.pid in comp.file.pids and d.compile is not comp
    assert plain(ts.text.fusion_decisions(decisions[0].compile)) == plain(decisions)
    assert TraceSet.load(run / "trace").fusion_decisions(comp) == []


@pytest.mark.parametrize("newline", [True, False], ids=["ended", "last-line"])
def test_text_buffer_caps_a_line_like_the_trace_buffer(
    monkeypatch: pytest.MonkeyPatch, newline: bool
) -> None:
    """A line with no newline is held up to MAX_LINE (the one cap of trace and text input),
    then dropped and counted as one unparsed line; the lines around it read as without it."""
    from tcview.ingest import linebuffer

    monkeypatch.setattr(linebuffer, "MAX_LINE", 10_000)
    data = SMALL.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    junk = b"x" * 25_000 + (b"\n" if newline else b"")
    log = TextLog()
    held = 0
    whole = data[:cut] + junk + (data[cut:] if newline else b"")
    for pos in range(0, len(whole), 3_000):
        log.feed(whole[pos : pos + 3_000])
        held = max(held, log.pending_bytes)
    log.finish()
    assert held <= 10_000
    assert log.overlong_lines == 1
    plain = feed_all(data[:cut] + (data[cut:] if newline else b""))
    expected = plain.summary_counts()
    got = log.summary_counts()
    assert got["unparsed_lines"] == expected["unparsed_lines"] + 1
    assert {k: got[k] for k in FOUR} == {k: expected[k] for k in FOUR}
    assert got["lines"] == expected["lines"] + 1
