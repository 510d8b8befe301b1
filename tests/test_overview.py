"""One overview (tcview.report.overview), rendered three ways: the app's overview pane,
`tcview summary` text and its --json (`summary_document`). Each shows the same rows, cut at the same length."""

from __future__ import annotations

import re
from pathlib import Path

from tcview.ingest.source import load_source
from tcview.report.markdown import markdown_report
from tcview.report.summary import summary_document, summary_text
from tcview.ui.content import model_summary

APP_ROW = re.compile(r"^  +\S+  (\S+) ")  # `  12.3ms  1/0      frame label`
MD_ROW = re.compile(r"^\| [^|]+ \| `([^`]+)` \|")  # | 12.3 ms | `1/0` | frame | ok |
TEXT_ROW = re.compile(r"^  +\S+  (?:rank \d+  |no rank  )?\[([^\]]+)\] ")


def _rows(lines: list[str], heading: str, row: re.Pattern[str]) -> list[str]:
    """The compile ids of the rows under `heading`, up to the first line that is not a row."""
    out = []
    for line in lines[lines.index(heading) + 1 :]:
        m = row.match(line)
        if m is None:
            break
        out.append(m.group(1))
    return out


def test_slowest_compiles_are_one_list_in_app_text_and_json(fixture_runs: Path) -> None:
    model = load_source(str(fixture_runs / "recompile_dim"))
    timed = [c for c in model.compiles if c.compile_time_s is not None]
    assert len(timed) > 10  # more than any cut-off: the lists are cut
    app = _rows(
        [t.plain for t in model_summary(model, "x")], "slowest compiles  (t for all)", APP_ROW
    )
    text = _rows(summary_text(model).split("\n"), "Slowest compiles", TEXT_ROW)
    assert app == text
    data = summary_document(model)["overview"]
    assert [row["compile"] for row in data["slowest_compiles"]] == app
    assert data["timed_compiles"] == len(timed)
    report = markdown_report(model).split("\n")
    table = report[report.index("### Slowest compiles") + 4 :]
    assert [MD_ROW.match(ln).group(1) for ln in table[: len(app)] if MD_ROW.match(ln)] == app
    assert not MD_ROW.match(table[len(app)])
    slowest = sorted(timed, key=lambda c: -(c.compile_time_s or 0))
    assert app == [c.id_label for c in slowest[: len(app)]]


def test_crash_is_one_list_in_app_text_and_json(fixture_runs: Path) -> None:
    model = load_source(str(fixture_runs / "crash_ranks"))
    errors = model.run_errors()
    assert errors
    app = [t.plain for t in model_summary(model, "x")]
    text = summary_text(model).split("\n")
    data = summary_document(model)["overview"]
    assert data["errors_total"] == len(errors)
    for row in data["errors"]:
        assert f"  {row['headline']}" in app and f"  {row['headline']}" in text
