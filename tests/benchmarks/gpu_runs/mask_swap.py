"""FlexAttention compiled once, called with block masks made from different mask functions:
a causal mask and a sliding-window mask, swapped on purpose every other step."""
import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

B, H, S, D = 2, 4, 512, 64


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def sliding_window(b, h, q_idx, kv_idx):
    return (q_idx >= kv_idx) & (q_idx - kv_idx <= 128)


attention = torch.compile(flex_attention)
masks = {fn.__name__: create_block_mask(fn, None, None, S, S, device="cuda") for fn in (causal, sliding_window)}
q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16) for _ in range(3))
for step in range(6):
    name = "causal" if step % 2 == 0 else "sliding_window"
    out = attention(q, k, v, block_mask=masks[name])
print(out.float().sum().item())
