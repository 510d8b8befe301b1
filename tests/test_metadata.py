"""Typed metadata (model/metadata.py): a real record of each typed kind, from a fixture trace,
decoded as its handler decodes it at ingest; the compile keeps that value, the index cache
gives it back; and the compile statuses, which are an enum written as their words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from tcview.ingest import snapshot
from tcview.ingest.tracefile import TraceFile
from tcview.model.metadata import (
    BACKWARD_METRICS,
    FRAME_METRICS,
    RUNTIME_METRICS,
    TIME_FIELDS,
    CacheArtifact,
    CompilationMetrics,
)
from tcview.model.objects import MARK_TABLE, MARKS, PHASES, STATUSES, CompileMark, CompileStatus

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "sample_traces/gpu_tinyblock/trace/dedicated_log_torch_trace_bgdrnh76.log"
BREAKS = REPO / "sample_traces/cpu_breaks_recompiles/trace/dedicated_log_torch_trace_k0tan0ei.log"
FIXTURES = REPO / "tests/fixtures"
BACKWARD = FIXTURES / "profile/trace/dedicated_log_torch_trace_6jtfxzwj.log"
CRASH = FIXTURES / "findings/crash/trace/dedicated_log_torch_trace_re9hwz4w.log"
CUDAGRAPHS = FIXTURES / "findings/cudagraph_overwrite/trace/dedicated_log_torch_trace_2mwj3o5v.log"
WARM = FIXTURES / "findings/warm_cache/warm/trace/dedicated_log_torch_trace_j5gegspo.log"


def first_header(path: Path, kind: str, where: str = "", text: str = "") -> dict[str, Any]:
    """The first header of `kind` in a trace file whose value has a truthy `where` field, and
    whose line holds `text`."""
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("\t") or f'"{kind}"' not in line or text not in line:
                continue
            header = json.loads(line[line.index("{") :])
            value = header.get(kind)
            if isinstance(value, dict) and (not where or value.get(where)):
                return header
    raise AssertionError(f"no {kind} record in {path}")


def indexed(path: Path) -> TraceFile:
    tf = TraceFile(path)
    tf.feed(path.read_bytes())
    tf.finish()
    return tf


def kept(tf: TraceFile, header: dict[str, Any], kind: str) -> list[CompilationMetrics]:
    """The decoded values of `kind` the compile that `header` names keeps."""
    (comp,) = [
        c
        for c in tf.compiles.values()
        if (c.key.frame_id, c.key.frame_compile_id)
        == (header.get("frame_id"), header.get("frame_compile_id"))
        and c.episode == 1
    ]
    return [m for m in comp.metric_values if m.kind == kind]


def test_compilation_metrics() -> None:
    header = first_header(TINY, FRAME_METRICS)
    m = CompilationMetrics.decode(FRAME_METRICS, header[FRAME_METRICS])
    assert (m.co_name, m.co_filename, m.co_firstlineno) == (
        "forward",
        "/workspace/examples/tinyblock.py",
        10,
    )
    assert (m.graph_op_count, m.graph_node_count, m.graph_input_count) == (7, 15, 7)
    assert (m.guard_count, m.shape_env_guard_count) == (65, 0)
    assert not m.empty_graph and m.restart_reasons == () and m.fail_type is None
    assert m.recompile_limit == 8  # from the dynamo_config text
    assert m.entire_frame_compile_time_s == 1.798083 and m.compile_time_s == 1.798083
    assert m.seconds("dynamo_cumulative_compile_time_us") == pytest.approx(1.798083)
    assert m.compile_time_autotune_time_us is None
    assert m.pytorch_version == "2.11.0+cu130"
    assert not m.backward and not m.runtime
    # What the handler kept is what decodes here, and the compile reads it.
    tf = indexed(TINY)
    assert kept(tf, header, FRAME_METRICS) == [m]
    comp = next(iter(tf.compiles.values()))
    assert comp.own_metrics == m and comp.compilation_metrics() == [m]
    assert comp.compile_time_s == 1.798083 and comp.recompile_limit == 8
    assert comp.metric_phases()[0] == ("entire frame", 1.798083, 0)


def test_compilation_metrics_restart_and_failure() -> None:
    header = first_header(BREAKS, FRAME_METRICS, "restart_reasons")
    m = CompilationMetrics.decode(FRAME_METRICS, header[FRAME_METRICS])
    assert len(m.restart_reasons) == 1
    assert m.restart_reasons[0].startswith("Failed to trace builtin operator")
    assert m in kept(indexed(BREAKS), header, FRAME_METRICS)

    header = first_header(CRASH, FRAME_METRICS, "fail_type")
    m = CompilationMetrics.decode(FRAME_METRICS, header[FRAME_METRICS])
    assert m.fail_type == "TorchRuntimeError"
    assert m.fail_reason.startswith("RuntimeError when making fake tensor call")
    assert m.fail_location.endswith("tests/fixtures/findings/crash/script.py:15")
    tf = indexed(CRASH)
    assert m in kept(tf, header, FRAME_METRICS)
    failures = [f for c in tf.compiles.values() for f in c.failures]
    assert [(f.fail_type, f.location) for f in failures] == [(m.fail_type, m.fail_location)]


def test_bwd_compilation_metrics() -> None:
    header = first_header(BACKWARD, BACKWARD_METRICS)
    m = CompilationMetrics.decode(BACKWARD_METRICS, header[BACKWARD_METRICS])
    assert m.backward and not m.runtime
    assert m.backward_cumulative_compile_time_us == 4441752.0
    assert m.inductor_compile_time_s == 4.438849
    assert m.co_name is None and m.empty_graph  # a backward's value names no frame, no ops
    assert kept(indexed(BACKWARD), header, BACKWARD_METRICS) == [m]


def test_compilation_metrics_runtime() -> None:
    header = first_header(CUDAGRAPHS, RUNTIME_METRICS)
    m = CompilationMetrics.decode(RUNTIME_METRICS, header[RUNTIME_METRICS])
    assert m.runtime and not m.backward
    assert m.runtime_cudagraphify_time_us == 6315.0 and m.duration_us == 6315.0
    assert m.cudagraph_skip_reason is None
    assert m in kept(indexed(CUDAGRAPHS), header, RUNTIME_METRICS)


def test_cache_artifact() -> None:
    header = first_header(WARM, "artifact", text='"fx_graph_cache_')
    assert header["artifact"]["name"] == "fx_graph_cache_hit"
    assert CacheArtifact.decode(header["artifact"]["name"]) == CacheArtifact("fx_graph", "hit")
    assert CacheArtifact.decode("aotautograd_cache_bypass") == CacheArtifact(
        "aotautograd", "bypass"
    )
    assert CacheArtifact.decode("fx_graph_cache_hash") is None  # a key, not a result
    assert CacheArtifact.decode("before_recompile_pre_grad") is None
    events = [(e.cache, e.result) for c in indexed(WARM).compiles.values() for e in c.cache]
    assert ("fx_graph", "hit") in events


@pytest.mark.parametrize(
    "meta",
    [
        {},
        {"graph_op_count": "7", "co_firstlineno": True, "restart_reasons": "why"},
        {"entire_frame_compile_time_s": 10**400, "duration_us": float("nan")},
        {"fail_type": {"a": 1}, "fail_reason": None, "recompile_limit": False},
        {"restart_reasons": [1, None], "cudagraph_skip_reason": 3, "dynamo_config": 5},
    ],
)
def test_decode_never_raises(meta: dict[str, Any]) -> None:
    """Hostile values decode to None or empty, as the raw reads did."""
    m = CompilationMetrics.decode(FRAME_METRICS, meta)
    assert m.kind == FRAME_METRICS
    assert m.empty_graph == (meta.get("graph_op_count") in (None, 0))
    if "restart_reasons" in meta:
        assert m.restart_reasons in (("why",), ("1", "None"))
    if "fail_type" in meta:
        assert (m.fail_type, m.fail_reason, m.recompile_limit) == ("{'a': 1}", "", None)
    if "entire_frame_compile_time_s" in meta:
        assert m.compile_time_s == float("inf")


def test_phases_are_time_fields() -> None:
    assert {key for key, *_ in PHASES} <= set(TIME_FIELDS)


def test_metric_values_round_trip_the_index_cache() -> None:
    direct = TraceFile(CRASH)
    direct.feed(CRASH.read_bytes())
    body = snapshot.encode(direct, direct.builder.facts)
    again = TraceFile(CRASH)
    snapshot.restore(again, body, CRASH.stat().st_size)
    want = [c.metric_values for c in direct.compiles.values()]
    got = [c.metric_values for c in again.compiles.values()]
    assert got == want and any(want)


def test_compile_status_is_its_word() -> None:
    assert [str(s) for s in STATUSES] == [
        "failed",
        "no metrics",
        "empty graph",
        "graph break",
        "ok",
    ]
    assert [str(m) for m in MARKS] == ["recompile", "cache hit"]
    word: str = CompileStatus.EMPTY_GRAPH  # compared as the UI compares it, with a str
    assert word == "empty graph" and "ok" in {CompileStatus.OK}
    assert CompileStatus("graph break") is CompileStatus.GRAPH_BREAK
    assert f"{CompileStatus.GRAPH_BREAK:<12}|" == "graph break |"
    assert MARK_TABLE["cache hit"] == MARK_TABLE[CompileMark.CACHE_HIT]
    doc = {"status": CompileStatus.NO_METRICS, "marks": [CompileMark.RECOMPILE]}
    assert json.loads(orjson.dumps(doc)) == json.loads(json.dumps(doc))
    assert json.loads(json.dumps(doc)) == {"status": "no metrics", "marks": ["recompile"]}
    tf = indexed(CRASH)
    statuses = {c.status for c in tf.compiles.values()}
    assert CompileStatus.FAILED in statuses
    assert all(type(s) is CompileStatus for s in statuses)
