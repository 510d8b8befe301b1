"""Pager and colours on the command line: long output to a terminal goes through $PAGER (as
git does), colour only on a terminal and never with NO_COLOR, nothing but text into a pipe.

The terminal is a pseudo-terminal the test reads itself; the pager is a script that records
what it was given (its input, LESS, its arguments).
"""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
from conftest import REPO, SAMPLES, TCVIEW_CLI

CPU_RUN = SAMPLES / "cpu_breaks_recompiles"
ESCAPE = "\x1b["

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs a pty")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "PAGER", "LESS")}
    env.pop("TCVIEW_PAGER", None)
    env["PYTHONPATH"] = str(REPO)
    env["TERM"] = "xterm-256color"
    env.update(extra)
    return env


def _fake_pager(tmp: Path, name: str = "pager") -> tuple[Path, Path]:
    """A pager that writes what it read and its LESS to files."""
    got = tmp / f"{name}.out"
    script = tmp / f"{name}.sh"
    script.write_text(f'#!/bin/sh\necho "LESS=$LESS" > {got}.env\ncat > {got}\n')
    script.chmod(0o755)
    return script, got


def _in_pty(args: list[str], env: dict[str, str], rows: int = 24, cols: int = 100) -> str:
    """Run tcview with stdin, stdout and stderr on a pseudo-terminal; what it wrote there."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    proc = subprocess.Popen(
        [*TCVIEW_CLI, *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        cwd=REPO,
        close_fds=True,
    )
    os.close(slave)
    out = bytearray()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the other side closed
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    proc.wait(10)
    os.close(master)
    return out.decode("utf-8", "replace")


def _piped(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TCVIEW_CLI, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
    )


def test_piped_output_has_no_escape_codes(tmp_path: Path) -> None:
    pager, got = _fake_pager(tmp_path)
    env = _env(PAGER=str(pager))
    for args in (["summary", "-q", str(CPU_RUN)], ["grep", "recompil", str(CPU_RUN)]):
        out = _piped(args, env)
        assert out.returncode == 0 and out.stdout.count("\n") > 10
        assert ESCAPE not in out.stdout and "\x1b" not in out.stdout
    assert not got.exists(), "no pager when stdout is not a terminal"
    forced = _piped(["grep", "--color=always", "recompil", str(CPU_RUN)], env)
    assert "\x1b[1;31m" in forced.stdout, "--color=always colours a pipe too"


def test_long_output_goes_to_the_pager(tmp_path: Path) -> None:
    pager, got = _fake_pager(tmp_path)
    screen = _in_pty(["summary", "-q", str(CPU_RUN)], _env(PAGER=str(pager)), rows=10)
    assert got.exists(), screen
    text = got.read_text()
    assert text.startswith("\x1b[1mFindings ("), "colour: the pager shows it (less -R)"
    assert "Recompiles (3)" in text
    assert (Path(f"{got}.env")).read_text().strip() == "LESS=FRX"
    assert "Recompiles" not in screen, "the pager got it, not the terminal"


def test_tcview_pager_wins_and_less_settings_are_kept(tmp_path: Path) -> None:
    pager, got = _fake_pager(tmp_path, "ours")
    other, other_got = _fake_pager(tmp_path, "theirs")
    env = _env(PAGER=str(other), TCVIEW_PAGER=str(pager), LESS="-S")
    _in_pty(["grep", "tmp", str(SAMPLES / "gpu_tinyblock")], env, rows=10)
    assert got.exists() and not other_got.exists()
    assert got.read_text().count("\n") > 10
    assert Path(f"{got}.env").read_text().strip() == "LESS=-S"


def test_short_output_is_printed_and_coloured_on_a_terminal(tmp_path: Path) -> None:
    pager, got = _fake_pager(tmp_path)
    args = ["grep", "Recompiling function scale_shift", str(CPU_RUN)]
    screen = _in_pty(args, _env(PAGER=str(pager)), rows=40)
    assert not got.exists(), "it fits on the screen: no pager"
    assert "\x1b[1;31mRecompiling function scale_shift\x1b[0m" in screen
    plain = _in_pty(args, _env(PAGER=str(pager), NO_COLOR="1"), rows=40)
    assert "Recompiling function scale_shift" in plain
    assert ESCAPE not in plain, "NO_COLOR: no colour even on a terminal"
    never = _in_pty([*args, "--color=never"], _env(PAGER=str(pager)), rows=40)
    assert ESCAPE not in never and "Recompiling function scale_shift" in never


def test_summary_no_color_on_a_terminal(tmp_path: Path) -> None:
    pager, got = _fake_pager(tmp_path)
    _in_pty(["summary", "-q", str(CPU_RUN)], _env(PAGER=str(pager), NO_COLOR="1"), rows=10)
    assert got.exists()
    assert ESCAPE not in got.read_text()


def test_diff_output_goes_to_the_pager(tmp_path: Path, fixture_runs: Path) -> None:
    """`tcview diff --text` and `--json` print through the pager like the other commands."""
    a, b = str(fixture_runs / "diff_a"), str(fixture_runs / "diff_b")
    for args, want in (
        (["diff", "--text", a, b], "new      0 → 1×  script.py:7"),
        (["diff", "--json", a, b], '"new_breaks": 1'),
    ):
        pager, got = _fake_pager(tmp_path, args[1].strip("-"))
        screen = _in_pty(args, _env(PAGER=str(pager)), rows=10)
        assert got.exists(), screen
        assert want in got.read_text()
        assert want not in screen, "the pager got it, not the terminal"


def test_json_is_written_in_pieces_as_json_dumps_writes_it() -> None:
    """`emit_json` never holds the whole text, and prints what json.dumps(indent=2) does,
    across the pieces' edges."""
    import io
    import json

    from tcview.commands import pager

    data = {
        "rows": [{"n": i, "s": 'é\x07"', "f": float(i) / 3, "k": {1: None}} for i in range(3000)],
        "nan": float("nan"),
        "t": (1, [2, ()]),
    }
    out = io.StringIO()
    pager.emit_json(data, out)
    assert out.getvalue() == json.dumps(data, indent=2) + "\n"
    assert len(out.getvalue()) > 3 * pager.JSON_BATCH  # more than one piece
