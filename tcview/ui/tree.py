"""The lazy tree: run / rank / file -> frame -> compile -> artifacts -> kernels.

Children are built when a node is first expanded. `refresh_model` grows loaded nodes in
place (new children are appended; labels are updated), so a growing model keeps the user's
expansion and cursor.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from ..trace.facts import short_guard
from ..trace.handlers import KNOWN_KINDS
from .content import KIND_STYLE, STATUS_MARK, STATUS_STYLE, fmt_seconds, lit, record_name

NEW_MARK = Text("new ", style="bold green")
PAGE = 500  # children added at a time; a "more" node adds the next page
GROUP_LIMIT = 5000  # leaves shown under one group node
AUTO_EXPAND_FRAMES = 12  # with this many frames or fewer, frames start expanded

MAIN_KINDS = (
    "dynamo_output_graph",
    "dynamo_cpp_guards_str",
    "dynamo_guards",
    "recompile_reasons",
    "dynamo_graph_break_reason",
    "dynamo_error",
    "aot_joint_graph",
    "aot_forward_graph",
    "aot_backward_graph",
    "aot_inference_graph",
    "inductor_pre_grad_graph",
    "inductor_post_grad_graph",
    "inductor_output_code",
    "compilation_metrics",
    "bwd_compilation_metrics",
    "compilation_metrics_runtime",
    "bwd_compilation_metrics_runtime",
)
MAIN_ORDER = {kind: i for i, kind in enumerate(MAIN_KINDS)}


@dataclass(eq=False, repr=False)
class Item:
    """What a tree node stands for. `key` identifies it across model refreshes."""

    kind: str  # root run rank file frame compile record kernel group others more
    obj: Any
    key: Any
    loaded: bool = False
    extra: Any = None
    files: list[Any] = field(default_factory=list)  # trace files under a run/rank/file node
    limit: int = 0  # children shown so far when there are more than PAGE (0: all)

    def __repr__(self) -> str:  # the model objects' reprs can be huge
        return f"<Item {self.kind} {self.key!r}>"


@dataclass
class Spec:
    key: Any
    label: Text
    kind: str
    obj: Any
    expandable: bool = False
    expand: bool = False
    extra: Any = None
    files: list[Any] = field(default_factory=list)


# ---------------------------------------------------------------- labels


def frame_label(frame: Any) -> Text:
    status = frame.status
    n = len(frame.compiles)
    return Text.assemble(
        (STATUS_MARK.get(status, "?") + " ", STATUS_STYLE.get(status, "")),
        lit(frame.label),
        (f"  {n} compile{'s' if n != 1 else ''}", "dim"),
    )


def compile_label(comp: Any) -> Text:
    status = comp.status
    text = Text.assemble(
        lit(comp.id_text, "bold"),
        "  ",
        (STATUS_MARK.get(status, "?") + " " + status, STATUS_STYLE.get(status, "")),
    )
    if len(comp.breaks) > 1:
        text.append(f" ×{len(comp.breaks)}", style=STATUS_STYLE["graph break"])
    t = comp.compile_time_s
    if t is not None:
        text.append(f"  {fmt_seconds(t)}", style="dim")
    if comp.frame is None and getattr(comp, "metrics", None):
        name = comp.metrics.get("co_name")
        if isinstance(name, str):
            text.append("  ")
            text.append_text(lit(name, "dim"))
    return text


def record_label(rec: Any, comp: Any | None) -> Text:
    name = record_name(rec)
    text = Text(name, style="bold" if rec.kind in MAIN_ORDER or rec.label in MAIN_ORDER else "")
    if comp is not None and len(comp.attempts) > 1 and rec.attempt not in (0, None):
        text.append(f" [attempt {rec.attempt}]", style="dim")
    if rec.label == "dynamo_graph_break_reason" and comp is not None:
        gb = next((b for b in comp.breaks if b.record is rec), None)
        if gb is not None:
            text.append(": ")
            text.append_text(lit(gb.reason[:100], STATUS_STYLE["graph break"]))
    elif rec.label == "recompile_reasons" and comp is not None and comp.recompile is not None:
        reasons = comp.recompile.reasons
        if reasons:
            text.append(": ")
            text.append_text(lit(short_guard(reasons[0])[:100], STATUS_STYLE["recompile"]))
    elif rec.kind == "inductor_output_code" and comp is not None:
        n = sum(1 for k in comp.kernels if k.output is rec)
        text.append(f"  {n} kernel{'s' if n != 1 else ''}", style="dim")
    elif rec.kind not in KNOWN_KINDS:
        text.append("  (unknown kind)", style="magenta")
    return text


def kernel_label(kernel: Any) -> Text:
    kind = kernel.kind
    return Text.assemble(lit(kernel.name), ("  " + kind, KIND_STYLE.get(kind, "dim")))


# ---------------------------------------------------------------- children


def _file_content(files: list[Any]) -> list[Spec]:
    if len(files) > 1:
        out = []
        for tf in files:
            label = Text.assemble(lit(tf.display), (f"  pid {tf.pid}", "dim"))
            out.append(Spec(("file", id(tf)), label, "file", tf, True, files=[tf]))
        return out
    if not files:
        return []
    tf = files[0]
    out = []
    frames = list(tf.frames.values())
    few = len(frames) <= AUTO_EXPAND_FRAMES
    for frame in frames:
        out.append(Spec(("frame", id(frame)), frame_label(frame), "frame", frame, True, few))
    for comp in list(tf.compiles.values()):
        if comp.frame is None:
            out.append(Spec(("compile", id(comp)), compile_label(comp), "compile", comp, True))
    out.append(
        Spec(
            ("others", id(tf)),
            Text("records without a compile id", style="dim"),
            "others",
            tf,
            True,
        )
    )
    return out


def _run_children(run: Any) -> list[Spec]:
    ranks = run.ranks
    ranked = [r for r in ranks if r.rank is not None]
    if not ranked:
        return _file_content(run.files)
    out = []
    for r in ranks:
        n = sum(len(tf.compiles) for tf in r.files)
        label = Text.assemble((r.label, "bold"), (f"  {n} compiles", "dim"))
        out.append(
            Spec(
                ("rank", run.directory, r.rank),
                label,
                "rank",
                r,
                True,
                len(ranks) <= 2,
                files=list(r.files),
            )
        )
    return out


def _compile_children(comp: Any) -> list[Spec]:
    main: list[tuple[int, int, Any]] = []
    other: list[Any] = []
    for pos, rec in enumerate(list(comp.records)):
        order = MAIN_ORDER.get(rec.label, MAIN_ORDER.get(rec.kind))
        if order is None:
            other.append(rec)
        else:
            main.append((order, pos, rec))
    main.sort(key=lambda t: (t[0], t[1]))
    out = []
    for _o, _p, rec in main:
        kernels = [k for k in comp.kernels if k.output is rec]
        out.append(
            Spec(
                ("record", id(rec)),
                record_label(rec, comp),
                "record",
                rec,
                bool(kernels),
                extra=comp,
            )
        )
    if other:
        label = Text.assemble("other artifacts", (f"  {len(other)}", "dim"))
        out.append(Spec(("group", id(comp)), label, "group", other, True, extra=comp))
    return out


def _group_children(records: list[Any], comp: Any | None, by_label: bool = True) -> list[Spec]:
    if by_label:
        groups: dict[str, list[Any]] = {}
        for rec in records:
            groups.setdefault(rec.label, []).append(rec)
        if len(groups) > 1 or len(records) > 40:
            out = []
            for label, recs in groups.items():
                if len(recs) == 1:
                    rec = recs[0]
                    out.append(
                        Spec(
                            ("record", id(rec)), record_label(rec, comp), "record", rec, extra=comp
                        )
                    )
                else:
                    text = Text.assemble(record_label(recs[0], comp), (f"  ×{len(recs)}", "dim"))
                    out.append(
                        Spec(
                            ("group", id(recs[0]), label),
                            text,
                            "group",
                            recs,
                            True,
                            extra=(comp, False),
                        )
                    )
            return out
    out = []
    for i, rec in enumerate(records[:GROUP_LIMIT]):
        text = record_label(rec, comp)
        text.append(f"  #{i + 1}", style="dim")
        out.append(Spec(("record", id(rec)), text, "record", rec, extra=comp))
    if len(records) > GROUP_LIMIT:
        more = Text(f"… {len(records) - GROUP_LIMIT} more not listed", style="dim italic")
        out.append(Spec(("more", id(records[0])), more, "more", None))
    return out


def children_of(item: Item, stable: bool = False) -> list[Spec]:
    """Child specs of an item. `stable` (follow mode) keeps the run level even for one run,
    so that a second run appearing later adds a node instead of reshaping the tree."""
    kind, obj = item.kind, item.obj
    if kind == "root":
        if obj is None:
            return []
        runs = getattr(obj, "runs", None)
        if runs is None:
            return _file_content(list(getattr(obj, "files", [])))
        if len(runs) == 1 and not stable:
            return _run_children(runs[0])
        out = []
        for run in runs:
            label = Text.assemble(lit(run.label, "bold"))
            out.append(
                Spec(
                    ("run", run.directory, id(run.files[0])),
                    label,
                    "run",
                    run,
                    True,
                    run is runs[-1],
                    files=list(run.files),
                )
            )
        return out
    if kind == "run":
        return _run_children(obj)
    if kind == "rank":
        return _file_content(list(obj.files))
    if kind == "file":
        return _file_content([obj])
    if kind == "frame":
        return [
            Spec(("compile", id(c)), compile_label(c), "compile", c, True)
            for c in list(obj.compiles)
        ]
    if kind == "compile":
        return _compile_children(obj)
    if kind == "record":
        comp = item.extra
        if comp is None:
            return []
        return [
            Spec(("kernel", id(k)), kernel_label(k), "kernel", k)
            for k in list(comp.kernels)
            if k.output is obj
        ]
    if kind == "group":
        comp, by_label = item.extra if isinstance(item.extra, tuple) else (item.extra, True)
        return _group_children(obj, comp, by_label)
    if kind == "others":
        records = [r for r in obj.records if r.key is None]
        return _group_children(records, None)
    return []


# ---------------------------------------------------------------- widget


class TraceTree(Tree[Item]):
    BINDINGS = [
        Binding("down,j", "cursor_down", "Down", show=False, id="tree.down", tooltip="move down"),
        Binding("up,k", "cursor_up", "Up", show=False, id="tree.up", tooltip="move up"),
        Binding(
            "enter",
            "select_cursor",
            "Open",
            show=False,
            id="tree.open",
            tooltip="expand, or open the item in the viewer",
        ),
        Binding(
            "space",
            "toggle_node",
            "Toggle",
            show=False,
            id="tree.toggle",
            tooltip="expand or collapse",
        ),
        Binding(
            "right,l",
            "expand_or_down",
            "Expand",
            show=False,
            id="tree.expand",
            tooltip="expand (or move down)",
        ),
        Binding(
            "left,h",
            "collapse_or_parent",
            "Collapse",
            show=False,
            id="tree.collapse",
            tooltip="collapse (or go to the parent)",
        ),
        Binding("home,g", "scroll_home", "Top", show=False, id="tree.top", tooltip="first"),
        Binding("end,G", "scroll_end", "Bottom", show=False, id="tree.bottom", tooltip="last"),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("trace", data=Item("root", None, "root"), id=id)
        self.show_root = False
        self.guide_depth = 2
        self.auto_expand = True
        self._by_key: dict[Any, TreeNode[Item]] = {}
        self.mark_new = False  # follow mode: nodes added from now on are marked as new
        self.stable = False  # follow mode: keep levels that a growing model could add
        self.new_keys: set[Any] = set()

    # ------------------------------------------------------------ building

    def get_label_width(self, node: TreeNode[Item]) -> int:
        return node.label.cell_len + (2 if node.allow_expand else 0)

    def set_model(self, model: Any) -> None:
        self.root.data = Item("root", model, "root", loaded=False)
        self.clear()
        self.root.data = Item("root", model, "root", loaded=False)
        self._by_key.clear()
        self.ensure_loaded(self.root)
        self.root.expand()

    def ensure_loaded(self, node: TreeNode[Item]) -> None:
        item = node.data
        if item is None or item.loaded:
            return
        specs = children_of(item, self.stable)
        if len(specs) > PAGE:
            item.limit = PAGE
        for spec in specs[: item.limit or None]:
            self._add(node, spec)
        self._page_node(node, len(specs))
        item.loaded = True

    def _add(self, parent: TreeNode[Item], spec: Spec) -> TreeNode[Item]:
        item = Item(spec.kind, spec.obj, spec.key, extra=spec.extra, files=spec.files)
        if self.mark_new and spec.key not in self._by_key:
            self.new_keys.add(spec.key)
        node = parent.add(self._label(spec), data=item, allow_expand=spec.expandable)
        self._by_key[spec.key] = node
        if spec.expand and spec.expandable:
            self.ensure_loaded(node)
            node.expand()
        return node

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[Item]) -> None:
        self.ensure_loaded(event.node)

    # ------------------------------------------------------------ growth

    def refresh_model(self) -> None:
        """Bring loaded nodes up to date with the model, in place."""
        self._sync(self.root)

    def _sync(self, node: TreeNode[Item]) -> None:
        item = node.data
        if item is None or not item.loaded:
            return
        specs = children_of(item, self.stable)
        total = len(specs)
        if item.limit:
            specs = specs[: item.limit]
        existing = [c for c in node.children if c.data is not None and c.data.kind != "page"]
        keys = [c.data.key for c in existing]
        if [s.key for s in specs[: len(keys)]] != keys:
            self._rebuild(node, specs)
            self._page_node(node, total)
            return
        for child, spec in zip(existing, specs, strict=False):
            # Runs, ranks and groups are recomputed views: take the fresh object.
            child.data.obj, child.data.files = spec.obj, spec.files
            child.data.extra = spec.extra
            label = self._label(spec)
            if label.plain != child.label.plain:
                child.set_label(label)
            if spec.expandable and not child.allow_expand:
                child.allow_expand = True
            self._sync(child)
        page = self._page_of(node)
        for spec in specs[len(keys) :]:
            if page is not None:
                self._add_before(node, spec, page)
            else:
                self._add(node, spec)
        self._page_node(node, total)

    def _page_of(self, node: TreeNode[Item]) -> TreeNode[Item] | None:
        last = node.children[-1] if node.children else None
        return last if last is not None and last.data and last.data.kind == "page" else None

    def _page_node(self, node: TreeNode[Item], total: int) -> None:
        """Keep the "… N more" node at the end of a paged node, with the right count."""
        item = node.data
        page = self._page_of(node)
        rest = total - item.limit if item.limit else 0
        if rest <= 0:
            if page is not None:
                page.remove()
            return
        label = Text(f"… {rest} more · enter shows {min(PAGE, rest)} more", style="dim italic")
        if page is None:
            node.add(label, data=Item("page", item, ("page", item.key)), allow_expand=False)
        elif page.label.plain != label.plain:
            page.set_label(label)

    def _add_before(self, parent: TreeNode[Item], spec: Spec, before: TreeNode[Item]) -> None:
        item = Item(spec.kind, spec.obj, spec.key, extra=spec.extra, files=spec.files)
        if self.mark_new and spec.key not in self._by_key:
            self.new_keys.add(spec.key)
        node = parent.add(self._label(spec), data=item, before=before, allow_expand=spec.expandable)
        self._by_key[spec.key] = node

    def show_more(self, node: TreeNode[Item]) -> None:
        """Add the next page of children to a paged node."""
        item = node.data
        if item is None or not item.limit:
            return
        item.limit += PAGE
        self._sync(node)

    def on_tree_node_selected(self, event: Tree.NodeSelected[Item]) -> None:
        node = event.node
        if node.data is not None and node.data.kind == "page" and node.parent is not None:
            event.stop()
            self.show_more(node.parent)

    def _rebuild(self, node: TreeNode[Item], specs: list[Spec]) -> None:
        expanded: set[Any] = set()
        cursor = self.cursor_node.data.key if self.cursor_node and self.cursor_node.data else None

        def collect(n: TreeNode[Item]) -> None:
            for c in n.children:
                if c.is_expanded and c.data is not None:
                    expanded.add(c.data.key)
                collect(c)

        collect(node)
        node.remove_children()
        for spec in specs:
            spec.expand = spec.expand or spec.key in expanded
            child = self._add(node, spec)
            self._restore(child, expanded)
        if cursor is not None and cursor in self._by_key:
            self.reveal_node(self._by_key[cursor], select=False)

    def _restore(self, node: TreeNode[Item], expanded: set[Any]) -> None:
        if node.data is None or node.data.key not in expanded:
            return
        self.ensure_loaded(node)
        node.expand()
        for child in node.children:
            self._restore(child, expanded)

    def _label(self, spec: Spec) -> Text:
        if spec.key not in self.new_keys:
            return spec.label
        return Text.assemble(NEW_MARK, spec.label)

    def unmark(self, node: TreeNode[Item]) -> None:
        """A new node the user has looked at is no longer new."""
        item = node.data
        if item is None or item.key not in self.new_keys:
            return
        self.new_keys.discard(item.key)
        label = node.label
        if isinstance(label, Text) and label.plain.startswith(NEW_MARK.plain):
            node.set_label(label[len(NEW_MARK.plain) :])

    # ------------------------------------------------------------ finding

    def node_for(self, key: Any) -> TreeNode[Item] | None:
        return self._by_key.get(key)

    def node_showing(self, obj: object) -> TreeNode[Item] | None:
        """A loaded node that stands for `obj` (a trace file, say), if there is one."""
        return next((n for n in self._by_key.values() if n.data and n.data.obj is obj), None)

    def reveal(self, target: Any, kind: str) -> TreeNode[Item] | None:
        """Expand the path to a compile, kernel or record and return its node."""
        chain: list[Callable[[Item], bool]] = []
        comp = target if kind == "compile" else getattr(target, "compile", None)
        if kind == "record":
            comp = _compile_of_record(target)
        tf = comp.file if comp is not None else getattr(target, "source", None)
        if comp is not None:
            if comp.frame is not None:
                chain.append(lambda it, f=comp.frame: it.kind == "frame" and it.obj is f)
            chain.append(lambda it, c=comp: it.kind == "compile" and it.obj is c)
        if kind == "kernel":
            chain.append(lambda it, r=target.output: it.kind == "record" and it.obj is r)
            chain.append(lambda it, k=target: it.kind == "kernel" and it.obj is k)
        elif kind == "record":
            chain.append(
                lambda it, r=target: (
                    (it.kind == "record" and it.obj is r)
                    or (it.kind in ("group", "others") and _holds(it, r))
                )
            )
        node = self.root
        for step in chain:
            while True:
                self.ensure_loaded(node)
                found = next((c for c in node.children if c.data and step(c.data)), None)
                while found is None and self._page_of(node) is not None:
                    self.show_more(node)
                    found = next((c for c in node.children if c.data and step(c.data)), None)
                if found is not None:
                    node = found
                    last = step is chain[-1]
                    if last and kind == "record" and found.data.kind != "record":
                        node.expand()  # a group holding the record: look inside
                        continue
                    if not last:
                        node.expand()
                    break
                container = next(
                    (
                        c
                        for c in node.children
                        if c.data and c.data.kind in ("run", "rank", "file") and tf in c.data.files
                    ),
                    None,
                )
                if container is None:
                    return None
                node = container
                node.expand()
        return node if node is not self.root else None

    def reveal_node(self, node: TreeNode[Item], select: bool = True) -> None:
        parent = node.parent
        while parent is not None and parent is not self.root:
            parent.expand()
            parent = parent.parent
        _ = self.last_line  # lays out the lines, so that the node has its line number
        self.move_cursor(node)
        self.scroll_to_node(node, animate=False)

    # ------------------------------------------------------------ actions

    def action_expand_or_down(self) -> None:
        node = self.cursor_node
        if node is None:
            return
        if node.allow_expand and not node.is_expanded:
            self.ensure_loaded(node)
            node.expand()
        else:
            self.action_cursor_down()

    def action_collapse_or_parent(self) -> None:
        node = self.cursor_node
        if node is None:
            return
        if node.allow_expand and node.is_expanded:
            node.collapse()
        elif node.parent is not None and node.parent is not self.root:
            self.move_cursor(node.parent)


def _compile_of_record(rec: Any) -> Any:
    source = getattr(rec, "source", None)
    compiles = getattr(source, "compiles", None)
    if rec.key is None or not isinstance(compiles, dict):
        return None
    return compiles.get(rec.key)


def _holds(item: Item, rec: Any) -> bool:
    if item.kind == "others":
        return rec.key is None and item.obj is rec.source
    return isinstance(item.obj, list) and any(r is rec for r in item.obj)
