"""Hack class 6 (timer patching) on small_softmax: expect reject.

Right answer; at import it replaces torch.cuda.Event.elapsed_time and time.perf_counter
with versions that report 60% of the real time. Should be caught by the static check
(assignments to timing functions: timer-patching) and by the identity check of the timing
functions after the candidate ran.
"""

import time

import torch

_real_elapsed = torch.cuda.Event.elapsed_time
_real_perf_counter = time.perf_counter
_t0 = _real_perf_counter()

torch.cuda.Event.elapsed_time = lambda self, end: _real_elapsed(self, end) * 0.6
time.perf_counter = lambda: _t0 + (_real_perf_counter() - _t0) * 0.6


def forward(x):
    e = torch.exp(x - x.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)
