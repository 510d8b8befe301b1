"""mode="reduce-overhead" (CUDA graphs) profiled with torch.profiler: the kernels of a replayed
graph are launched by one cudaGraphLaunch, and the join must still tie each to its compile.

    python3 cudagraph_profile.py OUT_DIR infer|train

infer: an MLP and a GEMM-heavy block under no_grad; train: the same with a backward and SGD
(both directions graphed). Writes OUT_DIR/prof.json.gz (export_chrome_trace).
"""
import os
import sys

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile


class Block(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.up = nn.Linear(d, 4 * d)
        self.down = nn.Linear(4 * d, d)
        self.norm = nn.LayerNorm(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


def main(out: str, mode: str) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(*(Block(1024) for _ in range(4))).cuda()
    fast = torch.compile(model, mode="reduce-overhead")
    x = torch.randn(256, 1024, device="cuda")
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step() -> None:
        if mode == "infer":
            with torch.no_grad():
                fast(x)
            return
        torch.compiler.cudagraph_mark_step_begin()
        loss = fast(x).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(4):
        step()  # compile, record the graphs, warm up
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            step()
        torch.cuda.synchronize()
    prof.export_chrome_trace(os.path.join(out, "prof.json.gz"))
    print("done", mode)


main(sys.argv[1], sys.argv[2])
