"""The child of tests/test_lines_c_sanitized.py: loads a build of _lines.c made with AddressSanitizer
and UBSan (the libasan that LD_PRELOAD names comes first), feeds it generated, hostile, real and
adversarial buffers, and compares every result with the regex it mirrors.

    python tests/lines_c_sanitized_child.py /tmp/x/_lines.cpython-311-x86_64-linux-gnu.so SEED

Every buffer is handed to the C as a copy in a block malloc'd to its exact size, so that a read
one byte past its end (or before its start) is a heap-buffer-overflow that ASan reports, where a
`bytes` object's trailing NUL would hide it. A slice buf[lo:hi] is also handed over cut at hi:
nothing at or past hi may be read. A mismatch raises (exit status 1); a sanitizer aborts.
"""

from __future__ import annotations

import ctypes
import faulthandler
import importlib.util
import random
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from conftest import FIXTURES, SAMPLES, unpack_shared
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from test_lines_c import LINES, PREFIX, WELL_FORMED

from tcview.ingest import tracefile

Finder = Callable[[Any, int, int], list[tracefile.FoundLine]]
REGEX = tracefile.regex_lines()
GENERATED_EXAMPLES = 1500  # of 1 to 8 lines each: about 6,000 generated lines
SLICES_PER_TRACE = 3
MB = 1 << 20

_libc = ctypes.CDLL(None)  # malloc and free: ASan's, when its runtime is preloaded
_libc.malloc.restype = ctypes.c_void_p
_libc.malloc.argtypes = [ctypes.c_size_t]
_libc.free.restype = None
_libc.free.argtypes = [ctypes.c_void_p]


def load(path: str) -> Finder:
    """The sanitized build's `lines`, loaded as `_lines` (its PyInit__lines) from its own
    folder: never tcview.ingest._lines, and never put in sys.modules."""
    spec = importlib.util.spec_from_file_location("_lines", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert Path(module.__file__ or "").samefile(path), module.__file__
    assert module.lines is not tracefile.c_lines, "the installed build, not the sanitized one"
    found: Finder = module.lines
    return found


@contextmanager
def exact(data: bytes) -> Iterator[ctypes.Array[ctypes.c_char]]:
    """`data` in a block malloc'd to its exact size (a read past it is a heap overflow)."""
    block = _libc.malloc(len(data))
    assert block, f"malloc({len(data)}) failed"
    try:
        ctypes.memmove(block, data, len(data))
        yield (ctypes.c_char * len(data)).from_address(block)
    finally:
        _libc.free(block)


class Checker:
    def __init__(self, found: Finder) -> None:
        self.found = found
        self.checks = 0

    def __call__(self, buf: bytes, lo: int, hi: int, what: str) -> None:
        """The C finds in buf[lo:hi] what the regex finds, whole and cut at hi."""
        want = list(REGEX(buf, lo, hi))
        end = max(0, min(hi, len(buf)))
        for copy in (buf, buf[:end]) if end < len(buf) else (buf,):
            with exact(copy) as block:
                got = self.found(block, lo, hi)
            self.checks += 1
            if got != want:
                raise AssertionError(mismatch(what, buf, lo, hi, len(copy), got, want))


def mismatch(
    what: str,
    buf: bytes,
    lo: int,
    hi: int,
    size: int,
    got: list[tracefile.FoundLine],
    want: list[tracefile.FoundLine],
) -> str:
    pairs = enumerate(zip(got, want, strict=False))
    n = next((i for i, (g, w) in pairs if g != w), min(len(got), len(want)))
    at = got[n][0] if n < len(got) else want[n][0] if n < len(want) else lo + 1
    return (
        f"{what}: the C and the regex differ in buf[{lo}:{hi}] (len {len(buf)}, handed over"
        f" as {size} bytes): match {n} of {len(got)} / {len(want)}\n"
        f"  C:     {got[n : n + 1]}\n  regex: {want[n : n + 1]}\n"
        f"  line:  {buf[max(0, at - 1) : at + 300]!r}"
    )


def generated(check: Checker, seed: int) -> int:
    """test_lines_c's generator (the grammar, its near misses, well-formed lines), each buffer
    whole, without its last newline, and in random slices. Returns the lines it made."""
    made = 0
    cut = st.integers(0, 1 << 16)

    @hypothesis_seed(seed)
    @settings(
        max_examples=GENERATED_EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.lists(LINES, min_size=1, max_size=8), st.lists(st.tuples(cut, cut), max_size=4))
    def lines_as_the_regex(lines: list[bytes], slices: list[tuple[int, int]]) -> None:
        nonlocal made
        made += len(lines)
        buf = b"\n" + b"\n".join(lines) + b"\n"
        check(buf, 0, len(buf), "generated")
        check(buf[:-1], 0, len(buf) - 1, "generated, no last newline")
        for a, b in slices:
            lo, hi = sorted((a % (len(buf) + 1), b % (len(buf) + 1)))
            check(buf, lo, hi, "generated, a slice")

    lines_as_the_regex()
    return made


def hostile() -> dict[str, bytes]:
    """The hostile generator's corpus (as committed, and built afresh where that differs), and
    a 4 MB payload."""
    sys.path.insert(0, str(FIXTURES / "hostile"))
    try:
        import make_hostile
    finally:
        sys.path.pop(0)
    files = {f"hostile/{p.name}": p.read_bytes() for p in (FIXTURES / "hostile").glob("*.log")}
    for name, data in make_hostile.build().items():
        if files.get(f"hostile/{name}") != data:
            files[f"hostile/{name} (built)"] = data
    huge = make_hostile.record({"artifact": {"name": "huge", "encoding": "string"}}, "y" * 4 * MB)
    files["hostile: a 4 MB payload"] = huge
    return files


def traces() -> list[Path]:
    roots = [SAMPLES, FIXTURES]
    shared = unpack_shared()
    if shared is not None:
        roots.append(shared)
    return sorted(
        p for root in roots for p in root.rglob("*") if p.is_file() and p.suffix in (".log", ".txt")
    )


def whole_and_sliced(check: Checker, what: str, data: bytes, rng: random.Random) -> None:
    """`data` whole (and after a newline, as tracefile reads a file), in random slices, and
    from a few of its lines to their end or into them."""
    check(data, 0, len(data), what)
    buf = b"\n" + data
    check(buf, 0, len(buf), what)
    for _ in range(SLICES_PER_TRACE):
        lo, hi = sorted((rng.randrange(len(buf) + 1), rng.randrange(len(buf) + 1)))
        check(buf, lo, hi, f"{what}, a slice")
    starts = [found[0] for found in REGEX(buf, 0, len(buf))]
    for s in rng.sample(starts, min(len(starts), SLICES_PER_TRACE)):
        end = buf.find(b"\n", s)
        end = len(buf) if end < 0 else end
        for hi in (end, rng.randint(s, end)):
            check(buf, s - 1, hi, f"{what}, a line cut {hi - s} bytes in")


def header_lines() -> list[bytes]:
    """Real header lines: the first of each shape LINE gives (a rank or none; a chromium_event
    of the fast path, a describe_* of it, or another header; a payload or none) in the sample
    traces and the fixtures."""
    shapes: dict[tuple[bool, bool, bytes | None, bool], bytes] = {}
    for path in sorted(p for root in (SAMPLES, FIXTURES) for p in root.rglob("*")):
        if not path.is_file() or path.suffix not in (".log", ".txt"):
            continue
        buf = b"\n" + path.read_bytes()
        for s, _pend, rank, _ts, pid, seg, minor, _minor_seg in REGEX(buf, 0, len(buf)):
            end = buf.find(b"\n", s)
            line = buf[s : end if end >= 0 else len(buf)]
            shape = (rank is None, seg is None, minor, b'"has_payload": "' in line)
            if pid is not None and len(line) < 3000:
                shapes.setdefault(shape, line)
    return list(shapes.values())


def adversarial(check: Checker, rng: random.Random) -> int:
    """Empty, one byte, every byte value, 1 MB runs, odd lo and hi, and headers cut at every
    byte. Returns how many buffers."""
    every = bytes(range(256))
    shuffled = bytearray(every * 4)
    rng.shuffle(shuffled)
    bufs = [b"", b"\n", b"\n\n", b"\n\t", b"\nV", PREFIX, b"\n" + PREFIX]
    bufs += [bytes([c]) for c in every]
    bufs += [b"\n" + bytes([c]) for c in every] + [bytes([c]) + b"\n" for c in every]
    bufs += [every, every[::-1], b"\n".join(bytes([c]) for c in every), bytes(shuffled)]
    bufs += [b"\n" + line for line in WELL_FORMED]  # no last newline
    bufs += [bytes([c]) * MB for c in b'\n\t V0[{"]:}\xff\x00']
    stem = b"\nV1125 10:00:00."
    where = b"\nV1125 10:00:00.5 42 "
    head = b"\n" + PREFIX
    runs = [  # each of LINE's unbounded or long runs, 1 MB long, closed or cut off
        b"\n[rank" + b"1" * MB,
        b"\n[rank" + b"1" * MB + b"]:" + PREFIX[1:] + b"{}",
        stem + b"0" * MB,
        stem + b"0" * MB + b" 42 x:1] {}",
        stem + b"5" + b" " * MB + b"42 x:1] {}",
        where[:-1] + b" " * MB,
        where + b"4" * MB,
        where + b"x" * MB,
        where + b"x" * MB + b":1] {}",
        where + b"x:" + b"9" * MB + b"] {}",
        where + b":" * MB + b"] {}",
        head + b'{"describe_tensor": {"' + b"a" * MB + b'": 1}}',
        head + b'{"describe_tensor": {"a": "' + b"x" * MB + b'"}}',
        head + b'{"describe_tensor": {"a": [' + b"1, " * (MB // 3) + b"2]}}",
        head + b'{"describe_tensor": {' + b'"a": 1, ' * (MB // 8) + b'"b": 2}}',
        head + b'{"describe_tensor": {' + b'"a": {"b": 1}, ' * (MB // 16) + b'"b": 2}}',
        head + b'{"chromium_event": {}' + b', "frame_id": 0' * (MB // 15) + b"}",
        head + b'{"describe_source": {}' + b', "attempt": null' * (MB // 17) + b"}",
        head + b'{"describe_storage": {"a": 1.' + b"0" * MB + b"}}",
        head + b'{"describe_storage": {"a": -' + b"1" * MB + b"}}",
        head + b"{" * MB,
    ]
    bufs += runs + [run + b"\n" for run in runs]
    for buf in bufs:
        for lo, hi in ((0, len(buf)), (1, len(buf)), (0, len(buf) - 1), (1, len(buf) // 2)):
            check(buf, lo, hi, f"adversarial {buf[:40]!r}... ({len(buf)} bytes)")
    odd = b"\n" + WELL_FORMED[0] + b"\n" + WELL_FORMED[3] + b"\n"
    n = len(odd)
    for lo, hi in [(-5, 3), (-(1 << 62), 1 << 62), (n + 10, n + 20), (9, 2), (-9, -1), (n, n)]:
        check(odd, lo, hi, "odd lo and hi")
    cut_at = 0
    for line in header_lines() + WELL_FORMED:
        buf = b"\n" + line + b"\n"
        for cut in range(len(buf) + 1):
            check(buf, 0, cut, f"a header cut at {cut}")  # and handed over cut there
            check(buf, cut, len(buf), f"a header from {cut}")
            cut_at += 1
    return len(bufs) + cut_at


def main() -> None:
    faulthandler.enable()  # where in Python a sanitizer's abort came from
    path, seed = sys.argv[1], int(sys.argv[2])
    check = Checker(load(path))
    rng = random.Random(seed)
    start = time.monotonic()
    made = generated(check, seed)
    took = {"generated": time.monotonic() - start}
    files = hostile()
    for name, data in files.items():
        whole_and_sliced(check, name, data, rng)
    paths = traces()
    for trace in paths:
        whole_and_sliced(check, str(trace), trace.read_bytes(), rng)
    took["files"] = time.monotonic() - start - took["generated"]
    buffers = adversarial(check, rng)
    took["adversarial"] = time.monotonic() - start - took["generated"] - took["files"]
    print(
        f"seed {seed}: {made} generated lines, {len(files)} hostile files, {len(paths)} traces,"
        f" {buffers} adversarial buffers: {check.checks} calls alike;"
        + "".join(f" {k} {v:.1f} s" for k, v in took.items())
    )


if __name__ == "__main__":
    main()
