"""The lazy tree: run / rank / file -> frame -> compile -> artifacts -> kernels.

Children are built when a node is first expanded. `refresh_model` grows loaded nodes in
place (new children are appended; labels are updated), so a growing model keeps the user's
expansion and cursor. A rank filter (`TraceTree.ranks`) keeps the nodes of the ranks picked.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.widgets import Tree
from textual.widgets._tree import TOGGLE_STYLE
from textual.widgets.tree import TreeNode

from tcview.analysis.compiletime import compile_seconds
from tcview.analysis.cudagraphs import CudaGraphs, model_cudagraphs
from tcview.ingest.handlers import KNOWN_KINDS
from tcview.ingest.index import TraceSet
from tcview.ingest.textlog import TextLog
from tcview.model.compile_id import FIRST_EPISODE, episode_suffix
from tcview.model.facts import short_guard
from tcview.model.keys import same, source_key, stable_key
from tcview.model.metadata import BytecodeDump
from tcview.model.objects import (
    Compile,
    Frame,
    Kernel,
    LogSource,
    Model,
    Rank,
    Record,
    Run,
)
from tcview.model.ranks import RankSet
from tcview.ui.content import (
    CUDAGRAPH_STYLE,
    CUDAGRAPH_SYMBOL,
    FIT_NAME,
    FIT_WORD,
    KIND_STYLE,
    STATUS_MARK,
    STATUS_STYLE,
    fit_label,
    fmt_seconds,
    lit,
    marks_text,
    record_name,
)
from tcview.ui.items import Item, ItemKind, ItemObject

NEW_MARK = Text("new ", style="bold green")
PAGE = 500  # children added at a time; a "more" node adds the next page
GROUP_LIMIT = 5000  # leaves shown under one group node
AUTO_EXPAND_FRAMES = 12  # with this many frames or fewer, frames start expanded

BYTECODE = "<bytecode>"  # no record kind has this name
MAIN_KINDS = (
    "dynamo_output_graph",
    "dynamo_cpp_guards_str",
    "dynamo_guards",
    "recompile_reasons",
    "dynamo_graph_break_reason",
    "dynamo_error",
    BYTECODE,  # a compile's bytecode dumps (their names vary: `main_order`)
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


def main_order(rec: Record) -> int | None:
    """A record's place among a compile's main children, None for "other artifacts"."""
    order = MAIN_ORDER.get(rec.label, MAIN_ORDER.get(rec.kind))
    if order is None and BytecodeDump.decode(rec.label) is not None:
        return MAIN_ORDER[BYTECODE]
    return order


@dataclass
class Spec:
    key: Hashable
    label: Text
    kind: ItemKind
    obj: ItemObject
    expandable: bool = False
    expand: bool = False
    comp: Compile | None = None
    by_label: bool = True
    files: list[LogSource] = field(default_factory=list)

    def item(self) -> Item:
        return Item(
            self.kind, self.obj, self.key, comp=self.comp, by_label=self.by_label, files=self.files
        )


# ---------------------------------------------------------------- labels


def _name(text: Text, name: str, style: str = "") -> None:
    """Append the label's name: the part elided in the middle when the pane is narrow."""
    start = len(text)
    text.append_text(lit(name, style))
    text.stylize(FIT_NAME, start, len(text))


def _mark(text: Text, name: str, symbol: str, style: str) -> None:
    """Append ``✓ ok``: the word gives way (the symbol stays) when the pane is narrow."""
    text.append(symbol, style=style)
    start = len(text)
    text.append(f" {name}", style=style)
    text.stylize(FIT_WORD, start, len(text))


def frame_label(frame: Frame) -> Text:
    status = frame.status
    n = len(frame.compiles)
    text = Text(STATUS_MARK.get(status, "?") + " ", style=STATUS_STYLE.get(status, ""))
    _name(text, frame.label)
    if frame.episode != FIRST_EPISODE:
        text.append(episode_suffix(frame.episode), style="bold")
    if frame.marks:
        text.append(" ")
        text.append_text(marks_text(frame.marks, words=False))
    text.append(f"  {n} compile{'s' if n != 1 else ''}", style="dim")
    return text


def compile_label(comp: Compile, cudagraphs: CudaGraphs | None = None) -> Text:
    status = comp.status
    text = Text.assemble(lit(comp.id_label, "bold"), "  ")
    _mark(text, status, STATUS_MARK.get(status, "?"), STATUS_STYLE.get(status, ""))
    for mark in comp.marks:
        text.append("  ")
        _mark(text, mark, STATUS_MARK.get(mark, "?"), STATUS_STYLE.get(mark, ""))
    if len(comp.breaks) > 1:
        text.append(f" ×{len(comp.breaks)}", style=STATUS_STYLE["graph break"])
    if cudagraphs is not None:
        text.append("  ")
        _mark(
            text,
            cudagraphs.mark,
            CUDAGRAPH_SYMBOL[cudagraphs.state],
            CUDAGRAPH_STYLE[cudagraphs.state],
        )
    t = compile_seconds(comp)
    if t is not None:
        text.append(f"  {fmt_seconds(t)}", style="dim")
    if comp.frame is None and comp.metrics:
        name = comp.metrics.get("co_name")
        if isinstance(name, str):
            text.append("  ")
            _name(text, name, "dim")
    return text


def record_label(rec: Record, comp: Compile | None) -> Text:
    name = record_name(rec)
    text = Text(name, style="bold" if rec.kind in MAIN_ORDER or rec.label in MAIN_ORDER else "")
    if comp is not None and comp.retried and rec.attempt not in (0, None):
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


def kernel_label(kernel: Kernel) -> Text:
    kind = kernel.kind
    text = Text()
    _name(text, kernel.name)
    text.append("  " + kind, style=KIND_STYLE.get(kind, "dim"))
    return text


# ---------------------------------------------------------------- children


def _compile_spec(comp: Compile, model: Model | None) -> Spec:
    cudagraphs = model_cudagraphs(model, comp) if model is not None else None
    return Spec(stable_key(comp), compile_label(comp, cudagraphs), "compile", comp, True)


def _file_content(files: list[LogSource], model: Model | None) -> list[Spec]:
    if len(files) > 1:
        out = []
        for tf in files:
            label = Text.assemble(lit(tf.display), (f"  pid {tf.pid}", "dim"))
            out.append(Spec(stable_key(tf), label, "file", tf, True, files=[tf]))
        return out
    if not files:
        return []
    tf = files[0]
    out = []
    frames = list(tf.frames.values())
    few = len(frames) <= AUTO_EXPAND_FRAMES
    for frame in frames:
        out.append(Spec(stable_key(frame), frame_label(frame), "frame", frame, True, few))
    for comp in list(tf.compiles.values()):
        if comp.frame is None:
            out.append(_compile_spec(comp, model))
    out.append(
        Spec(
            ("others", source_key(tf)),
            Text("records without a compile id", style="dim"),
            "others",
            tf,
            True,
        )
    )
    return out


def _root_children(model: Model, stable: bool, ranks: RankSet = None) -> list[Spec]:
    # A run without files (a pipe or a capture before its first log line) has no rows yet:
    # the overview says that the input is awaited. A rank filter hides runs without its ranks.
    runs = [
        run
        for run in model.runs
        if run.files and (ranks is None or any(f.rank in ranks for f in run.files))
    ]
    if len(runs) == 1 and not stable:
        return _run_children(runs[0], model, ranks)
    out = []
    for run in runs:
        label = Text.assemble(lit(run.label, "bold"))
        out.append(
            Spec(
                stable_key(run),
                label,
                "run",
                run,
                True,
                run is runs[-1],
                files=list(run.files),
            )
        )
    return out


def _run_children(run: Run, model: Model | None, picked: RankSet = None) -> list[Spec]:
    ranks = run.ranks
    ranked = [r for r in ranks if r.rank is not None]
    if not ranked:
        return _file_content(run.files, model) if picked is None else []
    if picked is not None:
        ranks = [r for r in ranks if r.rank in picked]
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


def _compile_children(comp: Compile) -> list[Spec]:
    main: list[tuple[int, int, Record]] = []
    other: list[Record] = []
    for pos, rec in enumerate(list(comp.records)):
        order = main_order(rec)
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
                stable_key(rec),
                record_label(rec, comp),
                "record",
                rec,
                bool(kernels),
                comp=comp,
            )
        )
    if other:
        label = Text.assemble("other artifacts", (f"  {len(other)}", "dim"))
        out.append(Spec(("group", stable_key(comp)), label, "group", other, True, comp=comp))
    return out


def _group_children(records: list[Record], comp: Compile | None, by_label: bool) -> list[Spec]:
    if by_label:
        groups: dict[str, list[Record]] = {}
        for rec in records:
            groups.setdefault(rec.label, []).append(rec)
        if len(groups) > 1 or len(records) > 40:
            out = []
            for label, recs in groups.items():
                if len(recs) == 1:
                    rec = recs[0]
                    out.append(
                        Spec(stable_key(rec), record_label(rec, comp), "record", rec, comp=comp)
                    )
                else:
                    text = Text.assemble(record_label(recs[0], comp), (f"  ×{len(recs)}", "dim"))
                    out.append(
                        Spec(
                            ("group", stable_key(recs[0]), label),
                            text,
                            "group",
                            recs,
                            True,
                            comp=comp,
                            by_label=False,
                        )
                    )
            return out
    out = []
    for i, rec in enumerate(records[:GROUP_LIMIT]):
        text = record_label(rec, comp)
        text.append(f"  #{i + 1}", style="dim")
        out.append(Spec(stable_key(rec), text, "record", rec, comp=comp))
    if len(records) > GROUP_LIMIT:
        more = Text(f"… {len(records) - GROUP_LIMIT} more not listed", style="dim italic")
        out.append(Spec(("more", stable_key(records[0])), more, "more", None))
    return out


def children_of(
    item: Item, stable: bool = False, model: Model | None = None, ranks: RankSet = None
) -> list[Spec]:
    """Child specs of an item. `stable` (follow mode) keeps the run level even for one run,
    so that a second run appearing later adds a node instead of reshaping the tree. `model`
    (the tree's) is where a compile's label finds what its TORCH_LOGS text says; `ranks`
    (a rank filter) keeps the runs and ranks of those ranks only."""
    obj = item.obj
    if isinstance(obj, (TraceSet, TextLog)):
        return _root_children(obj, stable, ranks)
    if isinstance(obj, Run):
        return _run_children(obj, model, ranks)
    if isinstance(obj, Rank):
        return _file_content(list(obj.files), model)
    if isinstance(obj, LogSource):
        if item.kind == "others":
            return _group_children([r for r in obj.records if r.key is None], None, True)
        return _file_content([obj], model)
    if isinstance(obj, Frame):
        return [_compile_spec(c, model) for c in list(obj.compiles)]
    if isinstance(obj, Compile):
        return _compile_children(obj)
    if isinstance(obj, Record):
        comp = item.comp
        if comp is None:
            return []
        return [
            Spec(stable_key(k), kernel_label(k), "kernel", k)
            for k in list(comp.kernels)
            if k.output is obj
        ]
    if isinstance(obj, list):
        return _group_children(obj, item.comp, item.by_label)
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
        self._by_key: dict[Hashable, TreeNode[Item]] = {}
        self.mark_new = False  # follow mode: nodes added from now on are marked as new
        self.stable = False  # follow mode: keep levels that a growing model could add
        self.new_keys: set[Hashable] = set()
        self.ranks: RankSet = None  # the app's rank filter: only these ranks are shown

    # ------------------------------------------------------------ building

    def get_label_width(self, node: TreeNode[Item]) -> int:
        label = node.label
        width = label.cell_len if isinstance(label, Text) else cell_len(label)
        width += 2 if node.allow_expand else 0
        room = self._room(node)
        return width if room is None else min(width, room)

    def _room(self, node: TreeNode[Item]) -> int | None:
        """The cells a node's label (its expander included) has in the pane: labels fit it,
        so that nothing needs scrolling sideways (None: not laid out yet)."""
        # Room kept for the vertical scrollbar, shown or not: the widths do not depend on it.
        width = self.content_region.width - self.styles.scrollbar_size_vertical
        if width <= 0:
            return None
        depth = 0
        parent = node.parent
        while parent is not None and parent is not self.root:
            depth += 1
            parent = parent.parent
        return max(8, width - depth * self.guide_depth)

    def render_label(self, node: TreeNode[Item], base_style: Style, style: Style) -> Text:
        label = node.label
        room = self._room(node)
        if room is None or not isinstance(label, Text):
            return super().render_label(node, base_style, style)
        fitted = fit_label(label, room - (2 if node.allow_expand else 0)).copy()
        fitted.stylize(style)
        if not node.allow_expand:
            return fitted
        icon = self.ICON_NODE_EXPANDED if node.is_expanded else self.ICON_NODE
        return Text.assemble((icon, base_style + TOGGLE_STYLE), fitted)

    @property
    def model(self) -> Model | None:
        """The model the tree shows (its root's)."""
        root = self.root.data
        return root.obj if root is not None and isinstance(root.obj, Model) else None

    def set_model(self, model: Model | None) -> None:
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
        specs = children_of(item, self.stable, self.model, self.ranks)
        if len(specs) > PAGE:
            item.limit = PAGE
        for spec in specs[: item.limit or None]:
            self._add(node, spec)
        self._page_node(node, len(specs))
        item.loaded = True

    def _add(self, parent: TreeNode[Item], spec: Spec) -> TreeNode[Item]:
        if self.mark_new and spec.key not in self._by_key:
            self.new_keys.add(spec.key)
        node = parent.add(self._label(spec), data=spec.item(), allow_expand=spec.expandable)
        self._by_key[spec.key] = node
        if spec.expand and spec.expandable:
            self.ensure_loaded(node)
            node.expand()
        return node

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[Item]) -> None:
        self.ensure_loaded(event.node)

    # ------------------------------------------------------------ growth

    def refresh_model(self, model: Model | None = None) -> None:
        """Bring loaded nodes up to date with the model, in place: `model`, a newer version of
        the one shown (its nodes then hold the new version's objects, found by their keys)."""
        if model is not None and self.root.data is not None:
            self.root.data.obj = model
        self._sync(self.root)

    def _sync(self, node: TreeNode[Item]) -> None:
        item = node.data
        if item is None or not item.loaded:
            return
        specs = children_of(item, self.stable, self.model, self.ranks)
        total = len(specs)
        if item.limit:
            specs = specs[: item.limit]
        existing = [
            (c, c.data) for c in node.children if c.data is not None and c.data.kind != "page"
        ]
        keys = [data.key for _, data in existing]
        if [s.key for s in specs[: len(keys)]] != keys:
            self._rebuild(node, specs)
            self._page_node(node, total)
            return
        for (child, data), spec in zip(existing, specs, strict=False):
            # Runs, ranks and groups are recomputed views: take the fresh object.
            data.obj, data.files = spec.obj, spec.files
            data.comp, data.by_label = spec.comp, spec.by_label
            label = self._label(spec)
            if label.plain != _plain(child):
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
        if item is None:
            return
        page = self._page_of(node)
        rest = total - item.limit if item.limit else 0
        if rest <= 0:
            if page is not None:
                page.remove()
            return
        label = Text(f"… {rest} more · enter shows {min(PAGE, rest)} more", style="dim italic")
        if page is None:
            node.add(label, data=Item("page", item, ("page", item.key)), allow_expand=False)
        elif _plain(page) != label.plain:
            page.set_label(label)

    def _add_before(self, parent: TreeNode[Item], spec: Spec, before: TreeNode[Item]) -> None:
        if self.mark_new and spec.key not in self._by_key:
            self.new_keys.add(spec.key)
        node = parent.add(
            self._label(spec), data=spec.item(), before=before, allow_expand=spec.expandable
        )
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
        expanded: set[Hashable] = set()
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

    def _restore(self, node: TreeNode[Item], expanded: set[Hashable]) -> None:
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

    def node_for(self, key: Hashable) -> TreeNode[Item] | None:
        return self._by_key.get(key)

    def node_showing(self, obj: object) -> TreeNode[Item] | None:
        """A loaded node that stands for `obj` (a trace file, say), if there is one."""
        return next((n for n in self._by_key.values() if n.data and same(n.data.obj, obj)), None)

    def reveal(
        self, target: Compile | Frame | Kernel | Record, kind: str = ""
    ) -> TreeNode[Item] | None:
        """Expand the path to a compile, frame, kernel or record and return its node. (`kind`,
        the caller's name for the target, is not needed: the target's type says it.)"""
        comp: Compile | None
        tf: LogSource | None
        if isinstance(target, Compile):
            comp = target
        elif isinstance(target, Kernel):
            comp = target.compile
        elif isinstance(target, Frame):
            comp = None
        else:
            comp = _compile_of_record(target)
        if comp is not None:
            tf = comp.file
        elif isinstance(target, Frame):
            tf = target.file
        elif isinstance(target, Kernel):
            tf = target.output.source
        elif isinstance(target, Record):
            tf = target.source
        else:
            tf = None
        chain: list[Callable[[Item], bool]] = []
        if comp is not None:
            if comp.frame is not None:
                chain.append(_is("frame", comp.frame))
            chain.append(_is("compile", comp))
        if isinstance(target, Frame):
            chain.append(_is("frame", target))
        if isinstance(target, Kernel):
            chain.append(_is("record", target.output))
            chain.append(_is("kernel", target))
        elif isinstance(target, Record):
            rec = target
            chain.append(
                lambda it: (
                    (it.kind == "record" and same(it.obj, rec))
                    or (it.kind in ("group", "others") and _holds(it, rec))
                )
            )
        node = self.root
        for step in chain:
            while True:
                self.ensure_loaded(node)
                found = _child(node, step)
                while found is None and self._page_of(node) is not None:
                    self.show_more(node)
                    found = _child(node, step)
                if found is not None:
                    node = found
                    last = step is chain[-1]
                    if last and isinstance(target, Record) and _kind(found) != "record":
                        node.expand()  # a group holding the record: look inside
                        continue
                    if not last:
                        node.expand()
                    break
                container = _child(
                    node,
                    lambda it: (
                        it.kind in ("run", "rank", "file") and any(same(f, tf) for f in it.files)
                    ),
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
        if not self.scrollable_content_region.height:
            # Not laid out yet (e.g. --goto on the first tick): scrolling now would measure a
            # tree of height 0 and leave it scrolled. Place the cursor; scroll once it has a size.
            self.cursor_line = node.line
            self.call_after_refresh(self.scroll_to_node, node, animate=False)
            return
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


def _is(kind: ItemKind, obj: object) -> Callable[[Item], bool]:
    return lambda it: it.kind == kind and same(it.obj, obj)


def _child(node: TreeNode[Item], test: Callable[[Item], bool]) -> TreeNode[Item] | None:
    return next((c for c in node.children if c.data is not None and test(c.data)), None)


def _kind(node: TreeNode[Item]) -> ItemKind | None:
    return node.data.kind if node.data is not None else None


def _plain(node: TreeNode[Item]) -> str:
    label = node.label
    return label.plain if isinstance(label, Text) else label


def _compile_of_record(rec: Record) -> Compile | None:
    return None if rec.key is None else rec.source.compiles.get(rec.key)


def _holds(item: Item, rec: Record) -> bool:
    if item.kind == "others":
        return rec.key is None and same(item.obj, rec.source)
    return isinstance(item.obj, list) and any(same(r, rec) for r in item.obj)
