"""The one place facts are made: compiles (with their frames), kernels, graph breaks, recompiles,
failures and cache events, appended to the model's fact lists; and how handlers are run.

Both indexers (trace files and TORCH_LOGS text) report through a `Builder`, and run their
handler tables through it. A handler has one shape for both formats: `Handler[Source]`, called
with the builder, the source and the record.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from typing import Literal, TypeAlias, TypeVar

from tcview.model.compile_id import FIRST_EPISODE, CompileKey
from tcview.model.facts import BreakText
from tcview.model.objects import (
    NOT_KERNEL_METHODS,
    CacheEvent,
    Compile,
    CudagraphNote,
    Error,
    Facts,
    Failure,
    Frame,
    GraphBreak,
    HandlerError,
    Kernel,
    LogSource,
    Phase,
    Recompile,
    Record,
)

S = TypeVar("S", bound=LogSource)
Handler: TypeAlias = Callable[["Builder", S, Record], None]
MESSAGE_MAX = 2000  # an exception's message is kept up to this many characters
# Bytes that name a compile (a trace header's context keys) -> its compile, False for none.
Memo: TypeAlias = dict[bytes, Compile | Literal[False]]


class Builder:
    """Makes the facts of one model (`facts`: its lists, in arrival order)."""

    def __init__(self, facts: Facts | None = None) -> None:
        self.facts = facts if facts is not None else Facts()
        self._memos: list[Memo] = []

    # ------------------------------------------------------------ compiles

    def compile_for(self, source: LogSource, key: CompileKey, start: bool = False) -> Compile:
        """The compile `key` names in `source`, made (with its frame) the first time.

        Every lookup of a compile by its id goes through here, so that what identifies a
        compile can change in this one place. Whoever changes it must `forget()` the memos.

        `start`: the record starts the compile (a ``dynamo_start`` with attempt 0 or none, a
        ``Step 1: torchdynamo start tracing`` message without ``_N``). An id that starts a
        second time in one episode begins the next one (`torch._dynamo.reset()` numbers ids
        from 0 again): the old episode's ids are retired, and this record and the ones after
        it name compiles of the new episode.
        """
        carried: array[int] | None = None
        if start:
            if key in source.started:
                carried = self._next_episode(source, key)
            source.started.add(key)
        comp = source.current.get(key)
        if comp is None:
            episode = source.episode
            comp = self._new_compile(
                source, key if episode == FIRST_EPISODE else key.in_episode(episode)
            )
            source.current[key] = comp
        if carried:
            comp.chromium_at[:0] = carried
            comp.chromium += len(carried)
        return comp

    def _next_episode(self, source: LogSource, key: CompileKey) -> array[int]:
        """Begin the next episode of `source` at a start of `key`; returns the chromium events
        (offsets) that already belong to the new compile: Dynamo logs a compile's first
        ``B`` events just before its ``dynamo_start``, while its id still named the old one."""
        old = source.current.get(key)
        source.episode += 1
        source.started = set()
        source.current = {}
        self.forget()
        if old is None or not old.chromium_at:
            return array("q")
        last = source.records[-1].offset if source.records else -1
        tail = array("q", [at for at in old.chromium_at if at > last])
        for i, at in enumerate(tail):
            if any(ev.get("ph") == "B" for ev in source.chromium_payloads([at])):
                moved = tail[i:]
                del old.chromium_at[len(old.chromium_at) - len(moved) :]
                old.chromium -= len(moved)
                return moved
        return array("q")

    def _new_compile(self, source: LogSource, key: CompileKey) -> Compile:
        comp = Compile(source, key, order=len(source.compiles))
        source.compiles[key] = comp
        if key.frame_id is not None:
            fkey = key.frame
            frame = source.frames.get(fkey)
            if frame is None:
                frame = source.frames[fkey] = Frame(source, fkey)
            frame.compiles.append(comp)
            comp.frame = frame
        self.facts.compiles.append(comp)
        if key.is_recompile:  # counted whether or not anything logs why
            comp.recompile = Recompile(comp)
            self.facts.recompiles.append(comp.recompile)
        return comp

    def memo(self) -> Memo:
        """A cache of `compile_for` results for a hot path, emptied by `forget()`."""
        memo: Memo = {}
        self._memos.append(memo)
        return memo

    def forget(self) -> None:
        """Empty every memo: what a compile id names has changed."""
        for memo in self._memos:
            memo.clear()

    # ------------------------------------------------------------ facts

    def kernel(self, source: LogSource, output: Record, name: str, method: str) -> None:
        """A kernel definition (``name = async_compile.method(``) in an output code."""
        if method in NOT_KERNEL_METHODS:
            return
        kernels = source.kernels
        # Output codes of one source do not interleave: the last kernel tells the position.
        index = kernels[-1].index + 1 if kernels and kernels[-1].output is output else 0
        comp = output.compile
        kernel = Kernel(name, method, output, index, comp)
        kernels.append(kernel)
        self.facts.kernels.append(kernel)
        if comp is not None:
            comp.kernels.append(kernel)

    def graph_break(self, rec: Record, parsed: BreakText) -> GraphBreak:
        comp = rec.compile
        gb = GraphBreak(comp, rec, "", parsed.location)
        gb.fill(parsed)
        if comp is not None:
            comp.breaks.append(gb)
        self.facts.breaks.append(gb)
        return gb

    def recompile_reasons(self, rec: Record, reasons: list[str]) -> None:
        """Why the compile `rec` names was made: the guards that failed."""
        comp = rec.compile
        if comp is None:
            return
        if comp.recompile is None:  # reasons logged under an id that is not a recompile's
            comp.recompile = Recompile(comp, reasons, rec)
            self.facts.recompiles.append(comp.recompile)
        else:
            comp.recompile.reasons = reasons
            comp.recompile.record = rec

    def failure(
        self,
        source: LogSource,
        rec: Record,
        fail_type: str,
        reason: str,
        location: str = "",
        origin: str = "compilation_metrics",
        comp: Compile | None = None,
    ) -> Failure:
        """A compile that failed: `rec`'s compile, or `comp` when the record names none."""
        if comp is None:
            comp = rec.compile
        failure = Failure(comp, fail_type, reason, location, rec, origin)
        source.failure_count += 1
        if comp is not None:
            comp.failures.append(failure)
        self.facts.failures.append(failure)
        return failure

    def error(self, error: Error) -> None:
        """The run crashed (an uncaught traceback, a non-zero exit code)."""
        self.facts.errors.append(error)

    def withdraw_error(self, error: Error) -> None:
        """A traceback reported as an error turned out to be caught (the program went on)."""
        if error in self.facts.errors:
            self.facts.errors.remove(error)

    def cudagraph_note(self, comp: Compile, rec: Record, kind: str, text: str) -> CudagraphNote:
        """What a message says about `comp`'s CUDA graphs (`model.CUDAGRAPH_NOTES`)."""
        note = CudagraphNote(comp, rec, kind, text)
        comp.cudagraph_notes.append(note)
        self.facts.cudagraph_notes.append(note)
        return note

    def cache_event(self, rec: Record, cache: str, result: str) -> None:
        comp = rec.compile
        event = CacheEvent(comp, cache, result, rec)
        if comp is not None:
            comp.cache.append(event)
        self.facts.cache_events.append(event)

    def adopt(self, facts: Facts) -> None:
        """Take the facts a file made elsewhere (restored from a snapshot), in their order."""
        own = self.facts
        own.compiles.extend(facts.compiles)
        own.breaks.extend(facts.breaks)
        own.recompiles.extend(facts.recompiles)
        own.failures.extend(facts.failures)
        own.errors.extend(facts.errors)
        own.cache_events.extend(facts.cache_events)
        own.kernels.extend(facts.kernels)

    # ------------------------------------------------------------ handlers

    def run(self, handler: Handler[S], source: S, rec: Record, phase: Phase) -> None:
        """Run a handler on a record; one that raises is recorded on the source as damage
        (the record stays, the facts it would have made may be missing) and the load goes on.
        """
        try:
            handler(self, source, rec)
        except Exception as exc:  # noqa: BLE001 - a handler's bug must not end the load
            error = HandlerError(rec, phase, type(exc).__name__, str(exc)[:MESSAGE_MAX])
            source.handler_errors.append(error)
