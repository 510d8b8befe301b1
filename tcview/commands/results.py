"""A command's report of an unchanged input, kept in the index cache (`cache.py`'s results).

`tcview summary` run again on the same trace file or directory, with every file unchanged and
the same tcview, prints what it printed before without reading the traces: a reopen costs the
interpreter's start, a stat and two small reads per file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tcview.ingest.cache import Files, IndexCache, Stamp, cache_disabled, stamp, stamped_files
from tcview.ingest.detect import discover, plan_input

# The inputs whose report depends on their trace files alone (a run directory adds its log).
CACHED_KINDS = ("trace-file", "trace-dir")


@dataclass
class Kept:
    """Where an input's report is kept, and the files it is made of as they were before
    the input was read (see `IndexCache.store_result`)."""

    store: IndexCache
    inputs: Path
    what: str
    files: Files
    before: list[Stamp | None]

    @classmethod
    def of(cls, path: str, what: str) -> Kept | None:
        """None where no report is kept: the cache is off or inside the input, or the input
        is not trace files (stdin, a TORCH_LOGS capture, a run directory) or has none."""
        try:
            if cache_disabled() or plan_input(path).kind not in CACHED_KINDS:
                return None
        except OSError:  # unreadable: the load that follows says so
            return None
        inputs = Path(path)
        store = IndexCache.default(inputs)
        if store is None:
            return None
        files = discover(inputs)
        if not files[0] or any(why.startswith("unreadable") for _, why in files[1]):
            return None
        return cls(store, inputs, what, files, [stamp(p) for p in stamped_files(files)])

    def lookup(self) -> Any:
        """The report kept for these files, or None."""
        raw = self.store.lookup_result(self.what, self.inputs, self.files)
        if raw is None:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return None

    def store_report(self, report: Any) -> None:
        self.store.store_result(
            self.what, self.inputs, self.files, self.before, json.dumps(report).encode()
        )
        if self.store.written:
            self.store.evict()  # results count under the cache's cap as entries do
