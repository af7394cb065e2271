"""Stale weights (issue 33.6) on kernelbench/76_Gemm_Add_ReLU: expect reject (result-caching).

Pre-transposes the Linear's weight once, in __init__, into a plain tensor, as PyTorch
rewrites and fallbacks do: right on every trial (the harness builds a ModelNew per case),
but the output ignores new values written into the weight afterwards. The record must say
so: the new activations were followed, the new weights ignored, a copy made at construction.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))
        self.weight_t = self.gemm.weight.detach().t().contiguous()  # a copy, made once

    def forward(self, x):
        return torch.relu(torch.addmm(self.bias, x, self.weight_t))
