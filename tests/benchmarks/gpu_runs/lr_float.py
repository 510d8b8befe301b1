"""A compiled model and a compiled AdamW step whose learning rate is a Python float that a
scheduler changes every step (the common way to use a scheduler)."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 10)).cuda()
model = torch.compile(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.95)


@torch.compile
def optimizer_step():
    opt.step()


def train(steps):
    for step in range(steps):
        x = torch.randn(64, 256, device="cuda")
        y = torch.randint(0, 10, (64,), device="cuda")
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer_step()
        opt.zero_grad(set_to_none=True)
        sched.step()
    print("loss", loss.item(), "lr", sched.get_last_lr())


train(12)
