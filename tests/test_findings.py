"""Findings: one ranked list of what went wrong, on real runs.

The repo's own fixtures under tests/fixtures/findings/<case>/ (script.py beside the trace it
wrote, CPU torch 2.13) and ../shared's GPU and CPU runs.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from conftest import FIXTURES, REPO, SAMPLES, TCVIEW_CLI
from ui_helpers import ready, sync, viewer_shown

from tcview.analysis.checks import SEVERITIES, fail_on
from tcview.analysis.crashes import torch_hint
from tcview.analysis.findings import (
    Finding,
    compile_cost_s,
    findings,
    is_user_file,
    text_frames,
    user_line,
)
from tcview.analysis.rules import Kind
from tcview.analysis.rundiff import run_diff
from tcview.ingest.source import load_source
from tcview.model.objects import Model
from tcview.report.detail import render_text
from tcview.report.diffreport import run_diff_lines
from tcview.report.markdown import markdown_report
from tcview.report.show import show_detail
from tcview.report.summary import summary_json, summary_text

if TYPE_CHECKING:
    from textual.app import App

CASES = FIXTURES / "findings"
KEYS = ["id", "kind", "severity", "title", "detail", "evidence", "where", "cost_s", "fix", "doc"]


def _load(path: Path) -> Model:
    return load_source(str(path), cache=False)


def _of(found: list[Finding], kind: str) -> list[Finding]:
    return [f for f in found if f.kind == kind]


def _line(finding: Finding) -> tuple[str, int | None]:
    assert finding.where is not None
    return Path(finding.where["file"]).name, finding.where["line"]


# ---------------------------------------------------------------------- the user's line


def test_user_files_are_outside_site_packages_the_standard_library_and_torch() -> None:
    assert is_user_file("/home/me/train.py")
    assert is_user_file("model.py")
    assert not is_user_file("/usr/lib/python3.11/site-packages/torch/_ops.py")
    assert not is_user_file("/root/.pyenv/versions/3.11.7/lib/python3.11/runpy.py")
    assert not is_user_file("/usr/local/lib/python3.12/dist-packages/transformers/x.py")
    assert not is_user_file("<frozen runpy>")
    assert not is_user_file("/root/.pyenv/versions/3.11.7/bin/torchrun")  # a launcher
    assert is_user_file("/home/me/bin/train.py")
    assert not is_user_file("/src/pytorch/torch/_dynamo/eval_frame.py")  # a source checkout
    assert not is_user_file("torch/_inductor/compile_fx.py")  # as a trace prefix names it


def test_user_line_on_real_stacks(fixture_runs: Path) -> None:
    crash = _load(CASES / "crash").run_errors()[0]
    # the traceback's innermost frames are torch's: the user's line is the call into it
    assert crash.stack[-1].startswith("/root/.pyenv/")
    where = user_line(text_frames(crash.stack))
    assert where is not None and where["file"].endswith("/findings/crash/script.py")
    assert where["line"] == 22
    # a frame's dynamo_start stack: the compiled function
    model = _load(fixture_runs / "recompile_limit")
    failed = model.failures[0].compile
    assert failed is not None
    frame = failed.frame
    assert frame is not None
    where = user_line([(f.filename, f.line) for f in frame.stack])
    assert where is not None and Path(where["file"]).name == "script.py" and where["line"] == 15
    assert user_line([("/usr/lib/python3.11/site-packages/torch/_ops.py", 3)]) is None


# ---------------------------------------------------------------------- crash


def test_a_crash_in_compiled_code_names_the_users_line_first() -> None:
    found = findings(_load(CASES / "crash"))
    crash = found[0]  # the worst first
    assert (crash.kind, crash.severity) == (Kind.CRASH, "error")
    # the user's line inside the compiled function (Dynamo's "from user code:" frames)
    assert _line(crash) == ("script.py", 15)
    assert crash.evidence["exception"] == "torch._dynamo.exc.TorchRuntimeError"
    stack = crash.evidence["stack"]
    assert stack[0].endswith("script.py:15 in project")
    assert stack[1] == "… 31 frames in torch and libraries"  # counted, never dropped silently
    assert stack[2].endswith("script.py:22 in train") and stack[3].endswith("in <module>")
    assert "a and b must have same reduction dim" in crash.detail  # the Explanation line
    # torch's generic hint is evidence, not the fix: the trace shows no specific one
    assert 'torch.compiler.set_stance("force_eager")' in crash.evidence["torch_hint"]
    assert crash.fix == ""
    assert crash.doc.startswith("https://meta-pytorch.github.io/compile-graph-break-site/gb/")
    # the compile that failed is the crash: one finding, with its compile
    assert not _of(found, Kind.COMPILE_FAILED) and crash.evidence["compiles"] == ["0/1"]


def test_a_crash_in_cuda_graph_replay_says_what_torch_advises() -> None:
    # a real H100 run (torch 2.11): an output read after the next call overwrote it
    (crash,) = findings(_load(CASES / "cudagraph_overwrite"))
    assert (crash.kind, crash.severity) == (Kind.CRASH, "error")
    assert _line(crash) == ("script.py", 24)  # print(first): where the overwritten tensor is read
    assert crash.evidence["tensor_created_at"]["line"] == 17  # return torch.matmul(x, x)
    assert crash.fix == (
        "To prevent overwriting, clone the tensor outside of torch.compile() or call "
        "torch.compiler.cudagraph_mark_step_begin() before each model invocation."
    )
    assert crash.doc.endswith("torch.compiler.cudagraph_mark_step_begin.html")
    assert crash.evidence["stack"][0].endswith("script.py:24 in main")
    assert crash.evidence["frames_below"] == 5


def test_torch_hint_of_a_cuda_graph_overwrite() -> None:
    # the message torch/_inductor/cudagraph_trees.py raises (one line, with the stack inside)
    message = (
        "Error: accessing tensor output of CUDAGraphs that has been overwritten by a subsequent"
        ' run. Stack trace: File "/w/model.py", line 165, in forward\n    h = self.cell(x). '
        "To prevent overwriting, clone the tensor outside of torch.compile() or call "
        "torch.compiler.cudagraph_mark_step_begin() before each model invocation."
    )
    assert torch_hint(message) == (
        "To prevent overwriting, clone the tensor outside of torch.compile() or call "
        "torch.compiler.cudagraph_mark_step_begin() before each model invocation."
    )
    assert torch_hint("Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace") == ""


def test_compile_failures(shared_traces: Path) -> None:
    found = findings(_load(shared_traces / "h200-torch2.11" / "compile_failures"))
    failed = _of(found, Kind.COMPILE_FAILED)
    assert [f.title for f in failed] == [
        "Compiling `f` failed: BackendCompilerFailed",
        "Compiling `g` failed: Unsupported",
    ]
    assert all(f.severity == "error" for f in failed)
    # the exception after torch's "raised:" line, and the graph-break page torch links
    assert "raised: RuntimeError: simulated backend failure" in failed[0].detail
    assert failed[1].doc.startswith("https://meta-pytorch.github.io/compile-graph-break-site/")
    assert [_line(f) for f in failed] == [("compile_failures.py", 7), ("compile_failures.py", 19)]


def test_crashes_of_several_ranks(fixture_runs: Path) -> None:
    found = findings(_load(fixture_runs / "crash_ranks"))
    crashes = _of(found, Kind.CRASH)
    assert [f.title.split(" at ")[0] for f in crashes[:2]] == [
        "The run crashed on rank 0",
        "The run crashed on rank 1",
    ]
    assert _line(crashes[0]) == ("script.py", 20)
    assert all(f.severity == "error" for f in found[: len(crashes)])


# ---------------------------------------------------------------------- recompiles


def test_recompile_limit_and_storm(shared_traces: Path) -> None:
    found = findings(_load(shared_traces / "h200-torch2.11" / "recompiles"))
    limit = _of(found, Kind.RECOMPILE_LIMIT)
    assert len(limit) == 1 and found[0] is limit[0]
    hit = limit[0]
    assert hit.severity == "error" and "runs eagerly from then on" in hit.title
    assert hit.title.startswith("`g` hit the recompile limit (recompile_limit = 4)")
    assert _line(hit) == ("recompiles.py", 14)
    assert hit.evidence["limit_compile"] == "1/4" and hit.evidence["recompiles"] == 3
    sizes = [c["changed"][0]["new"] for c in hit.evidence["changes"]]
    assert sizes == ["[4, 128]", "[4, 256]", "[4, 512]"]
    assert "`x` size [4, 512] → [4, 1024]" in hit.detail  # the call that hit the limit
    assert hit.cost_s is not None and hit.cost_s > 0
    assert "mark_dynamic(x, 1)" in hit.fix
    assert hit.doc.endswith("programming_model.recompilation.html")
    storm = _of(found, Kind.RECOMPILE_STORM)
    assert [f.title for f in storm] == ["`f` recompiled 3 times on `n`, `x` dtype, `x` size"]
    assert storm[0].severity == "warning"
    assert _line(storm[0]) == ("recompiles.py", 6)  # the one line whose guards failed: `+ n`
    assert "`x` dtype float32 → float16" in storm[0].detail  # f(x.half(), ...)
    assert "`x` size [8, 16] → [16, 8]" in storm[0].detail  # f(x.t(), ...)


def test_a_changing_float_names_the_value_and_the_line_that_read_it() -> None:
    (found,) = findings(_load(CASES / "float_lr"))
    # the words for what changed are guard_words.py's (its guard families may refine them)
    assert found.title.startswith("`update` recompiled once on `hyper['lr']`")
    assert found.severity == "info"  # once: torch made the float dynamic after it changed
    assert _line(found) == ("script.py", 16)  # return w - hyper["lr"] * grad
    (change,) = found.evidence["changes"][0]["changed"]
    assert (change["name"], change["old"]) == ("hyper['lr']", "0.1")
    assert change["new"] == "0.05 (dynamic from now on)"  # the value the call passed
    assert "G['" not in found.fix and "`hyper['lr']`" in found.fix


def test_a_per_layer_setting_that_drives_the_model_into_the_recompile_limit() -> None:
    (found,) = findings(_load(CASES / "layer_flag"))
    assert (found.kind, found.severity) == (Kind.RECOMPILE_LIMIT, "error")
    assert found.title.startswith(
        "`forward` hit the recompile limit (recompile_limit = 4) after recompiling on `self.act`"
    )
    assert found.title.endswith("it runs eagerly from then on")
    assert _line(found) == ("script.py", 25)  # if self.act == "relu":
    steps = [
        (c["against"], c["changed"][0]["old"], c["changed"][0]["new"])
        for c in found.evidence["changes"]
    ]
    assert steps == [
        ("0/0", "'relu'", "'gelu'"),
        ("0/1", "'gelu'", "'silu'"),
        ("0/2", "'silu'", "'tanh'"),
    ]
    assert found.evidence["limit_compile"] == "0/4"
    # raising the limit is the fix for per-instance values, so it is not called a cover-up
    assert "only hides the cause" not in found.fix


def test_graphs_that_differ_only_by_sizes(fixture_runs: Path) -> None:
    found = findings(_load(fixture_runs / "recompile_limit"))
    same = _of(found, Kind.SAME_GRAPHS)
    assert [f.title for f in same] == ["These 4 graphs of `score` would be one dynamic graph"]
    assert same[0].evidence["compiles"] == ["0/0", "0/1", "0/2", "0/3"]
    assert "mark_dynamic" in same[0].fix


# ---------------------------------------------------------------------- graph breaks


def test_graph_breaks_by_cause_with_count_and_cost(shared_traces: Path) -> None:
    found = findings(_load(shared_traces / "cpu-torch2.13" / "b_graph_breaks"))
    breaks = _of(found, Kind.GRAPH_BREAK)
    assert sorted(f.evidence["count"] for f in breaks) == [1, 1, 1, 2]
    twice = next(f for f in breaks if f.evidence["count"] == 2)
    assert _line(twice) == ("script.py", 25)
    assert twice.title.endswith("Failed to trace builtin operator (2×)")
    assert all(f.cost_s and f.cost_s > 0 and f.fix and f.doc for f in breaks)


# ---------------------------------------------------------------------- CUDA graphs


def test_cudagraphs_skipped_and_partial(fixture_runs: Path) -> None:
    found = _of(findings(_load(fixture_runs / "cudagraphs")), Kind.CUDAGRAPHS)
    skipped = next(f for f in found if f.evidence["state"] == "skipped")
    assert skipped.severity == "warning" and "mutated inputs" in skipped.title
    assert _line(skipped) == ("cudagraphs.py", 19)
    assert (skipped.evidence["used"], skipped.evidence["total"]) == (4, 5)
    assert "4 of 5 CUDA-graph compiles ran as CUDA graphs" in skipped.detail
    partial = next(f for f in found if f.evidence["state"] == "partly")
    assert partial.severity == "info" and "cpu ops" in partial.title


# ---------------------------------------------------------------------- cache


def test_a_warm_cache_miss_names_the_key_component_that_changed() -> None:
    found = findings(_load(CASES / "warm_cache" / "warm"))
    miss = _of(found, Kind.CACHE_MISS)
    assert len(miss) == 1
    assert miss[0].evidence["changed_components"] == ["inductor_config[max_fusion_size]"]
    assert miss[0].evidence["caches"] == ["aotautograd", "fx_graph"]
    assert miss[0].evidence["hit"] == "0/0"  # the same graph, compiled before the config patch
    assert "max_fusion_size" in miss[0].fix
    assert _line(miss[0]) == ("script.py", 20)
    assert not _of(
        findings(_load(CASES / "warm_cache" / "cold")), Kind.CACHE_MISS
    )  # cold: by design


def test_diff_lists_new_findings_and_the_cache_key_that_changed() -> None:
    cold, warm = _load(CASES / "warm_cache" / "cold"), _load(CASES / "warm_cache" / "warm")
    diff = run_diff(cold, warm)
    assert [c.changed for c in diff.cache_keys] == [["inductor_config[max_fusion_size]"]]
    assert [f.kind for f in diff.new_findings if f.kind == Kind.CACHE_MISS] == [Kind.CACHE_MISS]
    back = run_diff(warm, cold)
    assert Kind.CACHE_MISS in {f.kind for f in back.gone_findings} and not back.new_findings
    text = "\n".join(row[1] for row in run_diff_lines(diff))
    assert "findings new in B or gone from it" in text
    assert "fx_graph     body 0/0 → 0/0 #2: inductor_config[max_fusion_size]" in text
    data = diff.to_json()
    assert data["cache_key_changes"][0]["changed_components"] == [
        "inductor_config[max_fusion_size]"
    ]
    assert data["counts"]["new_findings"] == len(diff.new_findings)
    assert not run_diff(warm, warm).changed  # a run against itself: no finding new or gone


# ---------------------------------------------------------------------- dynamic shapes


def test_specialisations_and_data_dependent_symbols(shared_traces: Path) -> None:
    found = findings(_load(shared_traces / "cpu-torch2.13" / "d_dynamic"))
    spec = _of(found, Kind.SPECIALIZATION)
    assert len(spec) == 1 and "x.size()[0] = 6" in spec[0].title and "L['" not in spec[0].title
    assert _line(spec[0]) == ("script.py", 31)
    unbacked = _of(found, Kind.UNBACKED)
    assert len(unbacked) == 1 and unbacked[0].title.endswith("9 data-dependent symbols")
    symbols = unbacked[0].evidence["symbols"]
    assert [s["symbol"] for s in symbols[:2]] == ["u0", "u1"]
    assert [s["where"]["line"] for s in symbols[:2]] == [42, 43]
    assert "torch._check" in unbacked[0].fix


# ---------------------------------------------------------------------- compile time, ranks


def test_compile_time_dominated_by_one_frame(shared_traces: Path) -> None:
    found = _of(findings(_load(shared_traces / "h200-torch2.11" / "gpt_train")), Kind.COMPILE_TIME)
    assert [f.title for f in found] == ["`forward` took 88% of the compile time"]
    assert "most of it in Inductor" in found[0].detail


def test_compile_time_dominated_by_autotuning(fixture_runs: Path) -> None:
    found = _of(findings(_load(fixture_runs / "autotune")), Kind.COMPILE_TIME)
    tuning = [f for f in found if f.title.startswith("Autotuning took")]
    assert len(tuning) == 1 and tuning[0].evidence["autotune_s"] > 10
    assert "TORCHINDUCTOR_CACHE_DIR" in tuning[0].fix


def test_a_backward_compile_counts_in_the_cost(shared_traces: Path) -> None:
    model = _load(shared_traces / "cpu-torch2.13" / "e_training")
    trained = [c for c in model.compiles if any(
        r.kind == "bwd_compilation_metrics" for r in c.metric_records
    )]  # fmt: skip
    assert trained
    for comp in trained:
        assert (compile_cost_s(comp) or 0) > (comp.compile_time_s or 0)


def test_ranks_that_diverge(shared_traces: Path) -> None:
    found = findings(_load(shared_traces / "h200-torch2.11" / "ddp2"))
    div = _of(found, Kind.DIVERGENCE)
    assert len(div) == 1 and div[0].severity == "warning"


# ---------------------------------------------------------------------- where they show


def test_findings_are_ranked_worst_first(shared_traces: Path, fixture_runs: Path) -> None:
    for path in (shared_traces / "h200-torch2.11" / "recompiles", fixture_runs / "cudagraphs"):
        found = findings(_load(path))
        ranks = [SEVERITIES.index(f.severity) for f in found]
        assert ranks == sorted(ranks)
    assert findings(_load(shared_traces / "cpu-torch2.13" / "a_pointwise")) == []


def test_summary_starts_with_findings_and_its_json_has_them(shared_traces: Path) -> None:
    model = _load(shared_traces / "h200-torch2.11" / "recompiles")
    data = summary_json(model)
    assert [list(f) for f in data["findings"]] == [KEYS] * len(data["findings"])
    assert data["findings"][0]["kind"] == Kind.RECOMPILE_LIMIT
    assert data["findings"][0]["where"]["line"] == 14
    json.dumps(data)  # plain data
    lines = summary_text(model).split("\n")
    assert lines[0] == f"Findings ({len(data['findings'])})"
    assert lines[1].startswith("  ERROR   `g` hit the recompile limit")


def test_fail_on_errors_and_warnings(shared_traces: Path) -> None:
    limit = summary_json(_load(shared_traces / "h200-torch2.11" / "recompiles"))
    assert fail_on(limit, ["errors", "warnings"]) == ["errors", "warnings"]
    breaks = summary_json(_load(shared_traces / "cpu-torch2.13" / "b_graph_breaks"))
    assert fail_on(breaks, ["errors", "warnings"]) == ["warnings"]
    clean = summary_json(_load(shared_traces / "cpu-torch2.13" / "a_pointwise"))
    assert fail_on(clean, ["errors", "warnings"]) == []


def test_markdown_report_lists_the_findings(fixture_runs: Path) -> None:
    text = markdown_report(_load(fixture_runs / "recompile_limit"))
    assert "### Findings (2)" in text
    assert "- **error**: `score` hit the recompile limit" in text
    assert "at `/tmp/show/runs/recompile_limit/script.py:15`" in text


def test_show_findings(fixture_runs: Path) -> None:
    detail = show_detail(_load(fixture_runs / "recompile_limit"), "findings")
    text = render_text(detail)
    assert text.startswith("Findings (2)")
    assert "1. error: recompile_limit" in text and "2. warning: same_graphs" in text
    assert "script.py:15" in text
    data = detail.to_json()
    assert data["kind"] == "findings" and len(data["sections"]) == 2


@pytest.mark.slow
def test_summary_cli_fail_on_warnings(shared_traces: Path) -> None:
    run = shared_traces / "cpu-torch2.13" / "b_graph_breaks"
    done = subprocess.run(
        [*TCVIEW_CLI, "summary", str(run), "--json",
         "--fail-on", "warnings"],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1 and "found warnings" in done.stderr
    assert json.loads(done.stdout)["findings"][0]["kind"] == Kind.GRAPH_BREAK


def test_findings_are_the_same_from_the_index_cache(
    shared_traces: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commands read a cached index by default: it must give the same findings."""
    from tcview.analysis.findings import findings_json

    monkeypatch.setenv("TCVIEW_CACHE_DIR", str(tmp_path))
    for path in (CASES / "crash", shared_traces / "cpu-torch2.13" / "d_dynamic"):
        fresh = findings_json(findings(_load(path)))
        load_source(str(path), cache=True)  # writes the cache
        cached = load_source(str(path), cache=True)
        assert findings_json(findings(cached)) == fresh and fresh


def shown(app: App[Any]) -> list[str]:

    doc = viewer_shown(app).doc
    return [doc.plain(i) for i in range(doc.count)]


@sync
async def test_a_live_overview_leads_with_the_findings_as_they_come(tmp_path: Path) -> None:
    from tcview.ingest.replay import replay
    from tcview.ui.app import TcviewApp
    from tcview.ui.options import OpenOptions

    live = tmp_path / "live"
    app = TcviewApp(OpenOptions(str(live), follow=True))
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        assert not app.browser._findings  # nothing read yet
        replay(SAMPLES / "cpu_breaks_recompiles" / "trace", live / "run", speed_mb_s=0, seed=1)
        for _ in range(400):  # the findings of a live input are made again within FIND_GAP
            await pilot.pause(0.05)
            if app.browser._findings and any(line.startswith("findings (") for line in shown(app)):
                break
        lines = shown(app)
        assert lines[1].startswith("findings ("), lines[:4]
        assert lines[2].startswith("  warning Graph break at ")


def test_findings_alike_on_several_ranks_are_one(shared_traces: Path) -> None:
    found = findings(_load(shared_traces / "tlparse-corpus" / "multi_rank_runtime"))
    storm = _of(found, Kind.RECOMPILE_STORM)
    assert len(storm) == 1 and storm[0].evidence["ranks"] == [0, 1, 2, 3, 4]
    assert storm[0].detail.startswith("On ranks 0–4: ")
    assert len(storm[0].compiles) == 15  # 3 recompiles on each of 5 ranks
