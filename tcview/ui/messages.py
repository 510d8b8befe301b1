"""What background threads tell the app: the model moved, the job wrote lines, the job's GPUs
were sampled, the job ended.

A thread posts one of these (`post_message` is thread-safe); the handler reads the current
state, never the message. So a burst merges into one: a message replaces a pending one of
its own type (as Textualize/toolong's file watcher does), and the UI redraws once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from tcview.run.gpu import GpuSample
    from tcview.run.session import RunSession


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
