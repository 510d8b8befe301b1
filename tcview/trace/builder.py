"""The one place facts are made: compiles (with their frames), kernels, graph breaks, recompiles,
failures and cache events, appended to the model's fact lists; and how handlers are run.

Both indexers (trace files and TORCH_LOGS text) report through a `Builder`, and run their
handler tables through it. A handler has one shape for both formats: `Handler[Source]`, called
with the builder, the source and the record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, TypeAlias, TypeVar

from .compile_id import CompileKey
from .facts import BreakText
from .model import (
    NOT_KERNEL_METHODS,
    CacheEvent,
    Compile,
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

    def compile_for(self, source: LogSource, key: CompileKey) -> Compile:
        """The compile `key` names in `source`, made (with its frame) the first time.

        Every lookup of a compile by its id goes through here, so that what identifies a
        compile can change in this one place. Whoever changes it must `forget()` the memos.
        """
        comp = source.compiles.get(key)
        if comp is not None:
            return comp
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
    ) -> Failure:
        comp = rec.compile
        failure = Failure(comp, fail_type, reason, location, rec, origin)
        source.failure_count += 1
        if comp is not None:
            comp.failures.append(failure)
        self.facts.failures.append(failure)
        return failure

    def cache_event(self, rec: Record, cache: str, result: str) -> None:
        comp = rec.compile
        event = CacheEvent(comp, cache, result, rec)
        if comp is not None:
            comp.cache.append(event)
        self.facts.cache_events.append(event)

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
