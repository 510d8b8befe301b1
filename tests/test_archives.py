"""Traces as people share them (issue 40): .gz, .zst, .tar, .tar.gz/.tgz, .tar.xz and .zip
inputs read from a copy unpacked into the cache directory, with the summary of the unpacked
input; unsafe members refused; a second open reuses the copy."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import os
import stat
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pytest
from conftest import FIXTURES, SAMPLES

from tcview.commands.cli import main
from tcview.ingest import archives
from tcview.ingest.detect import PIPE_SNIFF_MAX, PipeKind, plan_input, sniff_pipe
from tcview.ingest.source import NotATrace, load_source
from tcview.model.objects import Model

RUN = SAMPLES / "cpu_breaks_recompiles"  # a run directory: trace/ and torch_logs.txt
TRACE_DIR = RUN / "trace"
TRACE_FILE = next(TRACE_DIR.iterdir())
TEXT_LOG = FIXTURES / "torch_logs_small.txt"


def summary(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """`tcview summary --json` of `path`, less the fields that name where it was read."""
    capsys.readouterr()
    assert main(["summary", "--json", "-q", str(path)]) == 0
    return _without_paths(json.loads(capsys.readouterr().out))


def _without_paths(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _without_paths(v) for k, v in data.items() if k not in ("path", "display")}
    if isinstance(data, list):
        return [_without_paths(v) for v in data]
    return data


def make_tar(folder: Path, out: Path, mode: Literal["w", "w:gz", "w:xz"] = "w") -> Path:
    with tarfile.open(out, mode) as tar:
        tar.add(folder, arcname=folder.name)
    return out


def make_zip(folder: Path, out: Path) -> Path:
    """A zip of the folder's content, members at the top (as `zip -r x.zip .` makes)."""
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for p in sorted(folder.rglob("*")):
            zf.write(p, p.relative_to(folder).as_posix())
    return out


def compress(src: Path, out: Path, opener: Callable[..., Any]) -> Path:
    with opener(out, "wb") as fh:
        fh.write(src.read_bytes())
    return out


def zstd_compress(data: bytes) -> bytes:
    import importlib

    module = archives.zstd_module()
    if module is None:
        pytest.skip("no zstd decoder here (compression.zstd or zstandard)")
    mod = importlib.import_module(module)
    if module == "zstandard":
        return bytes(mod.ZstdCompressor().compress(data))
    return bytes(mod.compress(data))


def tar_bytes(folder: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(folder, arcname=folder.name)
    return buf.getvalue()


# Each case: how to make the archive from the unpacked input, and that input.
CASES: dict[str, tuple[Callable[[Path], Path], Path]] = {
    "tar of a trace dir": (lambda d: make_tar(TRACE_DIR, d / "trace.tar"), TRACE_DIR),
    "tar.gz of a run dir": (lambda d: make_tar(RUN, d / "run.tar.gz", "w:gz"), RUN),
    "tgz of a trace dir": (lambda d: make_tar(TRACE_DIR, d / "trace.tgz", "w:gz"), TRACE_DIR),
    "tar.xz of a run dir": (lambda d: make_tar(RUN, d / "run.tar.xz", "w:xz"), RUN),
    "zip of a run dir": (lambda d: make_zip(RUN, d / "run.zip"), RUN),
    "gz trace file": (
        lambda d: compress(TRACE_FILE, d / f"{TRACE_FILE.name}.gz", gzip.open),
        TRACE_FILE,
    ),
    "gz torch_logs": (lambda d: compress(TEXT_LOG, d / "torch_logs.txt.gz", gzip.open), TEXT_LOG),
    "bz2 trace file": (lambda d: compress(TRACE_FILE, d / "trace.log.bz2", bz2.open), TRACE_FILE),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_archive_summary_is_the_unpacked_inputs(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make, unpacked = CASES[case]
    archive = make(tmp_path)
    assert plan_input(str(archive)).kind == "archive"
    assert summary(archive, capsys) == summary(unpacked, capsys)


@pytest.mark.parametrize("name", ["trace.log.zst", "run.tar.zst"])
def test_zstd(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = TRACE_FILE.read_bytes() if name == "trace.log.zst" else tar_bytes(RUN)
    archive = tmp_path / name
    archive.write_bytes(zstd_compress(data))
    unpacked = TRACE_FILE if name == "trace.log.zst" else RUN
    assert summary(archive, capsys) == summary(unpacked, capsys)


def test_zstd_without_a_decoder_is_refused_naming_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(archives, "zstd_module", lambda: None)
    archive = tmp_path / "trace.log.zst"
    archive.write_bytes(b"\x28\xb5\x2f\xfd" + b"\0" * 64)
    plan = plan_input(str(archive))
    assert plan.kind == "archive" and plan.problem == archives.ZSTD_MISSING
    assert main(["summary", str(archive)]) == 2
    err = capsys.readouterr().err
    assert "pip install zstandard" in err and "compression.zstd" in err


def test_shown_by_the_archives_name(tmp_path: Path) -> None:
    gz = compress(TRACE_FILE, tmp_path / f"{TRACE_FILE.name}.gz", gzip.open)
    model = load_source(str(gz))
    assert model.display == str(gz)
    assert [f.display for f in model.files] == [str(gz)]
    run = make_tar(RUN, tmp_path / "run.tar.gz", "w:gz")
    model = load_source(str(run))
    assert model.display == str(run)
    assert [f.display for f in model.files] == [f"trace/{TRACE_FILE.name}"]
    text = getattr(model, "text", None)
    assert text is not None and text.display == f"{run}/torch_logs.txt"


def test_follow_reads_an_archive_as_it_is(tmp_path: Path) -> None:
    archive = make_tar(TRACE_DIR, tmp_path / "trace.tgz", "w:gz")
    plan = plan_input(str(archive), follow=True)
    assert plan.kind == "archive" and not plan.live and plan.problem is None


# ---------------------------------------------------------------------- the copy


@pytest.fixture
def cache_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The cache turned on, in a folder of this test's own."""
    root = tmp_path / "cache"
    monkeypatch.setenv("TCVIEW_CACHE_DIR", str(root))
    monkeypatch.setenv("TCVIEW_NO_CACHE", "0")
    return root / "archives"


def copies(home: Path) -> list[Path]:
    return sorted(p for p in home.iterdir() if not p.name.startswith(".")) if home.is_dir() else []


def test_second_open_reuses_the_copy(
    tmp_path: Path, cache_on: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    archive = make_tar(RUN, inputs / "run.tar.gz", "w:gz")
    first = load_source(str(archive))
    [copy] = copies(cache_on)
    assert sorted(p.name for p in inputs.iterdir()) == ["run.tar.gz"]  # nothing beside it
    made = {p: p.stat().st_mtime_ns for p in copy.rglob("*")}

    def no_second(*args: Any) -> str:
        raise AssertionError("unpacked again")

    monkeypatch.setattr(archives, "_extract", no_second)
    second = load_source(str(archive))
    assert copies(cache_on) == [copy]
    assert {p: p.stat().st_mtime_ns for p in copy.rglob("*")} == made
    assert counts(second) == counts(first)

    monkeypatch.undo()  # the input changed: a new copy
    monkeypatch.setenv("TCVIEW_CACHE_DIR", str(cache_on.parent))
    monkeypatch.setenv("TCVIEW_NO_CACHE", "0")
    os.utime(archive, ns=(1, 1))
    load_source(str(archive))
    assert len(copies(cache_on)) == 2


def counts(model: Model) -> tuple[int, int]:
    return len(model.compiles), len(model.kernels)


def test_without_the_cache_the_copy_is_temporary(tmp_path: Path) -> None:
    # the tests run with TCVIEW_NO_CACHE=1 (conftest)
    archive = make_tar(TRACE_DIR, tmp_path / "trace.tgz", "w:gz")
    fmt = archives.archive_format(archive)
    assert fmt is not None
    done = archives.unpack(str(archive), fmt, cache=False)
    assert done.fresh and archives.cache_root() not in done.path.parents


def test_progress_while_unpacking(tmp_path: Path) -> None:
    archive = make_tar(RUN, tmp_path / "run.tar.gz", "w:gz")
    seen: list[tuple[int, int]] = []
    fmt = archives.archive_format(archive)
    assert fmt is not None
    archives.unpack(str(archive), fmt, progress=lambda d, t: seen.append((d, t)), cache=False)
    size = archive.stat().st_size
    assert seen and all(t == size for _, t in seen)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen) and seen[-1][0] == size


# ---------------------------------------------------------------------- unsafe members


def _tar_with(tmp_path: Path, add: Callable[[tarfile.TarFile], None]) -> Path:
    out = tmp_path / "in" / "bad.tar.gz"
    out.parent.mkdir(exist_ok=True)
    with tarfile.open(out, "w:gz") as tar:
        good = TRACE_FILE.read_bytes()
        info = tarfile.TarInfo("trace/ok.log")
        info.size = len(good)
        tar.addfile(info, io.BytesIO(good))
        add(tar)
    return out


def _file(name: str) -> Callable[[tarfile.TarFile], None]:
    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.size = 4
        tar.addfile(info, io.BytesIO(b"evil"))

    return add


def _link(name: str, target: str, kind: bytes) -> Callable[[tarfile.TarFile], None]:
    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.type, info.linkname = kind, target
        tar.addfile(info)

    return add


def _device(tar: tarfile.TarFile) -> None:
    info = tarfile.TarInfo("trace/null")
    info.type, info.devmajor, info.devminor = tarfile.CHRTYPE, 1, 3
    tar.addfile(info)


UNSAFE_TARS: dict[str, tuple[Callable[[Path], Callable[[tarfile.TarFile], None]], str]] = {
    "climbs out": (lambda t: _file("../../evil"), "climbs out"),
    "absolute": (lambda t: _file(str(t / "abs_evil")), "absolute path"),
    "symlink": (lambda t: _link("trace/link", str(t / "abs_evil"), tarfile.SYMTYPE), "a link"),
    "hardlink": (lambda t: _link("trace/hard", "/etc/passwd", tarfile.LNKTYPE), "a link"),
    "device": (lambda t: _device, "a device"),
}


@pytest.mark.parametrize("case", sorted(UNSAFE_TARS))
def test_unsafe_tar_member_is_refused(
    case: str, tmp_path: Path, cache_on: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    member, said = UNSAFE_TARS[case]
    archive = _tar_with(tmp_path, member(tmp_path))
    with pytest.raises(NotATrace, match=said):
        load_source(str(archive))
    assert main(["summary", str(archive)]) == 2
    assert "refused" in capsys.readouterr().err
    _nothing_written(tmp_path, cache_on)


def test_unsafe_zip_members_are_refused(tmp_path: Path, cache_on: Path) -> None:
    (tmp_path / "in").mkdir()
    for name, said in (("../../evil", "climbs out"), (str(tmp_path / "abs_evil"), "absolute")):
        archive = tmp_path / "in" / "bad.zip"
        with zipfile.ZipFile(archive, "w") as zf:
            zf.writestr("trace/ok.log", TRACE_FILE.read_bytes())
            zf.writestr(name, b"evil")
        with pytest.raises(NotATrace, match=said):
            load_source(str(archive))
    archive = tmp_path / "in" / "link.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        info = zipfile.ZipInfo("trace/link")
        info.create_system = 3
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(info, str(tmp_path / "abs_evil"))
    with pytest.raises(NotATrace, match="a link"):
        load_source(str(archive))
    _nothing_written(tmp_path, cache_on)


def _nothing_written(tmp_path: Path, home: Path) -> None:
    """No member outside the copy's folder, and no half-made copy left in the cache."""
    assert not (tmp_path / "abs_evil").exists()
    assert not list(tmp_path.rglob("evil")) and not list(tmp_path.rglob("ok.log"))
    assert not (home.is_dir() and list(home.iterdir()))


def test_damaged_archive_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # (one cut short is read as far as it goes: test_archives_limits.py)
    archive = make_tar(RUN, tmp_path / "run.tar.gz", "w:gz")
    data = bytearray(archive.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = bytes(64)
    archive.write_bytes(bytes(data))
    assert main(["summary", str(archive)]) == 2
    err = capsys.readouterr().err
    assert "run.tar.gz: cannot unpack this tar.gz" in err, err


def test_archive_in_an_archive_is_refused(tmp_path: Path) -> None:
    inner = make_tar(TRACE_DIR, tmp_path / "trace.tar.gz", "w:gz")
    outer = compress(inner, tmp_path / "trace.tar.gz.xz", lzma.open)
    with pytest.raises(NotATrace, match="another archive"):
        load_source(str(outer))


def test_half_made_copies_of_a_killed_process_are_removed(tmp_path: Path, cache_on: Path) -> None:
    stale, recent = cache_on / ".tmp-stale", cache_on / ".tmp-recent"
    for folder in (stale, recent):
        (folder / "content").mkdir(parents=True)
    os.utime(stale, (1, 1))
    load_source(str(make_tar(TRACE_DIR, tmp_path / "trace.tgz", "w:gz")))
    assert not stale.exists() and recent.exists()  # (another process may be writing that one)


def test_a_pipe_is_known_by_as_few_first_bytes_as_tell_it() -> None:
    trace_line = next((SAMPLES / "cpu_breaks_recompiles" / "trace").glob("*.log")).read_bytes()
    trace_line = trace_line[: trace_line.index(b"\n") + 1]
    tar = io.BytesIO()
    with tarfile.open(fileobj=tar, mode="w") as t:
        t.addfile(tarfile.TarInfo("trace.log"), io.BytesIO(b""))
    cases: list[tuple[bytes, bool, PipeKind | None]] = [
        (b"\x1f", False, None),  # could be gzip's magic
        (b"\x1f\x8b\x08", False, PipeKind.ARCHIVE),
        (b"PK\x03\x04", False, PipeKind.ARCHIVE),
        (tar.getvalue()[:200], False, None),  # a name, NUL-padded: a tar's magic is at 257
        (tar.getvalue()[:265], False, PipeKind.ARCHIVE),
        (b"V1127 12:00:00.000000 1 torch/_dynamo", False, None),  # its first line not whole
        (b"\n\n", False, None),  # nothing but blank lines yet
        (b"V1127 12:00:00.000000 1 torch/_dynamo/x.py:1] hello\n", False, PipeKind.TEXT),
        (trace_line[:40], False, None),
        (trace_line, False, PipeKind.TRACE),
        (trace_line[:40], True, PipeKind.TEXT),  # ended within its first line
        (b"", True, PipeKind.TEXT),
        (b"\r  3%|#  " * 100, False, None),  # a progress bar, its line not ended yet
        (b"\r" * PIPE_SNIFF_MAX, False, PipeKind.TEXT),  # ... past what a sniff reads
    ]
    for head, ended, kind in cases:
        assert sniff_pipe(head, ended) is kind, (head, ended)


class _Trickle(io.BytesIO):
    """stdin's bytes as a slow producer gives them: a few at each read."""

    def read1(self, size: int | None = -1, /) -> bytes:
        return super().read1(7)


def _cut_in_a_payload(tmp_path: Path) -> Path:
    """The trace file from inside its first payload line on (a copy that kept its end)."""
    data = TRACE_FILE.read_bytes()
    out = tmp_path / "cut.log"
    out.write_bytes(data[data.index(b"\n\t") + 9 :])
    return out


SLOW_PIPES: dict[str, Callable[[Path], Path]] = {
    "torch_logs": lambda d: TEXT_LOG,
    "trace": lambda d: TRACE_FILE,
    "trace cut inside a payload": _cut_in_a_payload,
    "tar": lambda d: make_tar(TRACE_DIR, d / "trace.tar"),
    "tar.gz": lambda d: make_tar(RUN, d / "run.tar.gz", "w:gz"),
    "zip": lambda d: make_zip(RUN, d / "run.zip"),
}


@pytest.mark.parametrize("case", sorted(SLOW_PIPES))
def test_a_slow_pipe_on_stdin_reads_as_its_file_does(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`tcview summary -` reads until the first bytes tell what the pipe carries (one read of
    a slow producer's pipe may give a few bytes: a plain tar is known at byte 257, a trace cut
    inside a payload at its next record)."""
    source = SLOW_PIPES[case](tmp_path)
    expected = json.loads(json.dumps(summary(source, capsys)).replace(str(source), "<stdin>"))
    assert expected["compiles"] > 0
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(_Trickle(source.read_bytes())))
    assert summary(Path("-"), capsys) == expected
