"""Reading inputs into the model: trace files and TORCH_LOGS captures, indexed by byte offset,
in worker processes, through the index cache, and followed while they grow.

Imports `tcview.model`, `tcview.text` and `tcview.analysis` (a file's signatures are made
where it is indexed). No Textual, no torch.
"""
