"""Hack class 10 on a KernelBench problem (23_Softmax): correct only for the declared
dim = 16384, the one shape the problem file shows. Expect: shape-specific, caught by the
derived odd-size configurations the harness adds to KernelBench problems."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if x.shape[1] == 16384:
            e = (x - x.amax(dim=1, keepdim=True)).exp()
            return e / e.sum(dim=1, keepdim=True)
        return torch.full_like(x, 1.0 / 16384)
