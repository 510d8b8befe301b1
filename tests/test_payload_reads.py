"""Payload reads from any thread while the file handle is closed under them (a follower's
rebuild, the end of a session): every read gets its bytes, none uses a closed or reused
descriptor."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from conftest import SAMPLES

from tcview.ingest.payloads import PayloadStore
from tcview.ingest.source import load_source
from tcview.ingest.tracefile import TraceFile


def test_reads_race_closes_and_always_get_their_bytes() -> None:
    model = load_source(str(SAMPLES / "cpu_breaks_recompiles" / "trace"), cache=False)
    (tf,) = model.files
    assert isinstance(tf, TraceFile)
    records = [r for r in tf.records if r.hdr_end < r.end][:40]
    expected = {id(r): tf.read(r.hdr_end, r.end) for r in records}
    stop = threading.Event()
    problems: list[str] = []

    def closer() -> None:
        while not stop.is_set():
            tf.close()

    def reader() -> None:
        for _ in range(300):
            for r in records:
                try:
                    got = tf.read(r.hdr_end, r.end)
                except (OSError, TypeError) as exc:  # a closed (None) or stale descriptor
                    problems.append(repr(exc))
                    return
                if got != expected[id(r)]:
                    problems.append(f"other bytes at {r.offset}")
                    return

    threads = [
        threading.Thread(target=closer),
        *(threading.Thread(target=reader) for _ in range(3)),
    ]
    for t in threads:
        t.start()
    for t in threads[1:]:
        t.join()
    stop.set()
    threads[0].join()
    assert problems == []
    tf.close()
    assert tf.store._fd is None  # closed once the readers were done


def test_the_recompile_budget_reads_nothing_from_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """The status bar asks for it on every redraw of a live input, on the UI thread."""
    from tcview.analysis.recompiles import recompile_budget

    model = load_source(str(SAMPLES / "cpu_breaks_recompiles" / "trace"), cache=False)
    reads: list[int] = []
    real = PayloadStore.read

    def counted(self: PayloadStore, start: int, end: int) -> bytes:
        reads.append(start)
        return real(self, start, end)

    monkeypatch.setattr(PayloadStore, "read", counted)
    budget = recompile_budget(model)
    assert budget is not None and budget.limit == 8  # the trace's own recompile_limit
    assert reads == []


def test_the_store_keeps_a_payload_from_its_second_read_within_its_bytes(tmp_path: Path) -> None:
    from tcview.ingest.payloads import PayloadStore

    data = bytes(range(256)) * 64
    path = tmp_path / "f"
    path.write_bytes(data)
    store = PayloadStore(path, cache_bytes=4096)
    assert store.read_cached(0, 1000) == data[:1000]
    assert store.read_cached(0, 1000) == data[:1000]  # read twice: kept from now on
    reads = store.reads
    assert store.read_cached(0, 1000) == data[:1000] and store.reads == reads
    for start in range(1000, 9000, 1000):  # others kept push it out: at most 4096 bytes
        store.read_cached(start, start + 1000)
        store.read_cached(start, start + 1000)
    assert store._recent_bytes <= 4096
    reads = store.reads
    store.read_cached(0, 1000)
    assert store.reads == reads + 1
    assert store.lineno_of(0) == 1
    store.close()
