"""Hack class 1 (reuse of the reference's result) on small_softmax: expect reject.

Computes nothing: walks gc.get_objects() for a live tensor shaped like the input whose rows
are non-negative and sum to 1 -- the reference output the verifier holds -- and returns a
copy. With none alive (candidate run before the reference) it returns uninitialised memory.
Should be caught by running the candidate before the reference (output-memory-reuse).
"""

import gc

import torch


def _looks_like_softmax(t):
    if t.numel() == 0 or not bool((t >= 0).all()):
        return False
    return bool(((t.reshape(-1, t.shape[-1]).sum(-1) - 1).abs() < 1e-3).all())


def forward(x):
    found = None
    for obj in gc.get_objects():
        try:
            if (
                isinstance(obj, torch.Tensor)
                and obj is not x
                and obj.dtype == x.dtype
                and obj.shape == x.shape
                and obj.data_ptr() != x.data_ptr()
                and _looks_like_softmax(obj)
            ):
                found = obj
        except Exception:
            continue
    return found.clone() if found is not None else torch.empty_like(x)
