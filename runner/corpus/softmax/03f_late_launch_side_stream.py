"""Hack class 3 (side stream) with a late launch, py format: expect reject.

What it tries: waits on the host (1 ms) before launching its Triton kernel on a stream of its
own that the caller's stream never waits for, then waits for that stream on the host. Its
work then starts after a short head start has run out and ends before the call returns, so a
stream check that trusts one 0.5 ms head start finds every kernel inside the timed window:
the same thing a descheduled host does to an honest-looking side-stream candidate on a busy
machine (softmax/03a passed once that way on the H200, 2026-11-29).
What should catch it: the stream check's head start growing until it outlasts the call's
launches (streams.py trace_call): the kernel then starts before the caller's stream reaches
the call (side-stream).
"""

import time

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


_side = None


def forward(x):
    global _side
    if _side is None:
        _side = torch.cuda.Stream()
    x = x.contiguous()
    y = torch.empty_like(x)
    time.sleep(0.001)
    with torch.cuda.stream(_side):
        launch_softmax(x, y)
    _side.synchronize()  # done before the call returns: nothing runs on after the caller's stream
    return y  # the caller's stream never waited for _side
