"""The model types the UI reads, one name for either input format.

Until the model declares its own base types, these are unions of the two implementations:
a TraceSet (structured trace) or a TextLog (TORCH_LOGS text), and their per-file indexes.
When the model declares them, these names become those types.
"""

from __future__ import annotations

from typing import TypeAlias

from ..trace.index import TraceSet
from ..trace.textlog import ProcessLog, TextLog
from ..trace.tracefile import TraceFile

Model: TypeAlias = TraceSet | TextLog
LogFile: TypeAlias = TraceFile | ProcessLog

__all__ = ["LogFile", "Model", "ProcessLog", "TextLog", "TraceFile", "TraceSet"]
