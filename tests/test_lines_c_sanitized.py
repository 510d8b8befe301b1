"""The C line matcher (tcview/ingest/_lines.c) reads untrusted traces: built with AddressSanitizer
and UBSan, it reads nothing outside its buffer or past `hi`, does nothing undefined, and finds
what the regex finds, on test_lines_c's generated lines, the hostile corpus, every real trace
and adversarial buffers (tests/lines_c_sanitized_child.py feeds them, in a child Python with
libasan preloaded).

A copy of _lines.c whose `closes()` reads the byte after a header's closing brace without
checking that it is before `hi`, built through TCVIEW_LINES_C, was seen to fail here with ASan's
heap-buffer-overflow report on a generated buffer without its last newline.

TCVIEW_LINES_C=/path/to/copy.c builds that file instead of tcview/ingest/_lines.c, and
TCVIEW_SANITIZED_SEED fixes the seed (else a random one, printed on failure)."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from conftest import REPO

pytestmark = pytest.mark.slow

SOURCE = Path(os.environ.get("TCVIEW_LINES_C") or REPO / "tcview" / "ingest" / "_lines.c")
CHILD = Path(__file__).resolve().parent / "lines_c_sanitized_child.py"
FLAGS = [
    "-fsanitize=address,undefined",
    "-fno-omit-frame-pointer",
    "-fno-sanitize-recover=all",
    "-g",
    "-O1",
]
SANITIZER_ERRORS = ("ERROR: AddressSanitizer", "runtime error:")


def _runtime(gcc: str, name: str) -> Path | None:
    out = subprocess.run(
        [gcc, f"-print-file-name={name}"], capture_output=True, text=True, check=False
    ).stdout.strip()
    path = Path(out)  # gcc prints the bare name back when it has no such file
    return path if path.is_absolute() and path.exists() else None


def _build(dest: Path) -> tuple[Path, Path]:
    """_lines.c built with the sanitizers as `_lines` in `dest`, and the libasan to preload."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no gcc: the sanitized build needs it")
    include = Path(sysconfig.get_paths()["include"])
    if not (include / "Python.h").exists():
        pytest.skip(f"no Python headers ({include}/Python.h)")
    asan = _runtime(gcc, "libasan.so")
    if asan is None or _runtime(gcc, "libubsan.so") is None:
        pytest.skip("gcc has no AddressSanitizer or UBSan runtime (libasan.so, libubsan.so)")
    built = dest / f"_lines{sysconfig.get_config_var('EXT_SUFFIX')}"
    cmd = [gcc, *FLAGS, "-shared", "-fPIC", f"-I{include}", str(SOURCE), "-o", str(built)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{' '.join(cmd)}\n{done.stderr}"
    code = built.read_bytes()
    assert b"__asan_report_load" in code and b"__ubsan_handle" in code, "built uninstrumented"
    return built, asan


def test_the_sanitized_c_matcher_reads_only_its_buffer_and_finds_what_the_regex_finds(
    tmp_path: Path,
) -> None:
    built, asan = _build(tmp_path)
    seed = int(os.environ.get("TCVIEW_SANITIZED_SEED") or random.randrange(1 << 32))
    env = dict(os.environ)
    env["LD_PRELOAD"] = " ".join(filter(None, [str(asan), env.get("LD_PRELOAD")]))
    env["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=1"
    env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    env["PYTHONMALLOC"] = "malloc"  # Python's own objects in ASan's heap too
    try:
        done = subprocess.run(
            [sys.executable, str(CHILD), str(built), str(seed)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=240,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"seed {seed}: the sanitized run took over {e.timeout} s")
    said = f"seed {seed} (TCVIEW_SANITIZED_SEED), {SOURCE}:\n{done.stdout}\n{done.stderr[-20000:]}"
    assert not any(error in done.stderr for error in SANITIZER_ERRORS), said
    assert done.returncode == 0, said
    assert "calls alike" in done.stdout, said
    print(done.stdout)  # what was fed, and how long each part took (-rP shows it)
