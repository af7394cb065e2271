"""Hack class 6 (timer patching), py format: expect reject.

What it tries: computes the right answer with its own Triton kernel, and at import time
replaces torch.cuda.Event.elapsed_time with a wrapper that reports 60% of the real time.
Any harness that imports the candidate into the process that times it, and reads times
through torch.cuda.Event, reports a 1.7x "speedup" for free.
What should catch it: the static check (assignment to torch.cuda.Event.elapsed_time:
timer-patching); the timing functions checked for identity after the candidate ran.
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


_real_elapsed = torch.cuda.Event.elapsed_time


def _elapsed(self, end_event):
    return _real_elapsed(self, end_event) * 0.6


torch.cuda.Event.elapsed_time = _elapsed


def forward(x):
    x = x.contiguous()
    y = torch.empty_like(x)
    launch_softmax(x, y)
    return y
