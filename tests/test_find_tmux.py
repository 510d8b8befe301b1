"""Search and jumps in a real terminal (tmux): global search to a kernel's line, `y` puts an OSC 52
sequence carrying the kernel's source on the terminal (the raw bytes, read with pipe-pane),
`e` on a break location runs $EDITOR with +LINE FILE and the app comes back after it."""

from __future__ import annotations

import base64
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO, SAMPLES, unpack_shared

from tcview.analysis.kernels import OUTPUT_CODES
from tcview.ingest.source import load_source
from tcview.report.search import Query, search
from tcview.ui.take import kernel_source

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
SIZE = (140, 42)
OSC52 = re.compile(rb"\x1b\]52;c;([A-Za-z0-9+/=]*)(?:\x07|\x1b\\)")


def _tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=False).stdout


def _wait(what: Callable[[], bool], limit: float = 30.0) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if what():
            return True
        time.sleep(0.1)
    return what()


@dataclass
class Pane:
    name: str
    pipe: Path

    def screen(self) -> str:
        return _tmux("capture-pane", "-p", "-t", self.name)

    def wait_for(self, text: str, limit: float = 30.0) -> str:
        _wait(lambda: text in self.screen(), limit)
        screen = self.screen()
        assert text in screen, screen
        return screen

    def keys(self, *keys: str) -> None:
        _tmux("send-keys", "-t", self.name, *keys)

    def type(self, text: str) -> None:
        _tmux("send-keys", "-t", self.name, "-l", text)

    def alive(self) -> bool:
        probe = subprocess.run(["tmux", "has-session", "-t", self.name], capture_output=True)
        return probe.returncode == 0


@contextmanager
def tcview_in_tmux(tmp: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[Pane]:
    name = f"tcview-find-{uuid.uuid4().hex[:8]}"
    pipe = tmp / "pane.out"
    pipe.touch()
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in (env or {}).items())
    command = (
        # -u: a tmux server started elsewhere may hand its panes an 80x24 COLUMNS and LINES
        f"cd {shlex.quote(str(REPO))} && env -u COLUMNS -u LINES {exports} TERM=xterm-256color "
        f"{shlex.quote(sys.executable)} -m tcview.commands.cli open {shlex.join(args)}"
    )
    _tmux("new-session", "-d", "-s", name, "-x", str(SIZE[0]), "-y", str(SIZE[1]), command)
    _tmux("pipe-pane", "-o", "-t", name, f"cat >> {shlex.quote(str(pipe))}")
    try:
        yield Pane(name, pipe)
    finally:
        _tmux("kill-session", "-t", name)


def _gpu_trace() -> Path:
    shared = unpack_shared()
    if shared is not None:
        return shared / "h200-torch2.11" / "gpt_train" / "trace"
    return SAMPLES / "gpu_tinyblock" / "trace"


def _unique_kernel_line(trace: Path) -> tuple[str, str, int]:
    """(kernel, text, output-code line): a line of one kernel's source found nowhere else."""
    model = load_source(str(trace))
    for kernel in reversed(model.kernels):
        code = OUTPUT_CODES.get(kernel.output)
        lines, span = code.lines, code.span_of(kernel)
        assert span is not None
        for number in range(span.start + 2, span.end):
            text = lines[number].strip()
            if len(text) < 16 or len(text) > 60 or "'" in text:
                continue
            hits = list(search(model, Query(text)))
            if len(hits) == 1 and hits[0].kernel is not None:
                return kernel.name, text, number + 1
    raise AssertionError(f"no line unique to one kernel in {trace}")


def test_tmux_global_search_jumps_to_the_kernel_line(tmp_path: Path) -> None:
    trace = _gpu_trace()
    kernel, text, line = _unique_kernel_line(trace)
    with tcview_in_tmux(tmp_path, str(trace)) as pane:
        pane.wait_for("kernels ")
        pane.keys("S")
        pane.wait_for("Search everything")
        pane.type(text)
        pane.keys("Enter")
        pane.wait_for("1 matching lines in 1 groups")
        pane.keys("Down", "Enter")
        screen = pane.wait_for(f"/{text}: 1/1"[:30])  # the viewer's subtitle: 1 of 1 match
        assert "Search everything" not in screen
        assert f"kernel {kernel}"[:40] in screen, screen  # the viewer's title
        row = next(r for r in screen.splitlines() if text in r)
        assert re.search(rf"\b{line} │", row), f"line {line} in the gutter: {screen}"


def test_tmux_y_on_a_kernel_puts_its_source_in_osc52(tmp_path: Path) -> None:
    trace = _gpu_trace()
    model = load_source(str(trace))
    kernel = [k for k in model.kernels if k.method == "triton"][-1]
    source = kernel_source(kernel)
    with tcview_in_tmux(tmp_path, str(trace), "--goto", kernel.name) as pane:
        pane.wait_for(f"─ kernel {kernel.name}"[:40])  # the viewer's title
        pane.wait_for("kernels ")  # the status bar's counts: the load is over
        pane.keys("y")
        assert _wait(lambda: OSC52.search(pane.pipe.read_bytes()) is not None), pane.screen()
        found = OSC52.findall(pane.pipe.read_bytes())
        assert len(found) == 1, "one clipboard sequence for one y"
        assert base64.b64decode(found[0]).decode() == source
        pane.wait_for(f"copied {len(source.encode())} bytes")


def test_tmux_e_on_a_break_runs_the_editor_and_comes_back(tmp_path: Path) -> None:
    argv = tmp_path / "argv.txt"
    editor = tmp_path / "editor.sh"
    editor.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {argv}\n')
    editor.chmod(0o755)
    trace = SAMPLES / "cpu_breaks_recompiles" / "trace"
    gb = load_source(str(trace)).breaks[0]
    path, _, line = gb.location.rpartition(":")
    recorded = "/work/main/sample_traces"  # where the sample was recorded
    local = SAMPLES / path.removeprefix(recorded + "/")
    assert local.is_file()
    env = {"EDITOR": str(editor), "VISUAL": ""}
    with tcview_in_tmux(tmp_path, str(trace), f"--map-path={recorded}={SAMPLES}", env=env) as pane:
        pane.wait_for("kernels ")
        pane.keys("b")
        pane.wait_for("Graph breaks")
        pane.keys("e")
        assert _wait(argv.exists), pane.screen()
        assert argv.read_text().split("\n")[:2] == [f"+{line}", str(local)]
        pane.wait_for("Graph breaks")  # the app is back, on the same view
        pane.keys("q")
        assert _wait(lambda: not pane.alive(), 15), "q quits after the editor returned"
