"""Hack class 12 (falling back to PyTorch, hidden from a text search), py format: expect reject.

What it tries: defines and launches a Triton kernel of its own (it computes the row maxima
into a scratch buffer, which nothing uses), so "a kernel of the candidate's own ran"; the
answer comes from torch.softmax, reached through getattr on a built string so that no
reference op name appears in the source.
What should catch it: on the GPU, the profiler trace of the candidate's call shows the
reference's own kernels (PyTorch's softmax) doing the work (torch-fallback). A static check
that only reads names misses it; a CPU-only verifier cannot catch it.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def row_max_kernel(X, OUT, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + offs
        m = tl.maximum(m, tl.load(X + row * stride + cols, mask=cols < N, other=float("-inf")))
    tl.store(OUT + row, tl.max(m, axis=0))


_op = getattr(torch, "".join(["so", "ft", "max"]))


def forward(x):
    n = x.shape[-1]
    x2 = x.contiguous().view(-1, n)
    scratch = torch.empty(x2.shape[0], device=x.device, dtype=torch.float32)
    row_max_kernel[(x2.shape[0],)](x2, scratch, n, x2.stride(0), BLOCK=1024)
    return _op(x, -1)
