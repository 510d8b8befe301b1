"""tcview's pure model: parsing, indexing and derived facts. Imports neither Textual nor torch."""

from .compile_id import CompileKey, parse_compile_id
from .index import Run, TraceSet, discover
from .model import Compile, Frame, GraphBreak, Kernel, Record
from .tracefile import TraceFile

__all__ = [
    "Compile",
    "CompileKey",
    "Frame",
    "GraphBreak",
    "Kernel",
    "Record",
    "Run",
    "TraceFile",
    "TraceSet",
    "discover",
    "parse_compile_id",
]
