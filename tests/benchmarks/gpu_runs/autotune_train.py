"""A training step compiled with mode="max-autotune-no-cudagraphs": matmuls autotuned, a backward compile."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(1024, 2048), nn.GELU(), nn.Linear(2048, 1024)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
compiled = torch.compile(model, mode="max-autotune-no-cudagraphs")
for _ in range(3):
    x = torch.randn(512, 1024, device="cuda")
    loss = compiled(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
print(loss.item())
