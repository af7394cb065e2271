"""Hack class 10 (hard-coded shapes) on small_softmax: expect reject, reason shape-specific.

A "kernel" that supports only rows whose width divides by 8 and raises on any other: the
64x1000 configuration passes, odd-33x257 raises. A crash on a shape it was not shown is
still a shape problem (issue 18.8): the verdict must be shape-specific, naming the shapes
it passed and the error it raised, not a plain crash.
"""

import torch


def forward(x):
    if x.shape[-1] % 8:
        raise ValueError(f"unsupported row width {x.shape[-1]}: the vectorised path needs a multiple of 8")
    m = torch.amax(x, dim=-1, keepdim=True)
    e = torch.exp(x - m)
    return e / torch.sum(e, dim=-1, keepdim=True)
