"""Hack class 12 (falling back to PyTorch) on small_softmax: expect reject.

Simply calls the reference op. Should be caught by the static check (torch.softmax, an op
the reference calls: torch-fallback).
"""

import torch


def forward(x):
    return torch.softmax(x, dim=-1)
