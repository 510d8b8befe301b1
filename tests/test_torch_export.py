"""torch.export traces: the draft-export report's facts, on a real draft
export (tests/fixtures/export_draft: torch 2.13, a guard Eq(s77, 3), a data-dependent branch,
a missing and a mismatched fake kernel) and the tlparse corpus's export.log; what must not be
shown (a null expression_created, a guard_added without its stack, an md5 mismatch
called a truncated record)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from conftest import FIXTURES, REPO, TCVIEW_CLI
from ui_helpers import SnapCompare, pane, ready, settle, summary_json, sync, viewer_shown

from tcview.analysis.export import (
    DATA_DEPENDENT,
    GUARD,
    MISMATCHED_FAKE,
    MISSING_FAKE,
    export_report,
    is_export,
)
from tcview.ingest.index import TraceSet
from tcview.model.objects import MD5_BLANK_LINES, MD5_MISMATCH, MD5_OK
from tcview.ui.content import record_doc

if TYPE_CHECKING:
    from textual.pilot import Pilot

DRAFT = FIXTURES / "export_draft"
TLPARSE = json.loads((FIXTURES / "tlparse_export.json").read_text())["inputs"]
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _torch_report() -> str:
    """What torch itself printed for the fixture (`ep._report`): the independent reference."""
    return ANSI.sub("", (DRAFT / "stdout.txt").read_text())


def test_draft_export_report_matches_torch() -> None:
    ts = TraceSet.load(DRAFT / "trace")
    assert is_export(ts) and ts.compile_counts()["compiles"] == 0
    report = export_report(ts)
    torch_text = _torch_report()
    # torch's report: the guard, its symbol's source, the data-dependent expression, the ops.
    m = re.search(r"this guard was added: (\S+ \d+\)), where \{'(\w+)': \"(.*?)\"\}", torch_text)
    assert m is not None
    expr, symbol, source = m.groups()
    dde = re.search(r"unable to evaluate the value of `(.*?)`", torch_text)
    assert dde is not None
    ops = re.findall(r"torch\.ops\.(\S+) (?:is missing|has a fake)", torch_text)
    assert [i.kind for i in report.issues] == [GUARD, DATA_DEPENDENT, MISSING_FAKE, MISMATCHED_FAKE]
    guard, data, missing, mismatched = report.issues
    assert (guard.expr, guard.prefix, guard.title) == (expr, "eval", "Guard Evaluated")
    assert expr == "Eq(s77, 3)"
    assert guard.symbol_sources == {symbol: source} == guard.symbols
    assert guard.locals == {
        "x": "Tensor(shape: torch.Size([s77, 4]), stride: (4, 1), storage_offset: 0)"
    }
    user = guard.user_line
    assert user is not None and (Path(user.filename).name, user.line) == ("export_report.py", 27)
    assert user.loc.startswith("if x.shape[0] == 3:")
    assert [f.name for f in guard.user_stack] == ["_wrapped_call_impl", "_call_impl", "forward"]
    assert guard.tree[0][1].result == "Eq(s77, 3)" and guard.tree[0][1].method == "eq"
    assert (data.expr, data.result) == (dde.group(1), "True")
    assert data.locals == {"k": "u0"}
    # Its provenance: u0 > 2, computed from the unbacked symbol u0 (n.item(), line 29).
    assert [(d, n.result, n.method) for d, n in data.tree] == [(0, "u0 > 2", "gt"), (1, "u0", "")]
    leaf = data.tree[1][1]
    assert leaf.user_stack[-1].line == 29 and leaf.user_stack[-1].loc == "k = n.item()"
    assert (
        [missing.op, mismatched.op] == ops == ["tcview.no_fake.default", "tcview.bad_fake.default"]
    )
    assert mismatched.reason.startswith("mismatch between fake value 4 and real value 3")
    assert report.programs and report.symbols == []


def test_tlparse_drops_the_torch_213_guard_and_error() -> None:
    """tlparse 0.4.3 -e cannot parse torch 2.13's guard_added / data-dependent records (their
    locals are lists): it shows only the fake-kernel issues. tcview shows all four."""
    ref = TLPARSE["fixture:export_draft/trace"]
    report = export_report(TraceSet.load(DRAFT / "trace"))
    shown = [i for i in report.issues if i.kind in (MISSING_FAKE, MISMATCHED_FAKE)]
    assert [[i.op] for i in shown] == [i["codes"] for i in ref["issues"]]
    assert len(report.issues) == ref["num_issues_shown"] + len(ref["parse_failures"])


def test_corpus_export_log_matches_tlparse(shared_traces: Path) -> None:
    ref = TLPARSE["shared:tlparse-corpus/export.log"]
    report = export_report(TraceSet.load(shared_traces / "tlparse-corpus" / "export.log"))
    reported = [i for i in report.issues if i.reported_by_tlparse]
    assert len(reported) == ref["num_issues_shown"]
    for issue, want in zip(reported, ref["issues"], strict=True):
        assert issue.title == want["failure_type"]
        assert [issue.expr, issue.result] == want["codes"]
        assert [f.text for f in issue.user_stack] == want["user_stack"]
        assert [n.result for _d, n in issue.tree] == want["provenance_exprs"]
        locals_text = "\n".join(f"    {k}: {v}" for k, v in issue.locals.items())
        assert locals_text in want["locals_text"]
    # Its guards have no prefix (older torch): tcview lists them, tlparse skips them.
    guards = report.of_kind(GUARD)
    assert [(g.expr, g.prefix or None) for g in guards] == [
        (g["expr"], g["prefix"]) for g in ref["guard_added_records"]
    ]
    assert not any(g["reported"] for g in ref["guard_added_records"])
    assert all(g.title == "Guard Added" and not g.reported_by_tlparse for g in guards)


@pytest.mark.e2e
def test_summary_counts_export_issues(shared_traces: Path) -> None:
    assert summary_json(DRAFT / "trace")["export"] == {
        "guards": 1,
        "data_dependent_errors": 1,
        "fake_kernel_problems": 2,
    }
    corpus = summary_json(shared_traces / "tlparse-corpus" / "export.log")["export"]
    assert corpus == {"guards": 7, "data_dependent_errors": 1, "fake_kernel_problems": 0}
    plain = shared_traces / "h200-torch2.11" / "export" / "trace"
    assert is_export(TraceSet.load(plain))  # torch.export's own stacks, no export records
    assert summary_json(plain)["export"] == dict.fromkeys(corpus, 0)
    breaks = shared_traces / "h200-torch2.11" / "breaks" / "trace"
    assert not is_export(TraceSet.load(breaks))
    assert summary_json(breaks)["export"] == dict.fromkeys(corpus, 0)


def test_header_only_records_show_their_whole_header() -> None:
    """expression_created headers are not kept in memory (meta is None): the pane reads
    them from disk; a guard's stacks show file names, not string-table ids."""
    ts = TraceSet.load(DRAFT / "trace")
    created = ts.records_of("expression_created")[0]
    assert created.meta is None
    text = "\n".join(record_doc(created).lines)
    assert '"result": "Eq(s77, 3)"' in text and "null" not in text.split("\n")[0]
    guard = ts.records_of("guard_added")[0]
    text = "\n".join(record_doc(guard).lines)
    assert '"/tmp/prov_export/export_report.py:27 in forward    if x.shape[0] == 3:' in text
    assert '"filename": 0' not in text


# ---------------------------------------------------------------------- md5


def test_stripped_blank_lines_are_not_a_truncated_record(shared_traces: Path) -> None:
    """export.log's exported program lost the whitespace of its blank payload lines (trailing
    whitespace stripped): it is read restored and is no md5 mismatch."""
    ts = TraceSet.load(shared_traces / "tlparse-corpus" / "export.log")
    tf = ts.files[0]
    assert tf.truncated == 0
    assert ts.verify() == 0 and tf.blank_line_records == 1
    rec = ts.records_of("exported_program")[0]
    assert rec.md5_state() == MD5_BLANK_LINES
    assert "\n            \n" in rec.payload()
    assert "lost their tab (harmless" in record_doc(rec).title


def _records(path: Path) -> list[list[str]]:
    """The file's records: each a header line and its payload lines."""
    out: list[list[str]] = []
    for line in path.read_text().split("\n"):
        if line.startswith("\t") or not line:
            if out:
                out[-1].append(line)
        else:
            out.append([line])
    return out


def test_md5_states_on_edited_copies(tmp_path: Path) -> None:
    """The draft's exported program as written (ok), with its whitespace-only lines
    stripped (restored), with every line's trailing whitespace stripped and with a character
    changed (real mismatches)."""
    src = next((DRAFT / "trace").iterdir())
    records = _records(src)
    program = next(i for i, r in enumerate(records) if '"exported_program"' in r[0])
    assert any(ln.strip() == "" and ln for ln in records[program][1:])  # whitespace-only lines

    def write(name: str, body: list[str]) -> TraceSet:
        recs = [*records[:program], [records[program][0], *body], *records[program + 1 :]]
        path = tmp_path / name.replace(" ", "_") / "dedicated_log_torch_trace_x.log"
        path.parent.mkdir()
        path.write_text("\n".join(line for rec in recs for line in rec))
        return TraceSet.load(path.parent)

    body = records[program][1:]
    states = {}
    for name, lines in (
        ("same", body),
        ("stripped", [ln if ln.strip() else "" for ln in body]),
        # Its "Graph signature: " line ends in a space: stripping that too is a real change.
        ("all stripped", [ln.rstrip() for ln in body]),
        ("edited", [ln.replace("forward", "forwerd") for ln in body]),
    ):
        ts = write(name, lines)
        rec = ts.records_of("exported_program")[0]
        states[name] = (rec.md5_state(), ts.verify(), ts.files[0].blank_line_records)
    assert states == {
        "same": (MD5_OK, 0, 0),
        "stripped": (MD5_BLANK_LINES, 0, 1),
        "all stripped": (MD5_MISMATCH, 1, 0),
        "edited": (MD5_MISMATCH, 1, 0),
    }


# ---------------------------------------------------------------------- CLI and UI


@pytest.mark.e2e
def test_show_export_prints_the_report() -> None:
    out = subprocess.run(
        [*TCVIEW_CLI, "show", str(DRAFT / "trace"), "export"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert out.returncode == 0, out.stderr
    assert "1. Guard Evaluated" in out.stdout
    assert "the following guard was evaluated Eq(s77, 3)." in out.stdout
    assert "at /tmp/prov_export/export_report.py:27 in forward" in out.stdout
    assert "    s77: L['x'].size()[0]" in out.stdout
    assert "3. Missing Fake Kernel" in out.stdout and "4. Mismatched Fake Kernel" in out.stdout


@pytest.mark.e2e
def test_show_export_json_puts_each_issue_at_the_user_line(shared_traces: Path) -> None:
    """`tcview show PATH export --json`: one section per issue; a guard of the corpus's
    export.log has no user stack, and its place is the innermost frame of its framework
    stack outside torch (the test's forward, as the raw stack says), not torch's logging."""
    log = shared_traces / "tlparse-corpus" / "export.log"
    out = subprocess.run(
        [*TCVIEW_CLI, "show", str(log), "export", "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    issues = [s for s in data["sections"] if s["tag"] == "issue"]
    assert [s["heading"].split(". ", 1)[1] for s in issues].count("Guard Added") == 7
    wheres = [next(r["value"] for r in s["rows"] if r["tag"] == "where") for s in issues]
    # The torch.export test's forward: _check_is_size(a) at 276, _check(a < …) at 277,
    # z[:a] at 279 (tlparse -e puts its data-dependent error there too).
    lines = [re.search(r"/test/export/test_draft_export\.py:(\d+) in forward$", w) for w in wheres]
    assert [m.group(1) if m else w for m, w in zip(lines, wheres, strict=True)] == [
        "276", "277", "279", "279", "276", "277", "279", "279"
    ]  # fmt: skip
    ref = json.loads((FIXTURES / "tlparse_export.json").read_text())
    assert "test_draft_export.py:279 in forward" in json.dumps(ref)


@pytest.mark.app
@sync
async def test_export_view_from_the_overview() -> None:
    from tcview.ui.app import TcviewApp
    from tcview.ui.reader import Reader
    from tcview.ui.views import ExportView

    app = TcviewApp(str(DRAFT / "trace"))
    async with app.run_test(size=(140, 45)) as pilot:
        await ready(app, pilot)
        doc = viewer_shown(app).doc
        overview = [doc.plain(i) for i in range(doc.count)]
        assert any(
            ln.startswith("torch.export trace") and "X for the export report" in ln
            for ln in overview
        )
        assert app.browser.check_action("view", ("export",))
        await pilot.press("X")
        await settle(app, pilot)
        view = pane(app)
        assert isinstance(view, ExportView)
        assert [i.title for i in view.objects] == [
            "Guard Evaluated",
            "Data Dependent Error",
            "Missing Fake Kernel",
            "Mismatched Fake Kernel",
        ]
        detail = view.query_one(Reader).viewer.doc
        text = [detail.plain(i) for i in range(detail.count)]
        assert "    Eq(s77, 3)  = eq(s77, 3)" in text
        await pilot.press("enter")  # to the guard_added record, whose stack shows
        await settle(app, pilot)
        doc = viewer_shown(app).doc
        assert doc.title.startswith("guard_added")


@pytest.mark.app
@sync
async def test_export_key_only_for_export_traces() -> None:
    from ui_helpers import GPU_SAMPLE

    from tcview.ui.app import TcviewApp

    app = TcviewApp(str(GPU_SAMPLE))
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        assert not app.browser.check_action("view", ("export",))


@pytest.mark.app
def test_snapshot_export_view(snap_compare: SnapCompare, monkeypatch: pytest.MonkeyPatch) -> None:
    from tcview.ui.app import TcviewApp

    monkeypatch.chdir(DRAFT)

    async def before(pilot: Pilot[Any]) -> None:
        await ready(pilot.app, pilot)
        await pilot.press("X")
        await settle(pilot.app, pilot)

    assert snap_compare(TcviewApp("trace"), terminal_size=(120, 40), run_before=before)


@pytest.mark.app
@sync
async def test_an_export_without_issues_says_so_once(shared_traces: Path) -> None:
    from tcview.ui.app import TcviewApp
    from tcview.ui.views import ExportView

    app = TcviewApp(str(shared_traces / "h200-torch2.11" / "export" / "trace"))
    async with app.run_test(size=(140, 45)) as pilot:
        await ready(app, pilot)
        await pilot.press("X")
        await settle(app, pilot)
        assert isinstance(pane(app), ExportView)
        head = str(pane(app).query_one("#view-head").render())
        assert "No issues found during export." in head and "nothing here" not in head, head
