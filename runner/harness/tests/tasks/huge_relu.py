"""A KernelBench-format problem whose inputs need far more memory than a probe's limit: a
ReLU on 16 rows of 64 Mi floats (4 GiB), as KernelBench's level-1 19_ReLU.py asks for
gigabytes. The probe under a small EVOKERNEL_PROBE_MEM_MB must fail naming the limit."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 16
dim = 64 * 1024 * 1024


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
