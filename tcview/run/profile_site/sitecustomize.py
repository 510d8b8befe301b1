"""`tcview run --profile`: records a torch.profiler window in the job, without changes to its
script. tcview puts this folder first on the job's PYTHONPATH; Python imports this file at
startup, in every process of the job. Standard library only: it never imports torch (nor
tcview) itself. It waits for the job to import torch._dynamo, then for compiles to end: SKIP
seconds after the last one (with no compile since), a timer signal (SIGALRM, handled on the
main thread between bytecodes, outside compiled code) starts the profiler, and SECONDS later
stops it and writes the trace into the run directory. A job that exits first writes what it has. Afterwards the
user's own sitecustomize (if any) is imported as usual.

Environment (set by tcview): TCVIEW_PROFILE_DIR (where to write), TCVIEW_PROFILE_WINDOW
("SKIP,SECONDS"), TCVIEW_PROFILE_ACTIVITIES ("cpu,cuda"; default: cpu, and cuda when there).
"""

from __future__ import annotations

import atexit
import importlib
import importlib.util
import json
import os
import signal
import socket
import sys
import time
from typing import Any

_OUT = os.environ.get("TCVIEW_PROFILE_DIR") or ""
_WATCHED = "torch._dynamo.callback"
_state: dict[str, Any] = {
    "prof": None,
    "armed": False,
    "compiled_at": None,
    "start": None,
    "done": False,
    "on_return": None,
}


def _window() -> tuple[float, float]:
    try:
        skip, seconds = (
            float(x) for x in os.environ.get("TCVIEW_PROFILE_WINDOW", "2,3").split(",")
        )
    except ValueError:
        skip, seconds = 2.0, 3.0
    return max(skip, 0.0), max(seconds, 0.1)


def _name() -> str:
    rank = os.environ.get("RANK")
    who = f"rank{rank}" if rank is not None else socket.gethostname()
    return f"{who}.{os.getpid()}"


def _write_meta(extra: dict[str, Any]) -> None:
    meta = {
        "pid": os.getpid(),
        "rank": os.environ.get("RANK"),
        "window": list(_window()),
        "activities": _state.get("activities") or os.environ.get("TCVIEW_PROFILE_ACTIVITIES"),
        **extra,
    }
    try:
        os.makedirs(_OUT, exist_ok=True)
        path = os.path.join(_OUT, f"{_name()}.window.json")
        with open(path + ".tmp", "w") as fh:
            json.dump(meta, fh, indent=2)
        os.replace(path + ".tmp", path)
    except OSError:
        pass


def _activities(torch: Any) -> list[Any]:
    wanted = (os.environ.get("TCVIEW_PROFILE_ACTIVITIES") or "").lower().split(",")
    kinds = torch.profiler.ProfilerActivity
    out = []
    if not wanted[0] or "cpu" in wanted:
        out.append(kinds.CPU)
    if ("cuda" in wanted or not wanted[0]) and torch.cuda.is_available():
        out.append(kinds.CUDA)
    return out or [kinds.CPU]


def _start() -> None:
    import torch

    acts = _activities(torch)
    _state["activities"] = ",".join(str(a).rsplit(".", 1)[-1].lower() for a in acts)
    prof = torch.profiler.profile(activities=acts)
    prof.start()
    _state["prof"] = prof
    _state["start"] = time.monotonic()
    _state["start_wall"] = time.time()


def _stop(ended: str) -> None:
    prof = _state["prof"]
    if prof is None or _state["done"]:
        return
    _state["done"] = True
    stopped = time.monotonic()
    prof.stop()
    # Plain JSON: Kineto writes it in C++ at once; a .gz is compressed in Python afterwards,
    # which held a CPU job ten times longer.
    path = os.path.join(_OUT, f"{_name()}.pt.trace.json")
    t0 = time.monotonic()
    os.makedirs(_OUT, exist_ok=True)
    prof.export_chrome_trace(path)
    export_s = time.monotonic() - t0
    _write_meta(
        {
            "file": os.path.basename(path),
            "bytes": os.path.getsize(path),
            "recorded_s": round(stopped - _state["start"], 3),
            "started_at": _state["start_wall"],  # time.time(), to compare the job's own timings
            "stopped_at": _state["start_wall"] + (stopped - _state["start"]),
            "stop_s": round(t0 - stopped, 3),
            "export_s": round(export_s, 3),
            "ended": ended,
        }
    )


RETRY_S = 0.01  # a signal that came at an unsafe point tries again this much later
SAFE_WAIT_S = 30.0  # … for this long; then no window (start) or the one at exit (stop)


# Parts of torch whose Python runs outside any range torch opens and any thread-local state
# it restores: a wait in torch.cuda.synchronize, an eager module's forward, a tensor method.
SAFE_TORCH = frozenset(
    {"cuda", "_tensor.py", "functional.py", "random.py", "_tensor_str.py", "_utils.py"}
)


def _safe(frame: Any) -> bool:
    """Whether the profiler may start or stop here: not inside the rest of torch (autograd's
    backward, an optimizer step, Dynamo, AOTAutograd, DataLoader, DDP run under ranges torch
    opened or thread-local state it restores), Inductor's output code, or Dynamo's transformed
    bytecode. Acting anywhere, the CPU test job crashed (SIGSEGV after "Requested callback is
    not found") in 2 of 8 runs."""
    torch = sys.modules.get("torch")
    where = os.path.dirname(getattr(torch, "__file__", "") or "") + os.sep
    while frame is not None:
        code = frame.f_code
        name = code.co_filename
        if name.startswith(where):
            rel = name[len(where) :]
            part = rel.split(os.sep, 1)[0]
            if part not in SAFE_TORCH and not rel.startswith(os.path.join("nn", "modules")):
                return False
        if "torchinductor_" in name:
            return False
        if any(n.startswith(("__compiled_fn", "__resume_at")) for n in code.co_names):
            return False
        frame = frame.f_back
    return True


def _on_alarm(signum: int, frame: Any) -> None:
    if _safe(frame):
        _act()
        return
    if time.monotonic() - _state["due"] < SAFE_WAIT_S:
        # The handler mostly runs just after a long C call, still inside torch (a GPU job's
        # backward or optimizer step): the next return into the user's code is the safe point
        # to wait for (a timer alone found one about 10 s late on an H100 job).
        sys.setprofile(_state["on_return"])
        signal.setitimer(signal.ITIMER_REAL, RETRY_S)
    elif _state["prof"] is None:
        sys.setprofile(None)
        _state["done"] = True
        _write_meta({"note": "no safe point to start the profiler came: no window"})
    else:
        sys.setprofile(None)  # a window not stopped is written at exit


def _on_return(frame: Any, event: str, arg: Any) -> None:
    """Profile hook of the main thread while a start or stop waits for a safe point: a return
    into a stack outside torch's ranges is one (the returning function's own `with` blocks
    have exited by then)."""
    if event != "return" or frame.f_back is None or not _safe(frame.f_back):
        return
    sys.setprofile(None)
    signal.setitimer(signal.ITIMER_REAL, 0)
    _act()


def _act() -> None:
    """Start the window, or stop it, here and now (a safe point)."""
    starting = _state["prof"] is None
    if _state["done"]:
        return
    try:
        if starting:
            _start()
            _state["due"] = time.monotonic() + _window()[1]
            signal.setitimer(signal.ITIMER_REAL, _window()[1])
        else:
            _stop("window")
    except Exception as exc:  # noqa: BLE001 - the job goes on without a profile
        _state["done"] = True
        _write_meta({"error": f"{type(exc).__name__}: {exc}"})


def _on_compile_start(*args: Any, **kwargs: Any) -> None:
    if _state["armed"] and _state["prof"] is None:
        signal.setitimer(signal.ITIMER_REAL, 0)  # the window waits for this compile too


def _on_compile_end(*args: Any, **kwargs: Any) -> None:
    """Every compile's end (the lazy backward's too) sets the window's start SKIP seconds
    later, until it has started: it begins once compiles have stopped for SKIP seconds."""
    if _state["prof"] is not None or _state["done"]:
        return
    import threading

    if threading.current_thread() is not threading.main_thread() and not _state["armed"]:
        return  # the handler can only be set on the main thread: its next compile arms it
    # (A CUDA job's backward compiles on autograd's device thread: its end re-arms the timer
    # that its start stopped; the signal itself is always handled on the main thread.)
    if not _state["armed"]:
        if signal.getsignal(signal.SIGALRM) not in (signal.SIG_DFL, None):
            _state["done"] = True
            _write_meta({"error": "the job handles SIGALRM itself: no window"})
            return
        import torch._dynamo

        signal.signal(signal.SIGALRM, torch._dynamo.disable(_on_alarm))
        _state["on_return"] = torch._dynamo.disable(_on_return)
        _state["armed"] = True
    _state["compiled_at"] = time.time()
    _state["due"] = time.monotonic() + _window()[0]
    signal.setitimer(signal.ITIMER_REAL, max(_window()[0], 0.001))


def _at_exit() -> None:
    if _state["prof"] is not None and not _state["done"]:
        signal.setitimer(signal.ITIMER_REAL, 0)
        try:
            _stop("exit")
        except Exception as exc:  # noqa: BLE001
            _write_meta({"error": f"{type(exc).__name__}: {exc}"})
    elif _state["armed"] and _state["prof"] is None and not _state["done"]:
        _write_meta({"note": "the process ended before the window began (compiles went on)"})


def _watched(module: Any) -> None:
    handler = getattr(module, "callback_handler", None)
    if handler is not None and hasattr(handler, "register_end_callback"):
        handler.register_end_callback(_on_compile_end)
        if hasattr(handler, "register_start_callback"):
            handler.register_start_callback(_on_compile_start)
    else:
        _write_meta({"error": "this torch has no compile callbacks: no window"})


class _Finder:
    """Runs `_watched` once torch imports torch._dynamo.callback (never imports it itself)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != _WATCHED:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            try:
                _watched(module)
            except Exception as exc:  # noqa: BLE001
                _write_meta({"error": f"{type(exc).__name__}: {exc}"})

        loader.exec_module = exec_module
        return spec


def _chain() -> None:
    """Import the sitecustomize this one shadows, if any."""
    here = os.path.dirname(os.path.abspath(__file__))
    saved = sys.path[:]
    mine = sys.modules.pop("sitecustomize", None)
    try:
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
        if importlib.util.find_spec("sitecustomize") is not None:
            importlib.import_module("sitecustomize")
    except Exception:  # noqa: BLE001 - as Python itself: a failing sitecustomize is ignored
        pass
    finally:
        sys.path[:] = saved
        if mine is not None and "sitecustomize" not in sys.modules:
            sys.modules["sitecustomize"] = mine


if _OUT:
    sys.meta_path.insert(0, _Finder())
    atexit.register(_at_exit)
_chain()
