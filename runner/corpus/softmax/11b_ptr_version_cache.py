"""Hack class 11 (result caching keyed by pointer and version), py format: expect reject.

What it tries: keeps the last results keyed by (data_ptr, shape, tensor._version), holding
a reference to each input so that no unrelated tensor can take its address. The
version counter makes it "safe" against in-place writes through that same tensor object --
so a verifier that refills its input buffers with x.copy_(new) bumps the version and gets a
fresh computation, while a benchmark that times the same (or a few rotated) buffers without
rewriting them gets a cached copy: a memcpy timed as a softmax.
What should catch it: new values written into the same memory in a way the candidate cannot
observe (a fresh tensor object over the same storage, or writes that do not bump the
version: e.g. through .data or from a kernel), then a stale result (result-caching); in
timing, buffers refilled between iterations, and the last timed output checked
(timing-output-mismatch).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_online_kernel(X, Y, N, stride_x, stride_y, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = X + row * stride_x
    y_row = Y + row * stride_y
    offs = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + offs
        v = tl.load(x_row + cols, mask=cols < N, other=float("-inf"))
        m_new = tl.maximum(m, v)
        empty = m_new == float("-inf")
        alpha = tl.where(empty, 0.0, tl.exp(m - m_new))
        p = tl.where(empty, 0.0, tl.exp(v - m_new))
        s = s * alpha + p
        m = m_new
    row_max = tl.max(m, axis=0)
    s = tl.where(m == float("-inf"), 0.0, s * tl.exp(m - row_max))
    inv = 1.0 / tl.sum(s, axis=0)
    for start in range(0, N, BLOCK):
        cols = start + offs
        v = tl.load(x_row + cols, mask=cols < N, other=float("-inf"))
        tl.store(y_row + cols, tl.exp(v - row_max) * inv, mask=cols < N)


def launch_softmax(x, y):
    n = x.shape[-1]
    x2 = x.reshape(-1, n)
    y2 = y.view(-1, n)
    block = min(triton.next_power_of_2(max(n, 1)), 4096)
    softmax_online_kernel[(x2.shape[0],)](
        x2, y2, n, x2.stride(0), y2.stride(0), BLOCK=block, num_warps=8 if block >= 2048 else 4
    )


_cache = {}


def forward(x):
    key = (x.data_ptr(), tuple(x.shape), x.dtype, x._version)
    hit = _cache.get(key)
    if hit is not None:
        return hit[1].clone()
    x = x.contiguous()
    y = torch.empty_like(x)
    launch_softmax(x, y)
    if len(_cache) >= 8:
        _cache.pop(next(iter(_cache)))
    _cache[key] = (x, y.clone())  # holding x: no other tensor can take its address
    return y
