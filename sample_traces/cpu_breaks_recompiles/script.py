"""CPU sample for tcview: a graph break, a recompile and C++ kernels (torch 2.13, Inductor).

Regenerate from this folder:
    rm -rf trace && TORCH_TRACE=trace TORCH_LOGS="graph_breaks,recompiles,output_code" \
        python script.py > stdout.txt 2> torch_logs.txt
"""

import torch


def scale_shift(x, scale: float):
    y = torch.sin(x) * scale + 1.0
    print("checkpoint")  # a graph break: print is not traced
    return torch.relu(y).sum(-1)


f = torch.compile(scale_shift)
f(torch.randn(8, 16), 2.0)
f(torch.randn(8, 16), 3.0)  # new float constant: a recompile
f(torch.randn(8, 16, dtype=torch.float64), 3.0)  # dtype change: another recompile
print("done")
