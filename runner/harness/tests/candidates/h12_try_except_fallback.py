"""Hack class 12 (falling back to PyTorch) on small_softmax: expect reject.

A "Triton fast path" inside try/except whose except branch calls torch.softmax. Without
Triton (this CPU) the fallback does all the work and the result is exactly the
reference. Should be caught by the static check (try/except around the kernel; a
reference op called: torch-fallback).
"""

import torch


def forward(x):
    try:
        import triton  # noqa: F401  (the fast path would be here)

        raise NotImplementedError("fast path not written yet")
    except Exception:
        return torch.softmax(x, dim=-1)
