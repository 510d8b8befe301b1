"""Process-table helpers shared by the launcher tests (headless and in the TUI)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from tcview.run._supervisor import group_members


def alive(pid: int) -> bool:
    """In the process table and not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"


def wait_for(predicate: Callable[[], object], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return bool(predicate())


def job_pids(run_dir: Path) -> list[int]:
    """The job's and its grandchild's pids, from the first line long_job.py prints."""
    out = run_dir / "stdout.txt"
    assert wait_for(lambda: out.is_file() and b"pids " in out.read_bytes()), "job did not start"
    first = out.read_bytes().split(b"\n", 1)[0].decode()
    return [int(x) for x in first.split()[1:]]


def assert_group_gone(pgid: int | None, pids: list[int]) -> None:
    assert pgid is not None, "the job never started"
    assert wait_for(lambda: not group_members(pgid) and not any(alive(p) for p in pids)), (
        f"left behind: group {pgid} members {group_members(pgid)}, "
        f"alive {[p for p in pids if alive(p)]}"
    )
