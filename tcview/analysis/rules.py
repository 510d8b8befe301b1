"""The finding kinds: each one's severity, what it is about, and its docs page, in one table.

The findings (`findings.py`, `verdicts.py`, `breaks.py`, `recompile_findings.py`, `crashes.py`,
`cache_misses.py`, `dynamic_shapes.py`) say which kind a finding is; the list in
`docs/reference/findings.md` is generated from `RULES` (`python -m tcview.analysis.rules
docs/reference/findings.md` rewrites it; a test holds it).
Their order is the order findings of one severity and cost are listed in.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from enum import Enum

from tcview.text.pages import rewrite, with_lines


class Kind(str, Enum):
    """A finding's kind (the registry's key)."""

    def __str__(self) -> str:
        return self.value

    JOB_KILLED = "job_killed"
    DIED_IN_COMPILE = "died_in_compile"
    CRASH = "crash"
    COMPILE_FAILED = "compile_failed"
    NOTHING_COMPILED = "nothing_compiled"
    RECOMPILE_LIMIT = "recompile_limit"
    TRACE_CUT = "trace_cut"
    RECOMPILE_STORM = "recompile_storm"
    DIVERGENCE = "divergence"
    CUDAGRAPH_RERECORD = "cudagraph_rerecord"
    GRAPH_BREAK = "graph_break"
    CUDAGRAPHS = "cudagraphs"
    CACHE_MISS = "cache_miss"
    SAME_GRAPHS = "same_graphs"
    RECOMPILES = "recompiles"
    COMPILED_AUTOGRAD_UNUSED = "compiled_autograd_unused"
    JOB_STOPPED = "job_stopped"
    COMPILE_TIME = "compile_time"
    SPECIALIZATION = "specialization"
    UNBACKED = "unbacked"


class Severity(str, Enum):
    def __str__(self) -> str:
        return self.value

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


DOCS = {
    "recompiles": "https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
    "graph_breaks": "https://docs.pytorch.org/docs/stable/compile/programming_model.fullgraph_true.html",
    "cudagraphs": "https://docs.pytorch.org/docs/stable/torch.compiler_cudagraph_trees.html",
    "mark_step": "https://docs.pytorch.org/docs/stable/generated/torch.compiler.cudagraph_mark_step_begin.html",
    "cache": "https://docs.pytorch.org/tutorials/recipes/torch_compile_caching_configuration_tutorial.html",
    "dynamic": "https://docs.pytorch.org/docs/stable/torch.compiler_dynamic_shapes.html",
    "custom_ops": "https://docs.pytorch.org/tutorials/advanced/python_custom_ops.html",
    "compiled_autograd": "https://docs.pytorch.org/tutorials/intermediate/compiled_autograd_tutorial.html",
    "troubleshooting": "https://docs.pytorch.org/docs/stable/torch.compiler_troubleshooting.html",
}


@dataclass(frozen=True)
class Rule:
    kind: Kind
    severity: Severity  # the usual one: a finding may be milder (a partial CUDA graph)
    about: str  # what the kind says, for the reference
    doc: str = ""


RULES: dict[Kind, Rule] = {
    r.kind: r
    for r in (
        Rule(
            Kind.JOB_KILLED,
            Severity.ERROR,
            "The job ended by a signal it did not ask for (SIGSEGV, SIGKILL, an out-of-memory "
            "kill): the signal, and what was compiling or running then.",
        ),
        Rule(
            Kind.DIED_IN_COMPILE,
            Severity.ERROR,
            "A trace ends inside a compile: the process died or was killed while compiling "
            "(which compile, which phase, when).",
        ),
        Rule(
            Kind.CRASH,
            Severity.ERROR,
            "The program raised an uncaught error: where in the user's code, the stack, and "
            "torch's own hint as evidence.",
        ),
        Rule(
            Kind.COMPILE_FAILED,
            Severity.ERROR,
            "A compile raised; the frame ran eagerly.",
        ),
        Rule(
            Kind.NOTHING_COMPILED,
            Severity.ERROR,
            "Every graph was empty and no kernel was made: the model ran eagerly.",
            DOCS["troubleshooting"],
        ),
        Rule(
            Kind.RECOMPILE_LIMIT,
            Severity.ERROR,
            "A frame hit the recompile limit and runs eagerly from then on: every change that "
            "used up the limit, and the call that hit it.",
            DOCS["recompiles"],
        ),
        Rule(
            Kind.TRACE_CUT,
            Severity.WARNING,
            "A trace file is cut or damaged: it ends mid-record or mid-line (where, and the "
            "compiles that never finished), begins inside a record, or holds lines that are no "
            "record or payloads failing their md5 (which lines).",
        ),
        Rule(
            Kind.RECOMPILE_STORM,
            Severity.WARNING,
            "A frame recompiled three times or more: what changed at each recompile, against "
            "the earlier compile it is closest to.",
            DOCS["recompiles"],
        ),
        Rule(
            Kind.DIVERGENCE,
            Severity.WARNING,
            "Ranks compiled differently, and where it began.",
        ),
        Rule(
            Kind.CUDAGRAPH_RERECORD,
            Severity.WARNING,
            "One compiled graph recorded as a CUDA graph again and again, once for each distinct "
            "shape: how many times, and the recording time.",
            DOCS["cudagraphs"],
        ),
        Rule(
            Kind.GRAPH_BREAK,
            Severity.WARNING,
            "A graph break: in the user's code with what to do, or inside torch or a library, "
            "reached from the user's call.",
            DOCS["graph_breaks"],
        ),
        Rule(
            Kind.CUDAGRAPHS,
            Severity.WARNING,
            "CUDA graphs skipped (or partial) for a compile, and why.",
            DOCS["cudagraphs"],
        ),
        Rule(
            Kind.CACHE_MISS,
            Severity.WARNING,
            "A warm cache missed a graph it held: the key component that changed.",
            DOCS["cache"],
        ),
        Rule(
            Kind.SAME_GRAPHS,
            Severity.INFO,
            "Graphs of one frame that differ only by sizes or constants.",
            DOCS["dynamic"],
        ),
        Rule(
            Kind.RECOMPILES,
            Severity.INFO,
            "A frame recompiled once or twice: what changed.",
            DOCS["recompiles"],
        ),
        Rule(
            Kind.COMPILED_AUTOGRAD_UNUSED,
            Severity.INFO,
            "Compiled autograd was enabled but no backward ran through it.",
            DOCS["compiled_autograd"],
        ),
        Rule(
            Kind.JOB_STOPPED,
            Severity.INFO,
            "The user stopped the job (`x`, Ctrl-C): not a crash.",
        ),
        Rule(
            Kind.COMPILE_TIME,
            Severity.INFO,
            "One frame or autotuning took most of the compile time.",
            DOCS["cache"],
        ),
        Rule(
            Kind.SPECIALIZATION,
            Severity.INFO,
            "A dynamic size or number was specialised to a constant.",
            DOCS["dynamic"],
        ),
        Rule(
            Kind.UNBACKED,
            Severity.INFO,
            "Sizes or values that depend on tensor data (`.item()`, `nonzero()`).",
            DOCS["dynamic"],
        ),
    )
}
KINDS: tuple[Kind, ...] = tuple(RULES)
# Verdicts on the whole run: listed before every other finding when they hold.
VERDICTS = frozenset(
    {
        Kind.JOB_KILLED,
        Kind.DIED_IN_COMPILE,
        Kind.NOTHING_COMPILED,
        Kind.TRACE_CUT,
        Kind.CUDAGRAPH_RERECORD,
        Kind.COMPILED_AUTOGRAD_UNUSED,
        Kind.JOB_STOPPED,
    }
)


def kinds_table() -> list[str]:
    """The kinds as a Markdown table (docs/reference/findings.md's)."""
    lines = ["| kind | severity | what it says |", "|---|---|---|"]
    for rule in RULES.values():
        lines.append(f"| `{rule.kind.value}` | {rule.severity.value} | {rule.about} |")
    return lines


BEGIN = (
    "<!-- finding kinds: made by `python -m tcview.analysis.rules docs/reference/findings.md` -->"
)
END = "<!-- end of finding kinds -->"


def with_table(text: str) -> str:
    """`text` (a Markdown page) with the kinds' table put between its markers."""
    return with_lines(text, BEGIN, END, kinds_table())


if __name__ == "__main__":
    rewrite(sys.argv[1:], BEGIN, END, kinds_table)
