"""Hack class 1 (reuse of the reference's result), py format: expect reject.

What it tries: computes nothing. It walks gc.get_objects() for a live CUDA tensor of the
input's shape and dtype that looks like a softmax (non-negative, rows summing to 1) -- the
reference output the verifier keeps for the comparison -- and returns a copy of it. With
no such tensor alive it returns uninitialised memory.
What should catch it: running the candidate before the reference (nothing to find then),
and fresh inputs per trial so an older reference result is wrong for the new input
(output-memory-reuse; mismatch or NaN where the harness reports the symptom instead).
"""

import gc

import torch


def _looks_like_softmax(t):
    if t.numel() == 0 or not bool((t >= 0).all()):
        return False
    rows = t.reshape(-1, t.shape[-1]).sum(-1)
    return bool(((rows - 1).abs() < 1e-3).all())


def forward(x):
    found = None
    for obj in gc.get_objects():
        try:
            if (
                isinstance(obj, torch.Tensor)
                and obj is not x
                and obj.device == x.device
                and obj.dtype == x.dtype
                and obj.shape == x.shape
                and obj.data_ptr() != x.data_ptr()
                and _looks_like_softmax(obj)
            ):
                found = obj
        except Exception:  # objects half torn down, tensors of other kinds
            continue
    if found is not None:
        return found.clone()
    return torch.empty_like(x)
