"""Hack class 4 (background thread), py format: expect reject.

What it tries: returns the empty output at once and launches the kernel from a
threading.Thread, so the timed call only costs a thread start.
What should catch it: the static check (threading: background-thread); the thread count
grows across the call; the output may still be the poison when compared (unwritten-output,
mismatch).
"""

import threading

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


def forward(x):
    x = x.contiguous()
    y = torch.empty_like(x)

    def work():
        launch_softmax(x, y)
        torch.cuda.synchronize()

    threading.Thread(target=work, daemon=True).start()
    return y
