"""A trace cut short, cut at its start or damaged inside says so (the `trace_cut` finding):
where, how much, and what of the run is visibly missing, in `summary`, its JSON and the app's
first screen; and only from what the file's bytes show (a live file, or one that ends between
two records, is not called cut). Every fixture is a real torch trace, cut or edited here."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import SAMPLES
from test_docs import SCHEMA, _validate

from tcview.analysis.finding import Finding
from tcview.analysis.findings import findings
from tcview.ingest.live import Follower
from tcview.ingest.source import load_source
from tcview.model.objects import Model
from tcview.report.summary import summary_document, summary_parts, summary_text
from tcview.ui.content import model_summary

TRACE = next((SAMPLES / "cpu_breaks_recompiles" / "trace").iterdir())
NAME = "dedicated_log_torch_trace_cut.log"  # as torch names it: read without sniffing


@pytest.fixture(scope="module")
def whole() -> bytes:
    return TRACE.read_bytes()


def _load(tmp_path: Path, data: bytes) -> Model:
    (tmp_path / NAME).write_bytes(data)
    return load_source(str(tmp_path), cache=False)


def _cuts(found: list[Finding]) -> dict[str, Finding]:
    """The trace_cut findings by subject."""
    return {f.subject: f for f in found if f.kind.value == "trace_cut"}


def _kinds(found: list[Finding]) -> list[str]:
    return [f.kind.value for f in found]


def _header_starts(data: bytes) -> list[int]:
    """Offsets of the lines that are not payload lines (the records' headers)."""
    return [m.start() + 1 for m in re.finditer(rb"\n(?=[^\t\n])", data)]


def _shown(model: Model, found: list[Finding], title: str) -> None:
    """The finding is in `tcview summary` (text and valid --json) and on the first screen."""
    assert title in summary_text(model)
    doc = summary_document(model)
    assert title in [f["title"] for f in doc["findings"]]
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    findings_schema = {**schema, "type": "array", "items": {"$ref": "#/$defs/finding"}}
    for key in ("properties", "required", "additionalProperties"):
        findings_schema.pop(key, None)
    assert _validate(doc["findings"], findings_schema) == []  # (test_docs checks the rest)
    screen = [t.plain for t in model_summary(model, "x", found=found)]
    assert any(title in line for line in screen[:8]), screen[:8]


def test_the_whole_trace_is_not_cut(whole: bytes, tmp_path: Path) -> None:
    found = findings(_load(tmp_path, whole))
    assert {"trace_cut", "died_in_compile"}.isdisjoint(_kinds(found))


def test_cut_inside_a_payload_says_where_and_what_is_missing(whole: bytes, tmp_path: Path) -> None:
    size = len(whole) // 2
    model = _load(tmp_path, whole[:size])
    found = findings(model)
    assert "died_in_compile" not in _kinds(found)  # the cut, not a death, may be why
    cut = _cuts(found)["cut"]
    assert cut.severity.value == "warning" and found[0] is cut  # a verdict: first
    header = max(s for s in _header_starts(whole) if s < size)
    line = whole[:header].count(b"\n") + 1
    assert cut.evidence["cuts"] == [
        {
            "file": NAME,
            "size": size,
            "line": line,
            "record": "fx_graph_cache_miss",
            "compile": "0/1_1",
            "never_finished": ["0/1"],
        }
    ]
    assert cut.evidence["inside_compile"] == ["0/1 (`scale_shift`)"]
    assert f"byte {size:,}" in cut.title and "compile 0/1" in cut.title
    assert f"line {line:,}" in cut.detail
    assert "Compile 0/1 (`scale_shift`) started but has no compilation metrics" in cut.detail
    _shown(model, found, cut.title)


def test_cut_in_the_middle_of_a_header_line(whole: bytes, tmp_path: Path) -> None:
    start = next(s for s in _header_starts(whole) if s > len(whole) // 2)
    size = start + 60  # no newline: the header's JSON is cut
    model = _load(tmp_path, whole[:size])
    found = findings(model)
    assert "died_in_compile" not in _kinds(found)
    cut = _cuts(found)["cut"]
    line = whole[:start].count(b"\n") + 1
    assert cut.evidence["cuts"][0]["record"] is None
    assert cut.evidence["cuts"][0]["line"] == line
    assert f"in line {line:,}, which has no newline" in cut.detail
    assert "damaged" not in _cuts(found)  # the cut line is the cut, not damage inside


def test_a_cut_between_two_records_is_not_called_cut(whole: bytes, tmp_path: Path) -> None:
    """A file cut between two records looks as a process killed there does: it ends inside
    a compile, whole. died_in_compile says so, once, and names the cut as the other cause."""
    size = next(s for s in _header_starts(whole) if s > len(whole) // 2)
    found = findings(_load(tmp_path, whole[:size]))
    assert "trace_cut" not in _kinds(found)
    assert _kinds(found).count("died_in_compile") == 1
    died = found[_kinds(found).index("died_in_compile")]
    assert "0/1" in died.title and "the file was cut there" in died.detail


def test_a_live_file_is_not_called_cut_until_it_is_done(whole: bytes, tmp_path: Path) -> None:
    """Followed while the job writes it, a file ends mid-record all the time."""
    target = tmp_path / NAME
    target.write_bytes(whole[: len(whole) // 2])
    follower = Follower(str(tmp_path))
    try:
        follower.step()
        found = findings(follower.model)
        assert {"trace_cut", "died_in_compile"}.isdisjoint(_kinds(found))
        follower.finish()  # the job is done: what is there is all there is
        assert "cut" in _cuts(findings(follower.model))
    finally:
        follower.stop()


def test_cut_at_its_start(whole: bytes, tmp_path: Path) -> None:
    """It begins with payload lines of a record whose header is missing."""
    begin = whole.index(b"\n\t", len(whole) // 2) + 1
    model = _load(tmp_path, whole[begin:])
    found = findings(model)
    start = _cuts(found)["cut_start"]
    first = next(s for s in _header_starts(whole) if s > begin) - begin
    lines = whole[begin : begin + first].count(b"\n")
    assert start.evidence["cuts"] == [{"file": NAME, "bytes": first, "lines": lines}]
    assert f"{first:,} bytes" in start.title
    assert f"first record is line {lines + 1:,}" in start.detail
    assert "cut" not in _cuts(found)  # its end is whole
    _shown(model, found, start.title)


def test_a_renamed_file_cut_at_its_start_is_still_a_trace(whole: bytes, tmp_path: Path) -> None:
    """Named by the user (not as torch names its files): it is sniffed, and a file that begins
    with payload lines and then a record header is a trace cut at its start, not "skipped"."""
    begin = whole.index(b"\n\t", len(whole) // 2) + 4  # inside a payload line
    (tmp_path / "tail_of_trace.log").write_bytes(whole[begin:])
    model = load_source(str(tmp_path / "tail_of_trace.log"), cache=False)
    assert model.files and not model.skipped
    assert "cut_start" in _cuts(findings(model))


def _damaged(whole: bytes) -> tuple[bytes, list[int]]:
    """Garbage lines mixed into the trace and one payload line edited."""
    lines = whole.split(b"\n")
    lines.insert(1000, b"\x00\xff garbage that is no record")
    lines.insert(2000, b"more garbage")
    edited = [n for n, text in enumerate(lines) if text.startswith(b"\t") and n > 3000][0]
    lines[edited] += b" EDITED"
    return b"\n".join(lines), [1001, 2001]


def test_damaged_inside_counts_and_places_it(whole: bytes, tmp_path: Path) -> None:
    data, garbage = _damaged(whole)
    model = _load(tmp_path, data)
    found = findings(model)
    damaged = _cuts(found)["damaged"]
    assert set(_cuts(found)) == {"damaged"}
    place = damaged.evidence["damage"][0]
    assert place["bad_lines"] == 2 and place["bad_line_numbers"] == garbage
    assert place["md5_mismatches"] == 0  # no payload is hashed but on --verify
    assert "lines 1,001, 2,001" in damaged.detail
    assert "--verify" in damaged.fix
    _shown(model, found, damaged.title)
    # with --verify every payload is hashed: the edited one, and those the garbage split
    parts = summary_parts(load_source(str(tmp_path), cache=False), verify=True)
    damaged = _cuts(parts.found)["damaged"]
    place = damaged.evidence["damage"][0]
    assert place["md5_mismatches"] == parts.counts["damage"]["md5_mismatches"] == 3
    assert "3 payloads failing their md5" in damaged.title and not damaged.fix


def test_several_damages_of_one_file_each_say_theirs(whole: bytes, tmp_path: Path) -> None:
    data, _garbage = _damaged(whole)
    begin = data.index(b"\n\t") + 1
    found = findings(_load(tmp_path, data[begin : len(data) // 2]))
    assert set(_cuts(found)) == {"cut", "cut_start", "damaged"}
    assert "died_in_compile" not in _kinds(found)


def test_every_cut_that_is_not_at_a_line_end_is_called_cut(whole: bytes, tmp_path: Path) -> None:
    """Wherever a copy stops mid-line (inside a kept record's payload, a located chromium
    event's, a header), the file is cut short: a trace_cut warning, never a death in a compile
    and never damage inside, with or without --verify."""
    ends = sorted({len(whole) * k // 23 + 7 for k in range(3, 22)})
    ends = [e for e in ends if whole[e - 1 : e] != b"\n"]
    for end in ends:
        for verify in (False, True):
            (tmp_path / NAME).write_bytes(whole[:end])
            model = load_source(str(tmp_path), cache=False)
            found = summary_parts(model, verify=True).found if verify else findings(model)
            cuts = _cuts(found)
            assert "cut" in cuts and "damaged" not in cuts, (end, verify, _kinds(found))
            assert "died_in_compile" not in _kinds(found), (end, verify)


def test_a_start_cut_inside_a_line_is_a_cut_start(whole: bytes, tmp_path: Path) -> None:
    """A copy that begins in the middle of a payload line (then whole payload lines, then a
    header) was cut at its start: not damage."""
    begin = whole.index(b"\n\t", len(whole) // 3) + 6
    model = _load(tmp_path, whole[begin:])
    cuts = _cuts(findings(model))
    assert "cut_start" in cuts and "damaged" not in cuts, sorted(cuts)
