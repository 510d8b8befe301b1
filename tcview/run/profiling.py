"""`tcview run --profile`: what the job's environment gets so that it records a profiler
window (the in-job part is profile_site/sitecustomize.py, run by the job's own Python), and
what tcview says about the window afterwards (file, size, how long it recorded and stopped the
job to write it).

(Not named profile.py: run/_bench_driver.py runs as a script from this folder, and a
profile.py here would shadow the standard library's, which cProfile imports.)
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tcview.ingest.profile import PROFILE_DIR

SITE_DIR = Path(__file__).resolve().parent / "profile_site"
DEFAULT_SKIP_S = 2.0  # after the first compile ends: its first runs (autotuning, warm-up) pass
DEFAULT_SECONDS = 3.0
ACTIVITIES = ("cpu", "cuda")
# Inductor's C++ kernels show in a CPU profile only with this (torch/_inductor/config.py).
CPP_KERNEL_PROFILE_ENV = "TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE"
WINDOW_SUFFIX = ".window.json"


@dataclass(frozen=True)
class ProfileOptions:
    skip_s: float = DEFAULT_SKIP_S
    seconds: float = DEFAULT_SECONDS
    activities: tuple[str, ...] = ()  # empty: cpu, and cuda when the job has it


def parse_window(text: str) -> tuple[float, float]:
    """``SKIP,SECONDS`` (or ``SECONDS``) -> (skip, seconds); ValueError when not."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) == 1:
        parts.insert(0, str(DEFAULT_SKIP_S))
    if len(parts) != 2:
        raise ValueError(f"--profile-window wants SKIP,SECONDS, got {text!r}")
    skip, seconds = float(parts[0]), float(parts[1])
    if skip < 0 or seconds <= 0:
        raise ValueError(f"--profile-window wants SKIP >= 0 and SECONDS > 0, got {text!r}")
    return skip, seconds


def parse_activities(text: str) -> tuple[str, ...]:
    wanted = tuple(a.strip().lower() for a in text.split(",") if a.strip())
    bad = [a for a in wanted if a not in ACTIVITIES]
    if bad:
        raise ValueError(f"--profile-activities: unknown {', '.join(bad)} (known: cpu, cuda)")
    return wanted


def profile_env(options: ProfileOptions, run_dir: Path, env: Mapping[str, str]) -> dict[str, str]:
    """The variables the job gets: this package's sitecustomize first on PYTHONPATH, and the
    window. The user's own PYTHONPATH and sitecustomize stay (the latter is imported after)."""
    path = env.get("PYTHONPATH")
    out = {
        "PYTHONPATH": os.pathsep.join([str(SITE_DIR), *([path] if path else [])]),
        "TCVIEW_PROFILE_DIR": str((run_dir / PROFILE_DIR).resolve()),
        "TCVIEW_PROFILE_WINDOW": f"{options.skip_s},{options.seconds}",
        "TCVIEW_PROFILE_ACTIVITIES": ",".join(options.activities),
    }
    if CPP_KERNEL_PROFILE_ENV not in env:
        out[CPP_KERNEL_PROFILE_ENV] = "1"
    return out


def window_lines(run_dir: Path) -> list[str]:
    """What each process said about its window: file, size, length, the time it stopped the
    job to write it, or why there is none."""
    folder = run_dir / PROFILE_DIR
    if not folder.is_dir():
        if _asked(run_dir):
            return [
                "profile: none recorded (no compile ended in the job's processes, or its Python"
                " skipped sitecustomize: -S or -I)"
            ]
        return []
    lines = []
    for meta in sorted(folder.glob("*" + WINDOW_SUFFIX)):
        try:
            data = json.loads(meta.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        who = f"pid {data.get('pid')}" + (f" rank {data['rank']}" if data.get("rank") else "")
        if data.get("file"):
            skip, _ = data.get("window") or (None, None)
            stopped = float(data.get("stop_s") or 0) + float(data.get("export_s") or 0)
            ended = " (the job ended first)" if data.get("ended") == "exit" else ""
            lines.append(
                f"profile ({who}): {PROFILE_DIR}/{data['file']},"
                f" {int(data.get('bytes') or 0) / 1e6:.1f} MB;"
                f" recorded {data.get('recorded_s')}s from {skip}s after the first compile"
                f"{ended}; writing it stopped the job for {stopped:.2f}s"
            )
        else:
            lines.append(f"profile ({who}): {data.get('error') or data.get('note')}")
    return lines


def _asked(run_dir: Path) -> bool:
    """Whether the run was started with --profile (its run.json says)."""
    try:
        data = json.loads((run_dir / "run.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and bool(data.get("profile"))
