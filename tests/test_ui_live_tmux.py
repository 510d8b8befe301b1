"""First contact in a real terminal (tmux, 120x40): a slow pipe, bare `tcview`, and a toast
that leaves the status bar's counts readable. Each step waits for a condition on screen."""

from __future__ import annotations

import gzip
import shlex
import shutil
import sys
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import FIXTURES, TCVIEW_CLI, needs_torch, unpack_shared
from tmux_helpers import Terminal, need_tmux
from ui_helpers import CPU_SAMPLE, REPO, counts_text, summary_json

pytestmark = [need_tmux, pytest.mark.slow]

COUNT_KEYS = ("compiles", "graph_breaks", "recompiles", "kernels")
Start = Callable[[str, Path], Terminal]


@pytest.fixture
def terminal() -> Iterator[Start]:
    """Start a command in a 120x40 terminal of its own; closed afterwards."""
    started: list[Terminal] = []

    def start(command: str, cwd: Path) -> Terminal:
        env = f"PYTHONPATH={shlex.quote(str(REPO))} TCVIEW_PREVIEW=auto"
        term = Terminal(f"cd {shlex.quote(str(cwd))} && export {env} && {command}", (120, 40))
        started.append(term)
        return term.start()

    yield start
    for term in started:
        term.close()


def _tcview(*args: str) -> str:
    return " ".join(map(shlex.quote, [*TCVIEW_CLI, *args]))


def _captures() -> list[Path]:
    """A committed capture, and a bigger shared one when ../shared is there."""
    out = [FIXTURES / "torch_logs_small.txt"]
    shared = unpack_shared()
    if shared is not None:
        out.append(shared / "h200-torch2.11" / "gpt_train" / "torch_logs.txt")
    return out


@pytest.mark.parametrize("capture", _captures(), ids=lambda p: p.parent.name)
def test_slow_pipe_waits_then_shows_the_summary_counts(terminal: Start, capture: Path) -> None:
    expected = counts_text(summary_json(capture))
    term = terminal(f"(sleep 4; cat {shlex.quote(str(capture))}) | {_tcview('open', '-')}", REPO)
    term.wait_for("waiting for input on stdin")
    # The same counts in the overview and in the status bar.
    screen = term.wait_for(lambda s: s.count(expected) >= 2, what=f"{expected!r} twice")
    assert screen.splitlines()[-2].rstrip().endswith(expected), screen


@pytest.mark.parametrize("piped", ["capture.gz", "trace.tar.gz", "trace.log"])
def test_a_piped_archive_or_trace_is_read_as_what_it_holds(
    terminal: Start, tmp_path: Path, piped: str
) -> None:
    """What a pipe carries is known by its first bytes: an archive is unpacked (into the
    cache) and read as what it holds, a trace file as a trace; neither is read as lines of
    TORCH_LOGS text (which found no compile in either)."""
    trace_file = next((CPU_SAMPLE / "trace").glob("*.log"))
    source = {
        "capture.gz": FIXTURES / "torch_logs_small.txt",
        "trace.tar.gz": CPU_SAMPLE / "trace",
        "trace.log": trace_file,
    }[piped]
    pipe = tmp_path / piped
    if piped == "capture.gz":
        pipe.write_bytes(gzip.compress(source.read_bytes()))
    elif piped == "trace.tar.gz":
        with tarfile.open(pipe, "w:gz") as tar:
            tar.add(source, arcname="trace")
    else:
        pipe.write_bytes(source.read_bytes())
    expected = counts_text(summary_json(source))
    assert not expected.startswith("compiles 0"), expected
    cache = tmp_path / "cache"
    term = terminal(
        f"cat {shlex.quote(str(pipe))} | env -u TCVIEW_NO_CACHE"
        f" TCVIEW_CACHE_DIR={shlex.quote(str(cache))} {_tcview('open', '-')}",
        tmp_path,
    )
    term.wait_for(
        lambda s: s.count(expected) >= 2 and "input ended" in s.splitlines()[-2],
        what=f"{expected!r} twice, the input ended",
    )
    copies = list((cache / "archives").iterdir()) if (cache / "archives").exists() else []
    assert bool(copies) == piped.endswith(".gz"), copies  # a copy of an archive, in the cache


def test_bare_tcview_opens_the_newest_trace_here(terminal: Start, tmp_path: Path) -> None:
    shutil.copytree(CPU_SAMPLE / "trace", tmp_path / "job" / "trace")
    expected = counts_text(summary_json(tmp_path / "job" / "trace"))
    term = terminal(f"env -u TORCH_TRACE {_tcview()}", tmp_path)
    screen = term.wait_for(expected)
    assert "static" in screen, screen


@needs_torch  # `tcview run` checks that the job's Python has torch
def test_a_toast_leaves_the_status_bar_counts_readable(terminal: Start, tmp_path: Path) -> None:
    job = f"{shlex.quote(sys.executable)} -c {shlex.quote('print(1)')}"
    command = f"{_tcview('run', '--dir', str(tmp_path / 'D'))} -- {job}"
    term = terminal(command, tmp_path)
    screen = term.wait_for("u reruns it, q quits")  # the toast
    status = screen.splitlines()[-2]
    assert status.startswith(" exited 0"), screen
    assert status.rstrip().endswith(counts_text(dict.fromkeys(COUNT_KEYS, 0))), screen


def test_ranks_typed_with_enter_in_one_write_are_applied(
    terminal: Start, fixture_runs: Path
) -> None:
    term = terminal(_tcview("open", str(fixture_runs / "ranks_diverge" / "trace")), REPO)
    term.wait_for("2 ranks")
    term.keys("#")
    term.wait_for("enter applies")
    term.keys("1", "Enter")  # one send-keys, so one write: the way a paste or a script types
    term.wait_for("rank 1 of 2", what="the rank filter applied")
