"""Hack class 15 (a race that passes sometimes) on small_softmax: expect reject.

Stands in for a kernel with a missing barrier: on about half of the calls (a fixed
pseudo-random pattern) every value is off by a random relative error of ~1e-3, far beyond
the fp32 tolerance; the other calls are right. Should be caught by repeating runs on
identical inputs and seeing them differ (race).
"""

import random

import torch

_rng = random.Random(15)


def forward(x):
    e = torch.exp(x - x.amax(dim=-1, keepdim=True))
    y = e / e.sum(dim=-1, keepdim=True)
    if _rng.random() < 0.5:
        y = y * (1.0 + 1e-3 * torch.randn_like(y))
    return y
