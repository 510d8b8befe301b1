"""The index cache: each trace file's snapshot, kept in the user's cache directory.

Where: ``$TCVIEW_CACHE_DIR``, else ``$XDG_CACHE_HOME/tcview``, else ``~/.cache/tcview``; one
entry per trace file in ``index/``, named by a hash of the file's absolute path. Never in the
trace directory: a cache directory inside the input is not used.

An entry is trusted for nothing. It is a header (magic, then a JSON object: format, a
fingerprint of the indexing code, the file's path, device, inode, size and mtime, hashes of the
first and last 64 KiB indexed, the length and SHA-256 of the payload) and a payload (the
snapshot, then the file's signatures as JSON). Every field is type-checked; an entry for
another path, another code, a file that changed, a payload that does not hash, or one that does
not parse is a miss, and the file is indexed again. A file that only grew (same inode, more
bytes, the first and last indexed bytes unchanged) resumes from the end of the entry.

Beside the index, ``results/`` keeps what a command made of a whole input (`tcview summary`'s
report), named by a hash of the input's absolute path and what the result is. Its header lists
the input's files (each stamped, and hashed at both ends, as above) and the files it skipped,
and fingerprints the code through the report layer: a result is used only when the input has
the same files, each unchanged, and the same code would make it.

Writes go to a temporary file renamed into place; a cache directory that cannot be written
(read-only, full disk) only means no entry is written. The directory is kept under a size cap
(``$TCVIEW_CACHE_MAX_MB``, 1024 by default), the least recently used entries removed first.
``TCVIEW_NO_CACHE=1`` (or ``--no-cache``) turns it all off.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import stat
import struct
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (a reopen whose report is kept imports no model)
    from tcview.model.objects import JsonValue

MAGIC = b"TCVIEW-INDEX\n"
RESULT_MAGIC = b"TCVIEW-RESULT\n"
CACHE_FORMAT = 1
_LENGTH = struct.Struct("<I")
MAX_HEADER = 64 << 10
_HEAD_BYTES = len(MAGIC) + _LENGTH.size + MAX_HEADER  # what holds any valid header
SPAN = 64 << 10  # bytes hashed at each end of what an entry indexed
DEFAULT_MAX_MB = 1024
NO_CACHE_ENV = "TCVIEW_NO_CACHE"
DIR_ENV = "TCVIEW_CACHE_DIR"
MAX_ENV = "TCVIEW_CACHE_MAX_MB"
STALE_TMP_S = 3600  # a temporary file this old was left by a process that died

_fingerprints: dict[tuple[str, ...], str] = {}
INDEXING_LAYERS = ("model", "text", "analysis", "ingest")  # what an index is made by
# What a command's report (a result entry) is made by: all but the app.
REPORT_LAYERS = (*INDEXING_LAYERS, "report", "run", "commands")


def code_fingerprint(layers: tuple[str, ...] = INDEXING_LAYERS) -> str:
    """A hash of the code of `layers` (every module of the layers an entry is made by): an
    entry made by other code is a miss, so that a fixed handler never serves an old index."""
    known = _fingerprints.get(layers)
    if known is None:
        digest = hashlib.sha256()
        package = Path(__file__).resolve().parent.parent
        for path in sorted(p for layer in layers for p in (package / layer).glob("*.py")):
            digest.update(f"{path.parent.name}/{path.name}".encode())
            try:
                digest.update(path.read_bytes())
            except OSError:
                digest.update(b"?")
        known = _fingerprints[layers] = digest.hexdigest()
    return known


def cache_disabled() -> bool:
    return os.environ.get(NO_CACHE_ENV, "").strip() not in ("", "0")


def cache_root() -> Path:
    explicit = os.environ.get(DIR_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tcview"


def cache_max_bytes() -> int:
    try:
        mb = float(os.environ.get(MAX_ENV, DEFAULT_MAX_MB))
    except ValueError:
        mb = DEFAULT_MAX_MB
    return max(0, int(mb * (1 << 20)))


# An input's files: the trace files, then the skipped ones with why (`detect.discover`'s).
Files = tuple[list[Path], list[tuple[Path, str]]]


def stamped_files(files: Files) -> list[Path]:
    """The files of an input whose content a report may read: its trace files, and every other
    regular file it holds (a run.json, a profile beside the trace)."""
    return [*files[0], *(p for p, _ in files[1] if p.is_file())]


@dataclass
class Entry:
    """A valid entry for a file: its snapshot, and what it says about the file."""

    body: bytes
    signatures: dict[str, JsonValue] | None
    pos: int  # bytes of the file the snapshot indexed
    grown: bool  # the file has bytes after pos (to be fed to the restored index)


@dataclass(frozen=True)
class Stamp:
    """What identifies a file's content for the cache (from one stat)."""

    dev: int
    ino: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> Stamp:
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def stamp(path: Path) -> Stamp | None:
    try:
        return Stamp.of(os.stat(path))
    except OSError:
        return None


class IndexCache:
    """Entries under `root`/index, at most `max_bytes` in all."""

    def __init__(self, root: Path, max_bytes: int | None = None) -> None:
        self.root = root
        self.dir = root / "index"
        self.max_bytes = cache_max_bytes() if max_bytes is None else max_bytes
        self.hits = 0
        self.resumed = 0
        self.misses = 0
        self.written = 0
        self.write_errors = 0

    @classmethod
    def default(cls, inputs: Path | None = None) -> IndexCache | None:
        """The user's cache, or None when it is turned off or lies inside `inputs`."""
        if cache_disabled():
            return None
        root = cache_root()
        if inputs is not None and _inside(root, inputs):
            return None
        return cls(root)

    def entry_path(self, path: Path) -> Path:
        return self.dir / f"{_path_key(path)}.idx"

    # ------------------------------------------------------------ reading

    def lookup(self, path: Path, now: Stamp) -> Entry | None:
        """The entry for `path` as `now` stamps it, or None (absent, stale, foreign, bad)."""
        try:
            entry = self._lookup(path, now)
        except (OSError, ValueError, TypeError, KeyError, RecursionError, struct.error):
            entry = None
        if entry is None:
            self.misses += 1
        elif entry.grown:
            self.resumed += 1
        else:
            self.hits += 1
        return entry

    def peek(self, path: Path, now: Stamp) -> Entry | None:
        """What `lookup` would most likely say, from the entry's header alone (the payload is
        neither read nor checked; `body` is empty): to plan a load without holding every
        entry at once. The entry is looked up for real when it is used."""
        try:
            data = _read_regular(self.entry_path(path), self.max_bytes, _HEAD_BYTES)
            header = _split(data)[0] if data is not None else None
            grown = _matches(header, path, now) if header is not None else None
        except (OSError, ValueError, TypeError, KeyError, RecursionError, struct.error):
            return None
        if grown is None or header is None:
            return None
        return Entry(b"", None, header["pos"], grown)

    def _lookup(self, path: Path, now: Stamp) -> Entry | None:
        where = self.entry_path(path)
        data = _read_regular(where, self.max_bytes)
        if data is None:
            return None
        header, payload = _split(data)
        if header is None:
            return None
        grown = _matches(header, path, now)
        if grown is None:
            return None
        pos = header["pos"]
        body_len, sigs_len = header["payload"]
        if body_len + sigs_len != len(payload):
            return None
        if hashlib.sha256(payload).hexdigest() != header["sha256"]:
            return None
        if not _ends_match(path, pos, header["head"], header["tail_at"], header["tail"]):
            return None
        signatures = None
        if sigs_len and not grown:
            value = json.loads(payload[body_len:])
            if isinstance(value, dict) and all(isinstance(k, str) for k in value):
                signatures = value
        with contextlib.suppress(OSError):
            os.utime(where)  # recently used: evicted last
        return Entry(payload[:body_len], signatures, pos, grown)

    # ------------------------------------------------------------ results

    def result_path(self, what: str, inputs: Path) -> Path:
        return self.root / "results" / f"{_path_key(inputs, what)}.res"

    def lookup_result(self, what: str, inputs: Path, files: Files) -> bytes | None:
        """The result `what` of the input `inputs` kept by `store_result`, when the input
        still has these files (`files`: the trace files, then the skipped ones with why), each
        of its `stamped_files` unchanged; else None."""
        where = self.result_path(what, inputs)
        try:
            data = _read_regular(where, self.max_bytes)
            if data is None or not data.startswith(RESULT_MAGIC):
                return None
            header, payload = _result_split(data[len(RESULT_MAGIC) :])
            if header is None or not (
                header["code"] == code_fingerprint(REPORT_LAYERS)
                and header["what"] == what
                and header["inputs"] == os.path.abspath(inputs)
                and header["skipped"] == [[str(p), why] for p, why in files[1]]
                and len(header["files"]) == len(stamped := stamped_files(files))
            ):
                return None
            for kept, path in zip(header["files"], stamped, strict=True):
                now = stamp(path)
                if (
                    now is None
                    or kept[0] != str(path)
                    or kept[1:5] != [now.dev, now.ino, now.size, now.mtime_ns]
                    or not _ends_match(path, now.size, kept[5], max(0, now.size - SPAN), kept[6])
                ):
                    return None
        except (OSError, ValueError, TypeError, KeyError, IndexError, RecursionError, struct.error):
            return None
        with contextlib.suppress(OSError):
            os.utime(where)  # recently used: evicted last
        return payload

    def store_result(
        self, what: str, inputs: Path, files: Files, before: list[Stamp | None], result: bytes
    ) -> bool:
        """Keep `result`, made from `files` (`lookup_result`'s) whose `stamped_files` were as
        `before` stamps them, when every one is still that file. False when nothing was
        written."""
        kept = []
        paths = stamped_files(files)
        if len(paths) != len(before):
            return False
        for path, was in zip(paths, before, strict=True):
            now = stamp(path)
            if now is None or now != was:
                return False
            try:
                head, tail = _hash_ends(path, now.size, max(0, now.size - SPAN))
            except OSError:
                return False
            kept.append([str(path), now.dev, now.ino, now.size, now.mtime_ns, head, tail])
        header = {
            "code": code_fingerprint(REPORT_LAYERS),
            "what": what,
            "inputs": os.path.abspath(inputs),
            "files": kept,
            "skipped": [[str(p), why] for p, why in files[1]],
            "length": len(result),
            "sha256": hashlib.sha256(result).hexdigest(),
        }
        head_bytes = json.dumps(header).encode()
        data = RESULT_MAGIC + _LENGTH.pack(len(head_bytes)) + head_bytes + result
        return self._put(self.result_path(what, inputs), data)

    # ------------------------------------------------------------ writing

    def store(
        self,
        path: Path,
        before: Stamp,
        pos: int,
        body: bytes,
        signatures: dict[str, JsonValue] | None,
        tail_from: int,
    ) -> bool:
        """Keep `body`, the snapshot of the first `pos` bytes of `path`, when the file is the
        one stamped `before` its reading and is still that file with exactly `pos` bytes.
        `tail_from`: where the bytes hashed at the end start at the latest (a line still
        pending is covered whole). False when nothing was written."""
        after = stamp(path)
        if after is None or after != before or pos != after.size:
            return False  # changed while it was read: never kept as complete
        try:
            sigs = json.dumps(signatures).encode() if signatures else b""
        except (TypeError, ValueError):
            sigs = b""
        payload = body + sigs
        tail_at = max(0, min(pos - SPAN, tail_from))
        try:
            head, tail = _hash_ends(path, pos, tail_at)
        except OSError:
            return False
        header = {
            "format": CACHE_FORMAT,
            "code": code_fingerprint(),
            "path": os.path.abspath(path),
            "dev": after.dev,
            "ino": after.ino,
            "size": after.size,
            "mtime_ns": after.mtime_ns,
            "pos": pos,
            "head": head,
            "tail_at": tail_at,
            "tail": tail,
            "payload": [len(body), len(sigs)],
            "sha256": hashlib.sha256(payload).hexdigest(),
            "written": time.time(),
        }
        head_bytes = json.dumps(header).encode()
        data = MAGIC + _LENGTH.pack(len(head_bytes)) + head_bytes + payload
        return self._put(self.entry_path(path), data)

    def _put(self, where: Path, data: bytes) -> bool:
        """Write an entry or a result under the cap; counted (`evict` after any)."""
        if len(data) > self.max_bytes:
            return False
        try:
            self._write(where, data)
        except OSError:
            self.write_errors += 1
            return False
        self.written += 1
        return True

    def _write(self, where: Path, data: bytes) -> None:
        where.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        import tempfile  # (only to write: not on a reopen)

        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=where.suffix, dir=where.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, where)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def evict(self) -> int:
        """Remove the least recently used entries until the cache fits its cap; returns how
        many were removed. Errors are ignored (another process may evict at the same time)."""
        items = []
        for folder in (self.dir, self.root / "results"):
            with contextlib.suppress(OSError):
                items += list(os.scandir(folder))
        now = time.time()
        entries: list[tuple[float, int, str]] = []
        for item in items:
            try:
                st = item.stat(follow_symlinks=False)
            except OSError:
                continue
            if item.name.startswith(".tmp-"):
                if now - st.st_mtime > STALE_TMP_S:
                    _unlink(item.path)
                continue
            if item.name.endswith((".idx", ".res")) and item.is_file(follow_symlinks=False):
                entries.append((st.st_mtime, st.st_size, item.path))
        total = sum(size for _, size, _ in entries)
        removed = 0
        for _, size, where in sorted(entries):
            if total <= self.max_bytes:
                break
            if _unlink(where):
                removed += 1
            total -= size
        return removed


# ---------------------------------------------------------------------- helpers


def _inside(root: Path, inputs: Path) -> bool:
    """True when the cache directory is the input directory or lies inside it. Only a directory
    can contain the cache: a single file's folder may hold it (`~/trace.log` beside
    `~/.cache/tcview`), and then the file is cached as any other."""
    try:
        r = root.resolve()
        i = inputs.resolve()
    except OSError:
        return True
    if not i.is_dir():
        return False
    return r == i or i in r.parents


def _matches(header: dict[str, Any], path: Path, now: Stamp) -> bool | None:
    """None when the entry is not for `path` as `now` stamps it (another format, code, path,
    file, or a file that shrank or changed in place); else whether the file has grown."""
    if not (
        header["format"] == CACHE_FORMAT
        and header["code"] == code_fingerprint()
        and header["path"] == os.path.abspath(path)
        and header["dev"] == now.dev
        and header["ino"] == now.ino
    ):
        return None
    pos = header["pos"]
    if header["size"] == now.size and header["mtime_ns"] == now.mtime_ns and pos == now.size:
        return False
    if now.size > pos:
        return True
    return None


def _unlink(where: str) -> bool:
    try:
        os.unlink(where)
        return True
    except OSError:
        return False


def _path_key(path: Path, what: str = "") -> str:
    """The file name an input's entry (or its result `what`) is kept under: its absolute path
    as the OS gives it (a name that is not UTF-8 included), hashed."""
    name = os.fsencode(os.path.abspath(path))
    return hashlib.sha256(f"{what}\0".encode() + name if what else name).hexdigest()[:40]


def _read_regular(where: Path, limit: int, prefix: int | None = None) -> bytes | None:
    """The bytes of a regular file of at most `limit` bytes (no symlink followed); only its
    first `prefix` bytes when given."""
    try:
        fd = os.open(where, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        if exc.errno not in (errno.ENOENT, errno.ELOOP, errno.EACCES, errno.ENOTDIR):
            raise
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit or st.st_size < len(MAGIC) + 4:
            return None
        chunks = []
        left = st.st_size if prefix is None else min(prefix, st.st_size)
        while left > 0:
            chunk = os.read(fd, min(left, 16 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


_HEADER_TYPES: dict[str, type | tuple[type, ...]] = {
    "format": int,
    "code": str,
    "path": str,
    "dev": int,
    "ino": int,
    "size": int,
    "mtime_ns": int,
    "pos": int,
    "head": str,
    "tail_at": int,
    "tail": str,
    "payload": list,
    "sha256": str,
    "written": (int, float),
}


def _split(data: bytes) -> tuple[dict[str, Any] | None, bytes]:
    """The entry's header (type-checked) and its payload; (None, b"") when malformed."""
    if not data.startswith(MAGIC):
        return None, b""
    at = len(MAGIC)
    (length,) = _LENGTH.unpack_from(data, at)
    at += _LENGTH.size
    if length > MAX_HEADER or at + length > len(data):
        return None, b""
    header = json.loads(data[at : at + length])
    if not isinstance(header, dict):
        return None, b""
    for key, kind in _HEADER_TYPES.items():
        value = header.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            return None, b""
    payload = header["payload"]
    if not (
        len(payload) == 2
        and all(type(n) is int and n >= 0 for n in payload)
        and header["pos"] >= 0
        and 0 <= header["tail_at"] <= header["pos"]
    ):
        return None, b""
    return header, data[at + length :]


_RESULT_TYPES: dict[str, type] = {
    "code": str,
    "what": str,
    "inputs": str,
    "files": list,
    "skipped": list,
    "length": int,
    "sha256": str,
}


def _result_split(data: bytes) -> tuple[dict[str, Any] | None, bytes]:
    """A result entry's header (type-checked) and its result, checked against the header's
    length and hash; (None, b"") when malformed."""
    (length,) = _LENGTH.unpack_from(data, 0)
    if _LENGTH.size + length > len(data):
        return None, b""
    header = json.loads(data[_LENGTH.size : _LENGTH.size + length])
    if not isinstance(header, dict):
        return None, b""
    for key, kind in _RESULT_TYPES.items():
        if not isinstance(header.get(key), kind) or isinstance(header.get(key), bool):
            return None, b""
    result = data[_LENGTH.size + length :]
    if len(result) != header["length"] or hashlib.sha256(result).hexdigest() != header["sha256"]:
        return None, b""
    return header, result


def _hash_ends(path: Path, pos: int, tail_at: int) -> tuple[str, str]:
    """SHA-256 of the first SPAN bytes of [0, pos) and of [tail_at, pos)."""
    with open(path, "rb") as fh:
        head = fh.read(min(pos, SPAN))
        fh.seek(tail_at)
        tail = fh.read(pos - tail_at)
    if len(head) != min(pos, SPAN) or len(tail) != pos - tail_at:
        raise OSError(errno.EIO, "the file is shorter than it was")
    return hashlib.sha256(head).hexdigest(), hashlib.sha256(tail).hexdigest()


def _ends_match(path: Path, pos: int, head: str, tail_at: int, tail: str) -> bool:
    try:
        return _hash_ends(path, pos, tail_at) == (head, tail)
    except OSError:
        return False
