"""`tcview run` and `tcview bench` below the UI: the job under TORCH_TRACE, its process
group, the benchmark driver, the GPUs through NVML.

Imports the layers below it (`model`, `text`, `analysis`, `ingest`, `report`); never `tcview.ui`.
"""
