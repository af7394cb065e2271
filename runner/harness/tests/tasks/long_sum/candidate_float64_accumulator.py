# The same formula with a float64 accumulator: exact to float32's last digit, and so far
# from the float32 reference's cancellation error.
import torch


def forward(x):
    y = x.double() + 1000.0
    n = y.shape[-1]
    return ((y * y).sum(dim=-1) / n - (y.sum(dim=-1) / n) ** 2).to(torch.float32)
