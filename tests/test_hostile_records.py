"""Hostile and damaged provenance, export and guard records: every shape a
header or payload can take gives a message or nothing, never a crash; text stays literal."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from ui_helpers import ready, settle, sync, viewer_shown

from tcview.analysis.diff import compile_diff
from tcview.analysis.export import export_report
from tcview.analysis.provenance import model_provenance
from tcview.analysis.rundiff import run_diff
from tcview.ingest.index import TraceSet
from tcview.report.detail import kernel_provenance_detail, render_json, render_text, report_detail
from tcview.report.diffreport import compile_diff_lines, run_diff_lines
from tcview.report.show import show_detail

EVIL = "[bold red]boom[/] \x1b]0;pwned\x07\x1b[2J\u202e"
IDS = {"frame_id": 0, "frame_compile_id": 0, "attempt": 0}


def _record(header: dict, payload: str | None = None) -> str:
    prefix = "V1121 05:35:45.123456 4242 torch/_logging/structured.py:28] "
    if payload is None:
        return prefix + json.dumps(header) + "\n"
    header = dict(header, has_payload=hashlib.md5(payload.encode()).hexdigest())
    return (
        prefix + json.dumps(header) + "\n" + "".join("\t" + ln + "\n" for ln in payload.split("\n"))
    )


def _artifact(name: str, payload: str) -> str:
    return _record({"artifact": {"name": name, "encoding": "json"}, **IDS}, payload)


def hostile(root: Path, variant: int) -> Path:
    code = (
        "# AOT ID: ['0_forward']\n"
        f"# Topologically Sorted Source Nodes: [{EVIL}], Original ATen: [aten.add]\n"
        "triton_poi_fused_add_0 = async_compile.triton('triton_poi_fused_add_0', '''\n"
        "def triton_poi_fused_add_0(in_ptr0):\n    pass\n''', device_str='cuda')\n"
    )
    text = _record({"str": [f"/w/{EVIL}.py", 0]})
    text += _record({"dynamo_start": {"stack": [{"line": 1, "name": "f", "filename": 0}]}, **IDS})
    text += _record(
        {"dynamo_cpp_guards_str": {}, **IDS}, f"+- EQUALS_MATCH: L['n'] == {variant}  # {EVIL}"
    )
    text += _record(
        {"artifact": {"name": "before_pre_grad_graph", "encoding": "string"}, **IDS},
        f"# File: /w/{EVIL}.py:3 in f, code: {EVIL}\n{EVIL}: x = y\nadd = a + b",
    )
    text += _record({"inductor_output_code": {"filename": "x.py"}, **IDS}, code)
    mappings = [
        "not json",
        json.dumps([1, 2]),
        json.dumps(
            {
                "cppCodeToPost": {"triton_poi_fused_add_0:1": [EVIL, 3, None]},
                "postToPre": {EVIL: [[1]], "3": "x"},
                "preToPost": 7,
                "version": {"a": 1},
            }
        ),
        json.dumps({"cppCodeToPost": {"triton_poi_fused_add_0": {"x": 1}}, "postToPre": []}),
    ]
    text += _artifact("inductor_provenance_tracking_node_mappings", mappings[variant % 4])
    traces = [
        json.dumps(
            {"triton_poi_fused_add_0:1": [f'  File "{EVIL}", line 9, in f\n    {EVIL}\n', 5]}
        ),
        json.dumps({"triton_poi_fused_add_0": 'File "a.py", line x, in f'}),
        "[[[",
        json.dumps({"other:1": ['  File "b.py", line 2, in g\\n    y\\n']}),
    ]
    text += _artifact("inductor_provenance_tracking_kernel_stack_traces", traces[variant % 4])
    text += _artifact(
        "inductor_post_to_pre_grad_nodes", json.dumps({"a": [{"from_node": [[]] * 3}, 1]})
    )
    text += _record(
        {
            "compilation_metrics": {
                "co_name": EVIL,
                "graph_op_count": 1,
                "entire_frame_compile_time_s": "soon",
            },
            **IDS,
        }
    )
    # Export records of every odd shape.
    text += _record(
        {
            "guard_added": {
                "expr": EVIL,
                "prefix": ["eval"],
                "user_stack": "no",
                "stack": [{"filename": [1]}, 3],
                "frame_locals": {"locals": {"x": [EVIL, 1]}, "symbols": 4},
                "symbol_to_sources": [1],
                "expr_node_id": 11,
            }
        }
    )
    text += _record(
        {
            "expression_created": {
                "result": EVIL,
                "result_id": 11,
                "argument_ids": [11, 12, [3]],
                "arguments": [None, 2],
            }
        }
    )
    text += _record({"expression_created": {"result": "y", "result_id": 12, "argument_ids": [11]}})
    text += _record({"propagate_real_tensors_provenance": {"expr": None, "expr_node_id": {"a": 1}}})
    text += _record({"missing_fake_kernel": {}})
    text += _record({"mismatched_fake_kernel": [EVIL, 1]})  # not an object
    text += _record({"mismatched_fake_kernel": {"op": EVIL, "reason": 5}})
    text += _record({"create_unbacked_symbol": {"node_id": 12, "symbol": 1}})
    text += _record({"exported_program": {}}, EVIL)
    trace = root / f"v{variant}" / "trace"
    trace.mkdir(parents=True)
    (trace / "dedicated_log_torch_trace_x.log").write_text(text)
    return trace


@pytest.mark.unit
def test_hostile_records_give_no_crash(tmp_path: Path) -> None:
    models = [TraceSet.load(hostile(tmp_path, v)) for v in range(4)]
    for ts in models:
        prov = model_provenance(ts)
        for unit in prov.units:
            for kp in unit.kernels.values():
                render_text(kernel_provenance_detail(unit, kp, kp.key))
        report = export_report(ts)
        assert len(report.issues) == 5
        assert "Guard Added" in render_text(report_detail(report))
        for item in ("export", "triton_poi_fused_add_0", "x.py:9"):
            detail = show_detail(ts, item)
            render_text(detail)
            render_json(detail)
        comp = ts.compiles[0]
        compile_diff_lines(compile_diff(comp, comp))
    diff = run_diff(models[0], models[1])
    run_diff_lines(diff)
    # The guard's value differs between variants: the diff finds it, the kernel is the same.
    d = compile_diff(models[0].compiles[0], models[1].compiles[0])
    assert [g.status for g in d.guards or []] == ["changed"]
    assert [k.status for k in d.kernels] == ["same"]
    # A mapping that is not a JSON object is a problem said, not a crash.
    assert any("not JSON" in p for u in model_provenance(models[0]).units for p in u.problems)


@sync
async def test_hostile_text_is_shown_literally(tmp_path: Path) -> None:
    from tcview.ui.app import TcviewApp
    from tcview.ui.options import OpenOptions

    app = TcviewApp(OpenOptions(str(hostile(tmp_path, 2)), goto="triton_poi_fused_add_0"))
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(app, pilot)
        for key in ("i", "escape", "X"):
            await pilot.press(key)
            await settle(app, pilot)
        view = viewer_shown(app)
        rendered = "".join(view.render_line(y).text for y in range(min(view.doc.count, 40)))
        assert "[bold red]boom[/]" in rendered
        assert "\x1b" not in rendered and "\x07" not in rendered and "\u202e" not in rendered
