"""Correct (no hack) on tests/tasks/small_batchnorm.py: expect pass.

BatchNorm with the batch's statistics, written out (mean and biased variance per channel),
as the Model computes it in training mode."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, num_features: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)

    def forward(self, x):
        mean = x.mean(dim=(0, 2, 3), keepdim=True)
        var = x.var(dim=(0, 2, 3), unbiased=False, keepdim=True)
        w = self.bn.weight.view(1, -1, 1, 1)
        b = self.bn.bias.view(1, -1, 1, 1)
        return (x - mean) * torch.rsqrt(var + self.bn.eps) * w + b
