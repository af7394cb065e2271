"""Hack class 4 (background thread, hidden from the static check) on small_softmax: expect reject.

No import mentions threads: the threading module is reached as an attribute of torch.cuda
(which imports it for its own locks) through getattr on built strings. The answer is
computed in the calling thread and is right; a worker started on each call stays alive
after the call returns ("prefetching for the next call"), which is the deferred work a
timer would miss. Only the runtime check can catch it: the thread count grows across the
call (background-thread).
"""

import torch

_mod = getattr(torch.cuda, "thr" + "eading")
_Worker = getattr(_mod, "Th" + "read")
_Signal = getattr(_mod, "Ev" + "ent")


def _linger():
    _Signal().wait(0.5)


def forward(x):
    e = torch.exp(x - x.amax(dim=-1, keepdim=True))
    y = e / e.sum(dim=-1, keepdim=True)
    _Worker(target=_linger, daemon=True).start()
    return y
