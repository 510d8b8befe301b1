"""A read-only line view that renders and highlights only the lines on screen."""

from __future__ import annotations

import re
from collections.abc import Iterable

from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.token import _TokenType
from rich.cells import cell_len, get_character_cell_size
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.syntax import PygmentsSyntaxTheme
from rich.text import Text
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tcview.text.safe import safe_line
from tcview.ui.content import Document

HIGHLIGHT_LIMIT = 4000  # longer lines are shown plain
DISPLAY_LIMIT = 200_000  # longer lines are cut, with a marker
CACHE_LINES = 600  # highlighted lines kept (several screens of them)
CACHE_SAFE = 4 * CACHE_LINES  # safe plain lines kept (search reads many)
FOCUS_ROOM = 6  # rows from a document's focus line on that must be on screen when it opens
MARKED_STYLE = "on #404010"  # a document's marked lines (the picked kernel's graph nodes)

_LEXERS: dict[str, Lexer] = {}
_THEME = PygmentsSyntaxTheme("monokai")
_TOKEN_STYLES: dict[_TokenType, Style] = {}


def lexer_for(language: str | None) -> Lexer | None:
    if not language:
        return None
    lexer = _LEXERS.get(language)
    if lexer is None:
        lexer = get_lexer_by_name(language, stripnl=False, ensurenl=False)
        _LEXERS[language] = lexer
    return lexer


def token_style(ttype: _TokenType) -> Style:
    style = _TOKEN_STYLES.get(ttype)
    if style is None:
        base = _THEME.get_style_for_token(ttype)
        style = Style(color=base.color, bold=base.bold, italic=base.italic)
        _TOKEN_STYLES[ttype] = style
    return style


def display_line(raw: str) -> str:
    if len(raw) > DISPLAY_LIMIT:
        extra = len(raw) - DISPLAY_LIMIT
        return safe_line(raw[:DISPLAY_LIMIT]) + f" … [{extra} more characters]"
    return safe_line(raw)


def highlight_line(text: str, language: str | None) -> Text:
    line = Text(text)
    lexer = lexer_for(language)
    if lexer is None or len(text) > HIGHLIGHT_LIMIT:
        return line
    for start, ttype, value in lexer.get_tokens_unprocessed(text):
        if value:
            line.stylize(token_style(ttype), start, start + len(value))
    return line


def wrap_spans(plain: str, width: int, indent: int = 0) -> list[tuple[int, int]]:
    """(start, end) of the display rows of one line: the first row `width` cells wide, the
    next ones `width - indent`. A row ends after a space when one fits, else inside a word;
    the spaces where a row breaks are not shown."""
    n = len(plain)
    ascii_only = plain.isascii()
    if width <= 0 or (n if ascii_only else cell_len(plain)) <= width:
        return [(0, n)]
    spans: list[tuple[int, int]] = []
    pos, avail = 0, width
    while pos < n:
        end = _fit(plain, pos, avail, ascii_only)
        if end >= n:
            spans.append((pos, n))
            break
        if plain[end] == " ":
            stop = end
        else:
            space = plain.rfind(" ", pos + 1, end)
            stop = space + 1 if space > pos else max(end, pos + 1)
        spans.append((pos, stop))
        pos = stop
        while pos < n and plain[pos] == " ":
            pos += 1
        avail = max(width - indent, 1)
    return spans


def _fit(plain: str, pos: int, cells: int, ascii_only: bool) -> int:
    """The largest end such that plain[pos:end] takes at most `cells` cells."""
    if ascii_only:
        return min(len(plain), pos + cells)
    used, end = 0, pos
    while end < len(plain):
        used += get_character_cell_size(plain[end])
        if used > cells:
            break
        end += 1
    return end


def _blank_key(style: Style | None) -> tuple[object, ...]:
    """What decides how a run of spaces looks: not the text colour, unless reversed."""
    if style is None:
        return ()
    return (
        style.bgcolor,
        style.reverse,
        style.color if style.reverse else None,
        style.underline,
        style.underline2,
        style.strike,
        style.overline,
        style.blink,
        style.link,
    )


def compact_segments(segments: list[Segment]) -> list[Segment]:
    """Merge neighbours that look the same, so a line costs fewer escape sequences.

    The terminal gets a full style and a reset per segment; highlighted code splits at every
    token, spaces included. Spaces take a neighbour's style when that looks the same.
    """
    out: list[Segment] = []
    for segment in segments:
        text, style, control = segment
        if out and control is None and out[-1].control is None:
            last_text, last_style, _ = out[-1]
            if style == last_style or (
                not text.strip(" ") and _blank_key(style) == _blank_key(last_style)
            ):
                out[-1] = Segment(last_text + text, last_style)
                continue
            if not last_text.strip(" ") and _blank_key(style) == _blank_key(last_style):
                out[-1] = Segment(last_text + text, style)
                continue
        out.append(segment)
    return out


# The keys of a line view: shared by the code viewer and the run pane's output.
SCROLL_BINDINGS = [
    Binding("up,k", "line(-1)", "Up", show=False, id="scroll.up", tooltip="scroll a line up"),
    Binding(
        "down,j", "line(1)", "Down", show=False, id="scroll.down", tooltip="scroll a line down"
    ),
    Binding(
        "left,h",
        "column(-4)",
        "Left",
        show=False,
        id="scroll.left",
        tooltip="scroll sideways (long lines)",
    ),
    Binding(
        "right,l",
        "column(4)",
        "Right",
        show=False,
        id="scroll.right",
        tooltip="scroll sideways (long lines)",
    ),
    Binding("pageup", "page(-1)", "Page up", show=False, id="scroll.page-up"),
    Binding("pagedown,space", "page(1)", "Page down", show=False, id="scroll.page-down"),
    Binding("home,g", "top", "Top", show=False, id="scroll.top"),
    Binding("end,G", "bottom", "Bottom", show=False, id="scroll.bottom"),
]


def text_strip(text: Text, console: Console) -> Strip:
    """A line of text as a strip, with its base style: `Text.render` leaves out the base
    style of a Text without spans (``Text("heading", style="bold")`` would show plain)."""
    segments: Iterable[Segment] = text.render(console)
    if text.style:
        segments = Segment.apply_style(segments, console.get_style(text.style))
    return Strip(segments, text.cell_len)


class CodeView(ScrollView, can_focus=True):
    """Shows a Document: gutter with line numbers, highlighting, search, horizontal scroll.

    A styled document (summaries, tables, break details) wraps its long lines into display
    rows instead: computed when it is shown and when the width changes, never per frame.
    Code is never wrapped (it scrolls sideways), so a long output code costs nothing here.
    """

    BINDINGS = [
        *SCROLL_BINDINGS,
        Binding("n", "next_match(1)", "Next match", show=False, id="viewer.next-match"),
        Binding("N", "next_match(-1)", "Previous match", show=False, id="viewer.previous-match"),
    ]

    DEFAULT_CSS = """
    CodeView { background: $surface; }
    """

    class Searched(Message):
        def __init__(self, view: CodeView, text: str) -> None:
            super().__init__()
            self.view = view
            self.text = text

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.doc = Document("")
        self._line_cache: LRUCache[int, Text] = LRUCache(CACHE_LINES)
        self._safe_cache: LRUCache[int, str] = LRUCache(CACHE_SAFE)
        self.query_text = ""  # what the subtitle shows of the search
        self.pattern: re.Pattern[str] | None = None  # `/`'s text, or a global search's query
        self.matches: list[tuple[int, int, int]] = []  # (line, start, end)
        self.match_index = -1
        self._by_line: dict[int, list[tuple[int, int, int]]] = {}
        # Wrapped documents: (line, start, end, indent) of each display row, the first row of
        # each line, and the width they were wrapped to. None: one row per line.
        self._rows: list[tuple[int, int, int, int]] | None = None
        self._line_rows: list[int] = []
        self._wrap_width = 0

    # ------------------------------------------------------------ content

    def show(self, doc: Document, keep_search: bool = False, keep_position: bool = False) -> None:
        """Show `doc`; `keep_position` keeps the scroll offset (a refreshed overview)."""
        self.doc = doc
        self._line_cache.clear()
        self._safe_cache.clear()
        self.border_title = Text(safe_line(doc.title))  # Text: never read as markup
        self._wrap()
        self.matches, self._by_line, self.match_index = [], {}, -1
        if keep_search and self.pattern is not None:
            self._find()
        self._update_subtitle()
        if not keep_position:
            # From the top when the focus line and a few after it are on the first screen.
            row = self.row_of(doc.focus)
            # The height under a horizontal scrollbar, there yet or not: the same every time.
            height = self.content_region.height - self.styles.scrollbar_size_horizontal
            top = max(0, row - 2) if doc.focus and row + FOCUS_ROOM > height else 0
            self.scroll_to(0, top, animate=False, immediate=True, force=True)
            if top:  # a scrollbar that appears now is laid out later: set it then
                self.call_after_refresh(self._scroll_down_to, doc, top, self.scroll_offset.y)
        self.refresh()

    def watch_show_vertical_scrollbar(self, shown: bool) -> None:
        """Textual moves a scrollbar when the scroll moves, not when the bar appears: a
        document scrolled before its bar was laid out would show its thumb at the top."""
        if shown:
            self.vertical_scrollbar.position = self.scroll_y

    def _scroll_down_to(self, doc: Document, top: int, was: int) -> None:
        """Scroll to `top` once laid out, unless another document or a scroll (a search's
        match) came meanwhile."""
        if self.doc is not doc or self.scroll_offset.y != was:
            return
        if self.scroll_offset.y < top:
            self.scroll_to(0, top, animate=False, immediate=True, force=True)
        if self.show_vertical_scrollbar:
            self.vertical_scrollbar.position = self.scroll_offset.y

    @property
    def row_count(self) -> int:
        return len(self._rows) if self._rows is not None else self.doc.count

    def row_of(self, line: int, offset: int = 0) -> int:
        """The display row that shows character `offset` of `line`."""
        if self._rows is None or not 0 <= line < len(self._line_rows):
            return line
        row = self._line_rows[line]
        last = self._line_rows[line + 1] if line + 1 < len(self._line_rows) else len(self._rows)
        while row + 1 < last and self._rows[row + 1][1] <= offset:
            row += 1
        return row

    def _wrap_to(self) -> int:
        """The width styled lines wrap to (the vertical scrollbar's column kept free)."""
        return self.content_region.width - self.styles.scrollbar_size_vertical

    def _wrap(self) -> None:
        """Split a styled document's lines into display rows at the current width."""
        doc = self.doc
        width = self._wrap_to()
        self._wrap_width = width
        if doc.styled is None or width <= 0:
            self._rows, self._line_rows = None, []
            self._set_virtual_size(Size(self._content_width(doc) + self.gutter_width, doc.count))
            return
        rows: list[tuple[int, int, int, int]] = []
        firsts: list[int] = []
        for index, text in enumerate(doc.styled):
            plain = text.plain
            firsts.append(len(rows))
            if len(plain) <= width and (plain.isascii() or text.cell_len <= width):
                rows.append((index, 0, len(plain), 0))
                continue
            indent = min(len(plain) - len(plain.lstrip(" ")) + 2, width // 2)
            for start, end in wrap_spans(plain, width, indent):
                rows.append((index, start, end, indent if start else 0))
        self._rows, self._line_rows = rows, firsts
        self._set_virtual_size(Size(width, len(rows)))

    def on_resize(self) -> None:
        if self.doc.styled is None or self._wrap_to() == self._wrap_width:
            return
        top = self.scroll_offset.y
        anchor = self._rows[top][:2] if self._rows and top < len(self._rows) else (0, 0)
        self._wrap()
        self.scroll_to(0, self.row_of(*anchor), animate=False, immediate=True, force=True)
        self.refresh()

    def _set_virtual_size(self, size: Size) -> None:
        """Resize the scrollable area without a layout of the whole screen.

        `virtual_size` is a layout reactive: assigning it reflows the screen, which repaints
        this view a second time and every scrollbar on screen (the tree's too), about 20 KB
        per item shown over SSH. Only the scrollbars need updating, and the view repaints anyway,
        unless a scrollbar appears or goes.
        """
        if size == self.virtual_size:
            return
        old, (width, height) = self.virtual_size, self.container_size
        bars_change = (old.height > height) != (size.height > height) or (old.width > width) != (
            size.width > width
        )
        if bars_change or not self.container_size:
            self.virtual_size = size  # a scrollbar appears or goes: that is a layout change
            return
        self.set_reactive(CodeView.virtual_size, size)
        if self.show_vertical_scrollbar:
            bar = self.vertical_scrollbar
            bar.window_virtual_size = size.height
            bar.window_size = height - self.scrollbar_size_horizontal
            bar.refresh()
        if self.show_horizontal_scrollbar:
            bar = self.horizontal_scrollbar
            bar.window_virtual_size = size.width
            bar.window_size = width - self.scrollbar_size_vertical
            bar.refresh()
        self.scroll_x = min(self.scroll_x, self.max_scroll_x)
        self.scroll_y = min(self.scroll_y, self.max_scroll_y)

    @staticmethod
    def _content_width(doc: Document) -> int:
        if doc.styled is not None:
            return max((t.cell_len for t in doc.styled), default=0) + 1
        longest = max((len(ln) + 3 * ln.count("\t") for ln in doc.lines), default=0)
        longest = max([longest, *(t.cell_len for t in doc.head + doc.tail)])
        return min(longest, DISPLAY_LIMIT + 40) + 1

    @property
    def gutter_width(self) -> int:
        if not self.doc.numbered:
            return 0
        return len(str(self.doc.first_lineno + max(len(self.doc.lines) - 1, 0))) + 2

    def safe(self, index: int) -> str:
        text = self._safe_cache.get(index)
        if text is None:
            text = display_line(self.doc.plain(index))
            self._safe_cache.set(index, text)
        return text

    def line_text(self, index: int) -> Text:
        cached = self._line_cache.get(index)
        if cached is not None:
            return cached
        text = self.doc.styled_line(index)
        if text is None:
            text = highlight_line(self.safe(index), self.doc.language_at(index))
        if index in self.doc.marked:
            text = text.copy()
            text.stylize(MARKED_STYLE)
        hits = self._by_line.get(index)
        if hits:
            text = text.copy()
            current = self.matches[self.match_index] if self.match_index >= 0 else None
            for hit in hits:
                style = "black on yellow" if hit == current else "reverse"
                text.stylize(style, hit[1], hit[2])
        self._line_cache.set(index, text)
        return text

    # ------------------------------------------------------------ rendering

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        base = self.rich_style
        if index >= self.row_count:
            return Strip.blank(width, base)
        gutter = self.gutter_width
        text_width = max(width - gutter, 0)
        indent = 0
        if self._rows is not None:
            index, start, end, indent = self._rows[index]
            line = self.line_text(index)
            if start or end < len(line):
                line = line[start:end]
            scroll_x = 0
        else:
            line = self.line_text(index)
        content = text_strip(line, self.app.console)
        if indent:
            content = Strip.join([Strip.blank(indent), content])
        content = content.crop_extend(scroll_x, scroll_x + text_width, None)
        if gutter:
            lineno = self.doc.lineno(index)
            bar = "▌" if index in self.doc.marked else "│"
            number = " " * gutter if lineno is None else f"{lineno:>{gutter - 2}} {bar}"
            is_focus = index == self.doc.focus and self.doc.focus > 0
            style = Style(dim=not is_focus, bold=is_focus)
            strip = Strip.join([Strip([Segment(number[:gutter], style)], gutter), content])
        else:
            strip = content
        strip = strip.apply_style(base)
        return Strip(compact_segments(list(strip)), strip.cell_length)

    # ------------------------------------------------------------ search

    def search(self, text: str, backwards: bool = False) -> bool:
        """Find `text` (case-insensitive unless it has capitals) and go to the next match."""
        self.query_text = text
        flags = 0 if any(c.isupper() for c in text) else re.IGNORECASE
        self.pattern = re.compile(re.escape(text), flags) if text else None
        self._find()
        return self._go_from_top(backwards)

    def _go_from_top(self, backwards: bool) -> bool:
        """Go to the first match on screen or below (the last above, `backwards`)."""
        if not self.matches:
            self._update_subtitle()
            self.refresh()
            return False
        top = self.scroll_offset.y
        if backwards:
            before = [i for i, m in enumerate(self.matches) if m[0] < top]
            self.match_index = before[-1] if before else len(self.matches) - 1
        else:
            self.match_index = next((i for i, m in enumerate(self.matches) if m[0] >= top), 0)
        self._goto_match()
        return True

    def _find(self) -> None:
        self.matches = []
        self._by_line = {}
        self._line_cache.clear()
        pattern = self.pattern
        if pattern is None:
            return
        for index in range(self.doc.count):
            # The plain line first: only a line that has a match is made safe to show.
            if pattern.search(self.doc.plain(index)) is None:
                continue
            for m in pattern.finditer(self.safe(index)):
                if m.end() == m.start():
                    continue
                hit = (index, m.start(), m.end())
                self.matches.append(hit)
                self._by_line.setdefault(index, []).append(hit)
            if len(self.matches) > 100_000:
                break

    def mark(self, pattern: re.Pattern[str], label: str, lineno: int) -> None:
        """Highlight every match of `pattern` (a global search's) and go to the first one on
        the line numbered `lineno` (as the gutter numbers it), or the next one after it."""
        self.query_text = label
        self.pattern = pattern
        self._find()
        index = self.doc.index_of(lineno)
        if not self.matches:
            self._update_subtitle()
            if 0 <= index < self.doc.count:
                y = max(0, self.row_of(index) - 2)
                self.scroll_to(0, y, animate=False, immediate=True, force=True)
            self.refresh()
            return
        after = (i for i, m in enumerate(self.matches) if m[0] >= index)
        self.match_index = next(after, len(self.matches) - 1) if index >= 0 else 0
        self._goto_match()

    def action_next_match(self, step: int) -> None:
        self.next_match(step)

    def next_match(self, step: int = 1) -> None:
        if not self.matches:
            if self.pattern is not None:
                self._find()
                self._go_from_top(backwards=step < 0)
            return
        self.match_index = (self.match_index + step) % len(self.matches)
        self._goto_match()

    def _goto_match(self) -> None:
        line, start, end = self.matches[self.match_index]
        self._line_cache.clear()
        height = self.scrollable_content_region.height or 10
        width = self.scrollable_content_region.width - self.gutter_width
        row = self.row_of(line, start)
        y = self.scroll_offset.y
        if not (y <= row < y + height):
            y = max(0, row - height // 3)
        x = self.scroll_offset.x
        if self._rows is not None:
            x = 0
        elif not (x <= start and end <= x + max(width, 1)):
            x = max(0, start - 8)
        self.scroll_to(x, y, animate=False, immediate=True, force=True)
        self._update_subtitle()
        self.refresh()

    def _update_subtitle(self) -> None:
        if not self.query_text:
            self.border_subtitle = ""
        elif not self.matches:
            self.border_subtitle = Text(f"/{safe_line(self.query_text)}: no match")
        else:
            self.border_subtitle = Text(
                f"/{safe_line(self.query_text)}: {self.match_index + 1}/{len(self.matches)}"
            )

    # ------------------------------------------------------------ actions

    def action_line(self, step: int) -> None:
        self.scroll_to(y=self.scroll_offset.y + step, animate=False, immediate=True)

    def action_column(self, step: int) -> None:
        self.scroll_to(x=max(0, self.scroll_offset.x + step), animate=False, immediate=True)

    def action_page(self, step: int) -> None:
        height = max(self.scrollable_content_region.height - 1, 1)
        self.scroll_to(y=self.scroll_offset.y + step * height, animate=False, immediate=True)

    def action_top(self) -> None:
        self.scroll_to(0, 0, animate=False, immediate=True)

    def action_bottom(self) -> None:
        self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True)

    def visible_text(self) -> list[str]:
        """The plain text of the rows on screen (for tests)."""
        top = self.scroll_offset.y
        height = self.scrollable_content_region.height
        rows = range(top, min(top + height, self.row_count))
        if self._rows is None:
            return [self.doc.plain(i) for i in rows]
        return [
            self.doc.plain(line)[start:end]
            for line, start, end, _ in map(self._rows.__getitem__, rows)
        ]
