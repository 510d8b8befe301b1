"""What tcview says, built once as plain data and rendered as text, JSON, Markdown or a
Chrome trace: an item's detail, the summary, diffs, search, `tcview show`.

Imports the layers below it (`model`, `text`, `analysis`, `ingest`); no Textual, no torch.
"""
