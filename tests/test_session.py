"""The model session: one lock for the model, its loader (one-shot and follow) and its readers."""

from __future__ import annotations

import threading

from textual.widgets.tree import TreeNode
from ui_helpers import CPU_SAMPLE, ready, sync

from tcview.ingest.session import ModelSession
from tcview.model.objects import Model
from tcview.ui.app import TcviewApp
from tcview.ui.tree import Item, TraceTree

RUN_DIR = CPU_SAMPLE  # trace/ and torch_logs.txt: a model with a text log beside its traces


def _locks_of(model: Model) -> list[object]:
    text = model.text
    return [model.lock, *([text.lock] if text is not None else [])]


def test_a_one_shot_load_shares_the_session_lock_from_the_first_chunk() -> None:
    seen: list[bool] = []
    session = ModelSession(str(RUN_DIR))
    # Each chunk indexed: the model being read is already under the session's lock.
    session.on_update = lambda: seen.append(
        session.model is not None and session.model.lock is session.lock
    )
    session.run()
    model = session.model
    assert session.error is None and model is not None and model.text is not None
    assert seen and all(seen)
    assert all(lock is session.lock for lock in _locks_of(model))


def test_a_model_given_to_a_session_takes_its_lock() -> None:
    first = ModelSession(str(RUN_DIR))
    first.run()
    assert first.model is not None
    session = ModelSession(str(RUN_DIR), model=first.model)
    assert session.finished and session.model is first.model
    assert all(lock is session.lock for lock in _locks_of(first.model))


def test_follow_mode_grows_the_model_under_the_session_lock() -> None:
    session = ModelSession(str(RUN_DIR), follow=True)
    try:
        session.run()
        model = session.model
        assert session.follower is not None and session.follower.lock is session.lock
        assert model is not None and model.compiles and model.text is not None
        assert all(lock is session.lock for lock in _locks_of(model))
    finally:
        session.stop()


def _collapsed(tree: TraceTree) -> TreeNode[Item]:
    """A node whose children are not built yet (its expansion reads the model)."""
    todo = list(tree.root.children)
    while todo:
        node = todo.pop(0)
        item = node.data
        if item is not None and node.allow_expand and not item.loaded:
            return node
        todo.extend(node.children)
    raise AssertionError("every node is loaded already")


@sync
async def test_the_app_reads_under_the_one_lock_and_tree_expansion_takes_it() -> None:
    app = TcviewApp(str(RUN_DIR))
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        session = app.model_session
        tree = app.main_tree
        assert app.model is not None
        assert tree.model_lock is session.lock
        assert all(lock is session.lock for lock in _locks_of(app.model))

        node = _collapsed(tree)
        order: list[str] = []
        held, go = threading.Event(), threading.Event()

        def hold() -> None:
            with session.lock:
                held.set()
                go.wait(2.0)  # as long as a writer would: expansion must wait for it
                order.append("released")

        holder = threading.Thread(target=hold)
        holder.start()
        assert held.wait(5.0)
        threading.Timer(0.2, go.set).start()
        tree.ensure_loaded(node)
        order.append("expanded")
        holder.join(5.0)
        assert order == ["released", "expanded"]
