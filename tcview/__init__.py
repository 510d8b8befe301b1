"""tcview: a terminal UI and CLI for torch.compile traces.

The package is layered. A module imports only its own layer and the layers before it in
`LAYERS` (each layer's ``__init__`` docstring says what that means for it); type-only imports
and imports inside functions count too. tests/test_layers.py holds the code to this order.
"""

LAYERS = ("text", "model", "analysis", "ingest", "report", "run", "ui", "commands")
