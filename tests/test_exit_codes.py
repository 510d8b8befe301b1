"""Issue 40: what a script sees when there is nothing to report or an input cannot be read:
exit 2, one line on stderr naming the path, nothing on stdout, never a traceback."""

from __future__ import annotations

import os
import pathlib
import shutil
from pathlib import Path

import pytest
from conftest import SAMPLES

from tcview.commands.cli import main

SAMPLE = SAMPLES / "cpu_breaks_recompiles"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _commands(path: str) -> list[list[str]]:
    return [
        ["summary", path],
        ["summary", "--json", path],
        ["show", path, "0/0"],
        ["grep", "add", path],
        ["export", "--markdown", path],
        ["diff", "--text", path, str(SAMPLE)],
        ["diff", "--json", str(SAMPLE), path],
    ]


@pytest.mark.parametrize("argv", _commands("{empty}"), ids=" ".join)
def test_no_trace_in_a_directory_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, err = _run(capsys, *(a.format(empty=empty) for a in argv))
    assert (code, out) == (2, "")
    assert err.startswith(f"tcview: no trace found in {empty}. tcview reads"), err
    assert err.count("\n") == 1


@pytest.mark.parametrize("argv", _commands("{other}"), ids=" ".join)
def test_a_text_file_that_is_no_trace_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("# Notes\n\nNothing torch wrote: no trace record, no TORCH_LOGS line.\n")
    code, out, err = _run(capsys, *(a.format(other=other) for a in argv))
    assert (code, out) == (2, "")
    assert err == f"tcview: no trace or TORCH_LOGS line found in {other}\n"


def test_a_trace_still_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "summary", "--no-cache", str(SAMPLE))
    assert (code, err) == (0, "")
    assert out.startswith("Findings")


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A copy of a run directory: its trace files and its torch_logs.txt."""
    copy = tmp_path / "run"
    shutil.copytree(SAMPLE, copy)
    return copy


def test_an_unreadable_trace_beside_a_readable_log_is_said(
    run_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (trace,) = (run_dir / "trace").iterdir()
    access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: Path(p) != trace and access(p, mode))
    code, out, err = _run(capsys, "summary", "--no-cache", str(run_dir))
    # Not the summary of torch_logs.txt in the trace's place.
    assert (code, out) == (2, "")
    assert err == f"tcview: cannot read {trace}: permission denied\n"


def test_an_unreadable_directory_is_said(
    run_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # What a directory without the read and search bits gives whoever is not root.
    is_file = pathlib.Path.is_file

    def denied(self: Path) -> bool:
        if self.parent == run_dir:
            raise PermissionError(13, "Permission denied", str(self))
        return is_file(self)

    monkeypatch.setattr(pathlib.Path, "is_file", denied)
    for argv in _commands(str(run_dir)):
        code, out, err = _run(capsys, *argv)
        assert (code, out) == (2, ""), argv
        assert err.startswith(f"tcview: cannot read {run_dir}/"), err
        assert err.endswith(": Permission denied\n") and "Traceback" not in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files and directories mode 000")
def test_unreadable_files_and_directories_for_real(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (trace,) = (run_dir / "trace").iterdir()
    trace.chmod(0)
    try:
        code, out, err = _run(capsys, "summary", "--no-cache", str(run_dir))
        assert (code, out) == (2, "")
        assert err == f"tcview: cannot read {trace}: permission denied\n"
    finally:
        trace.chmod(0o644)
    run_dir.chmod(0)
    try:
        code, out, err = _run(capsys, "summary", "--no-cache", str(run_dir))
        assert (code, out) == (2, "")
        assert err.startswith(f"tcview: cannot read {run_dir}")
    finally:
        run_dir.chmod(0o755)
