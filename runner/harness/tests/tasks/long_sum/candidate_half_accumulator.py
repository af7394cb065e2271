# The same formula accumulated in bfloat16: wrong against the float32 reference and the truth.
import torch


def forward(x):
    y = (x + 1000.0).to(torch.bfloat16)
    n = y.shape[-1]
    return ((y * y).sum(dim=-1) / n - (y.sum(dim=-1) / n) ** 2).to(torch.float32)
