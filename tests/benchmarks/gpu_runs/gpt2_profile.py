"""A compiled GPT-2 (124M layout, 6 layers to keep it short) trained with AdamW, profiled with
torch.profiler: export_chrome_trace (prof.json.gz) and tensorboard_trace_handler (tb/)."""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.heads = heads

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = Attention(d, heads)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab=50304, ctx=256, d=768, heads=12, layers=6):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.wte.weight

    def forward(self, idx, targets):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def main(out):
    torch.manual_seed(0)
    model = torch.compile(GPT().cuda())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)

    def step():
        idx = torch.randint(0, 50304, (8, 256), device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(idx, torch.roll(idx, -1, 1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    for _ in range(3):
        step()  # compile and warm up
    torch.cuda.synchronize()
    acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    with profile(activities=acts) as prof:
        for _ in range(4):
            step()
        torch.cuda.synchronize()
    prof.export_chrome_trace(os.path.join(out, "prof.json.gz"))
    sched = schedule(wait=1, warmup=1, active=2, repeat=1)
    with profile(activities=acts, schedule=sched, on_trace_ready=tensorboard_trace_handler(os.path.join(out, "tb"), use_gzip=True)) as p:
        for _ in range(5):
            step()
            p.step()
    torch.cuda.synchronize()
    print("loss", step().item())


main(sys.argv[1])
