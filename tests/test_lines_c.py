"""The C line matcher (tcview/ingest/_lines.c) finds what the `LINE` regex finds: the same
lines, the same match ends and the same groups, in any slice of a buffer. It is what indexes
every trace where the package was built with a compiler, so it is compared with the regex on
generated lines (fragments of the regex's grammar, right and slightly wrong) and on every real
trace the project and ../shared hold."""

from __future__ import annotations

import hashlib
import shutil
import sysconfig
from pathlib import Path

import pytest
from conftest import FIXTURES, SAMPLES
from hypothesis import example, given, settings
from hypothesis import strategies as st
from model_equal import differences

from tcview.ingest import tracefile
from tcview.ingest.source import load_source

c_lines = tracefile.c_lines
needs_c = pytest.mark.skipif(c_lines is None, reason="the C line matcher was not built")

regex = tracefile.regex_lines()
HEX = hashlib.md5(b"x").hexdigest().encode()
PREFIX = b"V1125 10:00:00.000000 4242 torch/_dynamo/utils.py:12] "

# Pieces of LINE's grammar, and of near misses (a letter too many, a quote escaped, 19 digits).
FRAGMENTS = [
    PREFIX,
    b"[rank3]:",
    b"[rank]:",
    b"[rank12]",
    b"I",
    b"v",
    b"1125 10:00:00.5",
    b"1125 10:0:00.5",
    b"1125 10:00:00.",
    b" ",
    b"  ",
    b"77",
    b"x.py:9",
    b"a]b",
    b"] ",
    b"]",
    b":",
    b'{"chromium_event": {}',
    b'{"chromium_event": {"a": 1}',
    b'{"describe_tensor": ',
    b'{"describe_storage": ',
    b'{"describe_source": ',
    b'{"describe_other": ',
    b"{",
    b"}",
    b"[",
    b", ",
    b",",
    b'"id": ',
    b'"x_y9": ',
    b'"a b": ',
    b'"": ',
    b'"has_payload": ',
    b'"has_payload_x": ',
    b', "frame_id": ',
    b', "frame_compile_id": ',
    b', "attempt": ',
    b', "rank": ',
    b', "compiled_autograd_id": ',
    b', "stack": ',
    b"0",
    b"01",
    b"7",
    b"-3",
    b"-",
    b"1.5",
    b"1.",
    b"123456789012345678",
    b"1234567890123456789",
    b"0.12345678901234567",
    b"0.123456789012345678",
    b"1e5",
    b"true",
    b"false",
    b"null",
    b"nul",
    b'"abc"',
    b'"a\\"b"',
    b'"\x7f"',
    b'"\xc3\xa9"',
    b'"',
    b', "has_payload": "' + HEX + b'"',
    b', "has_payload": "' + HEX[:31] + b'X"',
    b', "has_payload": "' + HEX.upper() + b'"',
    b"\t",
    b"\n",
    b"\n\t",
    b"\n\n",
    b"\r",
    b"\xff",
]

# Whole lines of the shapes the fast paths take, so that most examples reach them.
WELL_FORMED = [
    PREFIX
    + b'{"chromium_event": {}, "frame_id": 0, "attempt": null, "has_payload": "'
    + HEX
    + b'"}',
    PREFIX + b'{"chromium_event": {}}',
    b"[rank1]:" + PREFIX + b'{"chromium_event": {}, "rank": 1}',
    PREFIX + b'{"describe_tensor": {"id": 3, "size": [2, 3], "o": {}, "d": "cpu", "x": -1.25,'
    b' "y": true, "z": {"a": null, "b": "s"}}, "frame_id": 1, "frame_compile_id": 0}',
    PREFIX + b'{"describe_source": {}, "compiled_autograd_id": null}',
    PREFIX + b'{"describe_storage": {"id": 0, "size": []}}',
    PREFIX + b'{"dynamo_start": {"stack": []}, "frame_id": 0}',
    PREFIX + b'{"artifact": {"name": "x", "encoding": "string"}, "has_payload": "' + HEX + b'"}',
]


def _joined(
    items: st.SearchStrategy[bytes], sep: bytes, open_: bytes, close: bytes
) -> st.SearchStrategy[bytes]:
    return st.lists(items, max_size=4).map(lambda xs: open_ + sep.join(xs) + close)


# Headers built by LINE's grammar, a part now and then replaced by a near miss.
def _mostly(right: list[bytes], wrong: list[bytes]) -> st.SearchStrategy[bytes]:
    return st.sampled_from(right * 4 + wrong)


_SCALAR = _mostly(
    [b"0", b"7", b"-3", b"1.5", b"true", b"false", b"null", b'"abc"', b'""', b'"a:b]"'],
    [b"01", b"1.", b'"a\\"b"', b"1234567890123456789", b"nul", b'"\x7f"', b"1e5"],
)
_KEY = _mostly(
    [b'"id": ', b'"x_y9": ', b'"has_payload_x": ', b'"has_payload": '], [b'"a b": ', b'"": ']
)
_FLAT = _joined(st.tuples(_KEY, _SCALAR).map(b"".join), b", ", b"{", b"}")
_VALUE = _SCALAR | _joined(_SCALAR, b", ", b"[", b"]") | _FLAT
_OBJECT = _joined(st.tuples(_KEY, _VALUE).map(b"".join), b", ", b"{", b"}")
_CTX = st.lists(
    st.tuples(
        _mostly([b"frame_id", b"frame_compile_id", b"attempt", b"rank"], [b"stack", b"x"]),
        _mostly([b"0", b"3", b"null"], [b"01", b"[]", b"1234567890123456789"]),
    ).map(lambda kv: b', "' + kv[0] + b'": ' + kv[1]),
    max_size=4,
).map(b"".join)
_MD5 = _mostly([b"", b', "has_payload": "' + HEX + b'"'], [b', "has_payload": "x"'])
_KIND = _mostly([b"describe_tensor", b"describe_storage", b"describe_source"], [b"describe_x"])
_HEADER = st.tuples(st.just(b'{"'), _KIND, st.just(b'": '), _OBJECT, _CTX, _MD5).map(
    b"".join
) | st.tuples(st.just(b'{"chromium_event": {}'), _CTX, _MD5).map(b"".join)
_PREFIXES = _mostly(
    [PREFIX, b"[rank3]:" + PREFIX, PREFIX.replace(b"torch/", b"C:/x:y ")],
    [
        b"[rank]:" + PREFIX,
        PREFIX[1:],
        PREFIX.replace(b":12]", b"12]"),
        PREFIX.replace(b":12]", b":]"),
        PREFIX.replace(b"torch/", b"a]"),
        PREFIX.replace(b" 4242 ", b" 4242"),
        PREFIX.replace(b"12] ", b"12]"),
    ],
)
GRAMMAR = st.tuples(_PREFIXES, _HEADER, _mostly([b"}"], [b"", b"} ", b"}\t"])).map(b"".join)
LINES = (
    GRAMMAR
    | st.lists(st.sampled_from(FRAGMENTS), max_size=24).map(b"".join)
    | st.sampled_from(WELL_FORMED)
)


def same(buf: bytes, lo: int, hi: int) -> None:
    assert c_lines is not None
    assert c_lines(buf, lo, hi) == list(regex(buf, lo, hi))


@needs_c
@settings(max_examples=600, deadline=None)
@given(st.lists(LINES, min_size=1, max_size=8), st.data())
@example([WELL_FORMED[0]], None)
def test_generated_lines_are_found_as_the_regex_finds_them(
    lines: list[bytes], data: st.DataObject | None
) -> None:
    buf = b"\n" + b"\n".join(lines) + b"\n"
    same(buf, 0, len(buf))
    if data is not None:  # any slice: nothing past `hi` is read, as the regex's endpos
        lo = data.draw(st.integers(0, len(buf)))
        same(buf, lo, data.draw(st.integers(lo, len(buf))))


@needs_c
@pytest.mark.parametrize(
    "line",
    [
        # Each differs from a fast-path header in one place, and must fall back to the parse.
        WELL_FORMED[0].replace(b'"frame_id": 0', b'"frame_id": 01'),
        WELL_FORMED[3].replace(b'"o": {}', b'"has_payload": {}'),
        WELL_FORMED[3].replace(b'"d": "cpu"', b'"d": "c\\"pu"'),
        WELL_FORMED[3].replace(b"-1.25", b"-1.250000000000000000"),
        WELL_FORMED[4][:-1],
    ],
)
def test_a_near_miss_takes_no_fast_path(line: bytes) -> None:
    buf = b"\n" + line + b"\n"
    assert c_lines is not None
    (found,) = c_lines(buf, 0, len(buf))
    assert found[5] is None and found[6] is None and found[4] is not None  # a prefix, no fast path
    same(buf, 0, len(buf))


def _traces(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".log", ".txt"))


def _same_in_thirds(path: Path) -> None:
    buf = b"\n" + path.read_bytes()
    third = len(buf) // 3
    for lo, hi in ((0, len(buf)), (0, 2 * third), (third, len(buf))):
        same(buf, lo, hi)


@needs_c
def test_real_traces_are_found_as_the_regex_finds_them() -> None:
    paths = _traces(SAMPLES) + _traces(FIXTURES)
    assert len(paths) > 20
    for path in paths:
        _same_in_thirds(path)


@needs_c
def test_the_shared_traces_are_found_as_the_regex_finds_them(shared_traces: Path) -> None:
    paths = _traces(shared_traces)
    assert len(paths) > 100
    for path in paths:
        _same_in_thirds(path)


@needs_c
@pytest.mark.parametrize("sample", ["gpu_triton_user", "cpu_breaks_recompiles"])
def test_a_trace_indexes_alike_with_either_finder(
    sample: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(SAMPLES / sample)
    built = load_source(path, cache=False)
    monkeypatch.setattr(tracefile, "find_lines", regex)
    assert differences(load_source(path, cache=False), built, ("version",)) == []


def test_the_c_matcher_is_built_where_a_compiler_is() -> None:
    """Where the Python that runs the tests has a C compiler and its headers, the install built
    the matcher (else every test above would skip, and the index run at the regex's speed)."""
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if shutil.which(cc) is None or not headers.exists():
        pytest.skip("no C compiler or no Python headers: the install leaves the matcher out")
    assert c_lines is not None, "setup.py's extension was not built (pip install -e . builds it)"
