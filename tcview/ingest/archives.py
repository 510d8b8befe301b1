"""Traces as people share them: a gzipped (or zstd, xz, bzip2) trace or TORCH_LOGS capture, and
a tar (plain or compressed) or zip of a trace or run directory, turned into a local copy that
the rest of tcview reads as it reads any input.

The copy is made in the cache directory (``archives/`` under `cache.cache_root`), never beside
the input, one per input as it is (its absolute path, size and mtime): a second open reuses it.
With the cache off (``TCVIEW_NO_CACHE``, ``--no-cache``) or a cache directory that cannot be
written, it goes to a temporary folder removed at exit instead.

An archive is untrusted: a member whose path is absolute or climbs out (``..``), a symbolic or
hard link, a device or FIFO refuses the whole archive, before anything of that member is
written, and the half-made copy is removed. Everything is written inside a fresh temporary
folder that is renamed into place once whole.

zstd needs Python 3.14's ``compression.zstd`` or the ``zstandard`` package; without either a
.zst input is refused with a message that says so. Light to import: the codecs are imported
when an archive is met.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

from tcview.ingest.cache import STALE_TMP_S, cache_root
from tcview.text.safe import safe_line

GZIP, ZSTD, XZ, BZIP2 = "gzip", "zstd", "xz", "bzip2"
MAGICS = (
    (b"\x1f\x8b", GZIP),
    (b"\x28\xb5\x2f\xfd", ZSTD),
    (b"\xfd7zXZ\x00", XZ),
    (b"BZh", BZIP2),
)
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")
TAR_MAGIC_AT = 257  # "ustar" in a tar header (POSIX, GNU and pax all write it)
SUFFIXES = {GZIP: (".gz", ".tgz"), ZSTD: (".zst", ".tzst"), XZ: (".xz", ".txz"), BZIP2: (".bz2",)}
ZSTD_MISSING = (
    "a zstd file needs Python 3.14 (compression.zstd) or the zstandard package: "
    "pip install zstandard"
)
JUNK = ("__MACOSX",)  # a Finder zip's resource forks: not the archive's content
COPY_CHUNK = 1 << 20
META = "source.json"
CONTENT = "content"
FORMAT = 1  # of META; a copy of another format is made again

Progress = Callable[[int, int], None]


class ArchiveError(ValueError):
    """The archive cannot be unpacked (damaged, unsafe, or its codec is missing); the message
    says why, shown safely."""


@dataclass(frozen=True)
class ArchiveFormat:
    """How an input is packed: `codec` (None: not compressed) around `container` ("tar",
    "zip", or None: one compressed file)."""

    codec: str | None
    container: str | None

    def describe(self) -> str:
        if self.container == "zip":
            return "zip"
        if self.container == "tar":
            return f"tar.{self.codec}" if self.codec else "tar"
        return f"{self.codec} file"


@dataclass(frozen=True)
class Unpacked:
    """An archive's local copy: `path` is what to read (a file or a folder), `fresh` whether
    this call made it (False: reused)."""

    path: Path
    fresh: bool


# ---------------------------------------------------------------------- what an input is


def archive_format(path: Path) -> ArchiveFormat | None:
    """The format of a regular file that is an archive tcview unpacks; None for any other."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(TAR_MAGIC_AT + 8)
    except OSError:
        return None
    if head.startswith(ZIP_MAGICS):
        return ArchiveFormat(None, "zip")
    if _is_tar(head):
        return ArchiveFormat(None, "tar")
    codec = next((name for magic, name in MAGICS if head.startswith(magic)), None)
    if codec is None:
        return None
    if codec == ZSTD and zstd_module() is None:  # cannot look inside: go by the name
        name = path.name.lower()
        return ArchiveFormat(codec, "tar" if name.endswith((".tar.zst", ".tzst")) else None)
    try:
        with open(path, "rb") as raw, _decompressed(raw, codec) as stream:
            inner = _read_full(stream, TAR_MAGIC_AT + 8)
    except damage_errors():  # (ArchiveError is a ValueError)
        inner = b""  # damaged: said when it is unpacked
    return ArchiveFormat(codec, "tar" if _is_tar(inner) else None)


def archive_problem(fmt: ArchiveFormat) -> str | None:
    """Why an archive of this format cannot be unpacked here (a missing codec), or None."""
    if fmt.codec == ZSTD and zstd_module() is None:
        return ZSTD_MISSING
    return None


def zstd_module() -> str | None:
    """Which zstd decoder is here: "compression.zstd" (Python 3.14), "zstandard", or None."""
    for name in ("compression.zstd", "zstandard"):
        try:
            __import__(name)
        except ImportError:
            continue
        return name
    return None


def damage_errors() -> tuple[type[Exception], ...]:
    """What reading a damaged archive raises (the decoders' own errors included)."""
    import lzma
    import zlib

    errors: list[type[Exception]] = [OSError, EOFError, ValueError, RuntimeError]
    errors += [zlib.error, lzma.LZMAError]
    module = zstd_module()
    if module is not None:
        import importlib

        error = getattr(importlib.import_module(module), "ZstdError", None)
        if isinstance(error, type) and issubclass(error, Exception):
            errors.append(error)
    return tuple(errors)


def _is_tar(head: bytes) -> bool:
    return head[TAR_MAGIC_AT : TAR_MAGIC_AT + 5] == b"ustar"


# ---------------------------------------------------------------------- the local copy


def unpack(
    path: str,
    fmt: ArchiveFormat,
    progress: Progress | None = None,
    stop: Callable[[], bool] = lambda: False,
    cache: bool = True,
) -> Unpacked:
    """The local copy of the archive `path`: the one made before for the same file when there
    is one (with `cache`), else a new one. Raises ArchiveError."""
    problem = archive_problem(fmt)
    if problem is not None:
        raise ArchiveError(problem)
    source = Path(path).absolute()
    try:
        st = source.stat()
    except OSError as exc:
        raise ArchiveError(f"unreadable: {exc.strerror or exc}") from exc
    meta = {
        "format": FORMAT,
        "input": str(source),
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "archive": fmt.describe(),
    }
    key = hashlib.sha256(json.dumps(meta, sort_keys=True).encode()).hexdigest()[:32]
    home = _home() if cache else None
    if home is not None:
        kept = _reuse(home / key, meta)
        if kept is not None:
            return Unpacked(kept, False)
    if home is not None:
        _sweep(home)
    parent = home if home is not None else _temporary_home()
    work = Path(tempfile.mkdtemp(prefix=f".tmp-{key}-", dir=parent))
    try:
        entry = _extract(source, fmt, work / CONTENT, progress, stop, st.st_size)
        (work / META).write_text(json.dumps({**meta, "entry": entry}))
        final = parent / key
        try:
            os.rename(work, final)
        except OSError:
            kept = _reuse(final, meta)  # another process made it meanwhile
            if kept is not None:
                shutil.rmtree(work, ignore_errors=True)
                return Unpacked(kept, False)
            shutil.rmtree(final, ignore_errors=True)
            os.rename(work, final)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return Unpacked(_entry_path(final, entry), True)


def _home() -> Path | None:
    """archives/ in the cache directory, made; None when it cannot be written."""
    home = cache_root() / "archives"
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return home if os.access(home, os.W_OK | os.X_OK) else None


def _sweep(home: Path) -> None:
    """Remove the half-made copies that a process killed while unpacking left behind."""
    now = time.time()
    with contextlib.suppress(OSError):
        for item in os.scandir(home):
            with contextlib.suppress(OSError):
                old = now - item.stat(follow_symlinks=False).st_mtime > STALE_TMP_S
                if item.name.startswith(".tmp-") and old:
                    shutil.rmtree(item.path, ignore_errors=True)


_temporary: list[Path] = []


def _temporary_home() -> Path:
    """A private temporary folder for the copies of this process, removed at exit."""
    if not _temporary:
        _temporary.append(Path(tempfile.mkdtemp(prefix="tcview-archives-")))
        atexit.register(shutil.rmtree, str(_temporary[0]), True)
    return _temporary[0]


def _reuse(folder: Path, meta: dict[str, Any]) -> Path | None:
    """What to read of the copy in `folder` when it was made from the same input; else None."""
    try:
        kept = json.loads((folder / META).read_text())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(kept, dict) or any(kept.get(k) != v for k, v in meta.items()):
        return None
    entry = kept.get("entry")
    if not isinstance(entry, str) or ".." in entry.split("/"):
        return None
    where = _entry_path(folder, entry)
    return where if where.exists() else None


def _entry_path(folder: Path, entry: str) -> Path:
    return folder / CONTENT / entry if entry else folder / CONTENT


# ---------------------------------------------------------------------- unpacking


def _extract(
    source: Path,
    fmt: ArchiveFormat,
    dest: Path,
    progress: Progress | None,
    stop: Callable[[], bool],
    total: int,
) -> str:
    """Unpack into `dest` (made here); returns what to read, relative to it ("" for itself)."""
    dest.mkdir()
    with open(source, "rb") as raw:

        def moved() -> None:
            if stop():
                raise ArchiveError("unpacking stopped")
            if progress is not None:
                progress(raw.tell(), total)

        try:
            if fmt.container == "zip":
                _unzip(raw, dest, moved)
            elif fmt.container == "tar" and fmt.codec is None:
                _untar(raw, dest, moved)
            elif fmt.container == "tar":
                with _decompressed(raw, cast(str, fmt.codec)) as stream:
                    _untar(stream, dest, moved)
            else:
                name = _single_name(source.name, cast(str, fmt.codec))
                with _decompressed(raw, cast(str, fmt.codec)) as stream:
                    _copy(stream, dest / name, moved)
                return name
        except ArchiveError:
            raise
        except damage_errors() as exc:
            raise ArchiveError(
                f"cannot unpack this {fmt.describe()}: {safe_line(str(exc)) or type(exc).__name__}"
            ) from exc
    return _top(dest)


def _single_name(name: str, codec: str) -> str:
    """A compressed file's name without its codec's suffix ("x.log.gz": "x.log")."""
    for suffix in SUFFIXES[codec]:
        if name.lower().endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def _top(dest: Path) -> str:
    """What an archive's content is: the folder (or file) it wraps when it holds just one,
    through every folder that holds only one; else the content itself ("")."""
    here = dest
    while True:
        children = list(here.iterdir())
        if len(children) != 1:
            break
        here = children[0]
        if not here.is_dir():
            break
    return here.relative_to(dest).as_posix() if here != dest else ""


def _member_target(dest: Path, name: str, what: str) -> Path | None:
    """Where the member `name` goes under `dest`; None for one skipped (the root itself, a
    Finder zip's resource forks). Raises ArchiveError for a path that leaves `dest`."""
    shown = safe_line(name[:200])
    if "\0" in name:
        raise ArchiveError(f"{what} member {shown!r} has a NUL in its name: refused")
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        raise ArchiveError(f"{what} member {shown!r} has an absolute path: refused")
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ArchiveError(f"{what} member {shown!r} climbs out of the archive (..): refused")
    if not parts or parts[0] in JUNK:
        return None
    return dest.joinpath(*parts)


def _refuse_type(what: str, name: str, kind: str) -> ArchiveError:
    return ArchiveError(f"{what} member {safe_line(name[:200])!r} is {kind}: refused")


def _untar(stream: IO[bytes], dest: Path, moved: Callable[[], None]) -> None:
    import tarfile

    try:
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            for member in tar:
                target = _member_target(dest, member.name, "tar")
                if member.issym() or member.islnk():
                    raise _refuse_type("tar", member.name, "a link")
                if member.isdev():
                    raise _refuse_type("tar", member.name, "a device or FIFO")
                if not (member.isfile() or member.isdir()):
                    raise _refuse_type("tar", member.name, "not a file or folder")
                if target is None:
                    continue
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                data = tar.extractfile(member)
                if data is None:
                    raise _refuse_type("tar", member.name, "unreadable")
                _copy(data, target, moved)
    except tarfile.TarError as exc:
        raise ArchiveError(f"not a readable tar: {safe_line(str(exc))}") from exc


def _unzip(raw: IO[bytes], dest: Path, moved: Callable[[], None]) -> None:
    import zipfile

    try:
        archive = zipfile.ZipFile(raw)
    except zipfile.BadZipFile as exc:
        raise ArchiveError(f"not a readable zip: {safe_line(str(exc))}") from exc
    with archive:
        infos = archive.infolist()
        for info in infos:  # every member checked before any is written
            _member_target(dest, info.filename, "zip")
            mode = info.external_attr >> 16
            if info.create_system == 3 and stat.S_IFMT(mode):  # from Unix, with a type
                if stat.S_ISLNK(mode):
                    raise _refuse_type("zip", info.filename, "a link")
                if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                    raise _refuse_type("zip", info.filename, "a device or FIFO")
        for info in infos:
            target = _member_target(dest, info.filename, "zip")
            if target is None:
                continue
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            try:
                with archive.open(info) as data:
                    _copy(data, target, moved)
            except zipfile.BadZipFile as exc:
                raise ArchiveError(f"damaged zip: {safe_line(str(exc))}") from exc


def _copy(data: IO[bytes], target: Path, moved: Callable[[], None]) -> None:
    """Write a member's bytes to `target` (a new regular file: nothing that is there is
    followed, as nothing a link could be is ever made)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink() or target.is_dir():
        raise ArchiveError(f"member {safe_line(target.name)!r} clashes with another: refused")
    with open(target, "wb") as out:
        while chunk := data.read(COPY_CHUNK):
            out.write(chunk)
            moved()
    moved()


@contextlib.contextmanager
def _decompressed(raw: IO[bytes], codec: str) -> Iterator[Any]:
    """A reader of the decompressed bytes of `raw` (its position: the compressed bytes read)."""
    if codec == GZIP:
        import gzip

        with gzip.GzipFile(fileobj=raw, mode="rb") as gz:
            yield gz
    elif codec == XZ:
        import lzma

        with lzma.LZMAFile(raw) as xz:
            yield xz
    elif codec == BZIP2:
        import bz2

        with bz2.BZ2File(raw) as bz:
            yield bz
    elif codec == ZSTD:
        yield from _zstd_reader(raw)
    else:
        raise ArchiveError(f"unknown codec {codec}")


def _zstd_reader(raw: IO[bytes]) -> Iterator[Any]:
    module = zstd_module()
    if module == "compression.zstd":
        import importlib

        zstd = importlib.import_module("compression.zstd")
        with zstd.ZstdFile(raw) as zf:
            yield zf
    elif module == "zstandard":
        import importlib

        zstandard = importlib.import_module("zstandard")
        reader = zstandard.ZstdDecompressor().stream_reader(
            raw, read_across_frames=True, closefd=False
        )
        with reader:
            yield reader
    else:
        raise ArchiveError(ZSTD_MISSING)


def _read_full(stream: IO[bytes], size: int) -> bytes:
    """Up to `size` bytes (a decoder may return fewer a read)."""
    out = b""
    while len(out) < size:
        more = stream.read(size - len(out))
        if not more:
            break
        out += more
    return out


__all__ = ["ArchiveError", "ArchiveFormat", "Unpacked", "archive_format", "unpack"]
