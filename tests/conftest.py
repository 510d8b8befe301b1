"""Shared fixtures: the real traces of ../shared (skipped when absent) and the repo's own."""

from __future__ import annotations

import atexit
import fcntl
import importlib.util
import os
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import pytest
from extract import extract

if TYPE_CHECKING:
    from tcview.model.objects import Model

REPO = Path(__file__).resolve().parent.parent
SHARED_ARCHIVE = REPO.parent / "shared" / "traces.tar.xz"
# TCVIEW_TESTS_NO_SHARED=1 runs the tests as a fresh clone would: as if ../shared were absent.
HIDE_SHARED = os.environ.get("TCVIEW_TESTS_NO_SHARED", "") not in ("", "0")
SAMPLES = REPO / "sample_traces"
TCVIEW_CLI = [sys.executable, "-m", "tcview.commands.cli"]  # the command, in a new process
FIXTURES = Path(__file__).resolve().parent / "fixtures"
# Tests that run torch in this Python (a job under `tcview run`, a benchmark): the README's
# test command alone installs no torch (`.ci/run` does, first).
needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="torch is not installed"
)
sys.path.insert(0, str(Path(__file__).resolve().parent))
# pytest-xdist workers run with COLUMNS=80 and LINES=24 in their environment. A tmux server that
# a test starts inherits them, and so does every app in its panes: Textual then draws 80x24
# inside a 120x40 or 160x45 pane. Terminal tests must get their size from the terminal.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)
# No index cache in tests (they change handlers and files under the same paths), and never the
# user's ~/.cache/tcview: tests of the cache turn it on with a directory of their own.
_TEST_CACHE = tempfile.mkdtemp(prefix="tcview-test-cache-")
os.environ["TCVIEW_CACHE_DIR"] = _TEST_CACHE
os.environ["TCVIEW_NO_CACHE"] = "1"
atexit.register(shutil.rmtree, _TEST_CACHE, True)


def _cache_dir() -> Path:
    base = os.environ.get("TCVIEW_TEST_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "tcview-tests"
    )
    return Path(base)


def unpack_shared() -> Path | None:
    """Unpack ../shared/traces.tar.xz once (outside the repo); None when it is absent.

    Parallel workers (pytest-xdist) and other test runs call this at the same time: one of
    them unpacks into a temporary folder next to the destination and renames it into place,
    under a lock, so nobody ever reads a half-written tree.
    """
    if HIDE_SHARED or not SHARED_ARCHIVE.is_file():
        return None
    stamp = f"{SHARED_ARCHIVE.stat().st_size}-{int(SHARED_ARCHIVE.stat().st_mtime)}"
    dest = _cache_dir() / stamp
    if not (dest / ".done").exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        with open(dest.parent / f"{stamp}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (dest / ".done").exists():
                _unpack(dest)
    return dest / "traces"


def _unpack(dest: Path) -> None:
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        with tarfile.open(SHARED_ARCHIVE) as tar:
            extract(tar, tmp)
        (tmp / ".done").write_text("ok")
        if dest.exists():  # left half-done by an interrupted older run
            shutil.rmtree(dest)
        tmp.chmod(0o755)  # mkdtemp makes it private
        tmp.rename(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="session")
def shared_traces() -> Path:
    root = unpack_shared()
    if root is None:
        pytest.skip("../shared/traces.tar.xz is absent")
    return root


T = TypeVar("T")


def find_as(model: Model, text: str, kind: type[T]) -> T:
    """What `tcview show` finds for `text` ("0/1", "rank 1 frame 0", a kernel's name), checked
    to be a `kind` (a Compile, a Frame...)."""
    from tcview.report.items import find  # tcview loads after the environment above is set

    found = find(model, text)
    assert isinstance(found, kind), found
    return found


def shared_run_dirs() -> list[Path]:
    """Every GPU and CPU run folder of the shared archive ([] when absent)."""
    root = unpack_shared()
    if root is None:
        return []
    return sorted(
        p
        for group in ("h200-torch2.11", "cpu-torch2.13")
        for p in (root / group).iterdir()
        if p.is_dir()
    )


# Test tiers. Each test module has one (a test whose kind differs carries its own mark):
#   unit: functions of tcview in this process, no app and no subprocess;
#   app:  the Textual app under Pilot, snapshots;
#   e2e:  subprocesses (the CLI, a job under `tcview run`, real torch), tmux, SSH.
TIERS = ("unit", "app", "e2e")
MODULE_TIERS = {
    "test_archives": "unit",
    "test_archives_app": "app",
    "test_autotune_cudagraphs": "unit",
    "test_autotune_total": "app",
    "test_bench": "e2e",
    "test_bench_gpu": "e2e",
    "test_break_hints": "app",
    "test_checks": "e2e",
    "test_cli_first_contact": "e2e",
    "test_compile_time": "app",
    "test_compiles": "unit",
    "test_corpus": "unit",
    "test_corpus_runs": "e2e",
    "test_crashes": "unit",
    "test_cudagraphs_partly": "e2e",
    "test_diff": "unit",
    "test_diff_app": "app",
    "test_exit_codes": "e2e",
    "test_docs": "e2e",
    "test_effective_config": "e2e",
    "test_export": "e2e",
    "test_find_tmux": "e2e",
    "test_find_ui": "app",
    "test_findings": "app",
    "test_findings_gpu_runs": "app",
    "test_follow": "unit",
    "test_follow_ui": "e2e",
    "test_gpu_verify": "unit",
    "test_gpu_watch": "unit",
    "test_guard_diff_order": "unit",
    "test_hostile": "unit",
    "test_hostile_records": "app",
    "test_layers": "unit",
    "test_metadata": "unit",
    "test_module_size": "unit",
    "test_newer_torch": "unit",
    "test_jsonl": "unit",
    "test_archives_limits": "unit",
    "test_trace_cut": "unit",
    "test_overview": "unit",
    "test_payload_reads": "unit",
    "test_owner": "unit",
    "test_recompile_changes": "unit",
    "test_pager": "e2e",
    "test_profile": "app",
    "test_profile_gpu_run": "unit",
    "test_provenance": "unit",
    "test_ranks": "unit",
    "test_recompile_families": "unit",
    "test_run_launcher": "e2e",
    "test_run_profile": "e2e",
    "test_run_torch": "e2e",
    "test_run_tui": "e2e",
    "test_scale": "unit",
    "test_search": "unit",
    "test_session": "app",
    "test_show": "unit",
    "test_show_layout": "unit",
    "test_split": "unit",
    "test_lines_c": "unit",
    "test_lines_c_sanitized": "e2e",
    "test_ssh": "e2e",
    "test_stacks": "e2e",
    "test_take_ui": "app",
    "test_textlog": "unit",
    "test_torch_export": "unit",
    "test_trace_engine": "unit",
    "test_ui_app": "app",
    "test_ui_compiles": "app",
    "test_ui_content": "unit",
    "test_ui_controller": "unit",
    "test_ui_help": "unit",
    "test_ui_keys": "app",
    "test_ui_layers": "app",
    "test_ui_live": "app",
    "test_ui_live_tmux": "e2e",
    "test_ui_paging": "app",
    "test_ui_ranks": "app",
    "test_ui_views": "app",
    "test_ui_snapshots": "app",
    "test_ui_thread_reads": "e2e",
    "test_ui_lock_waits": "e2e",
    "test_ui_tmux": "e2e",
    "test_waits": "app",
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give every test its module's tier unless it has its own; exactly one tier each."""
    for item in items:
        own = {m.name for m in item.iter_markers() if m.name in TIERS}
        if not own:
            mod = item.module if isinstance(item, pytest.Function) else None
            module = mod.__name__ if mod else ""
            tier = MODULE_TIERS.get(module)
            if tier is None:
                raise pytest.UsageError(f"{module}: no tier in tests/conftest.py MODULE_TIERS")
            item.add_marker(getattr(pytest.mark, tier))
        elif len(own) > 1:
            raise pytest.UsageError(f"{item.nodeid}: more than one tier ({', '.join(sorted(own))})")


RUNS = FIXTURES / "runs"  # real runs too big to keep unpacked: <name>.tar.xz holds <name>/


@pytest.fixture(scope="session")
def fixture_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/fixtures/runs/*.tar.xz unpacked once per session (a run directory each)."""
    dest = tmp_path_factory.mktemp("runs")
    for archive in sorted(RUNS.glob("*.tar.xz")):
        with tarfile.open(archive) as tar:
            extract(tar, dest)
    return dest
