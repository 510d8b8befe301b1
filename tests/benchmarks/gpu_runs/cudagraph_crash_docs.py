"""The example of torch's CUDA graph trees docs: an output read after a later run overwrote it."""
import torch


@torch.compile(mode="reduce-overhead")
def my_model(x):
    y = torch.matmul(x, x)
    return y


x = torch.randn(10, 10, device="cuda")
y1 = my_model(x)
y2 = my_model(x)
print(y1)
