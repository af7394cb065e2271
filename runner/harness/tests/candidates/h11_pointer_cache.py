"""Hack class 11 (result caching by pointer) on small_softmax: expect reject.

Keeps, per input address and shape, the result it computed (holding a reference to the
input, so no unrelated tensor can take that address while the entry lives). When the same
buffer comes back it returns the stored result without looking at the values. Should be
caught by writing new values into the same buffer and checking again (result-caching).
"""

import torch

_cache = {}


def forward(x):
    key = (x.data_ptr(), tuple(x.shape), x.dtype)
    hit = _cache.get(key)
    if hit is not None:
        return hit[1].clone()
    e = torch.exp(x - x.amax(dim=-1, keepdim=True))
    y = e / e.sum(dim=-1, keepdim=True)
    if len(_cache) >= 8:
        _cache.pop(next(iter(_cache)))
    _cache[key] = (x, y.clone())
    return y
