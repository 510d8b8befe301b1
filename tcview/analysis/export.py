"""torch.export traces: the facts of a draft-export report (what tlparse ``-e`` shows).

torch.export logs, besides the exported program:

- ``guard_added``: a guard the export evaluated (``Eq(s77, 3)``: a dynamic dimension became
  a constant), with the user and framework stacks, the frame's locals and symbols, the
  symbols' sources and ``expr_node_id``, the expression's provenance;
- ``propagate_real_tensors_provenance``: a data-dependent expression that could not be
  decided symbolically, decided with the real values (a data-dependent error);
- ``missing_fake_kernel`` / ``mismatched_fake_kernel``: a custom op without a fake kernel, or
  with one that disagrees with the real kernel;
- ``expression_created`` (``result_id``, ``argument_ids``) and ``create_unbacked_symbol``
  (``node_id``): the nodes of an expression's provenance tree;
- ``create_symbol``: each symbol and the input it stands for.

tlparse 0.4.3 reports only ``guard_added`` whose ``prefix`` is ``"eval"``; tcview reports every
guard and says which kind it is. These records' headers are read from disk (`full_meta`):
big ones are slimmed in memory, and the shape-env kinds are not kept at all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tcview.model.objects import (
    LogSource,
    Model,
    Record,
    StackFrame,
    is_torch_internal,
    stack_frames,
)

GUARD = "guard"
DATA_DEPENDENT = "data-dependent error"
MISSING_FAKE = "missing fake kernel"
MISMATCHED_FAKE = "mismatched fake kernel"
ISSUE_KINDS = (GUARD, DATA_DEPENDENT, MISSING_FAKE, MISMATCHED_FAKE)
# Record kind -> the issue it reports.
ISSUE_OF_KIND = {
    "guard_added": GUARD,
    "propagate_real_tensors_provenance": DATA_DEPENDENT,
    "missing_fake_kernel": MISSING_FAKE,
    "mismatched_fake_kernel": MISMATCHED_FAKE,
}
# Records only torch.export writes (a trace with one of them is an export's).
EXPORT_KINDS = frozenset({"exported_program", *ISSUE_OF_KIND})
TREE_DEPTH = 64  # provenance trees deeper than this are cut
FAKE_KERNEL_DOC = "https://docs.google.com/document/d/1_W62p8WJOQQUzPsJYa7s701JXt0qf2OfLub2sbkHOaU"
# The stack frames of torch.export itself (how a trace without export records still shows
# that torch.export made it, e.g. a plain `torch.export.export` that only logs symbols).
_EXPORT_FILES = ("/torch/export/", "/torch/_export/")


@dataclass(eq=False)
class ExprNode:
    """A node of an expression's provenance: an ``expression_created`` (a result computed
    from arguments) or a ``create_unbacked_symbol`` (a leaf)."""

    record: Record
    result: str
    method: str = ""  # "eq", "add", …; "" for an unbacked symbol
    arguments: list[str] = field(default_factory=list)
    argument_ids: list[Any] = field(default_factory=list)
    user_stack: list[StackFrame] = field(default_factory=list)
    stack: list[StackFrame] = field(default_factory=list)
    range: str = ""  # an unbacked symbol's value range


@dataclass(eq=False)
class ExportIssue:
    """One entry of the report."""

    kind: str  # one of ISSUE_KINDS
    record: Record
    expr: str = ""  # the guard or the data-dependent expression
    result: str = ""  # what a data-dependent expression was decided to be
    prefix: str = ""  # a guard's prefix: "eval" (evaluated), "runtime_assert", … ("" none)
    op: str = ""  # a fake-kernel problem's operator
    reason: str = ""  # a mismatched fake kernel's reason
    user_stack: list[StackFrame] = field(default_factory=list)
    stack: list[StackFrame] = field(default_factory=list)
    loc: str = ""  # the user's line of code, as the frame-locals capture saw it
    locals: dict[str, str] = field(default_factory=dict)
    symbols: dict[str, str] = field(default_factory=dict)  # symbol -> source (frame locals)
    symbol_sources: dict[str, str] = field(default_factory=dict)  # symbol_to_sources
    expr_node_id: Any = None
    tree: list[tuple[int, ExprNode]] = field(default_factory=list)  # (depth, node)

    @property
    def title(self) -> str:
        """The report's "failure type" column."""
        if self.kind == GUARD:
            return {
                "eval": "Guard Evaluated",
                "runtime_assert": "Runtime Assert",
            }.get(self.prefix, "Guard Added")
        return {
            DATA_DEPENDENT: "Data Dependent Error",
            MISSING_FAKE: "Missing Fake Kernel",
            MISMATCHED_FAKE: "Mismatched Fake Kernel",
        }[self.kind]

    @property
    def reason_text(self) -> str:
        """The report's "reason" column (tlparse's wording where tlparse has the issue)."""
        if self.kind == GUARD and self.prefix == "eval":
            return (
                f"the following guard was evaluated {self.expr}. This might've resulted in a "
                "constraint violation error."
            )
        if self.kind == GUARD:
            how = f"(prefix {self.prefix!r})" if self.prefix else "(the trace has no prefix)"
            return f"the following guard was added {how}: {self.expr}"
        if self.kind == DATA_DEPENDENT:
            return (
                f"When exporting, we were unable to figure out if the expression {self.expr} "
                f"always holds. As a result, it was specialized to evaluate to {self.result}, "
                "and asserts were inserted into the graph."
            )
        if self.kind == MISSING_FAKE:
            return f"torch.ops.{self.op} is missing a fake kernel implementation"
        return (
            f"torch.ops.{self.op} has a fake kernel implementation, but it has incorrect "
            f"behavior, based on the real kernel. The reason for the mismatch is: {self.reason}"
        )

    @property
    def reported_by_tlparse(self) -> bool:
        """tlparse 0.4.3 -e lists this issue (it skips guards whose prefix is not "eval")."""
        return self.kind != GUARD or self.prefix == "eval"

    @property
    def user_line(self) -> StackFrame | None:
        """The innermost frame outside torch, of the user stack or else of the framework
        stack (where to look in the code)."""
        for stack in (self.user_stack, self.stack):
            for frame in reversed(stack):
                if not is_torch_internal(frame.filename):
                    return frame
        return self.user_stack[-1] if self.user_stack else None


@dataclass(eq=False)
class ExportReport:
    issues: list[ExportIssue] = field(default_factory=list)
    programs: list[Record] = field(default_factory=list)  # exported_program records
    symbols: list[tuple[str, str, str]] = field(default_factory=list)  # (symbol, source, value)
    counts: Counter[str] = field(default_factory=Counter)  # records of each export kind

    @property
    def success(self) -> bool:
        return not self.issues

    def of_kind(self, kind: str) -> list[ExportIssue]:
        return [i for i in self.issues if i.kind == kind]


def _str(value: object) -> str:
    return "" if value is None else str(value)


def _str_map(value: object) -> dict[str, str]:
    """``{name: value}`` with values as text (torch 2.13 gives locals as lists)."""
    if not isinstance(value, dict):
        return {}
    out = {}
    for key, item in value.items():
        if isinstance(item, list):
            out[str(key)] = ", ".join(str(x) for x in item)
        else:
            out[str(key)] = _str(item)
    return out


def is_export(model: Model) -> bool:
    """The trace was written by torch.export: it holds export records, or it compiled
    nothing and its stacks are torch.export's (a plain export logs only its symbols)."""
    for source in model.files:
        if any(source.kinds[k] for k in EXPORT_KINDS):
            return True
    if model.compiles:
        return False
    return any(
        any(part in name for part in _EXPORT_FILES)
        for source in model.files
        for name in source.file_names()
    )


def export_counts(model: Model) -> dict[str, int]:
    """The export issues of `summary --json` (from record counts: nothing read from disk)."""
    kinds: Counter[str] = Counter()
    for source in model.files:
        for kind in EXPORT_KINDS:
            kinds[kind] += source.kinds[kind]
    return {
        "guards": kinds["guard_added"],
        "data_dependent_errors": kinds["propagate_real_tensors_provenance"],
        "fake_kernel_problems": kinds["missing_fake_kernel"] + kinds["mismatched_fake_kernel"],
    }


def export_report(model: Model, cancelled: Callable[[], bool] | None = None) -> ExportReport:
    """The report of an export trace (reads the records' headers from disk)."""
    report = ExportReport()
    nodes: dict[Any, ExprNode] = {}
    for source in list(model.files):
        for rec in list(source.records):
            if cancelled is not None and cancelled():
                return report
            kind = rec.kind
            if kind in EXPORT_KINDS or kind in ("expression_created", "create_unbacked_symbol"):
                report.counts[kind] += 1
            if kind == "exported_program":
                report.programs.append(rec)
            elif kind == "create_symbol":
                meta = _meta(rec)
                report.symbols.append(
                    (_str(meta.get("symbol")), _str(meta.get("source")), _str(meta.get("val")))
                )
            elif kind == "expression_created":
                meta = _meta(rec)
                node = ExprNode(
                    rec,
                    _str(meta.get("result")),
                    _str(meta.get("method")),
                    [_str(a) for a in meta.get("arguments") or [] if a is not None],
                    list(meta.get("argument_ids") or []),
                    stack_frames(source, meta.get("user_stack")),
                    stack_frames(source, meta.get("stack")),
                )
                _put(nodes, meta.get("result_id"), node)
            elif kind == "create_unbacked_symbol":
                meta = _meta(rec)
                node = ExprNode(
                    rec,
                    _str(meta.get("symbol")),
                    user_stack=stack_frames(source, meta.get("user_stack")),
                    stack=stack_frames(source, meta.get("stack")),
                    range=_str(meta.get("vr")),
                )
                _put(nodes, meta.get("node_id"), node)
            elif kind in ISSUE_OF_KIND:
                report.issues.append(_issue(source, rec))
    for issue in report.issues:
        if issue.expr_node_id is not None:
            issue.tree = expression_tree(nodes, issue.expr_node_id)
    return report


def _put(nodes: dict[Any, ExprNode], key: object, node: ExprNode) -> None:
    if isinstance(key, (int, str)):
        nodes.setdefault(key, node)


def _meta(rec: Record) -> dict[str, Any]:
    value = rec.full_meta()
    return value if isinstance(value, dict) else {}


def _issue(source: LogSource, rec: Record) -> ExportIssue:
    meta = _meta(rec)
    issue = ExportIssue(ISSUE_OF_KIND[rec.kind], rec)
    issue.expr = _str(meta.get("expr"))
    issue.result = _str(meta.get("result"))
    issue.prefix = _str(meta.get("prefix"))
    issue.op = _str(meta.get("op"))
    issue.reason = _str(meta.get("reason"))
    issue.user_stack = stack_frames(source, meta.get("user_stack"))
    issue.stack = stack_frames(source, meta.get("stack"))
    issue.symbol_sources = _str_map(meta.get("symbol_to_sources"))
    issue.expr_node_id = meta.get("expr_node_id")
    frame_locals = meta.get("frame_locals")
    if isinstance(frame_locals, dict):
        issue.loc = _str(frame_locals.get("loc"))
        issue.locals = _str_map(frame_locals.get("locals"))
        issue.symbols = _str_map(frame_locals.get("symbols"))
    return issue


def expression_tree(nodes: dict[Any, ExprNode], root: object) -> list[tuple[int, ExprNode]]:
    """The provenance of an expression, depth first: (depth, node), each node once."""
    out: list[tuple[int, ExprNode]] = []
    seen: set[int] = set()

    def walk(key: object, depth: int) -> None:
        if not isinstance(key, (int, str)) or depth > TREE_DEPTH:
            return
        node = nodes.get(key)
        if node is None or id(node) in seen:
            return
        seen.add(id(node))
        out.append((depth, node))
        for child in node.argument_ids:
            walk(child, depth + 1)

    walk(root, 0)
    return out
