"""`tcview summary --jsonl PATH...`: one line per run, for a fleet's runs loaded into an engine
that reads JSON lines (DuckDB, BigQuery, pandas). Not a store: the lines go to stdout.

Each line is the object `summary --json` prints (docs/reference/summary.schema.json) with the
run's `input` and when it ran (`started`, `ended`, `time_source`) first; a run that cannot be
read is a line ``{"input": PATH, "error": WHY}`` and the next run is read. A directory that
holds no trace itself but whose subdirectories do stands for its subdirectories, a run each
(`/runs/` as well as `/runs/*/`). Guide: docs/guide/fleet.md.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, TextIO

from tcview.ingest.detect import HEADER, find_text_log, trace_reason
from tcview.ingest.source import RUN_JSON, NotATrace, load_source
from tcview.model.objects import Model
from tcview.text.safe import safe_line

# What `Kept` keeps a line under (a report of its own: `summary --json` keeps the document).
KEPT_AS = "summary --jsonl"
# Subdirectories a job's ranks write into (rank0/, rank_1/): one run, never a run each.
_RANK_DIR = re.compile(r"rank[_-]?\d+", re.I)
# `tcview run`'s run directory keeps its trace here (`TORCH_TRACE=DIR/trace`).
_TRACE_SUBDIR = "trace"
# The glog stamp of torch's trace and log lines: ``MMDD HH:MM:SS.ffffff`` (no year, no zone).
_GLOG = re.compile(r"(\d\d)(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?$")
# A compile's end as epoch microseconds, in its `compilation_metrics` header (whose stamp
# `detect.HEADER` reads).
_END_US = re.compile(rb'"end_time_us": (\d{13,19})\b')


# ---------------------------------------------------------------------- which runs


def runs_of(paths: list[str], note: TextIO | None) -> list[str]:
    """The runs the command line names: each path, or the subdirectories of a directory that
    holds runs (`runs_in`), said on `note` (stderr) so that no one wonders where lines came
    from."""
    out: list[str] = []
    for path in paths:
        inner = runs_in(path)
        if inner is None:
            out.append(path)
            continue
        if note is not None:
            print(
                f"tcview: {safe_line(path)}: no trace of its own; "
                f"{len(inner)} subdirectories with one, a run each",
                file=note,
            )
        out += inner
    return out


def runs_in(path: str) -> list[str] | None:
    """The subdirectories of `path` that hold a run, when `path` is a directory that holds
    none itself: no trace file directly in it, no run directory's files (a TORCH_LOGS capture,
    run.json, a `trace/` folder), and not only rank folders (one job's ranks). Else None: the
    path is one run (or, holding nothing, an error line that says so)."""
    root = Path(path)
    try:
        if not root.is_dir() or find_text_log(root) is not None:
            return None
        if (root / RUN_JSON).exists() or (root / _TRACE_SUBDIR).is_dir():
            return None
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:  # the load that follows says what cannot be read
        return None
    if any(e.is_file() and trace_reason(Path(e.path)) is None for e in entries):
        return None
    held = [e for e in entries if e.is_dir() and _holds_run(Path(e.path))]
    if not held or all(_RANK_DIR.fullmatch(e.name) for e in held):
        return None
    return [os.path.join(path, e.name) for e in held]


def _holds_run(directory: Path) -> bool:
    """A run directory, or a trace file anywhere below (stops at the first)."""
    if find_text_log(directory) is not None or (directory / RUN_JSON).exists():
        return True
    for base, dirs, files in os.walk(directory):
        dirs.sort()
        if any(trace_reason(Path(base) / name) is None for name in sorted(files)):
            return True
    return False


# ---------------------------------------------------------------------- when it ran


def iso_utc(moment: datetime) -> str:
    """``2026-11-22T17:54:32Z``: ISO 8601 in UTC, to the second (what engines read as a
    timestamp without a format)."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def run_times(model: Model) -> dict[str, str | None]:
    """`started`, `ended` and where they came from (`time_source`):

    - ``run.json``: the wall-clock start and end `tcview run` wrote, with the job's zone;
    - ``trace``: the first and last stamps of the trace (and log) lines. torch writes them in
      the job's local time without a year or a zone; both come from the trace's own clock, a
      compile's `compilation_metrics` (its end as epoch microseconds beside its stamp);
    - ``trace_local``: the same stamps where no compile logged that clock (a TORCH_LOGS
      capture, a job that compiled nothing): read as UTC, in the year of the files' newest
      mtime (the year before where that would put them after it);
    - ``mtime``: no stamp at all: `ended` is the files' newest mtime, `started` null.
    """
    mtime = _newest_mtime(model)
    start, end = _run_json_times(model)
    clock = _trace_clock(model) or (Clock(mtime, timedelta(0)) if mtime is not None else None)
    first, last = _trace_times(model, clock) if clock is not None else (None, None)
    if start is not None:
        ended = end or last or mtime  # a job still running has no end yet
        return {
            "started": iso_utc(start),
            "ended": iso_utc(ended) if ended is not None else None,
            "time_source": "run.json",
        }
    if first is not None and last is not None and clock is not None:
        source = "trace" if clock.exact else "trace_local"
        return {"started": iso_utc(first), "ended": iso_utc(last), "time_source": source}
    if mtime is not None:
        return {"started": None, "ended": iso_utc(mtime), "time_source": "mtime"}
    return {"started": None, "ended": None, "time_source": None}


@dataclass(frozen=True)
class Clock:
    """How a run's stamps read as UTC: a moment near them (UTC), and the job's UTC offset."""

    anchor: datetime
    offset: timedelta
    exact: bool = False  # the offset and year are the trace's own, not guessed


def _sources(model: Model) -> list[Any]:
    text = model.text
    return [*model.files, *(text.files if text is not None else [])]


def _newest_mtime(model: Model) -> datetime | None:
    stamps = []
    paths = [p for p in (getattr(f, "path", None) for f in _sources(model)) if p is not None]
    # The input's own only without files: a directory's changes with any file made beside.
    if not paths and model.root is not None:
        paths.append(model.root)
    for path in paths:
        try:
            stamps.append(os.stat(path).st_mtime)
        except OSError:
            continue
    if not stamps:
        return None
    return datetime.fromtimestamp(max(stamps), timezone.utc)


def _run_json_times(model: Model) -> tuple[datetime | None, datetime | None]:
    if model.root is None or not model.root.is_dir():
        return None, None
    try:
        data = json.loads((model.root / RUN_JSON).read_bytes())
    except (OSError, ValueError, RecursionError):
        return None, None
    if not isinstance(data, dict):
        return None, None
    return _aware(data.get("start")), _aware(data.get("end"))


def _aware(value: Any) -> datetime | None:
    """run.json's ``2026-11-22T17:54:32+0000`` (`time.strftime`'s %z: no colon, which
    `fromisoformat` refuses before Python 3.11)."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.strptime(value, "%Y-%m-%dT%H:%M:%S%z")
    except ValueError:
        return None
    return moment


def _trace_clock(model: Model) -> Clock | None:
    """The job's clock from its first `compilation_metrics` record that has one: its header's
    local stamp against its `end_time_us` (UTC; written together), the offset rounded to the
    quarter hour that every zone's is a multiple of."""
    for source in model.files:
        for rec in source.records:
            if rec.kind != "compilation_metrics":
                continue
            try:
                header = source.header_line(rec)
            except OSError:
                return None
            found = _END_US.search(header)
            head = HEADER.match(header)
            stamp = _GLOG.match(head.group(2).decode("ascii")) if head is not None else None
            if found is None or stamp is None:
                continue
            utc = datetime.fromtimestamp(int(found.group(1)) / 1e6, timezone.utc)
            local = _stamp_in(stamp, utc.year)
            if local is None:
                continue
            quarters = round((local - utc).total_seconds() / 900)
            if abs(quarters) > 4 * 14:  # further than any zone: a year boundary, or nonsense
                continue
            return Clock(utc, timedelta(seconds=900 * quarters), exact=True)
    return None


def _trace_times(model: Model, clock: Clock) -> tuple[datetime | None, datetime | None]:
    firsts = [f.first_ts for f in _sources(model) if f.first_ts]
    lasts = [f.last_ts for f in _sources(model) if f.last_ts]
    # The stamps sort as text within a year (fixed width, month first).
    first = _glog_time(min(firsts), clock) if firsts else None
    last = _glog_time(max(lasts), clock) if lasts else None
    return first, last


def _stamp_in(m: re.Match[str], year: int) -> datetime | None:
    month, day, hour, minute, second = (int(g) for g in m.groups()[:5])
    micro = int((m.group(6) or "0").ljust(6, "0"))
    try:
        return datetime(year, month, day, hour, minute, second, micro, timezone.utc)
    except ValueError:  # 29 February of a year that has none
        return None


def _glog_time(stamp: str, clock: Clock) -> datetime | None:
    """A stamp in UTC: in the year that puts it nearest the clock's anchor, less the offset.
    Without the trace's clock the anchor is the files' newest mtime, which the stamps
    precede: a day's slack (local time against UTC), else the year before."""
    m = _GLOG.match(stamp.strip())
    if m is None:
        return None
    near = clock.anchor + clock.offset
    years = (near.year - 1, near.year, near.year + 1) if clock.exact else (near.year,)
    moments = [t for y in years if (t := _stamp_in(m, y)) is not None]
    if not clock.exact:
        moments = [t for t in moments if (t - near).total_seconds() <= 86_400]
        moments = moments or [t for t in [_stamp_in(m, near.year - 1)] if t is not None]
    if not moments:
        return None
    return min(moments, key=lambda t: abs((t - near).total_seconds())) - clock.offset


# ---------------------------------------------------------------------- the lines


@dataclass
class Line:
    """One run's line, and whether it is an error line (exit 2)."""

    data: dict[str, Any]
    failed: bool


def summary_line(path: str, verify: bool, cache: bool) -> Line:
    """The line of one run: `input`, the times, then `summary --json`'s object; or `input` and
    `error`. Any exception is an error line, never the end of the command: one bad run of a
    thousand must not stop the load of the rest."""
    from tcview.commands.results import Kept

    shown = input_name(path)
    kept = Kept.of(path, KEPT_AS) if cache and not verify else None
    found = kept.lookup() if kept is not None else None
    if isinstance(found, dict) and isinstance(found.get("document"), dict):
        return Line({"input": shown, **found["document"]}, False)
    try:
        made = _made(path, verify, cache)
    except Exception as exc:  # noqa: BLE001 - see the docstring
        made = f"{type(exc).__name__}: {exc}"
    if isinstance(made, str):
        return Line({"input": shown, "error": made}, True)
    if kept is not None:
        kept.store_report({"document": made, "text": ""})
    return Line({"input": shown, **made}, False)


def input_name(path: str) -> str:
    """The path as given, less a trailing separator (`/runs/a/` of a shell glob is `/runs/a`)."""
    stripped = path.rstrip("/" + os.sep)
    return stripped or path


def _made(path: str, verify: bool, cache: bool) -> dict[str, Any] | str:
    """The times and the document of `path`, or why it cannot be read (as `open_input` says
    it, without printing: the line carries it)."""
    from tcview.commands.inputs import input_problem, unreadable
    from tcview.commands.profile import ProfileMissing, joined
    from tcview.ingest.parallel import in_child
    from tcview.report.summary import summary_document, summary_parts

    if path != "-" and not os.path.exists(path):
        return "no such file or directory"
    try:
        model = load_source(path, cache=cache)
    except NotATrace as exc:
        return str(exc)
    except OSError as exc:
        return unreadable(exc, path)
    try:
        problem = input_problem(model, path)
        if problem is not None:
            return problem
        parts = summary_parts(model, verify=verify, aside=in_child)
        doc = summary_document(model, verify=verify, parts=parts)
        try:  # a run directory's own profile, as `summary --json` joins it
            prof = joined(model, path, None)
        except ProfileMissing:
            return "its profile cannot be read (said above)"
        if prof is not None:
            doc["profile"] = prof.json()
        return {**run_times(model), **doc}
    finally:
        model.close()


def dumps(data: dict[str, Any]) -> str:
    """One line: compact, ASCII (a U+2028 in a message ends no line in any reader)."""
    return json.dumps(data, separators=(",", ":"), ensure_ascii=True)


def lines(
    paths: list[str], verify: bool, cache: bool, note: TextIO | None, progress: TextIO | None
) -> Iterator[Line]:
    """Each run's line, in order; `note`: where to say that a directory stands for its runs;
    `progress`: where to say which run is read."""
    runs = runs_of(paths, note)
    for i, path in enumerate(runs, 1):
        if progress is not None:
            print(f"tcview: [{i}/{len(runs)}] {safe_line(path)}", file=progress, flush=True)
        yield summary_line(path, verify, cache)


def jsonl_command(
    paths: list[str], verify: bool, cache: bool, quiet: bool, progress: bool, kinds: list[str]
) -> int:
    """Write the lines; 2 when a run could not be read, else 1 when `kinds` (--fail-on) found
    something in a run, else 0. Errors and what tripped go to stderr."""
    from tcview.analysis.checks import fail_on
    from tcview.commands.failon import found_message

    shown = (progress or sys.stderr.isatty()) and not quiet
    failed = tripped = False
    out = sys.stdout
    note = None if quiet else sys.stderr
    for line in lines(paths, verify, cache, note, sys.stderr if shown else None):
        out.write(dumps(line.data) + "\n")
        out.flush()  # a reader sees each run as it is done
        name = safe_line(str(line.data["input"]))
        if line.failed:
            failed = True
            print(f"tcview: {name}: {safe_line(str(line.data['error']))}", file=sys.stderr)
            continue
        for message in found_message(fail_on(line.data, kinds)):
            tripped = True
            print(f"tcview: {name}: {safe_line(message)}", file=sys.stderr)
    return 2 if failed else 1 if tripped else 0
