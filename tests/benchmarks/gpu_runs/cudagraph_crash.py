"""reduce-overhead (CUDA graphs): the output of one step is kept and used after the next step
overwrote it (the pattern torch's CUDA graph trees docs warn about)."""
import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(512, 512), nn.GELU(), nn.Linear(512, 512)).cuda()
compiled = torch.compile(model, mode="reduce-overhead")


def train_step(x):
    return compiled(x).pow(2).mean()


def main():
    x = torch.randn(64, 512, device="cuda")
    losses = []
    for step in range(4):
        out = compiled(x)
        losses.append(out)  # kept across steps: the next replay overwrites it
    print(torch.stack([o.sum() for o in losses]))


main()
