"""`tcview summary --jsonl PATH...`: a line per run for a fleet's runs (docs/guide/fleet.md),
on real runs: each line the `summary --json` object (its schema) with the run's input and
times, stable finding ids, an error line and exit 2 for a run that cannot be read."""

from __future__ import annotations

import json
import re
import tarfile
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, RUNS, SAMPLES
from extract import extract
from test_docs import SCHEMA, _mini_validate, _validate

from tcview.commands.cli import main
from tcview.commands.jsonl import Clock, _glog_time

# Real runs: one hits the recompile limit, one recompiles on a dimension, one compiles cleanly.
FLEET = ["recompile_limit", "recompile_dim", "cpu_bench"]
TIME_KEYS = ["input", "started", "ended", "time_source"]
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory of runs, as a platform keeps them: /runs/<job>/."""
    root = tmp_path_factory.mktemp("fleet") / "runs"
    root.mkdir()
    for name in FLEET:
        with tarfile.open(RUNS / f"{name}.tar.xz") as tar:
            extract(tar, root)
    return root


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA.read_text(encoding="utf-8"))
    return loaded


def _jsonl(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], str]:
    code = main(["summary", "--jsonl", *argv])
    out = capsys.readouterr()
    assert out.out.endswith("\n") or out.out == ""
    return code, out.out.splitlines(), out.err


def _error_schema(schema: dict[str, Any]) -> dict[str, Any]:
    return {"$ref": "#/$defs/jsonl_error", "$defs": schema["$defs"]}


def test_one_compact_schema_valid_line_per_run(
    fleet: Path, schema: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    paths = [str(fleet / n) for n in FLEET]
    archive = str(RUNS / "recompile_limit.tar.xz")
    text_log = str(fleet / "recompile_dim" / "torch_logs.txt")
    code, lines, err = _jsonl(capsys, "-q", *paths, archive, text_log)
    assert code == 0, err
    assert len(lines) == len(paths) + 2  # a line each: no newline inside a line
    for line, path in zip(lines, [*paths, archive, text_log], strict=True):
        assert line == json.dumps(json.loads(line), separators=(",", ":"))  # compact
        data = json.loads(line)
        assert list(data)[:4] == TIME_KEYS
        assert data["input"] == path
        assert ISO_UTC.match(data["started"]) and ISO_UTC.match(data["ended"])
        assert data["started"] <= data["ended"]
        assert data["time_source"] == ("trace_local" if path == text_log else "trace")
        assert _validate(data, schema) == []
        assert _mini_validate(data, schema, schema, "$") == []
        for finding in data["findings"]:  # kind:subject
            kind, _, subject = finding["id"].partition(":")
            assert kind == finding["kind"] and subject
    kinds = [[f["kind"] for f in json.loads(line)["findings"]] for line in lines]
    assert "recompile_limit" in kinds[0] and "recompile_limit" in kinds[3]
    assert not any("recompile_limit" in k for k in kinds[1:3])


def test_a_line_is_the_summary_json_object_with_the_run_first(
    fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(fleet / "recompile_limit")
    assert main(["summary", "--json", "-q", "--no-cache", path]) == 0
    document = json.loads(capsys.readouterr().out)
    code, lines, _ = _jsonl(capsys, "-q", "--no-cache", path)
    assert code == 0
    line = json.loads(lines[0])
    assert {k: v for k, v in line.items() if k not in TIME_KEYS} == document
    # The run's times, from its trace's first and last stamps (torch wrote them in UTC here).
    assert (line["started"], line["ended"]) == ("2026-11-22T17:54:32Z", "2026-11-22T17:54:55Z")


def test_finding_ids_are_the_same_on_every_invocation(
    fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = [str(fleet / n) for n in FLEET]
    ids = []
    for extra in ([], ["--no-cache"]):  # once as kept, once made again
        code, lines, _ = _jsonl(capsys, "-q", *extra, *paths)
        assert code == 0
        ids.append([[f["id"] for f in json.loads(line)["findings"]] for line in lines])
    assert ids[0] == ids[1]
    assert "recompile_limit:score@script.py" in ids[0][0]
    assert all(ids[0][:2])


def test_a_run_that_cannot_be_read_is_an_error_line_and_exit_2(
    fleet: Path, schema: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty_job"
    empty.mkdir()
    notes = tmp_path / "notes.txt"
    notes.write_text("Nothing torch wrote.\n")
    good = [str(fleet / n) for n in FLEET[:2]]
    inputs = [good[0], str(empty), str(tmp_path / "missing"), str(notes), good[1]]
    code, lines, err = _jsonl(capsys, "-q", *inputs)
    assert code == 2
    assert len(lines) == len(inputs)  # the runs after a bad one are still read
    data = [json.loads(line) for line in lines]
    assert [d["input"] for d in data] == inputs
    for bad in data[1:4]:
        assert set(bad) == {"input", "error"} and bad["error"]
        assert _validate(bad, _error_schema(schema)) == []
        assert f"tcview: {bad['input']}: " in err  # and said on stderr
    assert "no trace found" in data[1]["error"]
    assert data[2]["error"] == "no such file or directory"
    for ok in (data[0], data[4]):
        assert "error" not in ok and _validate(ok, schema) == []
    assert _validate(data[0], _error_schema(schema)) != []


def test_a_directory_of_runs_is_a_line_per_run(
    fleet: Path, schema: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines, err = _jsonl(capsys, str(fleet))
    assert code == 0
    assert [json.loads(line)["input"] for line in lines] == [str(fleet / n) for n in sorted(FLEET)]
    assert f"{fleet}: no trace of its own; 3 subdirectories with one, a run each" in err
    # A run directory is one run, never its trace/ folder; so is a job's rank folders.
    code, lines, _ = _jsonl(capsys, "-q", f"{fleet / 'cpu_bench'}/")
    assert (code, [json.loads(line)["input"] for line in lines]) == (0, [str(fleet / "cpu_bench")])


def test_rank_folders_are_one_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job"
    with tarfile.open(RUNS / "ranks_ddp2.tar.xz") as tar:
        extract(tar, tmp_path)
    for i, trace in enumerate(sorted((tmp_path / "ranks_ddp2" / "trace").iterdir())):
        (job / f"rank{i}").mkdir(parents=True)
        trace.rename(job / f"rank{i}" / trace.name)
    code, lines, _ = _jsonl(capsys, "-q", str(job))
    assert code == 0 and len(lines) == 1
    assert json.loads(lines[0])["ranks"] == [0, 1]


def test_run_json_gives_the_times(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`tcview run`'s run.json: its wall clock, with the job's zone, made UTC."""
    run = fleet.parent / "with_run_json"
    with tarfile.open(RUNS / "cpu_bench.tar.xz") as tar:
        extract(tar, run)
    (run / "cpu_bench" / "run.json").write_text(
        json.dumps({"start": "2026-11-23T09:00:01+0100", "end": "2026-11-23T09:05:00+0100"})
    )
    code, lines, _ = _jsonl(capsys, "-q", str(run / "cpu_bench"))
    line = json.loads(lines[0])
    assert code == 0
    assert [line[k] for k in TIME_KEYS[1:]] == [
        "2026-11-23T08:00:01Z",
        "2026-11-23T08:05:00Z",
        "run.json",
    ]


def test_a_stamp_has_the_year_and_zone_of_the_trace_clock() -> None:
    """torch's stamps have no year and no zone: with a compile's epoch time (the trace's
    clock), its zone and year; without, read as UTC and never after the files' mtime."""
    jan = datetime(2027, 1, 1, 3, tzinfo=timezone.utc)
    guessed = Clock(jan, timedelta(0))
    assert _glog_time("1231 23:59:58.5", guessed) == datetime(
        2026, 12, 31, 23, 59, 58, 500000, timezone.utc
    )
    assert _glog_time("0101 02:00:00.000000", guessed) == datetime(
        2027, 1, 1, 2, tzinfo=timezone.utc
    )
    assert _glog_time("not a stamp", guessed) is None
    # A job in UTC-8 that compiled at 2027-01-01 03:00 UTC: its 30 December 17:00 is UTC's 31st.
    pacific = Clock(jan, timedelta(hours=-8), exact=True)
    assert _glog_time("1230 17:00:00", pacific) == datetime(2026, 12, 31, 1, tzinfo=timezone.utc)


def test_the_trace_clock_gives_the_zone(
    fleet: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same trace with its stamps written two hours ahead (a job in UTC+2): the same
    times in UTC, as its compilation_metrics' epoch times say."""
    source = next((fleet / "recompile_limit" / "trace").iterdir())
    shifted = tmp_path / source.name
    shifted.write_bytes(
        re.sub(
            rb"^([A-Z]1122 )17:",
            rb"\g<1>19:",
            source.read_bytes(),
            flags=re.M,
        )
    )
    code, lines, _ = _jsonl(capsys, "-q", "--no-cache", str(shifted))
    line = json.loads(lines[0])
    assert code == 0
    assert [line[k] for k in TIME_KEYS[1:]] == [
        "2026-11-22T17:54:32Z",
        "2026-11-22T17:54:55Z",
        "trace",
    ]
    text_log = str(fleet / "recompile_limit" / "torch_logs.txt")  # no epoch time in it
    code, lines, _ = _jsonl(capsys, "-q", text_log)
    assert json.loads(lines[0])["time_source"] == "trace_local"


def test_fail_on_trips_on_any_run_and_an_error_line_still_wins(
    fleet: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = [str(fleet / n) for n in FLEET]
    code, lines, err = _jsonl(capsys, "-q", "--fail-on", "errors", *paths)
    assert (code, len(lines)) == (1, 3)
    assert f"tcview: {paths[0]}: found errors" in err
    assert f"{paths[2]}: found" not in err  # the clean run
    code, _, _ = _jsonl(capsys, "-q", "--fail-on", "errors", *paths, str(tmp_path / "gone"))
    assert code == 2
    code, _, _ = _jsonl(capsys, "-q", "--fail-on", "failures", paths[2])
    assert code == 0


@pytest.mark.parametrize(
    "argv",
    [
        ["summary", "--json", "--jsonl", "{s}"],
        ["summary", "{s}", "{s}"],
        ["summary", "--jsonl", "--profile", "{s}", "{s}"],
    ],
    ids=" ".join,
)
def test_what_jsonl_does_not_take_is_exit_2(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    sample = str(SAMPLES / "cpu_breaks_recompiles")
    assert main([a.format(s=sample) for a in argv]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.startswith("tcview: ")


def _documented_query() -> str:
    page = (REPO / "docs" / "guide" / "fleet.md").read_text(encoding="utf-8")
    found = re.search(r"```sql\n(.*?)```", page, re.S)
    assert found is not None, "docs/guide/fleet.md: no ```sql block"
    return found.group(1)


def test_the_documented_query_finds_the_run_that_hit_the_limit(
    fleet: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The guide's DuckDB query, on the lines of real runs (DuckDB is no dependency: skipped
    where it is not installed)."""
    duckdb: Any = pytest.importorskip("duckdb")
    code, lines, _ = _jsonl(capsys, "-q", str(fleet))
    assert code == 0
    (tmp_path / "runs.jsonl").write_text("\n".join(lines) + "\n")
    # The week the fixtures ran in, in place of now(): the query must not age with the clock.
    sql = _documented_query().replace("now()", "TIMESTAMPTZ '2026-11-27 12:00:00+00'")
    sql = sql.replace("'runs.jsonl'", f"'{tmp_path / 'runs.jsonl'}'")
    rows = duckdb.connect().execute(sql).fetchall()
    assert [(r[0], r[2]) for r in rows] == [
        (str(fleet / "recompile_limit"), "recompile_limit:score@script.py")
    ]
