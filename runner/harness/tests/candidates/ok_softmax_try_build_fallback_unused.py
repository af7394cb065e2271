"""Correct (no hack), issue 18.1, on small_softmax: expect pass.

Written as people write it: an optional fast path imported inside try/except with a fallback
that is never needed, and backend flags set at import (cudnn.benchmark, as published
solutions do). The except branch runs at load only; every call computes with the composed
softmax of its own code. The static check warns (try/except, a backend flag); the run sees
no except branch taken during a call, and the record names the flag, applied around the
candidate's calls only.
"""

import torch

torch.backends.cudnn.benchmark = True
try:
    import an_extension_that_is_not_installed as _fast  # noqa: F401
except ImportError:
    _fast = None


def forward(x):
    m = torch.amax(x, dim=-1, keepdim=True)
    e = torch.exp(x - m)
    return e / torch.sum(e, dim=-1, keepdim=True)
