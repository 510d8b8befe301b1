"""Follow mode without the UI: growing, truncated, replaced and late files give exact models."""

from __future__ import annotations

import errno
import gzip
import io
import json
import os
import random
import shutil
import tarfile
import threading
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import pytest
from conftest import SAMPLES, unpack_shared

import tcview.ingest.live
from tcview.ingest.detect import PIPE_SNIFF_MAX
from tcview.ingest.index import TraceSet
from tcview.ingest.live import Follower
from tcview.ingest.replay import replay
from tcview.ingest.source import NotATrace, load_source
from tcview.ingest.textlog import TextLog
from tcview.model.objects import Model
from tcview.report.summary import summary_json


def _summary(model: Model) -> dict:
    data = summary_json(model)
    data.pop("skipped", None)
    return data


def _summary_now(follower: Follower) -> dict:
    """What readers see while it follows: the last version it published."""
    return _summary(follower.published)


def _sources() -> list[Path]:
    srcs = [SAMPLES / "gpu_triton_user" / "trace", SAMPLES / "cpu_breaks_recompiles" / "trace"]
    root = unpack_shared()
    if root is not None:
        srcs.append(root / "h200-torch2.11" / "ddp2" / "trace")  # two rank files
    return srcs


def _merge(srcs: list[Path], dest: Path) -> Path:
    """One finished directory holding all sources, for the one-shot answer."""
    for i, src in enumerate(srcs):
        shutil.copytree(src, dest / f"run{i}")
    return dest


def _wait_until(pred: Callable[[], bool], timeout: float = 10.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


@pytest.mark.parametrize("poll", [False, True], ids=["inotify", "poll"])
def test_replay_while_following_equals_one_shot(tmp_path: Path, poll: bool) -> None:
    srcs = _sources()
    expected = _summary(load_source(str(_merge(srcs, tmp_path / "done"))))
    live = tmp_path / "live"
    follower = Follower(str(live), poll=poll, interval=0.1)  # the directory does not exist yet
    follower.start()
    try:
        for i, src in enumerate(srcs):
            replay(src, live / f"run{i}", speed_mb_s=0, seed=i, max_chunk=48 << 10)
        # Everything, not the counts only: records after the last kernel (metrics, stacks)
        # arrive later on a busy machine.
        _wait_until(lambda: _summary_now(follower) == expected, timeout=60.0)  # asserted below
    finally:
        follower.stop()
    follower.finish()
    assert _summary(follower.model) == expected
    assert _summary(follower.published) == expected


def test_step_by_step_growth_is_exact(tmp_path: Path) -> None:
    src = next((SAMPLES / "cpu_breaks_recompiles" / "trace").iterdir())
    data = src.read_bytes()
    dest = tmp_path / "t"
    dest.mkdir()
    target = dest / src.name
    follower = Follower(str(dest))
    step = 7919
    with open(target, "wb") as fh:
        for pos in range(0, len(data), step):
            fh.write(data[pos : pos + step])
            fh.flush()
            follower.step()
    follower.step()
    assert _summary(follower.model) == _summary(load_source(str(dest)))


def test_truncation_and_replacement_reindex(tmp_path: Path) -> None:
    a = next((SAMPLES / "cpu_breaks_recompiles" / "trace").iterdir()).read_bytes()
    b = next((SAMPLES / "gpu_tinyblock" / "trace").iterdir()).read_bytes()
    dest = tmp_path / "t"
    dest.mkdir()
    target = dest / "dedicated_log_torch_trace_x.log"
    follower = Follower(str(dest))
    target.write_bytes(a[: len(a) // 2])
    follower.step()
    # truncated, then rewritten with other content
    target.write_bytes(b[:1000])
    follower.step()
    with open(target, "ab") as fh:
        fh.write(b[1000:])
    follower.step()
    assert follower.rebuilds == 1
    assert any("truncated" in n for n in follower.notices)
    assert _summary(follower.model) == _summary(load_source(str(dest)))
    # replaced by a new file (new inode), the way a rotation or `mv` does it
    tmp = dest / "new.tmp"
    tmp.write_bytes(a)
    os.replace(tmp, target)
    follower.step()
    assert any("replaced" in n for n in follower.notices)
    assert _summary(follower.model) == _summary(load_source(str(dest)))


def test_deleted_file_is_marked_and_kept(tmp_path: Path) -> None:
    dest = tmp_path / "t"
    shutil.copytree(SAMPLES / "cpu_breaks_recompiles" / "trace", dest)
    follower = Follower(str(dest))
    follower.step()
    before = follower.model.counts()
    for p in dest.iterdir():
        p.unlink()
    follower.step()
    assert all(tf.deleted for tf in follower.model.files)
    assert follower.model.counts() == before


def test_unreadable_file_is_noted_not_fatal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dest = tmp_path / "t"
    shutil.copytree(SAMPLES / "cpu_breaks_recompiles" / "trace", dest)
    target = next(dest.iterdir())
    follower = Follower(str(dest))
    follower.step()
    before = follower.model.counts()
    records = follower.model.summary_counts()["records"]
    with open(target, "ab") as fh:
        fh.write(b'V1121 05:00:00.000000 1 x.py:1] {"str": ["/x.py", 99]}\n')
    if os.geteuid() != 0:
        target.chmod(0)
    else:  # root reads everything: refuse the open the way a permission change would

        def refuse(path: str | os.PathLike[str], *args: Any, **kwargs: Any) -> IO[Any]:
            if Path(path) == target:
                raise PermissionError(13, "Permission denied", str(path))
            return open(path, *args, **kwargs)

        monkeypatch.setattr("tcview.ingest.live.open", refuse, raising=False)
    assert follower.step() is False
    assert any("cannot read" in n and "Permission denied" in n for n in follower.notices)
    assert follower.model.counts() == before  # what was read stays
    monkeypatch.undo()
    target.chmod(0o644)
    assert follower.step() is True  # readable again: it catches up
    assert follower.model.summary_counts()["records"] == records + 1


def test_text_log_follow_equals_one_shot(tmp_path: Path) -> None:
    src = SAMPLES / "cpu_breaks_recompiles" / "torch_logs.txt"
    target = tmp_path / "logs.txt"
    follower = Follower(str(target))
    assert follower.kind == "text"
    data = src.read_bytes()
    with open(target, "wb") as fh:
        for pos in range(0, len(data), 5003):
            fh.write(data[pos : pos + 5003])
            fh.flush()
            follower.step()
    follower.finish()
    assert _summary(follower.model) == _summary(load_source(str(src)))


def _pipe_into(follower: Follower, data: bytes, sizes: tuple[int, ...]) -> None:
    """Write `data` into a pipe the follower reads, in chunks of the given sizes in turn."""
    r, w = os.pipe()
    follower.start(stdin_fd=r)

    def writer() -> None:
        pos, turn = 0, 0
        while pos < len(data):
            size = sizes[turn % len(sizes)]
            try:
                os.write(w, data[pos : pos + size])
            except BrokenPipeError:  # the follower closed it: it read no more
                break
            pos, turn = pos + size, turn + 1
            time.sleep(0.001)  # (the reader sees the chunks apart)
        os.close(w)

    t = threading.Thread(target=writer)
    t.start()
    t.join()
    assert _wait_until(lambda: any(n.startswith("input ended") for n in follower.notices))
    follower.stop()  # (it closed the pipe at its end)


PIPED = SAMPLES / "cpu_breaks_recompiles"


def _piped_trace() -> Path:
    return next((PIPED / "trace").glob("*.log"))


def _tar_gz(folder: Path) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        tar.add(folder, arcname=folder.name)
    return out.getvalue()


@pytest.mark.parametrize(
    ("data", "source"),
    [
        pytest.param(
            lambda: (PIPED / "torch_logs.txt").read_bytes(),
            PIPED / "torch_logs.txt",
            id="torch_logs",
        ),
        pytest.param(lambda: _piped_trace().read_bytes(), _piped_trace(), id="trace"),
        pytest.param(
            lambda: gzip.compress((PIPED / "torch_logs.txt").read_bytes()),
            PIPED / "torch_logs.txt",
            id="gzip",
        ),
        pytest.param(lambda: _tar_gz(PIPED / "trace"), PIPED / "trace", id="tar.gz"),
        pytest.param(lambda: _tar(PIPED / "trace"), PIPED / "trace", id="tar"),
    ],
)
@pytest.mark.parametrize("sizes", [(4096,), (1, 7, 300, 4096)], ids=["4k", "odd"])
def test_a_pipe_is_read_as_what_it_carries(
    data: Callable[[], bytes], source: Path, sizes: tuple[int, ...]
) -> None:
    """Known by its first bytes, however few the first reads give: TORCH_LOGS text line by
    line, a trace as a trace file, an archive as what it holds. Each reads as its file does."""
    follower = Follower("-")
    _pipe_into(follower, data(), sizes)
    assert _summary(follower.model) == _summary(load_source(str(source)))
    assert follower.model.display == "<stdin>"


def _tar(folder: Path) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        tar.add(folder, arcname=folder.name)
    return out.getvalue()


def test_a_piped_archive_that_cannot_be_read_says_why_at_the_end() -> None:
    follower = Follower("-")
    _pipe_into(follower, b"PK\x03\x04" + b"\0" * 100, (4096,))  # a zip's magic, then nothing
    assert follower.notices[-1].startswith("input ended: its archive could not be read: ")


def test_a_piped_archive_that_is_cut_says_so_and_nothing_crashes() -> None:
    follower = Follower("-")
    whole = gzip.compress(b"not a trace line\n" * 100)
    _pipe_into(follower, whole[: len(whole) // 2], (4096,))
    assert follower.notices == [
        "an archive on stdin: read once it has all come",
        "input ended: its archive was cut short",
    ]
    assert follower.model.summary_counts()["unparsed_lines"] > 0  # what it held, as far as it went


def test_fifo_is_read_as_a_stream_not_sniffed(tmp_path: Path) -> None:
    src = SAMPLES / "cpu_breaks_recompiles" / "torch_logs.txt"
    trace = next((SAMPLES / "cpu_breaks_recompiles" / "trace").iterdir())
    for data_file in (src, trace):
        fifo = tmp_path / f"fifo-{data_file.suffix}"
        os.mkfifo(fifo)
        writer = threading.Thread(target=lambda p=fifo, d=data_file: p.write_bytes(d.read_bytes()))
        writer.start()
        got = _summary(load_source(str(fifo)))
        writer.join()
        want = _summary(load_source(str(data_file)))
        keys = ("compiles", "graph_breaks", "recompiles", "kernels", "records")
        assert {k: got.get(k) for k in keys} == {k: want.get(k) for k in keys}
    fifo = tmp_path / "live-fifo"
    os.mkfifo(fifo)
    follower = Follower(str(fifo))
    follower.start()
    fifo.write_bytes(src.read_bytes())
    assert _wait_until(lambda: "input ended" in follower.notices)
    follower.stop()
    assert _summary(follower.model) == _summary(load_source(str(src)))


def test_follow_reads_the_files_a_one_shot_load_reads(tmp_path: Path) -> None:
    """One rule decides which files of a directory are traces, for load and follow: a file
    named like a trace but holding TORCH_LOGS text, and not a ``.log``, is skipped by both."""
    src = SAMPLES / "cpu_breaks_recompiles"
    dest = tmp_path / "t"
    dest.mkdir()
    shutil.copy(next((src / "trace").iterdir()), dest)
    notes = dest / "dedicated_log_torch_trace_notes.txt"
    notes.write_bytes((src / "torch_logs.txt").read_bytes()[:4000])
    follower = Follower(str(dest))
    follower.step()
    follower.finish()
    one_shot = load_source(str(dest))
    assert [f.path for f in follower.model.files] == [f.path for f in one_shot.files]
    assert notes in [p for p, _why in one_shot.skipped]
    assert _summary(follower.model) == _summary(one_shot)


@pytest.mark.parametrize("seed", range(6))
def test_rank_files_growing_interleaved_equal_one_shot(
    fixture_runs: Path, tmp_path: Path, seed: int
) -> None:
    """Two ranks' files written a random piece at a time, in turns, and read between pieces:
    the summary (its findings, stack tree and groups included) is the one-shot load's, whatever
    file a fact arrived from first."""
    src = fixture_runs / "ranks_ddp2"
    expected = _summary(load_source(str(src)))
    rnd = random.Random(seed)
    datas = {p.relative_to(src): p.read_bytes() for p in sorted(src.rglob("*")) if p.is_file()}
    dest = tmp_path / "live"
    follower = Follower(str(dest))
    pos = dict.fromkeys(datas, 0)
    handles = {}
    for rel in datas:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        handles[rel] = open(dest / rel, "wb")  # noqa: SIM115
    try:
        while left := [r for r in datas if pos[r] < len(datas[r])]:
            rel = rnd.choice(left)
            piece = datas[rel][pos[rel] : pos[rel] + rnd.randint(1, 60000)]
            handles[rel].write(piece)
            handles[rel].flush()
            pos[rel] += len(piece)
            if rnd.random() < 0.5:
                follower.step()
    finally:
        for fh in handles.values():
            fh.close()
    follower.step()
    follower.finish()
    assert _summary(follower.model) == expected


def test_a_followed_run_directory_learns_how_its_job_ended(tmp_path: Path) -> None:
    """run.json comes when `tcview run`'s job ends: the live model's findings then say a stop
    the user asked for, as a one-shot load does, and no crash."""
    from tcview.analysis.findings import findings

    run = tmp_path / "run"
    shutil.copytree(SAMPLES / "cpu_breaks_recompiles", run)
    follower = Follower(str(run))
    follower.step()
    assert follower.model.job_end is None
    (run / "run.json").write_text(
        '{"status": "killed (SIGINT)", "exit_code": null, "signal": "SIGINT", '
        '"stopped_by_user": true, "elapsed_s": 3.5}'
    )
    assert follower.step()
    end = follower.model.job_end
    assert end is not None and end.stopped_by_user and end.signal == "SIGINT"
    kinds = {f.kind.value for f in findings(follower.model)}
    assert "job_stopped" in kinds and "crash" not in kinds
    assert not follower.step()  # read once


def test_a_trace_cut_inside_a_payload_is_known_at_its_next_record(tmp_path: Path) -> None:
    """Its first line is the end of a payload line (a copy that kept the trace's end): a pipe
    giving a line at a time is read as a trace, as the same bytes in a file are."""
    data = _piped_trace().read_bytes()
    cut = tmp_path / "cut.log"
    cut.write_bytes(data[data.index(b"\n\t") + 9 :])
    follower = Follower("-")
    _pipe_into(follower, cut.read_bytes(), (20, 1, 1, 300))
    assert isinstance(follower.model, TraceSet)
    expected = _summary(load_source(str(cut)))
    assert expected["compiles"] > 0
    assert _summary(follower.model) == json.loads(json.dumps(expected).replace(str(cut), "<stdin>"))


def test_a_first_line_that_never_ends_is_read_as_text() -> None:
    """A progress bar's carriage returns before the first log line: text, decided once
    PIPE_SNIFF_MAX bytes have come without a line's end (the sniff does not grow without end)."""
    text = (PIPED / "torch_logs.txt").read_bytes()
    data = b"\r  3%|#  " * (PIPE_SNIFF_MAX // 8) + b"\n" + text
    follower = Follower("-")
    _pipe_into(follower, data, (4096,))
    assert isinstance(follower.model, TextLog)
    assert (
        follower.model.summary_counts()["compiles"]
        == load_source(str(PIPED / "torch_logs.txt")).summary_counts()["compiles"]
    )


def test_a_piped_archive_holding_another_is_refused_as_its_file_is(tmp_path: Path) -> None:
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as zf:
        zf.writestr("torch_logs.txt", (PIPED / "torch_logs.txt").read_bytes())
    outer = tmp_path / "nested.tar.gz"
    with tarfile.open(outer, "w:gz") as tar:
        info = tarfile.TarInfo("logs.zip")
        info.size = len(inner.getvalue())
        tar.addfile(info, io.BytesIO(inner.getvalue()))
    with pytest.raises(NotATrace) as refused:
        load_source(str(outer))
    follower = Follower("-")
    _pipe_into(follower, outer.read_bytes(), (4096,))
    assert follower.notices[-1] == f"input ended: its archive could not be read: {refused.value}"


def test_a_pipe_that_cannot_be_spooled_ends_with_why(monkeypatch: pytest.MonkeyPatch) -> None:
    """A full disk while a piped trace is written to its spool: the follower says so at the
    input's end, and its reader does not die without a word."""

    def full() -> tuple[int, Path]:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(tcview.ingest.live, "new_spool", full)
    follower = Follower("-")
    _pipe_into(follower, _piped_trace().read_bytes(), (4096,))
    assert follower.notices[-1] == (
        "input ended: reading it failed: OSError: [Errno 28] No space left on device"
    )
