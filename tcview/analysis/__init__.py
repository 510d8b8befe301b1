"""What tcview derives from a model: why frames recompiled, diffs, divergence between ranks,
CUDA graphs, autotuning, kernels and their provenance, source locations.

Pure functions of the declared model: imports `tcview.model` and `tcview.text` only (never
how a model was read, nor how it is shown). No Textual, no torch.
"""
