"""Per-file signatures: small JSON summaries of a finished trace file, made where the file is
indexed (a worker process, or the loading thread) and kept in the index cache beside it.

A pass over many files (divergence between ranks) compares signatures instead of walking every
file's records again in one process. To add one, put a function in `SIGNATURES`: it gets a
finished `TraceFile` and returns a JSON value, reading only the file's own index (its records,
compiles and their facts, not the model's fact lists, which a worker does not have) and, when it
must, its payloads. It must not raise (one that does is left out), and should return JSON
(anything else is not cached).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, TypeAlias

from tcview.analysis.divergence import DIVERGENCE_SIGNATURE, file_signature
from tcview.model.objects import JsonValue

if TYPE_CHECKING:
    from tcview.ingest.tracefile import TraceFile

Signature: TypeAlias = "Callable[[TraceFile], JsonValue]"

SIGNATURES: dict[str, Signature] = {DIVERGENCE_SIGNATURE: file_signature}


def compute(tf: TraceFile, names: Iterable[str] | None = None) -> dict[str, JsonValue]:
    """The signatures of a finished file (all, or the named ones)."""
    out: dict[str, JsonValue] = {}
    for name, fn in SIGNATURES.items():
        if names is not None and name not in names:
            continue
        try:
            out[name] = fn(tf)
        except Exception:  # noqa: BLE001 - a signature's bug must not end the load
            continue
    return out


def complete(tf: TraceFile, known: dict[str, JsonValue] | None) -> dict[str, JsonValue]:
    """`known` (from a worker or the cache) with the signatures it lacks computed here."""
    have = {k: v for k, v in (known or {}).items() if k in SIGNATURES}
    missing = [name for name in SIGNATURES if name not in have]
    if missing:
        have.update(compute(tf, missing))
    return have
