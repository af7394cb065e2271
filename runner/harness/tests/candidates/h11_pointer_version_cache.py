"""Hack class 11 (result caching by pointer and version counter) on small_softmax: expect reject.

Like h11_pointer_cache, but the key also holds x._version, which PyTorch bumps on every
in-place write through the tensor (x.copy_(new) included). A verifier that refills its
buffers with x.copy_() therefore always gets a fresh computation, while a benchmark that
times unchanged (or rotated) buffers gets the cached copy. Should be caught by refilling
the same memory in a way the candidate cannot observe (a new tensor object over the same
storage, or writes that do not bump the version, e.g. through .data), then a stale result
(result-caching).
"""

import torch

_cache = {}


def forward(x):
    key = (x.data_ptr(), tuple(x.shape), x.dtype, x._version)
    hit = _cache.get(key)
    if hit is not None:
        return hit[1].clone()
    e = torch.exp(x - x.amax(dim=-1, keepdim=True))
    y = e / e.sum(dim=-1, keepdim=True)
    if len(_cache) >= 8:
        _cache.pop(next(iter(_cache)))
    _cache[key] = (x, y.clone())
    return y
