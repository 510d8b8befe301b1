"""The command line as a new user meets it: bare `tcview`, files of neither format, and
progress that never reaches a log file. Run as a subprocess, stderr a pipe (not a terminal)."""

from __future__ import annotations

import argparse
import gzip
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, RUNS, SAMPLES, TCVIEW_CLI, unpack_shared
from ui_helpers import GPU_SAMPLE, REPO

from tcview.ingest.detect import detect

HOSTILE = FIXTURES / "hostile"


def tcview(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """Run the CLI with stdout and stderr pipes; their text keeps every `\r`."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("TORCH_TRACE", None)
    out = subprocess.run(
        [*TCVIEW_CLI, *args],
        capture_output=True,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    return subprocess.CompletedProcess(
        out.args, out.returncode, out.stdout.decode(), out.stderr.decode()
    )


# ---------------------------------------------------------------- 10.5: bare tcview


def test_bare_tcview_is_tcview_open(tmp_path: Path) -> None:
    out = tcview(cwd=tmp_path)  # nothing here: open's own message, not an argparse error
    assert out.returncode == 2
    assert out.stderr.startswith("tcview open: no trace given"), out.stderr
    (tmp_path / "job" / "trace").mkdir(parents=True)
    trace = next((GPU_SAMPLE / "trace").iterdir())
    (tmp_path / "job" / "trace" / trace.name).write_bytes(trace.read_bytes())
    out = tcview(cwd=tmp_path)  # a trace here: found, then open wants a terminal
    assert out.returncode == 2
    assert out.stderr.startswith("tcview open: needs a terminal"), out.stderr


def test_help_still_works() -> None:
    """The whole command line is built for help and errors; a command's own parser alone when
    it is named (see `build_parser`), with the same help."""
    from tcview.commands.cli import COMMANDS, build_parser

    out = tcview("--help")
    assert out.returncode == 0 and out.stdout.startswith("usage: tcview")
    assert "{" + ",".join(COMMANDS) + "}" in out.stdout
    wrong = tcview("sumary", "x")
    assert wrong.returncode == 2 and "invalid choice: 'sumary'" in wrong.stderr
    unknown = tcview("summary", "x", "--bogus")  # said by the whole command line, as ever
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("usage: tcview [-h] {" + ",".join(COMMANDS) + "}")
    for name in COMMANDS:
        assert _command_help(build_parser(), name) == _command_help(build_parser(name), name)


def _command_help(parser: argparse.ArgumentParser, name: str) -> str:
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return str(commands.choices[name].format_help())


def test_a_kept_report_is_printed_without_the_analyses(tmp_path: Path) -> None:
    """`tcview summary` again on an unchanged trace prints the kept report: the process never
    imports the analyses, the report makers, the indexer or the model (finding the input's
    files needs `detect`'s rules alone): a reopen of the big file 0.11 -> 0.07 s."""
    trace = tmp_path / "trace"
    trace.mkdir()
    src = next((SAMPLES / "cpu_breaks_recompiles" / "trace").iterdir())
    (trace / src.name).write_bytes(src.read_bytes())
    env = dict(os.environ, PYTHONPATH=str(REPO), TCVIEW_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("TCVIEW_NO_CACHE", None)
    probe = (
        "import sys; from tcview.commands.cli import main; code = main(sys.argv[1:]);"
        " heavy = [m for m in ('tcview.analysis.findings', 'tcview.report.summary',"
        " 'tcview.ingest.index', 'tcview.ingest.tracefile', 'tcview.model.objects')"
        " if m in sys.modules]; print('HEAVY', heavy, file=sys.stderr)"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", probe, "summary", "--json", "-q", str(trace)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        for _ in range(2)
    ]
    assert runs[0].stdout == runs[1].stdout and '"compiles"' in runs[0].stdout
    assert "HEAVY ['tcview.analysis.findings'" in runs[0].stderr  # made: read and analysed
    assert "HEAVY []" in runs[1].stderr, runs[1].stderr


# ---------------------------------------------------------------- 10.6: neither format


def _binaries(tmp: Path) -> dict[str, Path]:
    rng = random.Random(6)
    trace = next((GPU_SAMPLE / "trace").iterdir()).read_bytes()
    files = {
        "elf": b"\x7fELF\x02\x01\x01\x00" + bytes(rng.randrange(256) for _ in range(4000)),
        "gzip": gzip.compress(trace),
        "random": rng.randbytes(100_000),
        "png": b"\x89PNG\r\n\x1a\n" + bytes(2000),
        "utf16": "I1121 05:22:57.259000 635 torch/_dynamo/x.py:12] hello\n".encode("utf-16"),
    }
    out = {}
    for name, data in files.items():
        path = tmp / f"{name}.bin"
        path.write_bytes(data)
        out[name] = path
    return out


@pytest.mark.unit
def test_binary_files_are_neither_format(tmp_path: Path) -> None:
    for name, path in _binaries(tmp_path).items():
        # a gzipped trace is read from its unpacked copy (archives.py)
        assert detect(str(path)) == ("archive" if name == "gzip" else "other"), name


def _real_inputs(unpacked_runs: Path) -> list[Path]:
    """Every real file: samples, fixtures (the archived runs unpacked), the shared traces."""
    roots = [SAMPLES, FIXTURES, unpacked_runs]
    shared = unpack_shared()
    if shared is not None:
        roots.append(shared)
    files = (p for root in roots for p in root.rglob("*") if p.is_file())
    # The archived runs (and the corpus's run.tar.xz and fixed.tar.xz) are checked unpacked;
    # bytecode is not an input, nor a profiler trace (gzip: `--profile` reads it).
    profiles = (
        ".json.gz",
    )  # torch.profiler traces, as export_chrome_trace and TensorBoard write them
    return sorted(
        p
        for p in files
        if p.parent != RUNS
        and p.suffix != ".pyc"
        and not p.name.endswith(profiles)
        and p.name not in ("run.tar.xz", "fixed.tar.xz")
    )


@pytest.mark.unit
def test_no_real_trace_or_capture_is_taken_for_binary(fixture_runs: Path) -> None:
    inputs = _real_inputs(fixture_runs)
    assert any(p.name == "torch_logs.txt" and p.is_relative_to(fixture_runs) for p in inputs)
    assert any(p.parent == HOSTILE for p in inputs)
    wrong = [p for p in inputs if detect(str(p)) == "other"]
    assert wrong == []
    for path in HOSTILE.glob("*.log"):  # NUL bytes, invalid UTF-8: still traces
        assert detect(str(path)) == "trace-file", path.name


@pytest.mark.parametrize("command", ["summary", "open"])
def test_a_binary_file_gets_a_clear_message(tmp_path: Path, command: str) -> None:
    path = _binaries(tmp_path)["elf"]
    out = tcview(command, str(path))
    assert out.returncode == 2
    assert out.stdout == ""
    assert out.stderr.startswith(f"tcview: {path}: not a trace or TORCH_LOGS capture: 4.0 kB")
    assert 'starts with 7f 45 4c 46 02 01 01 00 … ("\\x7fELF\\x02\\x01\\x01\\x00' in out.stderr
    assert "\x7f" not in out.stderr and "\x00" not in out.stderr


@pytest.mark.parametrize("flag", [[], ["--json"]])
def test_summary_of_an_empty_directory_says_no_trace_was_found(
    tmp_path: Path, flag: list[str]
) -> None:
    out = tcview("summary", *flag, str(tmp_path))
    assert out.returncode == 2  # a CI gate must not pass on nothing
    assert out.stderr.startswith(f"tcview: no trace found in {tmp_path}. tcview reads")
    assert out.stdout == ""
    traced = tcview("summary", str(SAMPLES / "cpu_breaks_recompiles"))
    assert traced.returncode == 0 and traced.stderr == ""


# ---------------------------------------------------------------- 10.8: progress


@pytest.fixture(scope="module")
def big_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A trace over 64 MB (the old rule showed progress past that size on any stderr)."""
    data = next((GPU_SAMPLE / "trace").iterdir()).read_bytes()
    path = tmp_path_factory.mktemp("big") / "dedicated_log_torch_trace_big.log"
    with open(path, "wb") as fh:
        for _ in range((65 << 20) // len(data) + 1):
            fh.write(data)
    return path


def test_summary_writes_no_progress_to_a_pipe(big_trace: Path) -> None:
    out = tcview("summary", "--json", str(big_trace))
    assert out.returncode == 0, out.stderr
    assert "\r" not in out.stderr and "indexing" not in out.stderr


def test_progress_flag_asks_for_it(big_trace: Path) -> None:
    out = tcview("summary", "--json", "--progress", str(big_trace))
    assert out.returncode == 0
    assert "\rindexing" in out.stderr and out.stderr.endswith("\n")
    quiet = tcview("summary", "--json", "--progress", "-q", str(big_trace))
    assert quiet.stderr == ""


@pytest.mark.parametrize(
    "command",
    [
        ["summary"],
        ["show", "{p}", "0/0"],
        ["grep", "x"],
        ["export", "--markdown"],
        ["bench"],
        ["open"],
    ],
)
def test_a_missing_input_is_said_once_and_safely(command: list[str], tmp_path: Path) -> None:
    missing = str(tmp_path / "gone\x1b]0;title\x07")
    args = [a.replace("{p}", missing) for a in command]
    out = tcview(*args) if "{p}" in command else tcview(*args, missing)
    assert out.returncode == 2
    assert out.stderr.startswith(f"tcview: no such file or directory: {tmp_path}/gone"), out.stderr
    assert "\x1b" not in out.stderr and "\x07" not in out.stderr
    assert out.stderr.count("\n") == 1


def test_diff_says_which_input_is_missing(tmp_path: Path) -> None:
    out = tcview("diff", str(SAMPLES / "gpu_tinyblock"), str(tmp_path / "gone\x1b[2J"))
    assert out.returncode == 2
    assert out.stderr.startswith(f"tcview: no such file or directory: {tmp_path}/gone")
    assert "\x1b" not in out.stderr


def test_the_command_collects_garbage_seldom(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """As the process's entry point, `main` raises the collector's thresholds: an index is
    millions of objects that live as long as the process (8-9% of a big `summary`). Called
    with an argv (as the tests call it) it leaves the process's settings alone."""
    import gc

    from tcview.commands import cli

    before = gc.get_threshold()
    try:
        assert cli.main(["summary", "--json", "--no-cache", str(GPU_SAMPLE)]) == 0
        assert gc.get_threshold() == before
        argv = ["tcview", "summary", "--json", "--no-cache", str(GPU_SAMPLE)]
        monkeypatch.setattr(sys, "argv", argv)
        assert cli.main() == 0
        assert gc.get_threshold() == cli.GC_THRESHOLDS != before
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()
    assert '"compiles"' in capsys.readouterr().out
