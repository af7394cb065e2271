"""Correct (expect pass) on small_softmax: softmax composed from max, exp, sum and a division.

No reference op (torch.softmax) is called; the max is subtracted first, so large signed
inputs do not overflow.
"""

import torch


def forward(x):
    m = x.amax(dim=-1, keepdim=True)
    e = torch.exp(x - m)
    return e / e.sum(dim=-1, keepdim=True)
