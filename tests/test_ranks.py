"""Ranks and their divergence (model and command line): the groups per
check against tlparse's all-ranks report, the first point of divergence, --fail-on divergence,
the text report's rank labels, picking ranks, and the per-source signature."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, TCVIEW_CLI, unpack_shared

from tcview.analysis.checks import fail_on
from tcview.analysis.divergence import (
    JSON_CHECKS,
    Step,
    align,
    analyze,
    describe_groups,
    file_signature,
    steps_from,
    tensor_meta_digest,
)
from tcview.ingest.index import TraceSet
from tcview.model.objects import JsonValue, LogSource
from tcview.model.ranks import counts_in, parse_ranks, ranks_label, ranks_text
from tcview.report.summary import summary_json, summary_text

# Expected groups per multi-rank input: tlparse's (copied from /work/ref/divergence.json) and
# tcview's where they differ, with why. Not computed by tcview.
EXPECTED = json.loads((FIXTURES / "divergence_expected.json").read_text())["inputs"]


def _input(name: str, fixture_runs: Path) -> Path:
    entry = EXPECTED[name]
    if entry["base"] == "fixture_runs":
        return fixture_runs / entry["path"]
    shared = unpack_shared()
    if shared is None:
        pytest.skip("../shared/traces.tar.xz is absent")
    return shared / entry["path"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_divergence_groups_equal_the_expected_ones(name: str, fixture_runs: Path) -> None:
    entry = EXPECTED[name]
    data = summary_json(TraceSet.load(_input(name, fixture_runs)))
    assert list(data["divergence"]) == list(JSON_CHECKS)
    assert JSON_CHECKS == ("compile_ids", "cache", "breaks", "tensor_meta", "collectives")
    expected = {check: groups for check, groups in entry["tcview"].items()}
    assert data["exec_order_groups"] == expected.pop("exec_order")
    assert data["divergence"] == expected
    tlparse = entry["tlparse"]
    if isinstance(tlparse, dict):  # tlparse reported (it fails on files without rank_N)
        for check, groups in tlparse.items():
            if check not in entry["differs"]:
                found = data["exec_order_groups"] if check == "exec_order" else data["divergence"]
                assert (found if check == "exec_order" else found[check]) == groups, check


def test_tensor_metadata_is_compared_without_runtime_estimates() -> None:
    op = {"name": "extern_kernels.mm", "type": "compute", "estimated_runtime_ns": 6885841.87}
    op["outputs"] = [{"shape": [1024, 1024], "stride": [1024, 1], "dtype": "float16"}]
    slower = {**op, "estimated_runtime_ns": 7000000.0}
    wider = {**op, "outputs": [{"shape": [2048, 1024], "stride": [1024, 1], "dtype": "float16"}]}
    digest = tensor_meta_digest(json.dumps({"ops": [op]}))
    assert tensor_meta_digest(json.dumps({"ops": [slower]})) == digest
    assert tensor_meta_digest(json.dumps({"ops": [wider]})) != digest
    assert tensor_meta_digest("not json {") != digest  # compared as text, no crash


def test_first_divergence_of_the_fresh_two_rank_run(fixture_runs: Path) -> None:
    div = analyze(TraceSet.load(fixture_runs / "ranks_diverge" / "trace"))
    assert div.first == (
        "rank 1 breaks the graph in 0/0 (Unsupported Tensor.item() call with"
        " capture_scalar_outputs=False); rank 0 does not"
    )
    assert div.pair == (0, 1)
    assert div.groups == [[0], [1]]


def test_first_divergence_names_the_recompile_and_its_cause(fixture_runs: Path) -> None:
    div = analyze(TraceSet.load(fixture_runs / "ranks_ddp2" / "trace"))
    assert div.first == (
        "rank 1 recompiles 0/1 on `args[0]` size at index 0 and breaks the graph"
        " (Unsupported method call); rank 0 does not"
    )


def test_first_divergence_of_collectives(fixture_runs: Path) -> None:
    schedule = analyze(TraceSet.load(fixture_runs / "ranks_schedule" / "trace"))
    assert schedule.first == (
        "rank 1 schedules wait_tensor as collective 4 of 0/0;"
        " ranks 0, 2 schedule reduce_scatter_tensor as collective 4 of 0/0"
    )


def test_first_divergence_of_tensor_metadata(shared_traces: Path) -> None:
    runtime = analyze(TraceSet.load(shared_traces / "tlparse-corpus" / "multi_rank_runtime"))
    assert runtime.first == (
        "ranks 5, 6 log other tensor metadata (shapes, dtypes, strides) for 0/0 than ranks 0–3;"
        " rank 4 logs no tensor metadata for 0/0"
    )
    assert runtime.groups == [[0, 1, 2, 3], [4], [5, 6]]


def test_identical_ranks_fold_into_one_group(fixture_runs: Path, tmp_path: Path) -> None:
    """Four copies of rank 0 (renumbered) and rank 1: two groups, and rank 1 alone."""
    trace = fixture_runs / "ranks_diverge" / "trace"
    zero = next(trace.glob("*rank_0_*.log")).read_bytes()
    one = next(trace.glob("*rank_1_*.log")).read_bytes()
    for rank in range(4):
        data = zero.replace(b'"rank": 0', b'"rank": %d' % rank)
        (tmp_path / f"dedicated_log_torch_trace_rank_{rank}_x.log").write_bytes(data)
    (tmp_path / "dedicated_log_torch_trace_rank_4_x.log").write_bytes(
        one.replace(b'"rank": 1', b'"rank": 4')
    )
    div = analyze(TraceSet.load(tmp_path))
    assert div.groups == [[0, 1, 2, 3], [4]]
    assert div.first.startswith("rank 4 breaks the graph in 0/0 (")
    assert div.first.endswith("; ranks 0–3 do not")


def test_the_signature_is_json_and_read_back_gives_the_same_analysis(fixture_runs: Path) -> None:
    """What a worker process makes of a file (JSON) combines as the file itself does; a
    signature that does not read back (stale, foreign) is made again."""
    ts = TraceSet.load(fixture_runs / "ranks_diverge" / "trace")
    made: dict[LogSource, dict[str, JsonValue]] = {tf: file_signature(tf) for tf in ts.files}
    assert all(json.loads(json.dumps(sig)) == sig for sig in made.values())  # plain JSON
    direct = analyze(ts)
    assert analyze(ts, lambda tf: made[tf]).groups == direct.groups
    assert analyze(ts, lambda tf: made[tf]).first == direct.first
    assert analyze(ts, lambda tf: {"version": -1}).first == direct.first
    steps, times, order = steps_from(made[ts.files[1]])
    assert [s.id for s in steps] == ["0/0", "1/0", "1/1", "0/1", "1/2"]
    assert len(times) == 5 and order is None
    with pytest.raises(ValueError):
        steps_from({"version": 1, "steps": [["0/0"]]})
    # A key that is not its content's is refused (a stale or foreign signature).
    forged = {**made[ts.files[1]], "key": made[ts.files[0]]["key"]}
    with pytest.raises(ValueError, match="key"):
        steps_from(forged)
    seen: dict = {}
    one = steps_from(made[ts.files[0]], seen)
    again = steps_from(made[ts.files[0]], seen)
    assert again.steps is one.steps  # ranks that compiled alike are read once


def test_a_hostile_collective_schedule_is_read_without_crashing(tmp_path: Path) -> None:
    header = (
        'V1122 16:23:31.912000 555 x.py:1] {"artifact": {"name": "inductor_collective_schedule",'
        ' "encoding": "json"}, "rank": %d, "frame_id": 0, "frame_compile_id": 0, "attempt": 0,'
        ' "has_payload": "00000000000000000000000000000000"}\n'
    )
    start = (
        'V1122 16:23:31.900000 555 x.py:1] {"dynamo_start": {"stack": []}, "rank": %d,'
        ' "frame_id": 0, "frame_compile_id": 0, "attempt": 0}\n'
    )
    for rank, payload in ((0, '\t["a", "b"]\n'), (1, "\t{not json\n")):
        text = start % rank + header % rank + payload
        (tmp_path / f"dedicated_log_torch_trace_rank_{rank}.log").write_text(text)
    data = summary_json(TraceSet.load(tmp_path))
    assert data["divergence"]["collectives"] == [[0], [1]]


def _trace_line(rank: int, header: str) -> str:
    return f"V1122 16:23:31.912000 55{rank} x.py:1] {header}\n"


def test_causes_that_differ_only_in_addresses_are_the_same(tmp_path: Path) -> None:
    """Processes print their own addresses and object ids: a break or guard that names them is
    the same on every rank."""
    for rank, address in ((0, "0x7f3a2c1b9d60"), (1, "0x7fe01234abcd")):
        ids = f'"rank": {rank}, "frame_id": 0, "frame_compile_id": 0, "attempt": 0'
        brk = '{"artifact": {"name": "dynamo_graph_break_reason", "encoding": "string"}, '
        text = (
            _trace_line(rank, '{"dynamo_start": {"stack": []}, ' + ids + "}")
            + _trace_line(rank, brk + ids + ', "has_payload": "0" }')
            + f"\tGraph break in user code at /x.py:3\n\tGraph Break Reason: call to"
            f" <function f at {address}> id 140439264606080\n"
        )
        (tmp_path / f"dedicated_log_torch_trace_rank_{rank}.log").write_text(text)
    ts = TraceSet.load(tmp_path)
    assert len(ts.breaks) == 2
    assert summary_json(ts)["divergence"]["breaks"] == [[0, 1]]


def test_two_ranks_compiles_are_aligned_by_compile_id() -> None:
    def step(sid: str, breaks: tuple[str, ...] = ()) -> Step:
        return Step(sid, "f", "ok", "", "", breaks, (), (), ())

    left = [step("0/0"), step("1/0"), step("2/0")]
    right = [step("0/0"), step("5/0"), step("1/0", ("why",)), step("2/0")]
    pairs = align(left, right)
    assert [(p.left and p.left.id, p.right and p.right.id) for p in pairs] == [
        ("0/0", "0/0"),
        (None, "5/0"),
        ("1/0", "1/0"),
        ("2/0", "2/0"),
    ]
    assert [p.differs for p in pairs] == [(), ("id",), ("breaks",), ()]


def _summary(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TCVIEW_CLI, "summary", "-q", str(path), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
    )


@pytest.mark.e2e
def test_fail_on_divergence(fixture_runs: Path, tmp_path: Path) -> None:
    trace = fixture_runs / "ranks_diverge" / "trace"
    out = _summary(trace, "--json", "--fail-on", "divergence")
    assert out.returncode == 1, out.stderr
    assert "found divergence" in out.stderr
    assert json.loads(out.stdout)["divergence"]["compile_ids"] == [[0], [1]]
    alike = tmp_path / "alike"
    alike.mkdir()
    zero = next(trace.glob("*rank_0_*.log")).read_bytes()
    for rank in (0, 1):
        data = zero.replace(b'"rank": 0', b'"rank": %d' % rank)
        (alike / f"dedicated_log_torch_trace_rank_{rank}_x.log").write_bytes(data)
    assert _summary(alike, "--fail-on", "divergence").returncode == 0


@pytest.mark.e2e
def test_fail_on_names_divergence_among_its_kinds() -> None:
    out = subprocess.run(
        [*TCVIEW_CLI, "summary", "x", "--fail-on", "nope"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert out.returncode == 2
    assert "divergence" in out.stderr


def test_fail_on_divergence_counts_the_execution_order() -> None:
    alike = {check: [[0, 1]] for check in JSON_CHECKS}
    assert fail_on({"divergence": alike, "exec_order_groups": [[0, 1]]}, ["divergence"]) == []
    split = {"divergence": alike, "exec_order_groups": [[0], [1]]}
    assert fail_on(split, ["divergence"]) == ["divergence"]


def test_the_text_report_labels_ranks(fixture_runs: Path) -> None:
    text = summary_text(TraceSet.load(fixture_runs / "ranks_ddp2" / "trace"))
    lines = text.split("\n")
    assert "Ranks (2): 2 groups that compiled differently: [0] [1]" in lines
    assert any(
        ln.startswith("  first divergence: rank 1 recompiles 0/1 on `args[0]`") for ln in lines
    )
    # Lines both ranks print are printed once, with both ranks; the others with their rank.
    assert "  ranks 0, 1: [1] helper (contextlib.py:299): 1 compile(s): 1/0 empty graph" in lines
    assert any(ln.startswith("  rank 1: [0/1] <module> (ddp_two_ranks.py:13)") for ln in lines)
    assert any(ln.startswith("  rank 0: [0] <module>") for ln in lines)
    assert any("  (ranks 0, 1)" in ln and "Unsupported method call" in ln for ln in lines)
    slowest = lines[lines.index("Slowest compiles") + 1 :]
    assert all(" rank 0  [" in ln or " rank 1  [" in ln for ln in slowest if ln.startswith("  "))


def test_a_single_rank_report_has_no_rank_labels() -> None:
    sample = REPO / "sample_traces" / "cpu_breaks_recompiles"
    text = summary_text(TraceSet.load(sample))
    assert "Ranks (" not in text
    assert "rank 0:" not in text


def test_parse_and_write_rank_sets() -> None:
    assert parse_ranks("1") == frozenset({1})
    assert parse_ranks("0,2") == frozenset({0, 2})
    assert parse_ranks("0-3") == frozenset({0, 1, 2, 3})
    assert parse_ranks(" ranks 0 – 2, 5 ") == frozenset({0, 1, 2, 5})
    assert parse_ranks("") is None
    with pytest.raises(ValueError, match="not a rank"):
        parse_ranks("x")
    with pytest.raises(ValueError, match="backwards"):
        parse_ranks("3-1")
    with pytest.raises(ValueError, match="no rank 7 in this input"):
        parse_ranks("7", [0, 1])
    assert ranks_text([5, 0, 1, 2, 3]) == "0–3, 5"
    assert ranks_text([0, 1]) == "0, 1"
    assert ranks_label([1]) == "rank 1"
    assert ranks_label([0, 2, 3]) == "ranks 0, 2, 3"
    assert ranks_label(range(1, 128, 2)) == "64 ranks (1, 3, 5, 7, 9, 11, 13, …, 127)"
    assert describe_groups([[r] for r in range(20)], limit=3) == "[0] [1] [2] … (20 groups)"


def test_counts_of_picked_ranks(fixture_runs: Path) -> None:
    ts = TraceSet.load(fixture_runs / "ranks_diverge" / "trace")
    assert counts_in(ts, None) == ts.counts()
    one = counts_in(ts, frozenset({1}))
    zero = counts_in(ts, frozenset({0}))
    assert zero == {"compiles": 1, "graph_breaks": 0, "recompiles": 0, "kernels": zero["kernels"]}
    assert one["compiles"] == 5 and one["graph_breaks"] == 2 and one["recompiles"] == 3
    both = counts_in(ts, frozenset({0, 1}))
    assert both == ts.counts()


def test_the_fixture_run_is_the_fresh_one(fixture_runs: Path) -> None:
    """tests/fixtures/runs/ranks_diverge.tar.xz holds the H100 job of
    tests/fixtures/jobs/gpu/ranks_diverge.py."""
    run = fixture_runs / "ranks_diverge"
    script = (FIXTURES / "jobs" / "gpu" / "ranks_diverge.py").read_text()
    assert (run / "script.py").read_text() == script
    assert len(list((run / "trace").glob("dedicated_log_torch_trace_rank_*.log"))) == 2


def tlparse_groups(trace: Path, out: Path) -> dict[str, list[list[int]] | None]:
    """Run ``tlparse --all-ranks-html`` and read its landing page: per check, the groups it
    prints ([] when it warns without groups, None when it says nothing)."""
    subprocess.run(
        ["tlparse", str(trace), "--all-ranks-html", "-o", str(out), "--no-browser", "--overwrite"],
        capture_output=True,
        check=True,
        timeout=300,
    )
    text = html.unescape(re.sub(r"<[^>]+>", "\n", (out / "index.html").read_text()))
    lines = [" ".join(ln.split()) for ln in text.split("\n") if ln.strip()]
    heads = {
        "compile_ids": "Diverging Compilation IDs",
        "cache": "Diverging Cache hit/miss",
        "collectives": "Diverging collective operation",
        "tensor_meta": "divergent inductor tensor metadata",
    }
    found: dict[str, list[list[int]] | None] = {}
    for check, head in heads.items():
        at = next((i for i, ln in enumerate(lines) if head in ln), None)
        if at is None:
            found[check] = None
            continue
        groups: list[list[int]] = []
        for ln in lines[at + 1 :]:
            if ln.endswith("groups:") and not groups:
                continue  # "Collective operation sequence groups:" before its groups
            if not ln.startswith("Ranks: "):
                break
            groups.append(sorted(int(r) for r in ln[len("Ranks: ") :].split(",")))
        found[check] = sorted(groups)
    return found


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("tlparse") is None, reason="tlparse is not installed")
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_groups_equal_those_of_tlparse_run_now(
    name: str, fixture_runs: Path, tmp_path: Path
) -> None:
    """tlparse 0.4.3 ``--all-ranks-html`` run now on every multi-rank input: where it prints
    groups, tcview's are equal (but where the fixture says why not); where it only warns
    (compile ids), tcview has several groups; where it says nothing, tcview has one group."""
    trace = _input(name, fixture_runs)
    entry = EXPECTED[name]
    ours = summary_json(TraceSet.load(trace))["divergence"]
    if "all" in entry["differs"]:  # tlparse fails on it
        with pytest.raises(subprocess.CalledProcessError):
            tlparse_groups(trace, tmp_path / "tl")
        return
    theirs = tlparse_groups(trace, tmp_path / "tl")
    ranks = sorted({r for g in ours["compile_ids"] for r in g})
    for check, groups in theirs.items():
        if check in entry["differs"]:
            assert ours[check] != groups and groups, check
        elif groups is None:
            assert ours[check] == [ranks], check
        elif groups == []:
            assert check == "compile_ids" and len(ours[check]) > 1
        else:
            assert ours[check] == groups, check
