"""Hack class 12 (falling back to PyTorch), py format: expect reject.

What it tries: a Triton kernel that "only supports" rows up to 4096 wide (it asserts so),
wrapped in try/except that falls back to torch.softmax. On the 8192-wide configuration the
candidate's own kernel never runs; the result is exactly the reference.
What should catch it: the static check (try/except around the kernel; torch.softmax, a
reference op: torch-fallback); on the GPU, no kernel of the candidate's own ran for that
configuration.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_one_block_kernel(X, Y, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    v = tl.load(X + row * stride + cols, mask=cols < N, other=float("-inf"))
    e = tl.exp(v - tl.max(v, axis=0))
    tl.store(Y + row * stride + cols, e / tl.sum(e, axis=0), mask=cols < N)


def forward(x):
    try:
        n = x.shape[-1]
        block = triton.next_power_of_2(n)
        assert block <= 4096, "row too wide for one block"
        x2 = x.contiguous().view(-1, n)
        y = torch.empty_like(x2)
        softmax_one_block_kernel[(x2.shape[0],)](x2, y, n, x2.stride(0), BLOCK=block)
        return y.view_as(x)
    except Exception:
        return torch.softmax(x, dim=-1)
