"""Hostile input: crafted traces open, show their text literally, and the damage is counted."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, SAMPLES, TCVIEW_CLI
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from refcount import count
from tmux_helpers import Terminal, need_tmux

from tcview.ingest.index import TraceSet
from tcview.ingest.source import load_source
from tcview.ingest.textlog import TextLog
from tcview.report.summary import summary_json, summary_text
from tcview.text.safe import safe_text

HOSTILE = FIXTURES / "hostile"
CASES = sorted(HOSTILE.glob("*.log"))
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f]")
KEYS = ("records", "compiles", "graph_breaks", "recompiles", "kernels", "unparsed_lines")


def assert_no_control_characters(screen: str) -> None:
    bad = UNSAFE.search(screen)
    assert bad is None, f"{bad.group()!r} on screen at {bad.start()}:\n{screen}"


def test_fixtures_are_current() -> None:
    sys.path.insert(0, str(HOSTILE))
    try:
        import make_hostile
    finally:
        sys.path.pop(0)
    built = make_hostile.build()
    assert sorted(built) == [p.name for p in CASES], "every fixture is built, and only those"
    for name, data in built.items():
        assert (HOSTILE / name).read_bytes() == data, f"regenerate {name}"


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.name)
def test_hostile_file_opens_counts_and_prints_safely(path: Path) -> None:
    model = load_source(str(path))
    assert isinstance(model, TraceSet), "a damaged trace is still read as a trace"
    data = summary_json(model, verify=True)
    ref = count([path])
    assert {k: data[k] for k in KEYS} == {k: ref[k] for k in KEYS}
    text = safe_text(summary_text(model, verify=True))
    assert not UNSAFE.search(text)
    for rec in (r for tf in model.files for r in tf.records):
        assert not UNSAFE.search(safe_text(rec.payload()))


def test_damage_is_counted() -> None:
    def damage(name: str) -> dict:
        return summary_json(load_source(str(HOSTILE / name)), verify=True)["damage"]

    assert damage("truncated.log")["truncated_records"] == 1
    assert damage("md5_mismatch.log")["md5_mismatches"] == 1
    assert damage("wrong_types.log")["bad_headers"] == 6
    assert damage("missing_strings.log")["missing_strings"] == 2
    assert damage("nul_invalid_utf8.log")["unparsed_lines"] == 3
    assert damage("deep_stacks.log")["unparsed_lines"] == 1
    assert all(v == 0 for v in damage("escapes.log").values())


def test_markup_and_escapes_stay_literal() -> None:
    model = load_source(str(HOSTILE / "markup.log"))
    gb = model.breaks[0]
    assert gb.reason.startswith("[bold red]not bold[/] [link=https://evil.example]")
    text = summary_text(load_source(str(HOSTILE / "escapes.log")))
    shown = safe_text(text)
    assert "\x1b" not in shown and "\x07" not in shown
    assert "␛]0;PWNED TITLE␇" in shown


def test_ten_megabyte_lines(tmp_path: Path) -> None:
    sys.path.insert(0, str(HOSTILE))
    try:
        from make_hostile import record
    finally:
        sys.path.pop(0)
    huge = "y" * (10 << 20)
    data = (
        record({"artifact": {"name": "huge", "encoding": "string"}, "frame_id": 0}, huge)
        + b"z" * (10 << 20)
        + b"\n"
        + record({"artifact": {"name": "after", "encoding": "string"}, "frame_id": 0}, "ok")
    )
    path = tmp_path / "dedicated_log_torch_trace_huge.log"
    path.write_bytes(data)
    model = TraceSet.load(path)
    s = model.summary_counts(verify=True)
    assert (s["records"], s["unparsed_lines"], s["md5_mismatches"]) == (2, 1, 0)
    log = TextLog.load(str(path))
    assert log.summary_counts()["compiles"] == 0


# ---------------------------------------------------------------- fuzzing

FRAGMENTS = [
    b"V1121 05:00:00.000000 1 x.py:1] ",
    b"[rank0]:",
    b'{"chromium_event": {}, "frame_id": 0, "frame_compile_id": 0, "attempt": 0}',
    b'{"artifact": {"name": "dynamo_graph_break_reason"}, "frame_id": 1, "has_payload": "x"}',
    b'{"inductor_output_code": {}, "frame_id": 0, "frame_compile_id": 1}',
    b"\ttriton_poi_fused_0 = async_compile.triton('x', '''",
    b"\tcpp_fused_1 = async_compile.cpp_pybinding(['float*'], r'''",
    b"\t",
    b"\n",
    b"\r\n",
    b"[0/0] [__graph_breaks] Graph break in user code at /x.py:3",
    b"[0/1] [__recompiles] Recompiling function f in /x.py:1",
    b"[__output_code] Output code:",
    b"\x1b[31m",
    b"\xff\xfe\x00",
    b"{",
    b"}",
    b'"',
]


def _soup(parts: list[int], noise: bytes) -> bytes:
    return b"".join(FRAGMENTS[i % len(FRAGMENTS)] for i in parts) + noise


@settings(
    max_examples=int(os.environ.get("TCVIEW_FUZZ_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.lists(st.integers(0, 100), max_size=300), st.binary(max_size=200))
def test_fuzz_parsers_never_raise(tmp_path: Path, parts: list[int], noise: bytes) -> None:
    data = _soup(parts, noise)
    path = tmp_path / "dedicated_log_torch_trace_fuzz.log"
    path.write_bytes(data)
    trace = TraceSet.load(path)
    summary_text(trace, verify=True)
    assert trace.summary_counts()["records"] == count([path])["records"]
    log = TextLog.load(str(path))
    summary_text(log)
    log.close()
    trace.close()


def _time_index(data: bytes, tmp_path: Path) -> float:
    path = tmp_path / "dedicated_log_torch_trace_t.log"
    path.write_bytes(data)
    best = float("inf")
    for _ in range(3):
        # CPU time of this process: other processes on a loaded machine (parallel workers)
        # stretch wall time, not the work done
        t = time.process_time()
        TraceSet.load(path)
        TextLog.load(str(path))
        best = min(best, time.process_time() - t)
    return best


def test_time_grows_linearly_with_input(tmp_path: Path) -> None:
    unit = (
        _soup(list(range(60)) * 4, b"\n")
        + (SAMPLES / "cpu_breaks_recompiles" / "torch_logs.txt").read_bytes()[:20000]
    )
    small = _time_index(unit * 20, tmp_path)
    big = _time_index(unit * 80, tmp_path)
    assert big / small < 8, (small, big)  # 4x the input: about 4x the time, never quadratic


# ---------------------------------------------------------------- read-only, no writes


def _listing(root: Path) -> list[tuple]:
    out: list[tuple] = []
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            st_ = (Path(dirpath) / name).stat()
            out.append((dirpath, name, st_.st_size, st_.st_mtime_ns))
        out.append((dirpath, None, 0, Path(dirpath).stat().st_mtime_ns))
    return sorted(out, key=repr)


@pytest.mark.e2e
def test_read_only_trace_dir_opens_and_nothing_is_written(tmp_path: Path) -> None:
    root = tmp_path / "ro"
    shutil.copytree(SAMPLES / "cpu_breaks_recompiles", root)
    before = _listing(root)
    modes = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(dirpath) / name
            modes[p] = p.stat().st_mode
    for p in sorted(modes, key=lambda p: -len(p.parts)):
        p.chmod(modes[p] & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    root.chmod(0o555)
    try:
        out = subprocess.run(
            [*TCVIEW_CLI, "summary", "--json", "--verify", str(root)],
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["compiles"] == 5
        model = load_source(str(root))
        for rec in (r for tf in model.files for r in tf.records):
            rec.payload()
        assert _listing(root) == before
    finally:
        root.chmod(0o755)
        for p in modes:
            p.chmod(modes[p])
    assert not any(p.name.startswith(".") for p in root.rglob("*"))
    assert REPO.exists()


# ---------------------------------------------------------------- a real terminal


@pytest.mark.e2e
@need_tmux
@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "goto", "shown"),
    [
        ("escapes.log", "0/0", "␛]0;PWNED TITLE␇"),
        ("markup.log", "0/0", "[bold red]not bold[/] [link=https://"),
        ("bidi.log", "0/0", "<U+202E>exe.txt"),
    ],
)
def test_real_terminal_title_untouched_and_text_literal(name: str, goto: str, shown: str) -> None:
    command = (
        f"cd {shlex.quote(str(REPO))} && TCVIEW_PREVIEW=auto {shlex.quote(sys.executable)} "
        f"-m tcview.commands.cli open {shlex.quote(str(HOSTILE / name))} --goto {goto}"
    )
    with Terminal("sleep 600", size=(160, 45)) as term:
        title = term.pane("#{pane_title}")
        term.respawn(command)
        term.wait_for(shown)
        assert term.pane("#{pane_title}") == title
        term.keys("q")
        assert term.wait_ended(what="q to quit tcview") == 0
        assert term.pane("#{pane_title}") == title


@pytest.mark.app
def test_the_app_writes_nothing_into_a_read_only_trace(tmp_path: Path) -> None:
    from ui_helpers import ready, settle, sync

    from tcview.ui.app import TcviewApp
    from tcview.ui.options import OpenOptions

    root = tmp_path / "ro"
    shutil.copytree(SAMPLES / "gpu_triton_user", root)
    before = _listing(root)
    for p in sorted(root.rglob("*"), key=lambda p: -len(p.parts)):
        p.chmod(0o555 if p.is_dir() else 0o444)
    root.chmod(0o555)

    @sync
    async def browse() -> None:
        app = TcviewApp(OpenOptions(str(root), follow=True))
        async with app.run_test(size=(120, 40)) as pilot:
            await ready(app, pilot)
            for key in ("j", "j", "enter", "j", "K", "escape", "t", "escape", "o", "escape"):
                await pilot.press(key)
            await settle(app, pilot)

    try:
        browse()
        assert _listing(root) == before
    finally:
        for p in [root, *root.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)


@pytest.mark.app
def test_markup_in_names_titles_search_and_palette_does_not_break_the_app(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ui_helpers import ready, screen_text, settle, sync

    from tcview.ui.app import TcviewApp

    sys.path.insert(0, str(HOSTILE))
    try:
        from make_hostile import PREFIX, record
    finally:
        sys.path.pop(0)
    ids = {"frame_id": "[/]", "frame_compile_id": 0, "attempt": 0}
    path = tmp_path / "x[" / "y]" / "dedicated_log_torch_trace_[/b].log".replace("/", "")
    path.parent.mkdir(parents=True)
    path.write_bytes(
        record({"artifact": {"name": "[/]", "encoding": "string"}, **ids}, "[/] [red]x")
        + record({"[/bold]": {}, **ids}, "[/]")
        + record({"inductor_output_code": {}, **ids}, "k_0 = async_compile.triton('k', '''\n''')")
        + (PREFIX + "[/] not json\n").encode()
    )

    @sync
    async def browse() -> None:
        app = TcviewApp(str(path.parent.relative_to(tmp_path)))  # short: all of it on screen
        async with app.run_test(size=(100, 30), notifications=True) as pilot:
            await ready(app, pilot)
            screens.append(screen_text(app))
            for key in ("j", "enter", "j", "j", "enter", "j", "enter", "j", "enter", "tab"):
                await pilot.press(key)
                await pilot.pause(0.05)
            await pilot.press("slash", "[", "/", "]", "enter")
            await settle(app, pilot)
            await pilot.press("escape", "escape", "ctrl+p", "[", "/")
            await settle(app, pilot)
            screens.append(screen_text(app))
            await pilot.press("escape")
            for key in ("b", "escape", "K", "escape", "o", "escape", "f", "escape"):
                await pilot.press(key)
                await settle(app, pilot)
                screens.append(screen_text(app))
            assert app.is_running

    screens: list[str] = []
    monkeypatch.chdir(tmp_path)
    browse()
    first, last = screens[0], screens[-1]
    # names, ids and paths are shown literally, markup and all
    assert "frame [/]" in first and "[/]/0" in first, first
    assert "x[/y]" in first, first  # the path in the status bar and the overview
    assert "compiles 1 · breaks 0 · recompiles 0 · kernels 1" in last, last
    palette = screens[1]
    assert "compile [/]/0" in palette and "dedicated_log_torch_trace_[b].log" in palette, palette
    for screen in screens:
        assert_no_control_characters(screen)


# Text of each crafted file that must be on the first screen as it is in the file.
LITERAL_ON_SCREEN = {
    "bidi.log": "user<U+202E>exe.txt<U+202C>",
    "escapes.log": "␛]0;PWNED TITLE␇",
    "markup.log": "[bold red]not bold[/]",
    "wrong_types.log": "abc/[1]",
}


@pytest.mark.app
@pytest.mark.parametrize("path", CASES, ids=lambda p: p.name)
def test_every_hostile_file_can_be_browsed(path: Path) -> None:
    from ui_helpers import counts_text, ready, screen_text, settle, sync

    from tcview.ui.app import TcviewApp

    screens: list[str] = []

    @sync
    async def browse() -> None:
        app = TcviewApp(str(path))
        async with app.run_test(size=(100, 30), notifications=True) as pilot:
            await ready(app, pilot)
            screens.append(screen_text(app))
            for key in ("j", "enter", "j", "enter", "j", "enter", "j", "enter", "G", "enter"):
                await pilot.press(key)
                await pilot.pause(0.05)
            screens.append(screen_text(app))
            await pilot.press("tab", "pagedown", "end", "right", "right", "tab")
            for key in ("b", "escape", "r", "escape", "K", "escape", "f", "escape", "t", "escape"):
                await pilot.press(key)
                await pilot.pause(0.05)
                screens.append(screen_text(app))
            await pilot.press("o")
            await settle(app, pilot)
            screens.append(screen_text(app))
            await pilot.press("escape")
            await settle(app, pilot)
            screens.append(screen_text(app))
            assert app.is_running

    browse()
    expected = counts_text(count([path]))  # the independent counter's numbers
    first, last = screens[0], screens[-1]
    assert expected in first and expected in last, last
    if path.name in LITERAL_ON_SCREEN:
        assert LITERAL_ON_SCREEN[path.name] in first, first
    for screen in screens:
        assert_no_control_characters(screen)
