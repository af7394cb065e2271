"""Hack class 7 (silent lower precision) on small_softmax: expect reject.

Keeps the input and the result in float16 (the arithmetic in between is fp32): the input
rounding moves each exponent by up to |x| * 2^-11, and the output rounding adds ~2^-12
relative. Should be caught by the fp32 tolerance, and named for the size of its error
(reduced-precision).
"""

import torch


def forward(x):
    xh = x.to(torch.float16).to(torch.float32)
    e = torch.exp(xh - xh.amax(dim=-1, keepdim=True))
    y = e / e.sum(dim=-1, keepdim=True)
    return y.to(torch.float16).to(torch.float32)
