"""tcview's pure model: parsing, indexing and derived facts. Imports neither Textual nor torch.

What the rest of tcview types against: a `Model` (a `TraceSet` or a `TextLog`, from
`load_source`) and its `LogSource`s (`TraceFile`, `ProcessLog`), and the objects they hold.
"""

from .compile_id import CompileKey, FrameKey, parse_compile_id
from .index import TraceSet, discover
from .load import Hooks
from .model import (
    BreakGroup,
    CacheEvent,
    Compile,
    Error,
    Failure,
    Frame,
    FusionDecision,
    GraphBreak,
    HandlerError,
    Kernel,
    LogMeta,
    LogSource,
    Model,
    OtherLine,
    Rank,
    Recompile,
    Record,
    Run,
    StackFrame,
)
from .source import load_source
from .textlog import TextLog
from .textproc import ProcessLog
from .tracefile import TraceFile

__all__ = [
    "BreakGroup",
    "CacheEvent",
    "Compile",
    "CompileKey",
    "Error",
    "Failure",
    "Frame",
    "FrameKey",
    "FusionDecision",
    "GraphBreak",
    "HandlerError",
    "Hooks",
    "Kernel",
    "LogMeta",
    "LogSource",
    "Model",
    "OtherLine",
    "ProcessLog",
    "Rank",
    "Recompile",
    "Record",
    "Run",
    "StackFrame",
    "TextLog",
    "TraceFile",
    "TraceSet",
    "discover",
    "load_source",
    "parse_compile_id",
]
