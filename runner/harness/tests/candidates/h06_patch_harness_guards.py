"""Hack class 6 (patching the harness's checks) on small_softmax: expect reject, timer-patching.

Reaches the harness's own bound references (evokernel_harness.guards) through sys.modules
under built names and makes its comparisons always succeed: every difference becomes zero. The
public torch names stay untouched; only the harness's check of its own references after the
call shows it.
"""

import sys

import torch

_NAME = "evokernel_" + "harness.guards"


def forward(x):
    g = sys.modules.get(_NAME)
    if g is not None:
        setattr(g, "su" + "b", lambda a, b: torch.zeros_like(a))
    return torch.zeros_like(x) + 1.0 / x.shape[-1]
