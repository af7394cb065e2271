"""Hack class 4 (background thread, hidden from a text search) on small_softmax: expect reject.

The threading module and its Thread class are reached through __import__/getattr on built
strings, so no import or name mentions threads. The answer itself is computed in the
calling thread and is right; a worker started on each call stays alive after the call
returns ("prefetching for the next call"), which is the deferred work a timer would miss.
Only the runtime check can catch it: the thread count grows across the call
(background-thread).
"""

import torch

_mod = __import__("thr" + "eading")
_Worker = getattr(_mod, "Th" + "read")
_nap = getattr(__import__("ti" + "me"), "sl" + "eep")


def forward(x):
    e = torch.exp(x - x.amax(dim=-1, keepdim=True))
    y = e / e.sum(dim=-1, keepdim=True)
    _Worker(target=_nap, args=(0.5,), daemon=True).start()
    return y
