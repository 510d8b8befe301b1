"""A TORCH_LOGS capture (captured stderr, a file or a pipe) indexed into the trace model.

Consecutive lines of one process with the same prefix form one message (one `Record` of that
process's `ProcessLog`). A few message kinds start a new message even under an identical prefix
(two graph breaks logged in the same millisecond from the same source line stay two).

Lines without the prefix (the program's prints, warnings, tracebacks, launcher lines) are kept in
order as other output. Records and other lines keep byte offsets only; text is read back from the
file (or from the spool file that stdin is copied into) on demand.

Bytes are fed in chunks: complete lines are indexed at once, a partial last line waits for more
bytes or `finish()`. Any split of the input gives the same index as one read.
"""

from __future__ import annotations

import os
import re
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tcview.ingest.builder import Builder
from tcview.ingest.linebuffer import LineBuffer
from tcview.ingest.load import CHUNK, Hooks, Progress, file_size, read_chunks
from tcview.ingest.texterrors import TracebackReader
from tcview.ingest.textlines import PREFIX, TORCHISH, LogReader, OtherLines, clean_line, text_start
from tcview.ingest.textmessages import (
    CLOSE_HANDLERS,
    HANDLED_MARKS,
    HEADER_HANDLERS,
    KNOWN_TAGS,
    SPLIT_MARKS,
    START_MARK,
    UNTAGGED_MARKS,
    fusion_decisions,
    untagged_kind,
)
from tcview.ingest.textproc import ProcessLog
from tcview.model.compile_id import CompileKey, parse_compile_id
from tcview.model.objects import (
    AOT_ID_LINE,
    CUDAGRAPH_EAGER_WARNING,
    KERNEL_DEF,
    RAN_EAGERLY,
    TEXT_FORMAT,
    Compile,
    FusionDecision,
    LogMeta,
    Model,
    PlacedLine,
    Record,
    Run,
)

KERNEL_LINE = re.compile(KERNEL_DEF.encode())  # in a message's text
AOT_ID = re.compile(AOT_ID_LINE.encode())  # an output code's second line
# The first line of an autotuning choice table, which torch writes to stderr unprefixed
# (torch/_inductor/select_algorithm.py); a launcher may put ``[rank0]:`` before it.
AUTOTUNE_TABLE = re.compile(rb"(?:\[rank\d+\]:)?AUTOTUNE \w+\(")
_EAGER_WARNING = CUDAGRAPH_EAGER_WARNING.encode()

CUSTOM_FORMAT_NOTICE = (
    "This capture uses a custom TORCH_LOGS_FORMAT: no line has torch's standard prefix "
    "('I1121 05:22:57.259000 635 torch/_dynamo/x.py:12] ...'), so graph breaks, recompiles "
    "and kernels cannot be told apart. All {n} lines are shown as other output. Unset "
    "TORCH_LOGS_FORMAT when capturing to let tcview parse the log."
)


class TextLog(Model):
    """A TORCH_LOGS capture indexed into the same model objects as a TraceSet."""

    files: list[ProcessLog]
    other: OtherLines
    format = TEXT_FORMAT

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        display: str | None = None,
    ) -> None:
        self.path = Path(path) if path is not None else None
        shown = display or (str(path) if path is not None else "<stdin>")
        Model.__init__(self, shown, self.path)
        self.reader = LogReader(self.path)
        self.builder = Builder(self)
        self.tracebacks = TracebackReader(self.builder, shown)
        self.files = []
        self.other = OtherLines(self.reader)
        self.pos = 0  # bytes consumed
        self._line = LineBuffer()  # the last line, until its newline comes
        self.overlong_lines = 0  # lines past MAX_LINE: counted as unparsed, not read
        self._lines = 0
        self.finished = False

        self._procs: dict[tuple[bytes | None, bytes], ProcessLog] = {}
        self._keys: dict[bytes, tuple[CompileKey, int] | None] = {}
        self.message_lines = 0
        self.blank_other = 0
        self._torchish = 0
        self._last: ProcessLog | None = None  # process of the last message line
        self._last_compile: Compile | None = None  # of the last message that named one

    # ---------------------------------------------------------------- loading

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        progress: Progress | None = None,
        hooks: Hooks | None = None,
        display: str | None = None,
    ) -> TextLog:
        """Index a capture; "-" reads stdin (`load_chunks`)."""
        hooks = hooks or Hooks(progress)
        if str(path) == "-":
            return cls.load_chunks(iter(lambda: sys.stdin.buffer.read(CHUNK), b""), hooks, display)
        log = cls(path, display)
        hooks.publish(log)
        try:
            size = file_size(Path(path))
            read_chunks(Path(path), lambda c: log.feed(c, spool=False), hooks, 0, size)
        except OSError as exc:
            log.skipped.append((Path(path), f"unreadable: {exc.strerror or exc}"))
        log.finish()
        return log

    @classmethod
    def load_chunks(
        cls, chunks: Iterable[bytes], hooks: Hooks | None = None, display: str | None = None
    ) -> TextLog:
        """Index a pipe's chunks, spooled to a temporary file."""
        hooks = hooks or Hooks()
        log = cls(None, display or "<stdin>")
        hooks.publish(log)
        done = 0
        for chunk in chunks:
            if hooks.stop():
                break
            log.feed(chunk)
            done += len(chunk)
            if hooks.progress is not None:
                hooks.progress(done, 0)
        log.finish()
        return log

    def feed(self, data: bytes, spool: bool | None = None) -> None:
        """Index appended bytes. Without a path they are also kept in a spool file."""
        if not data:
            return
        if spool is None:
            spool = self.path is None
        if spool:
            self.reader.keep(data)
        base = self.pos  # input offset of data[0]
        self.pos += len(data)
        line = self._line
        cut = data.rfind(b"\n")
        if cut < 0:
            line.hold(data, base)
            return
        if line.size or line.skipping:
            start = line.start
            head = line.complete(data[: cut + 1])
            if head is None:  # the end of an overlong line, then whole lines
                first = data.find(b"\n")
                self._overlong(start, base + first)
                head, start = data[first + 1 : cut + 1], base + first + 1
        else:
            head, start = data[: cut + 1], base
        if head:
            self._scan(head, start)
        line.hold(data[cut + 1 :], base + cut + 1)
        self.version += 1

    def finish(self) -> None:
        """The input is complete: index a last line without newline, close open messages."""
        start = self._line.start
        tail = self._line.take()
        if tail is None:
            self._overlong(start, self.pos)
        elif tail:
            self._scan(tail + b"\n", start)
        for proc in self.files:
            self._close(proc)
            proc.finished = True
        self.finished = True
        self.version += 1

    @property
    def pending_bytes(self) -> int:
        return self._line.size

    def _overlong(self, start: int, end: int) -> None:
        """A line longer than MAX_LINE (from `start` to its newline at `end`): an unparsed
        line, never read whole."""
        self._lines += 1
        self.overlong_lines += 1
        self.other.append(self._lines, start, end)

    # ---------------------------------------------------------------- scanning

    def _scan(self, buf: bytes, base: int) -> None:
        """Index the complete lines of `buf` (which ends with a newline) at offset `base`."""
        lines = buf.split(b"\n")
        lines.pop()  # after the last newline
        offset = base
        lineno = self._lines
        match = PREFIX.match
        for raw in lines:
            lineno += 1
            end = offset + len(raw)
            line = raw
            if line.endswith(b"\r") or b"\x1b" in line:
                line = clean_line(line)
            if not self._continues(line, end):
                m = match(line)
                if m is None:
                    self._other(line, lineno, offset, end)
                else:
                    self._message_line(line, m, lineno, offset, end)
            offset = end + 1
        self._lines = lineno

    def _continues(self, line: bytes, end: int) -> bool:
        """Fast path: `line` extends the message that the previous message line was part of.

        Exact without the regex: the line starts with that message's prefix, followed by the
        end of the line or a space and text that does not start with ``[`` (which could be a
        compile id or tag that makes the prefix longer).
        """
        proc = self._last
        if proc is None:
            return False
        rec = proc.open
        if rec is None:
            return False
        prefix = proc.open_prefix
        n = len(prefix)
        if not line.startswith(prefix):
            return False
        if len(line) > n:
            if line[n] != 32 or line.startswith(b"[", n + 1):
                return False
            if proc.open_marks and line.startswith(proc.open_marks, n + 1):
                return False
        rec.end = end
        self.message_lines += 1
        if rec.kind == "output_code":
            self._kernel_line(proc, rec, line, n + 1)
        return True

    def _eager_reason(self, line: bytes) -> None:
        """torch's warning after CUDA graph trees ran a graph eagerly: why, for the compile whose
        graph it was (the last one that ran eagerly)."""
        comp = self._last_compile
        notes = [n for n in comp.cudagraph_notes if n.kind == RAN_EAGERLY] if comp else []
        if notes and not notes[0].text:
            text = line.decode("utf-8", "replace")
            notes[0].text = text[text.find(CUDAGRAPH_EAGER_WARNING) :].strip()

    def _other(self, line: bytes, lineno: int, offset: int, end: int) -> None:
        if b"AUTOTUNE " in line[:32] and AUTOTUNE_TABLE.match(line):
            self.autotune_lines.append(PlacedLine(len(self.other), lineno, self._last_compile))
        elif _EAGER_WARNING in line:
            self._eager_reason(line)
        self.other.append(lineno, offset, end)
        self.tracebacks.other_line(line, lineno, offset)
        if not line.strip():
            self.blank_other += 1
        elif self.message_lines == 0 and TORCHISH.search(line):
            self._torchish += 1

    def _message_line(
        self, line: bytes, m: re.Match[bytes], lineno: int, offset: int, end: int
    ) -> None:
        self.message_lines += 1
        rank_b, pid_b = m.group(1), m.group(4)
        proc = self._procs.get((rank_b, pid_b))
        if proc is None:
            proc = self._new_process(rank_b, pid_b)
        self._last = proc
        pend = m.end()
        t = text_start(line, pend)
        rec = proc.open
        if (
            rec is not None
            and proc.open_prefix == line[:pend]
            and not (proc.open_marks and line.startswith(proc.open_marks, t))
        ):
            rec.end = end
            if rec.kind == "output_code":
                self._kernel_line(proc, rec, line, t)
            return
        self._close(proc)
        self._start(proc, line, m, t, lineno, offset, end)

    def _start(
        self,
        proc: ProcessLog,
        line: bytes,
        m: re.Match[bytes],
        t: int,
        lineno: int,
        offset: int,
        end: int,
    ) -> None:
        tag_b = m.group(8)
        text = line[t:]
        if tag_b is not None:
            kind = sys.intern(tag_b.decode("ascii", "replace"))
            proc.artifacts[kind] += 1
            if kind not in KNOWN_TAGS:
                proc.unknown[kind] += 1
        else:
            kind = untagged_kind(text, m.group(5))
        key = None
        attempt = 0
        cid = m.group(7)
        if cid is not None:
            parsed = self._keys.get(cid)
            if parsed is None and cid not in self._keys:
                parsed = self._keys[cid] = parse_compile_id(cid.decode("ascii"))
            if parsed is not None:
                key, attempt = parsed
        ts = m.group(3).decode("ascii")
        where = sys.intern(f"{m.group(5).decode('utf-8', 'replace')}:{int(m.group(6))}")
        meta = LogMeta(m.group(2).decode("ascii"), ts, where)
        tracebacks = self.tracebacks
        if tracebacks.reading or tracebacks.pending:
            tracebacks.message(proc.rank, key is not None)
        comp = None
        if key is not None:
            starts = kind == "step" and attempt == 0 and text.startswith(START_MARK)
            comp = self.builder.compile_for(proc, key, starts)
        rec = Record(proc, offset, lineno, offset, kind, meta, comp, attempt, None, kind)
        rec.end = end
        if comp is not None:
            proc.last_compile = self._last_compile = comp
        if proc.first_ts is None:
            proc.first_ts = ts
        proc.last_message_ts = ts
        proc.records.append(rec)
        proc.kinds[kind] += 1
        if comp is not None:
            comp.records.append(rec)
        proc.open = rec
        proc.open_prefix = line[: m.end()]
        proc.open_marks = SPLIT_MARKS.get(kind, UNTAGGED_MARKS if tag_b is None else ())
        proc.open_text = text
        proc.open_fact = None
        marks = HANDLED_MARKS.get(kind)
        proc.open_handled = marks is not None and text.startswith(marks)
        if proc.open_handled:
            handler = HEADER_HANDLERS.get(kind)
            if handler is not None:
                self.builder.run(handler, proc, rec, "header")
        if kind == "output_code":
            self._kernel_line(proc, rec, line, t)

    def _kernel_line(self, proc: ProcessLog, rec: Record, line: bytes, t: int) -> None:
        if rec.role is None and line.startswith(b"# AOT ID", t):
            aot = AOT_ID.match(line, t)
            if aot is not None:
                rec.role = aot.group(1).decode("ascii")
        km = KERNEL_LINE.match(line, t)
        if km is not None:
            name, method = km.group(1), km.group(2)
            self.builder.kernel(
                proc, rec, name.decode("utf-8", "replace"), method.decode("ascii", "replace")
            )

    def _close(self, proc: ProcessLog) -> None:
        rec = proc.open
        if rec is None:
            return
        proc.open = None
        rec.closed = True
        if proc.open_handled:
            handler = CLOSE_HANDLERS.get(rec.kind)
            if handler is not None:
                self.builder.run(handler, proc, rec, "close")
        proc.open_fact = None

    def _new_process(self, rank_b: bytes | None, pid_b: bytes) -> ProcessLog:
        proc = ProcessLog(self.reader, int(rank_b) if rank_b is not None else None, int(pid_b))
        self._procs[(rank_b, pid_b)] = proc
        self.files.append(proc)
        return proc

    # ---------------------------------------------------------------- views

    @property
    def notices(self) -> list[str]:
        if self.custom_format:
            return [CUSTOM_FORMAT_NOTICE.format(n=len(self.other))]
        return []

    @property
    def custom_format(self) -> bool:
        return bool(self.message_lines == 0 and self._torchish)

    @property
    def runs(self) -> list[Run]:
        name = self.path.name if self.path is not None else "<stdin>"
        directory = str(self.path.parent) if self.path is not None else "<stdin>"
        return [Run(0, directory, list(self.files), f"TORCH_LOGS {name}")]

    def records_of(self, kind: str) -> list[Record]:
        # Every process reads the same file: in file order across processes.
        return sorted(super().records_of(kind), key=lambda r: r.offset)

    def fusion_decisions(self, compile: Compile | None = None) -> list[FusionDecision]:
        """Inductor's fusion choices, read from the `fusion` messages on demand: all of them,
        or those of one compile (of this log, or the same compile seen in a trace)."""
        if compile is None:
            records = self.records_of("fusion")
        else:
            records = [r for c in self.same_compiles(compile) for r in c.records_of("fusion")]
        return [d for rec in records for d in fusion_decisions(rec)]

    def same_compiles(self, compile: Compile) -> list[Compile]:
        """`compile` when it is one of this log's; else this log's compiles with its id in a
        process of its pids (a run directory's trace and text log the same compiles)."""
        if any(compile.file is proc for proc in self.files):
            return [compile]
        pids = compile.file.pids
        return [
            c
            for proc in self.files
            if proc.pid in pids
            for c in proc.compiles.values()
            if c.key == compile.key
        ]

    def summary_counts(self, verify: bool = False) -> dict[str, Any]:
        ranks = sorted({r for proc in self.files for r in proc.ranks})
        cache = Counter(e.result for e in self.cache_events if e.cache == "fx_graph")
        facts = self.compile_counts()
        out: dict[str, Any] = {
            "files": len(self.files),
            "records": sum(len(proc.records) for proc in self.files),
            "compiles": facts["compiles"],
            "frames": facts["frames"],
            "recompiles": facts["recompiles"],
            "empty_graphs": facts["empty_graphs"],
            "graph_breaks": len(self.breaks),
            "failures": len(self.failures),
            "errors": facts["errors"],
            "output_codes": sum(proc.output_codes for proc in self.files),
            "kernels": facts["kernels"],
            "unparsed_lines": len(self.other) - self.blank_other,
            "ranks": ranks,
            "fx_graph_cache": {r: cache[r] for r in ("hit", "miss", "bypass")},
            "format": self.format,
            "processes": len(self.files),
            "lines": self._lines,
            "message_lines": self.message_lines,
            "other_lines": len(self.other),
            "notices": self.notices,
        }
        if verify:
            out["md5_mismatches"] = 0  # text has no checksums
        return out

    def verify(self) -> int:
        return 0

    def close(self) -> None:
        self.reader.close()

    def __repr__(self) -> str:
        return f"<TextLog {self.display}>"
