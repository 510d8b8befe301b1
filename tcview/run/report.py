"""What `tcview run` prints when the job ends: the run directory's summary and a status line.

Both front ends use it: the headless runner (run/cli.py) and the TUI's Run pane (ui/run_pane.py)
after the app closed. It reads the finished run directory; it never imports a UI.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tcview.ingest.index import TraceSet
from tcview.ingest.profile import ProfileError, run_profile
from tcview.ingest.source import load_source
from tcview.model.objects import Model
from tcview.report.detail import render_text
from tcview.report.profile import join_at
from tcview.report.summary import (
    counts_line,
    crash_lines,
    summary_json,
    summary_parts,
    summary_text,
)
from tcview.run.gpu import datasheet_peak
from tcview.run.profiling import window_lines
from tcview.run.session import RunSession, RunStatus
from tcview.text.safe import safe_text


@dataclass(frozen=True)
class Report:
    text: str  # the summary, then the status line; safe for a terminal
    summary: dict[str, Any]  # `tcview summary --json` of the run directory
    counts: dict[str, int]  # the status-bar counts of its trace


def finish_report(session: RunSession, status: RunStatus) -> Report:
    """The `summary` of the run directory and one status-bar line with the counts."""
    counts, summary, body = load_counts(session.run_dir)
    line = status_line(status, counts)
    return Report(f"{body}\n\n{line}" if body else line, summary, counts)


def status_line(status: RunStatus, counts: dict[str, int]) -> str:
    """``exited 0 · 12.3s · compiles 4 · breaks 3 · recompiles 1 · kernels 3``."""
    return f"{status.text} · {status.elapsed_s:.1f}s · {counts_line(counts)}"


def load_counts(run_dir: Path) -> tuple[dict[str, int], dict[str, Any], str]:
    """(status-bar counts of run_dir/trace, summary_json, summary_text) of a finished run."""
    trace_dir = run_dir / "trace"
    has_trace = trace_dir.is_dir() and any(trace_dir.iterdir())
    ts = TraceSet.load(trace_dir) if has_trace else TraceSet(trace_dir)
    counts = ts.counts()
    if not has_trace:
        note = f"no trace was written to {trace_dir} (did the job run torch.compile?)"
        note = "\n".join([note, *window_lines(run_dir)])
        try:  # its captured output and run.json may still say it crashed
            whole = load_source(str(run_dir))
        except Exception:  # noqa: BLE001 - the note is all there is to say then
            return counts, summary_json(ts), note
        crashed = "\n".join(crash_lines(whole))
        return counts, summary_json(whole), safe_text(f"{crashed}\n\n{note}" if crashed else note)
    try:
        # The trace plus torch_logs.txt; the run's own files (run.json…) are not reported.
        whole = load_source(str(run_dir))
        parts = summary_parts(whole)
        body = summary_text(whole, parts=parts)
    except Exception:  # noqa: BLE001 - a log we cannot read still leaves the trace's summary
        whole = ts
        parts = summary_parts(ts)
        body = summary_text(ts, parts=parts)
    summary = parts.counts
    profile, said = profile_report(run_dir, whole)
    if profile is not None:
        summary["profile"] = profile
    return counts, summary, safe_text(f"{body}\n{said}" if said else body)


def profile_report(run_dir: Path, model: Model) -> tuple[dict[str, Any] | None, str]:
    """A run's profile (`tcview run --profile`) joined to its trace: the summary's
    ``profile``, and the text: what each process said about its window, the top kernels."""
    lines = window_lines(run_dir)
    path = run_profile(run_dir)
    if path is None:
        return None, "\n".join(lines)
    try:
        found = join_at(model, path, str(path), datasheet_peak)
    except (ProfileError, OSError) as exc:
        lines.append(f"profile {path}: {exc}")
        return None, "\n".join(lines)
    return found.json(), "\n".join([*lines, "", render_text(found.detail())])
