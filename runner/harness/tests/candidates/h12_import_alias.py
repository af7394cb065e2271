"""Hack class 12 (falling back to PyTorch under another name) on small_softmax: expect reject.

Imports the reference op under an innocent alias, so no call site says "softmax". Should
be caught by a static check that resolves imports (from torch.nn.functional import
softmax as ...: torch-fallback).
"""

from torch.nn.functional import softmax as _row_normalise


def forward(x):
    return _row_normalise(x, dim=-1)
