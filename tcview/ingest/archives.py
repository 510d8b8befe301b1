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
folder that is renamed into place once whole. So is one that unpacks to more than
`UNPACKED_MAX_BYTES`, or than the free space of the disk it is unpacked to less
`FREE_MARGIN_BYTES` (a zip or gzip bomb, a disk nearly full): refused when the bytes written
pass the limit (a zip's declared sizes: before any is written), never after the disk is full.

A compressed stream cut short (a download that stopped) is read as far as it goes: the copy
holds what was readable, its last file ending where the bytes ended (a trace's last record
then fails its checksum: the `trace_cut` finding), and one line on stderr says so each time it
is opened.

An archive piped to stdin (known by its first bytes) is spooled beside the copies and unpacked
as a file is, its copy found again by the hash of its bytes (`spool_archive`).

The copies in ``archives/`` are kept under `ARCHIVES_MAX_BYTES` in all: each new copy removes
the least recently used others (a reuse touches a copy), never one this process opened.

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
import re
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from tcview.ingest.cache import STALE_TMP_S, cache_disabled, cache_root
from tcview.text.safe import safe_line
from tcview.text.sizes import size_text

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
# One archive's unpacked bytes at most: a trace hardly reaches it, a bomb does at once.
UNPACKED_MAX_BYTES = 64 * 10**9
# Left free on the disk of the copies by an unpack (or a spool of stdin): the rest of the
# system, the index cache and tcview's own reports still need room.
FREE_MARGIN_BYTES = 10**9
# All the copies in archives/: past it, a new copy removes the least recently used others.
ARCHIVES_MAX_BYTES = 10 * 10**9
KEY = re.compile(r"[0-9a-f]{32}")  # a copy's folder name (anything else there is not touched)
STDIN = "<stdin>"

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
    this call made it (False: reused), `cut` whether the archive ended before its end (the
    copy holds what was readable)."""

    path: Path
    fresh: bool
    cut: bool = False


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
    is one (with `cache`), else a new one. Raises ArchiveError (the half-made copy removed).
    Says on stderr when the archive was cut short."""
    source = Path(path).absolute()
    spooled = _spools.pop(str(source), None)
    try:
        problem = archive_problem(fmt)
        if problem is not None:
            raise ArchiveError(problem)
        return _unpack(source, path, fmt, progress, stop, cache, spooled)
    finally:
        if spooled is not None:  # (its copy holds its bytes now)
            shutil.rmtree(source.parent, ignore_errors=True)


def _unpack(
    source: Path,
    path: str,
    fmt: ArchiveFormat,
    progress: Progress | None,
    stop: Callable[[], bool],
    cache: bool,
    spooled: dict[str, Any] | None,
) -> Unpacked:
    try:
        st = source.stat()
    except OSError as exc:
        raise ArchiveError(f"unreadable: {exc.strerror or exc}") from exc
    # A spool of stdin is a new file each time: its copy is found again by its bytes' hash.
    meta: dict[str, Any] = {"format": FORMAT, **(spooled or {}), "archive": fmt.describe()}
    if spooled is None:
        meta.update(input=str(source), size=st.st_size, mtime_ns=st.st_mtime_ns)
    # The warning stands alone: the path as given. An error follows the path (the commands
    # print "tcview: PATH: error"): the name is enough there.
    shown = STDIN if spooled is not None else safe_line(path)
    name = STDIN if spooled is not None else safe_line(source.name)
    key = hashlib.sha256(json.dumps(meta, sort_keys=True).encode()).hexdigest()[:32]
    home = _home() if cache else None
    if home is not None:
        _in_use.add(key)
        kept = _reuse(home / key, meta)
        if kept is not None:
            return _said(kept, shown)
    if home is not None:
        _sweep(home)
    parent = home if home is not None else _temporary_home()
    work = Path(tempfile.mkdtemp(prefix=f".tmp-{key}-", dir=parent))
    try:
        budget = _Budget.of(name, parent)
        entry, cut = _extract(source, fmt, work / CONTENT, progress, stop, st.st_size, budget)
        (work / META).write_text(json.dumps({**meta, "entry": entry, "cut": cut}))
        final = parent / key
        try:
            os.rename(work, final)
        except OSError:
            kept = _reuse(final, meta)  # another process made it meanwhile
            if kept is not None:
                shutil.rmtree(work, ignore_errors=True)
                return _said(kept, shown)
            shutil.rmtree(final, ignore_errors=True)
            os.rename(work, final)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    if home is not None:
        _evict(home)
    return _said(Unpacked(_entry_path(final, entry), True, cut), shown)


def _said(copy: Unpacked, shown: str) -> Unpacked:
    """`copy`, once stderr says that it holds only part of a cut archive."""
    if copy.cut:
        print(
            f"tcview: warning: {shown} is cut short (a download or copy that stopped?): "
            "read as far as it goes, the rest is missing",
            file=sys.stderr,
        )
    return copy


@dataclass
class _Budget:
    """What one unpack may write: `limit` bytes (`why` says which limit that is)."""

    shown: str  # the archive's name
    limit: int
    why: str
    used: int = 0

    @classmethod
    def of(cls, shown: str, parent: Path) -> _Budget:
        limit, why = UNPACKED_MAX_BYTES, "tcview's limit for one archive"
        with contextlib.suppress(OSError):
            free = shutil.disk_usage(parent).free - FREE_MARGIN_BYTES
            if free < limit:
                limit = max(0, free)
                why = f"the free space on the disk of {parent}, less {size_text(FREE_MARGIN_BYTES)}"
        return cls(shown, limit, why)

    def take(self, size: int) -> None:
        """Count `size` more bytes, about to be written; refuse the archive past the limit."""
        if self.used + size > self.limit:
            self._refuse(f"reached {size_text(self.used + size)}")
        self.used += size

    def declare(self, size: int) -> None:
        """Refuse an archive whose members say they hold more than the limit."""
        if size > self.limit:
            self._refuse(f"would reach {size_text(size)} (its members' sizes)")

    def _refuse(self, reached: str) -> None:
        raise ArchiveError(
            f"unpacking {self.shown} {reached}, past {size_text(self.limit)} ({self.why}): "
            "refused (a zip or gzip bomb, or too little room), nothing of it kept"
        )


def _evict(home: Path) -> None:
    """Remove the least recently used copies until archives/ holds ARCHIVES_MAX_BYTES at most:
    never one this process opened (the one just made, and any whose model may read it still);
    only the copies' own folders. Errors are ignored (another process may evict too)."""
    copies: list[tuple[float, int, str]] = []
    total = 0
    with contextlib.suppress(OSError):
        for item in os.scandir(home):
            if not KEY.fullmatch(item.name):
                continue
            with contextlib.suppress(OSError):
                if not item.is_dir(follow_symlinks=False):
                    continue
                size = _tree_size(item.path)
                total += size
                if item.name not in _in_use:
                    copies.append((item.stat(follow_symlinks=False).st_mtime, size, item.name))
    for _, size, name in sorted(copies):
        if total <= ARCHIVES_MAX_BYTES:
            break
        # Out of its name first, so that no other process reuses a copy half removed.
        gone = home / f".tmp-evicted-{name}-{os.getpid()}"
        try:
            os.rename(home / name, gone)
        except OSError:
            continue
        shutil.rmtree(gone, ignore_errors=True)
        total -= size


def _tree_size(folder: str) -> int:
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


_in_use: set[str] = set()  # the copies this process opened (by key): never evicted by it


_spools: dict[str, dict[str, Any]] = {}  # a spool of stdin (its path): what its copy is of


def archive_head(head: bytes, ended: bool = True) -> bool | None:
    """Whether a stream's first bytes are an archive's; None while they are too few to tell
    (`ended`: there are no more). A plain tar is known only by its magic at byte 257, but its
    first bytes are a member's name, NUL-padded: a text's first line ends before that."""
    magics = (*ZIP_MAGICS, *(magic for magic, _ in MAGICS))
    if head.startswith(magics) or _is_tar(head):
        return True
    if ended or len(head) >= TAR_MAGIC_AT + 8 or b"\n" in head.split(b"\0", 1)[0]:
        return False
    return None


def spool_archive(
    chunks: Iterable[bytes],
    cache: bool = True,
    progress: Progress | None = None,
    stop: Callable[[], bool] = lambda: False,
) -> Path:
    """An archive's bytes, as a pipe gives them, spooled to a file that `unpack` reads as that
    archive (and then removes). Raises ArchiveError (a spool past the limits of an unpack:
    nothing of it kept).

    The spool goes beside the copies (the cache's archives/, or the temporary folder without
    the cache), not to the temporary directory, often in memory and small. Its copy is found
    again by the hash of the bytes: the same archive piped twice is unpacked once."""
    home = _home() if cache and not cache_disabled() else None
    if home is not None:
        _sweep(home)
    parent = home if home is not None else _temporary_home()
    folder = Path(tempfile.mkdtemp(prefix=".tmp-stdin-", dir=parent))
    spool = folder / "stdin"
    budget = _Budget.of(STDIN, parent)
    digest = hashlib.sha256()
    try:
        with open(spool, "wb") as out:
            for chunk in chunks:
                if stop():
                    raise ArchiveError("reading stdin stopped")
                budget.take(len(chunk))
                digest.update(chunk)
                out.write(chunk)
                if progress is not None:
                    progress(budget.used, 0)
    except OSError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise ArchiveError(f"cannot spool stdin: {exc.strerror or exc}") from exc
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    atexit.register(shutil.rmtree, str(folder), True)  # (when it is never unpacked)
    _spools[str(spool.absolute())] = {
        "input": STDIN,
        "sha256": digest.hexdigest(),
        "size": budget.used,
    }
    return spool


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


def _reuse(folder: Path, meta: dict[str, Any]) -> Unpacked | None:
    """The copy in `folder` when it was made from the same input (touched: the most recently
    used, evicted last); else None."""
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
    if not where.exists():
        return None
    with contextlib.suppress(OSError):
        os.utime(folder)
    return Unpacked(where, False, kept.get("cut") is True)


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
    budget: _Budget,
) -> tuple[str, bool]:
    """Unpack into `dest` (made here); returns what to read, relative to it ("" for itself),
    and whether the archive was cut short (what was readable is there)."""
    dest.mkdir()
    entry: str | None = None  # a compressed file's name; None: the content's top (`_top`)
    cut = False
    with open(source, "rb") as raw:

        def moved() -> None:
            if stop():
                raise ArchiveError("unpacking stopped")
            if progress is not None:
                progress(raw.tell(), total)

        try:
            if fmt.container == "zip":
                _unzip(raw, dest, moved, budget)
            elif fmt.codec is None:
                cut = _untar(raw, dest, moved, budget)
            else:
                with _decompressed(raw, fmt.codec) as stream:
                    reader = _CutTolerant(stream)
                    if fmt.container == "tar":
                        cut = _untar(reader, dest, moved, budget)
                        # tarfile stops at the tar's end: the rest of the stream is read so
                        # that the codec checks its checksum (damage inside is said, not read).
                        while more := reader.read(COPY_CHUNK):
                            budget.take(len(more))
                            moved()
                    else:
                        entry = _single_name(source.name, fmt.codec)
                        _copy(reader, dest / entry, moved, budget)
                    cut = cut or reader.cut
        except ArchiveError:
            raise
        except damage_errors() as exc:
            raise ArchiveError(
                f"cannot unpack this {fmt.describe()}: {safe_line(str(exc)) or type(exc).__name__}"
            ) from exc
    if cut and not budget.used:
        raise ArchiveError(f"{budget.shown} is cut short before any of its content")
    return (_top(dest) if entry is None else entry), cut


class _CutTolerant:
    """A decoder's output, one decoded piece a read: a stream that ends before its end marker
    (cut short) reads as ended, with `cut` set, instead of raising: what came before stays
    (a whole-size read of the decoder would drop the piece it had when the end came)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.cut = False

    def read(self, size: int = -1) -> bytes:
        if size < 0:
            return b"".join(iter(lambda: self.read(COPY_CHUNK), b""))
        if self.cut or not size:
            return b""
        read1 = getattr(self.stream, "read1", None) or self.stream.read
        try:
            return bytes(read1(size))
        except EOFError:
            self.cut = True
            return b""


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


def _untar(stream: Any, dest: Path, moved: Callable[[], None], budget: _Budget) -> bool:
    """Unpack a tar stream; True when it ends inside a member (what came before is kept: of
    that member, up to the last whole COPY_CHUNK)."""
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
                data: Any = tar.extractfile(member) if member.issparse() else None
                if data is None and not member.issparse():
                    # Read where tarfile's own reader reads (`extractfile`): it drops the bytes
                    # of its last read when the stream ends inside the member; this keeps them.
                    tar.fileobj.seek(member.offset_data)
                    data = _Member(tar.fileobj, member.size)
                if data is None:
                    raise _refuse_type("tar", member.name, "unreadable")
                _copy(data, target, moved, budget)
    except tarfile.ReadError as exc:
        if str(exc) == CUT_TAR:
            return True
        raise ArchiveError(f"not a readable tar: {safe_line(str(exc))}") from exc
    except tarfile.TarError as exc:
        raise ArchiveError(f"not a readable tar: {safe_line(str(exc))}") from exc
    return False


class _Member:
    """The next `size` bytes of a tar stream (fewer when it ends first)."""

    def __init__(self, stream: Any, size: int) -> None:
        self.stream = stream
        self.left = size

    def read(self, size: int) -> bytes:
        data = bytes(self.stream.read(min(size, self.left))) if self.left > 0 else b""
        self.left -= len(data)
        return data


CUT_TAR = "unexpected end of data"  # tarfile's words for a stream that ends inside a member


def _unzip(raw: IO[bytes], dest: Path, moved: Callable[[], None], budget: _Budget) -> None:
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
        # A bomb says what it is in its directory: refused before a byte is written. (The
        # sizes may lie: what is written is counted too.)
        budget.declare(sum(info.file_size for info in infos))
        for info in infos:
            target = _member_target(dest, info.filename, "zip")
            if target is None:
                continue
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            try:
                with archive.open(info) as data:
                    _copy(data, target, moved, budget)
            except zipfile.BadZipFile as exc:
                raise ArchiveError(f"damaged zip: {safe_line(str(exc))}") from exc


def _copy(data: Any, target: Path, moved: Callable[[], None], budget: _Budget) -> None:
    """Write a member's bytes to `target` (a new regular file: nothing that is there is
    followed, as nothing a link could be is ever made), each piece counted before it is."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink() or target.is_dir():
        raise ArchiveError(f"member {safe_line(target.name)!r} clashes with another: refused")
    with open(target, "wb") as out:
        while chunk := data.read(COPY_CHUNK):
            budget.take(len(chunk))
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


__all__ = [
    "ARCHIVES_MAX_BYTES",
    "STDIN",
    "UNPACKED_MAX_BYTES",
    "ArchiveError",
    "ArchiveFormat",
    "Unpacked",
    "archive_format",
    "spool_archive",
    "archive_head",
    "unpack",
]
