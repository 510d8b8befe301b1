"""Messages up: what background threads tell the UI (the model moved, the job wrote lines, the
job's GPUs were sampled, the job ended), and what views and dialogs ask of the browser.

A thread posts one of the first kind (`post_message` is thread-safe); the handler reads the
current state, never the message. So a burst merges into one: a message replaces a pending one of
its own type (as Textualize/toolong's file watcher does), and the UI redraws once.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from textual.message import Message
from textual.widget import Widget

from tcview.ingest.session import ModelSession
from tcview.model.objects import Compile, Frame, Kernel, LogSource, Record
from tcview.model.ranks import RankSet
from tcview.report.search import Hit

if TYPE_CHECKING:
    from tcview.run.bench import BenchResult
    from tcview.run.gpu import GpuSample
    from tcview.run.session import RunSession
    from tcview.ui.content import Document


class Merging(Message):
    """A message that a newer one of the same type replaces while it waits in the queue."""

    def can_replace(self, message: Message) -> bool:
        return type(message) is type(self)


class ModelMoved(Merging):
    """The model grew, shrank or was rebuilt (follow mode), or the index finished."""


class OutputArrived(Merging):
    """The job wrote lines: `lines_since` has them."""


class GpuSampled(Merging):
    """NVML read the job's GPUs (at most twice a second): what the status bar shows."""

    def __init__(self, sample: GpuSample) -> None:
        super().__init__()
        self.sample = sample


class JobEnded(Message):
    """A job's session ended (its status is final)."""

    def __init__(self, session: RunSession) -> None:
        super().__init__()
        self.session = session


class JobMoved(Message):
    """The job's status changed (tcview run): the browser redraws its status bar, and with
    `ended` its counts (no longer waiting for traces)."""

    def __init__(self, ended: bool = False) -> None:
        super().__init__()
        self.ended = ended


class JobRestarted(Message):
    """The job was rerun into `run_dir`: the browser shows that directory from now on."""

    def __init__(self, run_dir: str) -> None:
        super().__init__()
        self.run_dir = run_dir


# ---------------------------------------------------------------- from views and dialogs, up
# Panes, dialogs and the palette never reach into the app or the browser: they post one of
# these. A pane's bubble up to the browser screen; the palette's and the global search's come
# to the app, which hands them to the browser.


class Reveal(Message):
    """Select an object (a compile, frame, kernel or record) in the tree and show it."""

    def __init__(self, kind: str, obj: Compile | Frame | Kernel | Record) -> None:
        super().__init__()
        self.kind = kind
        self.obj = obj


class ShowSource(Message):
    """Show a trace file (or log) in the tree and the viewer (the palette's files)."""

    def __init__(self, source: LogSource) -> None:
        super().__init__()
        self.source = source


class OpenHit(Message):
    """Open a global search hit's artifact at its line, the matches marked."""

    def __init__(self, hit: Hit, pattern: re.Pattern[str], label: str) -> None:
        super().__init__()
        self.hit = hit
        self.pattern = pattern
        self.label = label


class SearchAll(Message):
    """Show the global search; with `text`, search for it."""

    def __init__(self, text: str = "") -> None:
        super().__init__()
        self.text = text


class OverviewWanted(Message):
    """The tree's pane is to show the overview again: the browser draws it with the counts."""


class ClosePane(Message):
    """Close `pane` (escape on a view): the browser shows the one under it."""

    def __init__(self, pane: Widget) -> None:
        super().__init__()
        self.pane = pane


class CompareRanks(Message):
    """Show two ranks' compiles side by side, over the pane shown."""

    def __init__(self, left: int, right: int) -> None:
        super().__init__()
        self.left = left
        self.right = right


class RanksPicked(Message):
    """Show only these ranks (None: all) everywhere."""

    def __init__(self, ranks: RankSet) -> None:
        super().__init__()
        self.ranks = ranks


class BenchFinished(Message):
    """A benchmark ended: `doc` shows its result."""

    def __init__(self, result: BenchResult, doc: Document) -> None:
        super().__init__()
        self.result = result
        self.doc = doc


@runtime_checkable
class SessionHost(Protocol):
    """What holds the model session (the app): the palette reads the model through it."""

    @property
    def model_session(self) -> ModelSession: ...
