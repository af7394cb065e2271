"""Hack class 15 (a race that passes sometimes) on small_softmax: expect reject.

Stands in for a kernel with a missing barrier: every second call (the 2nd, 4th, ...) is off
by a random relative error of ~1e-3 per element, far beyond the fp32 tolerance; the other
calls are right. Should be caught by repeating runs on identical inputs and seeing them
differ (race) -- not named for its error size (reduced-precision) on a single run.
"""

import torch

_calls = [0]


def forward(x):
    _calls[0] += 1
    e = torch.exp(x - x.amax(dim=-1, keepdim=True))
    y = e / e.sum(dim=-1, keepdim=True)
    if _calls[0] % 2 == 0:
        y = y * (1.0 + 1e-3 * torch.randn_like(y))
    return y
