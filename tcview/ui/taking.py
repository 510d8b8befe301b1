"""The browser's y, Y and e: copy the selected item to the clipboard, save it to a file, open
its source line in the editor (take.py says what an item gives).

`Taker` reads the item (a payload, from disk) in a worker of its host (the browser screen), so
the UI goes on meanwhile; its dialogs and notes go to the host's app.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from functools import partial

from textual.app import SuspendNotSupported
from textual.dom import DOMNode
from textual.worker import get_current_worker

from tcview.analysis.paths import Location, PathMap, locations_of
from tcview.ingest.session import ModelSession
from tcview.text.safe import safe_line
from tcview.ui.editor import editor_call
from tcview.ui.take import OSC52_SAFE, LocationPicker, SaveScreen, Taken, copy_text, write_text
from tcview.ui.viewer import CodeView


class Taker:
    """y, Y and e for `host`; `viewer` gives the viewer whose text is taken when the item
    gives none (the focused one, else the one shown)."""

    def __init__(
        self, host: DOMNode, path_map: PathMap, viewer: Callable[[], CodeView | None]
    ) -> None:
        self.host = host
        self.path_map = path_map
        self.viewer = viewer

    def copy(self, obj: object, session: ModelSession) -> None:
        self._take(obj, session, self._copy)

    def save(self, obj: object, session: ModelSession) -> None:
        self._take(obj, session, partial(self._save, session))

    def edit(self, obj: object, session: ModelSession, in_viewer: bool) -> None:
        """Open the item's source line in the editor; `in_viewer`: pick from all its lines."""
        self._in_worker(partial(self._locate, obj, session, in_viewer), "locate")

    # ------------------------------------------------------------ copy and save

    def _take(self, obj: object, session: ModelSession, then: Callable[[Taken], None]) -> None:
        self._in_worker(partial(self._read, obj, session, then), "take")

    def _in_worker(self, work: Callable[[], None], description: str) -> None:
        """Reading the item's text reads the disk: in a worker, the latest ask only."""
        self.host.run_worker(
            work,
            thread=True,
            group="take",
            exclusive=True,
            exit_on_error=False,
            description=description,
        )

    def _read(self, obj: object, session: ModelSession, then: Callable[[Taken], None]) -> None:
        problem = ""
        try:
            taken = copy_text(obj, session.model)
        except OSError as exc:
            taken, problem = None, f"could not read it: {exc}"
        if not get_current_worker().is_cancelled:
            self.host.app.call_from_thread(self._took, taken, problem, then)

    def _took(self, taken: Taken | None, problem: str, then: Callable[[Taken], None]) -> None:
        """The item's text (else the text the viewer shows) to `then`."""
        app = self.host.app
        if problem:
            app.notify(markup=False, message=problem, severity="error")
            return
        if taken is None:
            viewer = self.viewer()
            if viewer is not None and viewer.doc.count:
                doc = viewer.doc
                text = "\n".join(doc.plain(i) for i in range(doc.count))
                taken = Taken(doc.title or "text shown", text, doc.title or "tcview")
        if taken is None or not taken.text:
            app.notify(markup=False, message="nothing to copy here", severity="warning")
            return
        then(taken)

    def _copy(self, taken: Taken) -> None:
        app = self.host.app
        app.copy_to_clipboard(taken.text)
        note = (
            " (long: some terminals drop clipboard sequences this long; Y saves to a file)"
            if taken.size > OSC52_SAFE
            else ""
        )
        app.notify(
            markup=False,
            message=f"copied {taken.size} bytes ({safe_line(taken.what)}) to the clipboard"
            f" (OSC 52){note}",
        )

    def _save(self, session: ModelSession, taken: Taken) -> None:
        app = self.host.app

        def save(path: str | None) -> None:
            if path is None:
                return
            try:
                size = write_text(path, taken.text)
            except OSError as exc:
                app.notify(
                    markup=False,
                    message=f"could not save {safe_line(path)}: {exc.strerror or exc}",
                    severity="error",
                )
                return
            app.notify(
                markup=False,
                message=f"saved {size} bytes ({safe_line(taken.what)}) to {safe_line(path)}",
            )

        app.push_screen(SaveScreen(taken, session.model), save)

    # ------------------------------------------------------------ the editor

    def _locate(self, obj: object, session: ModelSession, in_viewer: bool) -> None:
        try:
            locations = locations_of(obj)
        except OSError:
            locations = []
        if not get_current_worker().is_cancelled:
            self.host.app.call_from_thread(self._located, locations, in_viewer)

    def _located(self, locations: list[Location], in_viewer: bool) -> None:
        if not locations:
            self.host.app.notify(
                markup=False, message="no source location here", severity="warning"
            )
            return
        if len(locations) == 1 or not in_viewer:
            self.open_location(locations[0])
            return
        self.host.app.push_screen(
            LocationPicker(locations),
            lambda loc: self.open_location(loc) if loc is not None else None,
        )

    def open_location(self, location: Location) -> None:
        """Run the editor at the location (the app suspended meanwhile), if the file is here."""
        app = self.host.app
        call = editor_call(location, self.path_map)
        if not call.argv:
            app.notify(markup=False, message=safe_line(call.problem), severity="warning")
            return
        try:
            try:
                with app.suspend():
                    result = subprocess.run(call.argv, check=False)
            except SuspendNotSupported:
                if not app.is_headless:
                    app.notify(
                        markup=False,
                        message="this terminal cannot hand itself to an editor",
                        severity="error",
                    )
                    return
                # Headless (tests): no terminal to hand over; the editor runs as it is.
                result = subprocess.run(call.argv, check=False, stdin=subprocess.DEVNULL)
        except OSError as exc:
            app.notify(
                markup=False,
                message=f"could not run {safe_line(call.argv[0])}: {exc.strerror or exc}",
                severity="error",
            )
            return
        if result.returncode:
            app.notify(
                markup=False,
                message=f"{safe_line(call.argv[0])} exited with {result.returncode}",
                severity="warning",
            )
