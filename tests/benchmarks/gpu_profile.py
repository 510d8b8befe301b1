"""The profile join on a GPU machine (an H100), in one command of about 6 to 8 minutes: a compiled
GPT-2 (124M) trained with AdamW (tests/fixtures/jobs/gpu/gpt2_adamw.py), profiled as users do
and by `tcview run --profile`, joined to its trace. Results go to $OUT (else ./bench_out):
log.txt (everything printed) and results.json (each step's data and verdict). Exit status 1
when a check failed. From the repo root (torch with CUDA there; Textual is not needed):

    OUT=$OUT python3 tests/benchmarks/gpu_profile.py      (STEPS=b: step b only)

Steps (each one's failure is recorded and the next one still runs):
  a. the job profiles itself, under TORCH_TRACE: `export_chrome_trace` (3 steps) and
     `tensorboard_trace_handler` (2 active steps, twice); for each, `tcview summary TRACE
     --json --profile P`: every Triton kernel event of the profile is matched to its compile
     (calls and time as the profile has them), `gpu_time_us` equals the profile's own sum of
     kernel events (read here with json, apart from tcview), `compiled_share` is given;
  b. the same job under `tcview run` without and with `--profile` (INDUCTOR_PROVENANCE=1 for
     the user lines): the window's file, size and the time it stopped the job; the median step
     inside the window against the plain run's (the overhead); `tcview show RUN profile`
     (top kernels by measured time, their compiles and user lines).
"""

from __future__ import annotations

import gzip
import json
import os
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
JOB = REPO / "tests" / "fixtures" / "jobs" / "gpu" / "gpt2_adamw.py"
PY = sys.executable
START = time.monotonic()
TRAIN_S = 25.0  # seconds each `tcview run` job trains after its warm-up
WINDOW = "3,3"  # --profile-window of step b


class Out:
    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.log_file = open(root / "log.txt", "w", encoding="utf-8")  # noqa: SIM115
        self.results: dict[str, Any] = {}

    def log(self, *lines: str) -> None:
        for line in lines:
            print(line, flush=True)
            self.log_file.write(line + "\n")
        self.log_file.flush()

    def step(self, name: str, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        self.log("", f"=== {name}  (t={time.monotonic() - START:.0f}s)")
        t0 = time.monotonic()
        try:
            data = fn()
        except Exception as exc:  # noqa: BLE001 - record it, go on with the next step
            self.log(traceback.format_exc())
            data = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        data["seconds"] = round(time.monotonic() - t0, 1)
        self.results[name] = data
        self.log(f"--- {name}: {'PASS' if data.get('ok') else 'FAIL'} ({data['seconds']}s)")
        (self.root / "results.json").write_text(json.dumps(self.results, indent=2, default=str))
        return data


def env_with_repo(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def tcview(out: Out, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [PY, "-m", "tcview.commands.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env_with_repo(),
        stdin=subprocess.DEVNULL,
    )
    if done.returncode != 0:
        out.log(f"tcview {' '.join(args)} -> exit {done.returncode}", done.stderr[-3000:])
    return done


def profile_events(path: Path) -> list[dict[str, Any]]:
    """Every event of a profile (a file, or a folder's *.pt.trace.json[.gz]), with json."""
    files = sorted(path.glob("*.pt.trace.json*")) if path.is_dir() else [path]
    events: list[dict[str, Any]] = []
    for f in files:
        opener = gzip.open if f.name.endswith(".gz") else open
        with opener(f, "rt") as fh:
            events.extend(json.load(fh)["traceEvents"])
    return events


def check_join(out: Out, trace: Path, profile: Path) -> dict[str, Any]:
    done = tcview(out, "summary", str(trace), "--json", "--profile", str(profile))
    prof = json.loads(done.stdout)["profile"]
    kernels = [
        e for e in profile_events(profile) if e.get("ph") == "X" and e.get("cat") == "kernel"
    ]
    own_total = sum(e["dur"] for e in kernels)
    triton_events = [e for e in kernels if e["name"].startswith("triton_")]
    rows = prof["kernels"]
    triton_rows = [r for r in rows if r["kind"] == "triton"]
    matched = sum(r["calls"] for r in triton_rows if r["compile"] and not r.get("ambiguous"))
    out.log(
        f"{profile.name}: {len(kernels)} kernel events, own total {own_total:.1f} µs;"
        f" tcview gpu_time_us {prof['gpu_time_us']}, compiled_share {prof['compiled_share']:.3f}",
        f"  Triton events {len(triton_events)}, matched to a compile {matched};"
        f" unmatched {prof['unmatched_generated']}, ambiguous {prof['ambiguous_events']}",
        "  time by kind: " + json.dumps(prof["time_by_kind_us"]),
        "  top kernels:",
        *(
            f"    {r['time_us']:>12.1f} µs {r['share']:6.1%} ×{r['calls']:<5} {r['kind']:<7}"
            f" {r['compile'] or '-':<10} {r['name'][:90]}"
            for r in rows[:15]
        ),
    )
    ok = (
        abs(prof["gpu_time_us"] - own_total) <= max(1e-6 * own_total, 0.01)
        and matched == len(triton_events) > 0
        and 0 < prof["compiled_share"] <= 1
    )
    return {
        "ok": ok,
        "kernel_events": len(kernels),
        "own_total_us": own_total,
        "gpu_time_us": prof["gpu_time_us"],
        "compiled_share": prof["compiled_share"],
        "triton_events": len(triton_events),
        "triton_matched": matched,
        "unmatched": prof["unmatched_generated"],
        "ambiguous": prof["ambiguous_events"],
        "top": rows[:15],
        "files": prof["files"],
    }


def user_profiles(out: Out, work: Path) -> dict[str, Any]:
    user = work / "user"
    user.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [PY, str(JOB), "--seconds", "1", "--chrome", str(user / "p.json.gz"), "--tb",
         str(user / "tb")],
        capture_output=True, text=True, timeout=600, cwd=user,
        env=env_with_repo(TORCH_TRACE=str(user / "trace")),
    )  # fmt: skip
    out.log(f"job exit {done.returncode}", done.stdout[-500:], done.stderr[-1500:])
    chrome = check_join(out, user / "trace", user / "p.json.gz")
    tb = check_join(out, user / "trace", user / "tb")
    return {"ok": chrome["ok"] and tb["ok"], "export_chrome_trace": chrome, "tensorboard": tb}


def run_job(out: Out, work: Path, name: str, *extra: str) -> tuple[Path, list[Any], str]:
    run_dir = work / name
    steps_json = work / f"{name}_steps.json"
    done = tcview(
        out, "run", "--no-tui", "--dir", str(run_dir), "--env", "INDUCTOR_PROVENANCE=1",
        *extra, str(JOB), "--seconds", str(TRAIN_S), "--steps-json", str(steps_json),
    )  # fmt: skip
    steps = json.loads(steps_json.read_text()) if steps_json.is_file() else []
    return run_dir, steps, done.stdout


def tcview_run_profile(out: Out, work: Path) -> dict[str, Any]:
    _, plain, _ = run_job(out, work, "plain")
    run_dir, profiled, report = run_job(
        out, work, "profiled", "--profile", "--profile-window", WINDOW
    )
    out.log("the run's report (the profile part):")
    out.log(*[ln for ln in report.splitlines() if ln.startswith("profile (")])
    metas = [json.loads(p.read_text()) for p in (run_dir / "profile").glob("*.window.json")]
    meta: dict[str, Any] = next((m for m in metas if m.get("file")), {})
    out.log("window:", json.dumps(meta, indent=2))
    plain_med = statistics.median(s for _, s in plain) if plain else None
    inside = [s for end, s in profiled if meta and meta["started_at"] <= end <= meta["stopped_at"]]
    outside = [s for end, s in profiled if meta and end > meta["stopped_at"] + 1.0]
    in_med = statistics.median(inside) if inside else None
    out_med = statistics.median(outside) if outside else None
    overhead = in_med / plain_med - 1 if in_med and plain_med else None

    def ms(x: float | None) -> str:
        return "-" if x is None else f"{x * 1e3:.2f} ms"

    stalled = float(meta.get("stop_s") or 0) + float(meta.get("export_s") or 0)
    out.log(
        f"median step: plain run {ms(plain_med)}; in the window {ms(in_med)}"
        f" ({len(inside)} steps); after it {ms(out_med)}; overhead in the window"
        f" {'-' if overhead is None else f'{overhead:+.1%}'}; writing stopped the job for"
        f" {stalled:.2f}s; file {int(meta.get('bytes') or 0) / 1e6:.1f} MB"
    )
    shown = tcview(out, "show", str(run_dir), "profile")
    out.log("tcview show RUN profile:", shown.stdout[:8000])
    summary = json.loads(tcview(out, "summary", str(run_dir), "--json").stdout)
    prof = summary.get("profile") or {}
    ok = bool(
        meta.get("file")
        and prof.get("kernels")
        and any(r["kind"] == "triton" and r["compile"] for r in prof["kernels"])
        and "Kernels by measured GPU time" in shown.stdout
    )
    return {
        "ok": ok,
        "window": meta,
        "median_step_plain_s": plain_med,
        "median_step_window_s": in_med,
        "median_step_after_s": out_med,
        "overhead_in_window": overhead,
        "steps_in_window": len(inside),
        "lines": prof.get("lines", [])[:10],
        "gpu_time_us": prof.get("gpu_time_us"),
        "compiled_share": prof.get("compiled_share"),
        "unmatched": prof.get("unmatched_generated"),
        "ambiguous": prof.get("ambiguous_events"),
    }


def main() -> int:
    out = Out(Path(os.environ.get("OUT") or REPO / "bench_out"))
    work = Path(os.environ.get("WORK") or "/tmp/tcview_gpu_profile")
    work.mkdir(parents=True, exist_ok=True)
    steps = os.environ.get("STEPS", "ab")  # STEPS=b runs step b only
    a = {"ok": True}
    if "a" in steps:
        a = out.step("a. profiles made by the job itself", lambda: user_profiles(out, work))
    b = {"ok": True}
    if "b" in steps:
        b = out.step("b. tcview run --profile", lambda: tcview_run_profile(out, work))
    return 0 if a.get("ok") and b.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
