"""Diffs: a compile against the one it replaced, and two runs.

The run diff is checked on two real CPU runs made for it (tests/fixtures/runs/diff_a and
diff_b: the same script, with one graph break added and one kernel changed) against counts
derived here from the scripts and the raw trace text, and on pairs of shared runs."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from conftest import REPO, TCVIEW_CLI, shared_run_dirs
from ui_helpers import SnapCompare, pane, ready, settle, sync, viewer_shown

from tcview.analysis.diff import (
    ADDED,
    CHANGED,
    GONE,
    NEW,
    REMOVED,
    SAME,
    compile_diff,
    guard_diff,
    kernel_fingerprint,
    parse_guards,
    predecessor,
    text_diff,
)
from tcview.analysis.rundiff import (
    FrameSig,
    Side,
    _match_frames,
    diff_fail_on,
    run_diff,
)
from tcview.commands.failon import DIFF_CHECKS, SUMMARY_CHECKS, parse_fail_on
from tcview.ingest.index import TraceSet
from tcview.ingest.source import load_source
from tcview.report.diffreport import compile_diff_lines, run_diff_lines

if TYPE_CHECKING:
    from textual.app import App
    from textual.pilot import Pilot

    from tcview.ui.content import Document


def _tcview(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TCVIEW_CLI, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
    )


# ---------------------------------------------------------------------- independent counts

_KERNEL_DEF = re.compile(r"^\t(\w+) = async_compile\.\w+\(", re.M)


def _kernel_sources(run: Path) -> dict[str, str]:
    """Kernel name -> its definition text, from the raw trace (the lines from its
    ``= async_compile.`` line to the next blank payload line)."""
    out: dict[str, str] = {}
    for path in (run / "trace").iterdir():
        text = path.read_text()
        for m in _KERNEL_DEF.finditer(text):
            end = text.find("\n\t\n", m.start())
            body = text[m.start() : end]
            body = re.sub(r"'backend_hash': '\w+'", "", body)
            out[m.group(1)] = body
    return out


def _graph_break_calls(script: Path) -> int:
    return script.read_text().count("torch._dynamo.graph_break()")


def test_run_diff_counts_match_independent_counts(fixture_runs: Path) -> None:
    a, b = fixture_runs / "diff_a", fixture_runs / "diff_b"
    # Independent: B calls graph_break() once more than A; kernels by name from the raw text.
    new_breaks = _graph_break_calls(b / "script.py") - _graph_break_calls(a / "script.py")
    ka, kb = _kernel_sources(a), _kernel_sources(b)
    changed = sorted(n for n in ka.keys() & kb.keys() if ka[n] != kb[n])
    new, gone = sorted(kb.keys() - ka.keys()), sorted(ka.keys() - kb.keys())
    assert (new_breaks, changed, len(new), len(gone)) == (1, ["cpp_fused_mul_relu_sum_0"], 2, 1)

    diff = run_diff(TraceSet.load(a), TraceSet.load(b), "a", "b")
    counts = diff.counts()
    assert counts["new_breaks"] == new_breaks
    assert sorted(k.name for k in diff.kernels if k.status == CHANGED) == changed
    assert sorted(k.name for k in diff.kernels if k.status == NEW) == new
    assert sorted(k.name for k in diff.kernels if k.status == GONE) == gone
    (gb,) = [c for c in diff.breaks if c.status == NEW]
    assert (gb.where, gb.a, gb.b) == ("script.py:7", 0, 1)
    assert "graph_break()" in gb.what
    # f gained a break (and a resume frame); g is the same frame with another kernel.
    status = {f.sig.text: f.status for f in diff.frames}
    assert status == {
        "f (script.py:5)": CHANGED,
        "torch_dynamo_resume_in_f_at_7 (script.py:7)": NEW,
        "g (script.py:11)": SAME,
    }
    assert counts["new_recompiles"] == 0 and diff.changed


def test_a_run_against_itself_is_no_change(fixture_runs: Path) -> None:
    runs = [fixture_runs / "diff_a", fixture_runs / "resets", *shared_run_dirs()[:6]]
    for run in runs:
        diff = run_diff(load_source(str(run)), load_source(str(run)))
        assert not diff.changed, run
        assert not any(diff.counts().values()), run
        assert all(k.status == SAME for k in diff.kernels)
        assert (
            diff_fail_on(diff, parse_fail_on("new-breaks,new-recompiles,slower:0%", DIFF_CHECKS))
            == []
        )


@pytest.mark.e2e
def test_cli_json_and_gate(fixture_runs: Path) -> None:
    a, b = str(fixture_runs / "diff_a"), str(fixture_runs / "diff_b")
    out = _tcview("diff", a, b, "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data) == {
        "a", "b", "changed", "counts", "totals", "frames", "graph_breaks",
        "recompile_reasons", "failures", "errors", "kernels", "cache", "phases_s",
        "findings", "cache_key_changes", "unchanged_kernels",
    }  # fmt: skip
    assert data["counts"]["new_breaks"] == 1 and data["counts"]["changed_kernels"] == 1
    assert data["totals"]["graph_breaks"] == {"a": 0, "b": 1}
    assert {"status": "changed", "name": "cpp_fused_mul_relu_sum_0", "kind": "cpp"} in data[
        "kernels"
    ]
    out = _tcview("diff", a, b, "--fail-on", "new-breaks,new-recompiles")
    assert out.returncode == 1
    assert "tcview: diff --fail-on new-breaks: 1 new graph break(s)" in out.stderr
    assert "new-recompiles" not in out.stderr
    assert "new      0 → 1×  script.py:7" in out.stdout
    out = _tcview("diff", a, a, "--fail-on", "new-breaks,new-recompiles,slower:10%")
    assert out.returncode == 0, out.stderr
    assert "no change (compile times aside)" in out.stdout
    out = _tcview("diff", a, b, "--fail-on", "fewer-bugs")
    assert out.returncode == 2 and "unknown fewer-bugs" in out.stderr


def test_cache_key_change_says_the_values(fixture_runs: Path) -> None:
    """Run B set torch._inductor.config.fallback_random = True (a real CPU pair): the run
    diff's cache-key change names the setting with its value in A and in B, in JSON (with
    each side's hash too) and in the text."""
    run = fixture_runs / "cache_config"
    diff = run_diff(load_source(str(run / "a")), load_source(str(run / "b")))
    [change] = [c for c in diff.to_json()["cache_key_changes"] if c["cache"] == "fx_graph"]
    [component] = change["components"]
    assert component["name"] == "inductor_config[fallback_random]"
    assert (component["a"], component["b"]) == ("False", "True")
    assert component["a_hash"] != component["b_hash"] and len(component["a_hash"]) > 20
    text = "\n".join(line for _tag, line, _spans in run_diff_lines(diff))
    assert "inductor_config[fallback_random] False → True" in text


@pytest.mark.e2e
def test_cli_gate_recompiles_and_slower(shared_traces: Path) -> None:
    """--fail-on new-recompiles and slower:N% trip one way only: tinyblock (no recompile)
    then the recompiles run (8 recompiles, twice the compile time), and not back; a run
    against itself passes every check and says no change, in text and JSON."""
    h200 = shared_traces / "h200-torch2.11"
    base, more = str(h200 / "tinyblock_default"), str(h200 / "recompiles")
    gate = "new-breaks,new-recompiles,slower:10%"
    out = _tcview("diff", base, more, "--fail-on", gate)
    assert out.returncode == 1, out.stderr
    assert "tcview: diff --fail-on new-recompiles: 8 more recompile(s)" in out.stderr
    assert re.search(r"--fail-on slower:10%: compile time [\d.]+s -> [\d.]+s \(\+", out.stderr)
    assert "new-breaks" not in out.stderr
    out = _tcview("diff", more, base, "--fail-on", gate)
    assert (out.returncode, out.stderr) == (0, "")
    out = _tcview("diff", more, more, "--json", "--fail-on", gate + ",slower:0%")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["changed"] is False and not any(data["counts"].values())


def test_shared_pairs(shared_traces: Path) -> None:
    h200 = shared_traces / "h200-torch2.11"
    cold, warm = (TraceSet.load(h200 / n / "trace") for n in ("cache_cold", "cache_warm"))
    diff = run_diff(cold, warm)
    assert diff.cache["fx_graph hit"] == (0, 1) and diff.cache["fx_graph miss"] == (1, 0)
    assert all(k.status == SAME for k in diff.kernels)  # the cache gave back the same code
    ca, cb = (
        TraceSet.load(shared_traces / "cpu-torch2.13" / n / "trace")
        for n in ("c_recompiles", "d_dynamic")
    )
    diff = run_diff(ca, cb)
    assert diff.totals["recompiles"] == (8, 1) and diff.counts()["new_recompiles"] == 0
    assert diff_fail_on(diff, ["new-recompiles"]) == []
    back = run_diff(cb, ca)
    assert diff_fail_on(back, ["new-recompiles"]) == ["new-recompiles: 7 more recompile(s)"]


# ---------------------------------------------------------------------- compile diff


def _changed_guard(a: TraceSet, b_id: str) -> tuple[str, str, list[str]]:
    comp = next(c for c in a.compiles if c.id_label == b_id)
    prev = predecessor(comp)
    assert prev is not None
    d = compile_diff(prev, comp)
    changed = [g for g in d.guards or [] if g.status == CHANGED]
    assert len(changed) == 1
    g = changed[0]
    assert g.a is not None and g.b is not None
    return g.a.text, g.b.text, d.reasons


def test_recompile_diff_shows_the_guard_that_changed(shared_traces: Path) -> None:
    ts = TraceSet.load(shared_traces / "h200-torch2.11" / "recompiles" / "trace")
    a, b, reasons = _changed_guard(ts, "0/2")
    assert "dtype mismatch. expected Float, actual Half" in reasons[0]
    assert "torch.float32" in a and "torch.float16" in b
    a, b, reasons = _changed_guard(ts, "0/1")
    assert reasons[0].startswith("0/0: n == 0")
    assert a == "L['n']: EQUALS_MATCH: L['n'] == 0"  # the guard that failed
    assert b.startswith("L['n']: TYPE_MATCH:")
    ts = TraceSet.load(shared_traces / "cpu-torch2.13" / "c_recompiles" / "trace")
    a, b, reasons = _changed_guard(ts, "0/2")
    assert "size mismatch at index 0. expected 4, actual 8" in reasons[0]
    assert "size=[4]" in a and "size=[None]" in b  # the dimension became dynamic
    # A compile that failed (recompile limit) logged no guards: nothing is "removed".
    comp = next(c for c in ts.compiles if c.id_label == "0/4")
    prev = predecessor(comp)
    assert prev is not None
    d = compile_diff(prev, comp)
    assert d.guards is None and d.guards_logged == (True, False)


def test_compile_diff_parts(shared_traces: Path) -> None:
    ts = TraceSet.load(shared_traces / "h200-torch2.11" / "recompiles" / "trace")
    comp = ts.compiles[3]
    d = compile_diff(ts.compiles[2], comp)
    assert [g.label for g in d.graphs] == ["Dynamo graph", "AOT inference graph"]
    assert sum(1 for g in d.guards or [] if g.status == ADDED) == 4  # the dynamic-shape guards
    assert [(k.status, k.name) for k in d.kernels] == [
        (NEW, "triton_red_fused_add_mul_sum_0"),
        (GONE, "triton_per_fused_add_mul_sum_0"),
    ]
    labels = [t[0] for t in d.times]
    assert labels[0] == "entire frame"
    assert predecessor(ts.compiles[0]) is None


def test_guard_and_text_diff_rules() -> None:
    tree = """TREE_GUARD_MANAGER:
+- RootGuardManager
| +- GuardManager: source=L['x'], accessed_by=X, type=<class 'torch.Tensor'>
| | +- TENSOR_MATCH: check_tensor(L['x'], size=[8])  # y = x + 1  # a.py:3 in f
| +- GuardManager: source=L['n'], accessed_by=X, type=<class 'int'>
| | +- EQUALS_MATCH: L['n'] == 0  # y = x + n  # a.py:4 in f
+- LAMBDA_GUARD: 2 <= L['x'].size()[0]  # (unknown)
"""
    a = parse_guards(tree)
    assert [(g.source, g.kind, g.expr) for g in a] == [
        ("L['x']", "TENSOR_MATCH", "check_tensor(L['x'], size=[8])"),
        ("L['n']", "EQUALS_MATCH", "L['n'] == 0"),
        ("", "LAMBDA_GUARD", "2 <= L['x'].size()[0]"),
    ]
    b = parse_guards(tree.replace("size=[8]", "size=[16]").replace("+- LAMBDA", "+- XLAMBDA"))
    changes = {(c.status, c.guard.kind) for c in guard_diff(a, b)}
    assert changes == {
        (CHANGED, "TENSOR_MATCH"),
        (SAME, "EQUALS_MATCH"),
        (ADDED, "XLAMBDA_GUARD"),
        (REMOVED, "LAMBDA_GUARD"),
    }
    # Two guards of one source that both changed: matched by kind, each its own change.
    two = (
        "+- RootGuardManager\n"
        "| +- GuardManager: source=L['x'], accessed_by=X\n"
        "| | +- TENSOR_MATCH: check_tensor(L['x'], size=[8])\n"
        "| | +- ID_MATCH: ___check_obj_id(L['x'], 1)\n"
    )
    other = two.replace("8", "9").replace("1)", "2)")
    exact = guard_diff(parse_guards(two), parse_guards(other), ids=False)
    assert [(c.status, c.guard.kind) for c in exact] == [
        (CHANGED, "TENSOR_MATCH"),
        (CHANGED, "ID_MATCH"),
    ]
    # Compared as the compile diff compares them: another id alone is the same guard.
    assert [
        (c.status, c.guard.kind, c.renumbered)
        for c in guard_diff(parse_guards(two), parse_guards(other))
    ] == [
        (CHANGED, "TENSOR_MATCH", False),
        (SAME, "ID_MATCH", True),
    ]
    lines = text_diff(["a", "b = 1", "c"], ["a", "b = 2", "c", "d"])
    assert [(ln.op, ln.text) for ln in lines] == [
        (" ", "a"), ("-", "b = 1"), ("+", "b = 2"), (" ", "c"), ("+", "d"),
    ]  # fmt: skip
    assert lines[1].marks == [(4, 5)] and lines[2].marks == [(4, 5)]
    long = text_diff([str(i) for i in range(40)], [str(i) for i in range(40)] + ["x"])
    assert [ln.op for ln in long][:4] == ["…", " ", " ", " "]  # unchanged lines folded


def test_kernel_fingerprint_ignores_name_path_and_backend_hash() -> None:
    src = (
        "# kernel path: /tmp/a/ab.py\n"
        "k_0 = async_compile.triton('k_0', '''\n"
        "@triton_heuristics.pointwise(inductor_meta={'kernel_name': 'k_0', "
        "'backend_hash': 'ABC123', 'x': 1})\n"
        "def k_0(in_ptr0): tl.load(in_ptr0)\n''')"
    )
    other = src.replace("/tmp/a/ab.py", "/tmp/b/cd.py").replace("ABC123", "FFF999")
    assert kernel_fingerprint(src, "k_0") == kernel_fingerprint(other, "k_0")
    renamed = other.replace("k_0", "k_7")
    assert kernel_fingerprint(src, "k_0") == kernel_fingerprint(renamed, "k_7")
    changed = src.replace("'x': 1", "'x': 2")
    assert kernel_fingerprint(src, "k_0") != kernel_fingerprint(changed, "k_0")


def test_frames_match_when_their_first_line_moved() -> None:
    """Code added above a function moves its first line: still the same frame when its
    function and file name one frame on each side."""
    a = {
        FrameSig("f", "m.py", 5): Side(frames=1, compiles=1),
        FrameSig("g", "m.py", 9): Side(frames=1),
    }
    b = {
        FrameSig("f", "m.py", 7): Side(frames=1, compiles=2),
        FrameSig("g", "m.py", 11): Side(frames=1),
    }
    frames = _match_frames(a, b)
    assert [(f.sig.text, f.status, f.a.compiles, f.b.compiles) for f in frames] == [
        ("f (m.py:7)", CHANGED, 1, 2),
        ("g (m.py:11)", SAME, 0, 0),
    ]
    two = {**b, FrameSig("f", "m.py", 20): Side(frames=1)}  # two candidates: no guessing
    assert {f.status for f in _match_frames(a, two) if f.sig.name == "f"} == {NEW, GONE}


# ---------------------------------------------------------------------- UI


def _pane(app: App[Any]) -> tuple[Document, list[str]]:

    doc = viewer_shown(app).doc
    return doc, [doc.plain(i) for i in range(doc.count)]


@pytest.mark.app
@sync
async def test_d_diffs_a_recompile_with_what_it_replaced(shared_traces: Path) -> None:
    from tcview.ui.app import TcviewApp
    from tcview.ui.diffview import CompileDiffView
    from tcview.ui.options import OpenOptions

    trace = shared_traces / "h200-torch2.11" / "recompiles" / "trace"
    app = TcviewApp(OpenOptions(str(trace), goto="0/2"))
    async with app.run_test(size=(150, 45)) as pilot:
        await ready(app, pilot)
        await pilot.press("d")
        await settle(app, pilot)
        assert isinstance(pane(app), CompileDiffView)
        doc, text = _pane(app)
        assert doc.title == "0/1 → 0/2"
        assert "guards: 1 changed, 0 added, 0 removed, 7 same" in text
        old = next(i for i, t in enumerate(text) if t.startswith("  - L['x']: TENSOR_MATCH"))
        assert "torch.float16" in text[old + 1] and doc.styled is not None
        marked = [s for s in doc.styled[old + 1].spans if "reverse" in str(s.style)]
        assert any("16" in text[old + 1][s.start : s.end] for s in marked)
        await pilot.press("escape")
        await settle(app, pilot)
        # m marks a compile, d on another diffs the two (marked first).
        await pilot.press("m")
        assert app.model is not None
        app.browser.reveal("compile", app.model.compiles[0])
        await settle(app, pilot)
        await pilot.press("d")
        await settle(app, pilot)
        assert _pane(app)[0].title == "0/2 → 0/0"


@pytest.mark.app
@sync
async def test_d_on_a_first_compile_says_why_not(shared_traces: Path) -> None:
    from tcview.ui.app import TcviewApp
    from tcview.ui.diffview import CompileDiffView
    from tcview.ui.options import OpenOptions

    trace = shared_traces / "h200-torch2.11" / "recompiles" / "trace"
    app = TcviewApp(OpenOptions(str(trace), goto="0/0"))
    async with app.run_test(size=(150, 45)) as pilot:
        await ready(app, pilot)
        await pilot.press("d")
        await settle(app, pilot)
        assert not isinstance(pane(app), CompileDiffView)
        assert any("replaced no compile" in str(n.message) for n in app._notifications)


@pytest.fixture
def recompiles(shared_traces: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(shared_traces / "h200-torch2.11" / "recompiles")
    return "trace"


@pytest.mark.app
def test_snapshot_compile_diff(snap_compare: SnapCompare, recompiles: str) -> None:
    from tcview.ui.app import TcviewApp
    from tcview.ui.options import OpenOptions

    async def before(pilot: Pilot[Any]) -> None:
        await ready(pilot.app, pilot)
        await pilot.press("d")
        await settle(pilot.app, pilot)

    app = TcviewApp(OpenOptions(recompiles, goto="0/2"))
    assert snap_compare(app, terminal_size=(120, 40), run_before=before)


@pytest.mark.app
def test_snapshot_run_diff(
    snap_compare: SnapCompare, fixture_runs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tcview.ui.diffview import DiffApp

    monkeypatch.chdir(fixture_runs)
    diff = run_diff(load_source("diff_a"), load_source("diff_b"), "diff_a", "diff_b")
    for f in diff.frames:  # compile times differ from run to run: not part of the picture
        f.a.time_s = f.b.time_s = 0.0
        f.a.phases, f.b.phases = {}, {}
    diff.totals["compile_time_s"] = (1.0, 1.0)
    diff.phases = {}

    async def before(pilot: Pilot[Any]) -> None:
        await pilot.pause(0.1)

    assert snap_compare(DiffApp(diff), terminal_size=(120, 40), run_before=before)


def test_a_diff_of_two_functions_names_both_frames() -> None:
    ts = TraceSet.load(REPO / "sample_traces" / "cpu_breaks_recompiles" / "trace")
    by_id = {c.id_label: c for c in ts.compiles}
    fields = [t for kind, t, _ in compile_diff_lines(compile_diff(by_id["0/2"], by_id["1/1"]))]
    assert (
        "frames    scale_shift (script.py:11) → "
        "torch_dynamo_resume_in_scale_shift_at_13 (script.py:13)" in fields
    )
    fields = [t for kind, t, _ in compile_diff_lines(compile_diff(by_id["0/1"], by_id["0/2"]))]
    assert "frame     scale_shift (script.py:11)" in fields


def test_a_new_or_gone_frame_has_no_time_on_its_missing_side() -> None:
    a, b = (REPO / "sample_traces" / name for name in ("cpu_breaks_recompiles", "gpu_tinyblock"))
    diff = run_diff(load_source(str(a)), load_source(str(b)))
    text = "\n".join(t for _, t, _ in run_diff_lines(diff))
    new = next(ln for ln in text.splitlines() if ln.lstrip().startswith("new "))
    gone = next(ln for ln in text.splitlines() if ln.lstrip().startswith("gone "))
    assert new.endswith("· time - → 1.80s"), new
    assert gone.endswith("· time 10.35s → -"), gone


def test_one_fail_on_parser_for_every_command() -> None:
    """summary, run and diff check --fail-on through one parser: unknown names are refused
    with the names the command knows; a parametric check is a pattern, not a literal."""
    assert parse_fail_on(" graph_breaks, divergence ", SUMMARY_CHECKS) == [
        "graph_breaks",
        "divergence",
    ]
    assert parse_fail_on("slower:5%,new-kernels", DIFF_CHECKS) == ["slower:5%", "new-kernels"]
    for text, checks in (("new-breaks", SUMMARY_CHECKS), ("slower:N%", DIFF_CHECKS)):
        with pytest.raises(ValueError, match="--fail-on: unknown .* \\(use "):
            parse_fail_on(text, checks)
