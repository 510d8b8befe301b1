"""How the browser opens its input: one `OpenOptions`, from the command (`tcview open`, `tcview
run`) through the app and the browser screen to the model session."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tcview.analysis.paths import PathMap
from tcview.model.objects import Model


@dataclass(frozen=True)
class OpenOptions:
    """`path`: a trace file or directory, a run directory, or ``-`` (stdin, read live from
    `stdin_fd`); `goto`: an item to go to once read (`tcview show`'s grammar); `follow`: read
    on as the input grows (`poll`: by polling, not inotify); `model`: one already read (a
    one-shot input only); `path_map`: where the trace's source paths are here (the editor
    key); `no_exec`: never run the trace's code (the bench key); `python`: the interpreter the
    bench key runs it with; `profile`: a torch.profiler trace to join (--profile); `keymap`:
    the user's keys by binding id (docs/guide/keys.md), read and checked by the command before
    the app starts, so that the app never reads a file for it."""

    path: str
    goto: str | None = None
    follow: bool = False
    model: Model | None = None
    poll: bool = False
    stdin_fd: int | None = None
    path_map: PathMap | None = None
    no_exec: bool = False
    python: str | None = None
    profile: str | None = None
    keymap: Mapping[str, str] | None = None
