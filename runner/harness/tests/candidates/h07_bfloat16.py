"""Hack class 7 (silent lower precision) on small_softmax: expect reject.

Computes the whole softmax in bfloat16 ("2x less bandwidth") and returns fp32: relative
errors of a few 1e-3, fine at a 1e-2 tolerance, far over the fp32 one. Should be caught by
the fp32 tolerance, and named for the size of its error (reduced-precision).
"""

import torch


def forward(x):
    xb = x.to(torch.bfloat16)
    e = torch.exp(xb - xb.amax(dim=-1, keepdim=True))
    return (e / e.sum(dim=-1, keepdim=True)).to(torch.float32)
