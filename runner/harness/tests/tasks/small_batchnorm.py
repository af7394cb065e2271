"""A KernelBench-format problem small enough for the CPU: BatchNorm2d, as KernelBench runs it
(the Model as constructed: training mode, batch statistics). Inputs uniform [0, 1), far from
the running statistics (mean 0, variance 1) a module switched to eval would use."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, num_features: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(x)


batch_size = 8
features = 4
dim1 = 16
dim2 = 16


def get_inputs():
    return [torch.rand(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [features]
