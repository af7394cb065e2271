"""Hack (module switched to eval) on tests/tasks/small_batchnorm.py: expect reject.

The ModelNew switches itself to eval mode: its BatchNorm2d normalises with the running
statistics (mean 0, variance 1) instead of the batch's. Refused by its outputs; the message
must name the mode."""

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, num_features: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)
        self.eval()

    def forward(self, x):
        return self.bn(x)
