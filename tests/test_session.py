"""The model session: one writer (the loader), readers of published versions that never change."""

from __future__ import annotations

from pathlib import Path

import pytest
from model_equal import differences
from ui_helpers import CPU_SAMPLE

import tcview.ingest.load
import tcview.ingest.session
from tcview.ingest.live import Follower
from tcview.ingest.session import ModelSession
from tcview.ingest.source import load_source
from tcview.model.freeze import WRITER_ONLY, freeze
from tcview.model.memo import Memo
from tcview.model.objects import Model

RUN_DIR = CPU_SAMPLE  # trace/ and torch_logs.txt: a model with a text log beside its traces


def _state(model: Model) -> tuple[object, ...]:
    return (
        model.summary_counts(),
        len(model.compiles),
        [len(f.records) for f in model.files],
        [c.status for c in model.compiles],
    )


def test_a_one_shot_load_publishes_versions_that_never_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Small chunks, a version at each: many versions while the writer goes on.
    monkeypatch.setattr(tcview.ingest.load, "CHUNK", 16 << 10)
    monkeypatch.setattr(tcview.ingest.session, "PROGRESS_PUBLISH_S", 0.0)
    # ... however long a frozen copy takes on this machine (no share of the time to keep)
    monkeypatch.setattr(tcview.ingest.session, "PROGRESS_SHARE", float("inf"))
    published: list[tuple[Model, tuple[object, ...]]] = []
    session = ModelSession(str(RUN_DIR))

    def moved() -> None:
        model = session.model
        if model is not None and all(model is not m for m, _ in published):
            published.append((model, _state(model)))

    session.on_update = moved
    session.run()
    model = session.model
    assert session.error is None and model is not None and model.text is not None
    assert len(published) > 2, "no versions were published while the input was read"
    # Each version is as it was when it was published, whatever the writer did after it.
    for version, state in published:
        assert _state(version) == state
    assert _state(model) == _state(load_source(str(RUN_DIR), cache=False))


def test_a_model_given_to_a_session_is_its_only_version() -> None:
    first = ModelSession(str(RUN_DIR))
    first.run()
    assert first.model is not None
    session = ModelSession(str(RUN_DIR), model=first.model)
    assert session.finished and session.model is first.model


def test_a_frozen_copy_equals_its_model_and_shares_nothing_that_changes() -> None:
    model = load_source(str(RUN_DIR), cache=False)
    frozen = freeze(model)
    assert differences(model, frozen) == []
    mutable = (list, dict, set)

    def reachable(root: object) -> dict[int, object]:
        seen: dict[int, object] = {}
        todo = [root]
        while todo:
            obj = todo.pop()
            if id(obj) in seen or isinstance(obj, (str, bytes, int, float, type(None), Memo)):
                continue  # (a file's memo is the file's, in every version: memo.py)
            seen[id(obj)] = obj
            if isinstance(obj, dict):
                todo.extend(obj.values())
            elif isinstance(obj, (list, set, tuple)):
                todo.extend(obj)
            elif type(obj).__module__.startswith("tcview.model"):
                todo.extend(getattr(obj, n) for n in getattr(obj, "__slots__", ()) if n != "meta")
                todo.extend(getattr(obj, "__dict__", {}).values())
            elif type(obj).__name__ in ("TraceSet", "TraceFile", "TextLog", "ProcessLog"):
                state = {k: v for k, v in vars(obj).items() if k not in WRITER_ONLY}
                todo.extend(state.values())
        return seen

    theirs = reachable(model)
    shared = [
        type(obj).__name__
        for key, obj in reachable(frozen).items()
        if key in theirs
        and (isinstance(obj, mutable) or type(obj).__name__ in ("Compile", "Record"))
    ]
    assert shared == []


def _write_half(source: Path, dest: Path) -> bytes:
    data = source.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    dest.write_bytes(data[:cut])
    return data[cut:]


def test_follow_mode_publishes_new_versions_and_old_ones_stay_as_they_were(tmp_path: Path) -> None:
    (trace,) = (RUN_DIR / "trace").glob("*.log")
    live = tmp_path / "t.log"
    rest = _write_half(trace, live)
    follower = Follower(str(live))
    follower.step()
    follower.publish()
    first = follower.published
    before = _state(first)
    with live.open("ab") as fh:
        fh.write(rest)
    assert follower.step()
    assert _state(first) == before  # the writer grew its own model, not the published one
    follower.publish()
    second = follower.published
    assert second is not first and second is not follower.model
    assert _state(second) != before
    assert _state(second) == _state(load_source(str(live), cache=False))
