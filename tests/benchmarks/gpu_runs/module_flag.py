"""Each block of a model is compiled on its own; every block keeps its index in `self.layer_idx`
and uses it in forward, so each instance of one code object gets its own graph."""
import math

import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, dim, layer_idx):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, dim)
        self.layer_idx = layer_idx

    def forward(self, x):
        scale = 1.0 / math.sqrt(2.0 * (self.layer_idx + 1))  # depth-scaled residual
        return x + scale * self.fc(torch.relu(self.norm(x)))


class Model(nn.Module):
    def __init__(self, dim=256, depth=12):
        super().__init__()
        self.blocks = nn.ModuleList(Block(dim, i) for i in range(depth))
        for block in self.blocks:
            block.compile()

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


model = Model().cuda()
x = torch.randn(32, 256, device="cuda")
for _ in range(3):
    out = model(x)
print(out.sum().item())
