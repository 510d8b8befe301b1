"""The Textual app: the browser, its views, dialogs and the run pane.

Imports every layer below it; never `tcview.commands`.
"""
