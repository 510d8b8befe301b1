"""What a shared archive may not do to the machine that opens it, and archives that come in odd
ways: a bound on the unpacked bytes (a zip or gzip bomb, a disk nearly full), an archive piped
to stdin, the copies in archives/ kept under a cap (least recently used removed first), and a
compressed stream cut short read as far as it goes."""

from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import json
import lzma
import os
import sys
import tarfile
import threading
import zipfile
from collections import namedtuple
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_archives import (
    RUN,
    TEXT_LOG,
    TRACE_FILE,
    _without_paths,
    cache_on,  # noqa: F401 - a fixture
    copies,
    make_tar,
    summary,
)

from tcview.commands.cli import main
from tcview.ingest import archives
from tcview.ingest.source import NotATrace, load_source

# Its own tier, as test_jsonl.py: main() in this process, stdin a real pipe; no subprocess.

LIMIT = 1 << 20  # the cap these tests lower the limit to
ZEROS = 8 << 20  # what a bomb unpacks to: 8 times the cap, from some 8 kB


def leftovers(home: Path) -> list[str]:
    """Everything in archives/: copies, half-made copies, spools."""
    return sorted(p.name for p in home.iterdir()) if home.is_dir() else []


# ---------------------------------------------------------------------- bombs


def gz_bomb(folder: Path) -> Path:
    out = folder / "bomb.log.gz"
    out.write_bytes(gzip.compress(bytes(ZEROS)))
    return out


def tgz_bomb(folder: Path) -> Path:
    out = folder / "bomb.tgz"
    with tarfile.open(out, "w:gz") as tar:
        info = tarfile.TarInfo("trace/zeros.log")
        info.size = ZEROS
        tar.addfile(info, io.BytesIO(bytes(ZEROS)))
    return out


def zip_bomb(folder: Path) -> Path:
    out = folder / "bomb.zip"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("trace/zeros.log", bytes(ZEROS))
    return out


BOMBS = {"gz": gz_bomb, "tgz": tgz_bomb, "zip": zip_bomb}


@pytest.mark.parametrize("kind", sorted(BOMBS))
def test_a_bomb_is_refused_naming_the_size_and_the_limit(
    kind: str,
    tmp_path: Path,
    cache_on: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(archives, "UNPACKED_MAX_BYTES", LIMIT)
    bomb = BOMBS[kind](tmp_path)
    assert bomb.stat().st_size < LIMIT // 8
    removed: list[int] = []  # the bytes on disk when the partial copy is removed
    real_rmtree = archives.shutil.rmtree

    def measured(path: Any, *args: Any, **kwargs: Any) -> None:
        removed.append(archives._tree_size(str(path)))
        real_rmtree(path, *args, **kwargs)

    monkeypatch.setattr(archives.shutil, "rmtree", measured)
    capsys.readouterr()
    assert main(["summary", str(bomb)]) == 2
    monkeypatch.setattr(archives.shutil, "rmtree", real_rmtree)
    err = capsys.readouterr().err
    assert err.startswith(f"tcview: {bomb}: unpacking {bomb.name} "), err
    assert "past 1.0 MB (tcview's limit for one archive)" in err
    assert ("would reach 8.4 MB (its members' sizes)" if kind == "zip" else " reached ") in err
    assert len(err.strip().splitlines()) == 1, err
    assert removed and max(removed) <= LIMIT  # stopped before the limit, not after
    assert leftovers(cache_on) == []  # the partial copy removed


def test_a_zip_whose_sizes_lie_is_stopped_as_it_is_written(
    tmp_path: Path,
    cache_on: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(archives, "UNPACKED_MAX_BYTES", LIMIT)
    monkeypatch.setattr(archives._Budget, "declare", lambda self, size: None)
    with pytest.raises(NotATrace, match=r"unpacking bomb\.zip reached [\d.]+ MB, past 1\.0 MB"):
        load_source(str(zip_bomb(tmp_path)))
    assert leftovers(cache_on) == []


def test_the_limit_is_the_free_space_when_that_is_smaller(
    tmp_path: Path,
    cache_on: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    Usage = namedtuple("Usage", "total used free")
    free = archives.FREE_MARGIN_BYTES + LIMIT
    monkeypatch.setattr(archives.shutil, "disk_usage", lambda path: Usage(free * 2, free, free))
    with pytest.raises(NotATrace, match=r"past 1\.0 MB \(the free space on the disk of .*less"):
        load_source(str(gz_bomb(tmp_path)))
    assert leftovers(cache_on) == []
    # (an ordinary archive still opens on that disk)
    small = tmp_path / "torch_logs.txt.gz"
    small.write_bytes(gzip.compress(TEXT_LOG.read_bytes()))
    assert load_source(str(small)).files


# ---------------------------------------------------------------------- stdin


@contextlib.contextmanager
def piped(data: bytes) -> Iterator[None]:
    """stdin a real pipe that `data` is written to (by a thread, as a producer would)."""
    read_fd, write_fd = os.pipe()

    def produce() -> None:
        with os.fdopen(write_fd, "wb") as out:
            out.write(data)

    writer = threading.Thread(target=produce, daemon=True)
    writer.start()
    saved = sys.stdin
    sys.stdin = open(read_fd, encoding="utf-8")  # noqa: SIM115 - closed below
    try:
        yield
    finally:
        sys.stdin.close()
        sys.stdin = saved
        writer.join(5)


def test_an_archive_on_stdin_reads_as_the_file(
    tmp_path: Path,
    cache_on: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    gz = tmp_path / "trace.log.gz"
    gz.write_bytes(gzip.compress(TRACE_FILE.read_bytes()))
    tgz = make_tar(RUN, tmp_path / "run.tar.gz", "w:gz")
    for archive, unpacked in ((gz, TRACE_FILE), (tgz, RUN)):
        capsys.readouterr()
        with piped(archive.read_bytes()):
            assert main(["summary", "--json", "-q", "-"]) == 0
        out, err = capsys.readouterr()
        assert err == ""
        assert _without_paths(json.loads(out)) == summary(unpacked, capsys)
    assert len(copies(cache_on)) == 2
    assert leftovers(cache_on) == [p.name for p in copies(cache_on)]  # no spool left

    def no_second(*args: Any) -> Any:
        raise AssertionError("unpacked again")

    with piped(gz.read_bytes()), pytest.MonkeyPatch.context() as mp:
        mp.setattr(archives, "_extract", no_second)  # the same bytes: the same copy
        model = load_source("-")
    assert model.display == "<stdin>"
    assert len(model.compiles) == len(load_source(str(TRACE_FILE)).compiles)
    assert leftovers(cache_on) == [p.name for p in copies(cache_on)]


class Piped(io.TextIOWrapper):
    """stdin holding `data`, as a pipe's is: buffered, with peek."""

    def __init__(self, data: bytes) -> None:
        super().__init__(io.BufferedReader(io.BytesIO(data)))


@pytest.mark.parametrize("opener", [bz2.compress, lzma.compress])
def test_stdin_by_its_magic_bytes(
    opener: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", Piped(opener(TEXT_LOG.read_bytes())))
    capsys.readouterr()
    assert main(["summary", "--json", "-q", "-"]) == 0
    assert _without_paths(json.loads(capsys.readouterr().out)) == summary(TEXT_LOG, capsys)


def test_plain_stdin_is_read_as_before(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", Piped(TEXT_LOG.read_bytes()))
    model = load_source("-")
    assert model.display == "<stdin>" and counts_of(model) == counts_of(load_source(str(TEXT_LOG)))


def test_a_trace_on_stdin_reads_as_the_file(capsys: pytest.CaptureFixture[str]) -> None:
    """A trace piped in (not an archive, not TORCH_LOGS text) is read as a trace, in `summary`
    and in `summary --jsonl -`: the same counts as the file."""
    with piped(TRACE_FILE.read_bytes()):
        assert main(["summary", "--json", "-q", "-"]) == 0
    assert _without_paths(json.loads(capsys.readouterr().out)) == summary(TRACE_FILE, capsys)
    with piped(TRACE_FILE.read_bytes()):
        assert main(["summary", "--jsonl", "-q", "-"]) == 0
    line = json.loads(capsys.readouterr().out)
    assert line["input"] == "-" and line["compiles"] == len(load_source(str(TRACE_FILE)).compiles)
    assert line["compiles"] > 0


def counts_of(model: Any) -> tuple[int, int]:
    return len(model.compiles), len(model.files)


def test_a_bomb_on_stdin_is_refused(
    cache_on: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(archives, "UNPACKED_MAX_BYTES", LIMIT)
    monkeypatch.setattr(sys, "stdin", Piped(gzip.compress(bytes(ZEROS))))
    with pytest.raises(NotATrace, match="unpacking <stdin> reached"):
        load_source("-")
    assert leftovers(cache_on) == []  # neither the copy nor the spool


# ---------------------------------------------------------------------- eviction


def gz_of(src: Path, out: Path) -> Path:
    out.write_bytes(gzip.compress(src.read_bytes()))
    return out


def open_once(archive: Path) -> Path:
    """Unpack `archive` into the cache as a process of its own would (its copies not in use);
    the folder of its copy."""
    fmt = archives.archive_format(archive)
    assert fmt is not None
    done = archives.unpack(str(archive), fmt)
    archives._in_use.clear()
    return done.path.parent.parent


def test_least_recently_used_copies_are_evicted(
    tmp_path: Path,
    cache_on: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(archives, "_in_use", set())
    a, b, c, d = (gz_of(TEXT_LOG, tmp_path / f"{name}.txt.gz") for name in "abcd")
    copy_a, copy_b = open_once(a), open_once(b)
    one = archives._tree_size(str(copy_a))  # a copy: the log, and its source.json
    monkeypatch.setattr(archives, "ARCHIVES_MAX_BYTES", one * 2 + one // 2)
    os.utime(copy_a, (1000, 1000))
    os.utime(copy_b, (2000, 2000))
    # Beside the copies: what eviction must never touch.
    outside = cache_on.parent / "index" / "entry.idx"
    outside.parent.mkdir()
    outside.write_bytes(bytes(10 * one))
    (cache_on / "notes").mkdir()
    (cache_on / "notes" / "big").write_bytes(bytes(10 * one))
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "big").write_bytes(bytes(10 * one))
    (cache_on / ("f" * 32)).symlink_to(linked)

    assert open_once(a) == copy_a  # reused: now the most recently used
    copy_c = open_once(c)
    kept = [cache_on / "notes", cache_on / ("f" * 32)]
    assert copies(cache_on) == sorted([copy_a, copy_c, *kept])  # b went
    assert outside.exists() and (cache_on / "notes" / "big").exists()
    assert (linked / "big").exists()

    # The copy being opened stays, even alone past the cap; and so does one this process
    # opened (its model may still read it).
    monkeypatch.setattr(archives, "ARCHIVES_MAX_BYTES", 1)
    fmt = archives.archive_format(a)
    assert fmt is not None
    archives.unpack(str(a), fmt)  # in use from now on
    copy_d = open_once(d)
    assert copies(cache_on) == sorted([copy_a, copy_d, *kept])
    assert not any(p.name.startswith(".tmp-") for p in cache_on.iterdir())


# ---------------------------------------------------------------------- cut short


def cut(data: bytes, out: Path) -> Path:
    out.write_bytes(data[: len(data) // 2])
    return out


CUTS = {
    "gz": lambda d: cut(gzip.compress(TRACE_FILE.read_bytes()), d / "trace.log.gz"),
    "xz": lambda d: cut(lzma.compress(TRACE_FILE.read_bytes()), d / "trace.log.xz"),
    "tar.gz": lambda d: cut(make_tar(RUN, d / "whole.tgz", "w:gz").read_bytes(), d / "run.tgz"),
}


@pytest.mark.parametrize("kind", sorted(CUTS))
def test_a_cut_archive_is_read_as_far_as_it_goes(
    kind: str,
    tmp_path: Path,
    cache_on: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    archive = CUTS[kind](tmp_path)
    for _ in range(2):  # made, then reused: said both times
        capsys.readouterr()
        assert main(["summary", "--json", "-q", str(archive)]) == 0
        out, err = capsys.readouterr()
        report = json.loads(out)
        assert "trace_cut" in [f["kind"] for f in report["findings"]]
        assert report["compiles"]  # what was readable was read
        assert err.count("\n") == 1 and err.startswith(f"tcview: warning: {archive} is cut short")
    [copy] = copies(cache_on)
    [trace] = [p for p in copy.rglob("*.log")]
    whole = TRACE_FILE.read_bytes()
    partial = trace.read_bytes()
    assert 0 < len(partial) < len(whole) and whole.startswith(partial)  # every readable byte


def test_cut_before_any_content_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = tmp_path / "trace.log.gz"
    archive.write_bytes(gzip.compress(TRACE_FILE.read_bytes())[:12])
    assert main(["summary", str(archive)]) == 2
    err = capsys.readouterr().err
    assert f"{archive}: trace.log.gz is cut short before any of its content" in err


def test_a_damaged_stream_is_still_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = bytearray(gzip.compress(TRACE_FILE.read_bytes()))
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(64)
    archive = tmp_path / "trace.log.gz"
    archive.write_bytes(bytes(data))
    assert main(["summary", str(archive)]) == 2
    assert "cannot unpack this gzip file" in capsys.readouterr().err
