"""Command palette (ctrl+p): jump to any compile id, kernel or file, or search everything."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Sequence
from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.markup import escape

from tcview.model.objects import Compile, Frame, Kernel, LogSource
from tcview.report.items import Place, ShowError, locate, names_by_id
from tcview.text.safe import safe_line
from tcview.ui.messages import Reveal, SearchAll, SessionHost, ShowSource

SEARCH_BUDGET_S = 0.3
MAX_HITS = 200


def _content(text: str, offsets: Iterable[int] = ()) -> Content:
    """Literal text (never markup), with the matched characters underlined."""
    content = Content(text)
    for offset in offsets:
        if offset < len(text) and not text[offset].isspace():
            content = content.stylize("bold underline", offset, offset + 1)
    return content


class TraceCommands(Provider):
    """Compiles, kernels and files of the loaded model (of the app's model session). A pick
    posts a message up (`Reveal`, `ShowSource`, `SearchAll`) for the app to act on."""

    async def startup(self) -> None:
        self.candidates: list[tuple[str, str, str, Compile | Kernel | LogSource]] = []
        host = self.app
        if not isinstance(host, SessionHost):
            return
        session = host.model_session
        model = session.model
        if model is None:
            return
        for tf in list(model.files):
            for comp in list(tf.compiles.values()):
                frame = comp.frame.label if comp.frame is not None else ""
                text = safe_line(f"compile {comp.id_label}  {comp.status_text}  {frame}")
                self.candidates.append((text, "compile", tf.display, comp))
            self.candidates.append((safe_line(f"file {tf.display}"), "file", "", tf))
        for k in list(model.kernels):
            cid = k.compile.id_label if k.compile is not None else k.output.compile_text
            self.candidates.append(
                (safe_line(f"kernel {k.name}"), "kernel", f"{k.kind} · compile {cid}", k)
            )

    def _locate(self, query: str) -> Place | None:
        """The item `query` names by id, as `--goto` and `tcview show` read it."""
        host = self.app
        if not isinstance(host, SessionHost) or not names_by_id(query):
            return None
        session = host.model_session
        if session.model is None:
            return None
        try:
            return locate(session.model, query)
        except ShowError:
            return None

    def _open(self, kind: str, obj: Compile | Frame | Kernel | LogSource) -> None:
        if isinstance(obj, (Compile, Frame, Kernel)):
            self.app.post_message(Reveal(kind, obj))
        else:
            self.app.post_message(ShowSource(obj))

    def _search_all(self, text: str = "") -> None:
        self.app.post_message(SearchAll(text))

    async def discover(self) -> Hits:
        yield DiscoveryHit(
            Content("Search everything…"),
            self._search_all,
            "Search everything",
            "every payload and the TORCH_LOGS text (S)",
        )
        for text, kind, help_text, obj in self.candidates[:MAX_HITS]:
            yield DiscoveryHit(
                _content(text), partial(self._open, kind, obj), text, escape(help_text)
            )

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        fuzzy = matcher.fuzzy_search
        deadline = time.monotonic() + SEARCH_BUDGET_S
        low = query.lower()
        hits = 0
        place = self._locate(query)
        if place is not None:  # `rank 1 0/0`, `frame 3`: what --goto and show would pick
            go = safe_line(f"go to {query.strip()}")
            kind = type(place).__name__.lower()
            yield Hit(1.0, Content(go), partial(self._open, kind, place), go, "")
        # Last in the list: search every payload for what was typed.
        search_all = f"Search everything for {safe_line(query)}"
        yield Hit(
            0.01,
            Content(search_all),
            partial(self._search_all, query),
            search_all,
            "every payload and the TORCH_LOGS text (S)",
        )
        for i, (text, kind, help_text, obj) in enumerate(self.candidates):
            if low in text.lower():
                start = text.lower().index(low)
                score = 0.9 + 0.1 * len(query) / max(len(text), 1)
                offsets: Sequence[int] = range(start, start + len(query))
            else:
                if time.monotonic() > deadline:
                    continue
                score, offsets = fuzzy.match(query, text)
                score = min(score, 0.85)
            if score > 0:
                hits += 1
                yield Hit(
                    score,
                    _content(text, offsets),
                    partial(self._open, kind, obj),
                    text,
                    escape(help_text),  # Textual reads a hit's help as markup
                )
                if hits >= MAX_HITS:
                    return
            if i % 500 == 0:
                await asyncio.sleep(0)
