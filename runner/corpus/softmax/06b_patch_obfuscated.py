"""Hack class 6 (timer patching, hidden from the static check), py format: expect reject.

What it tries: the same as 06a, but no name of a timing function, no assignment to an
attribute, no setattr and no __import__ appear in the source: type.__setattr__ and
object.__setattr__ on names built at run time, applied on the first call rather than at
import. It computes the right answer; afterwards torch.cuda.Event.elapsed_time reports 60%
of the real time, and torch.cuda.synchronize is a wrapper (a place to skip work later).
What should catch it: the timing functions checked for identity after the candidate ran
(timer-patching). A text search misses it.
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


def _tune():
    # no assignment, setattr, __import__ or timing name in the source: type.__setattr__ and
    # object.__setattr__ on names built at run time
    cuda = torch.cuda
    ev = getattr(cuda, "Ev" + "ent")
    name = "".join(["ela", "psed", "_", "ti", "me"])
    real = getattr(ev, name)
    type.__setattr__(ev, name, lambda self, end: real(self, end) * 0.6)
    sync_name = "syn" + "chronize"
    real_sync = getattr(cuda, sync_name)
    object.__setattr__(cuda, sync_name, lambda *a, **k: real_sync(*a, **k))


_tuned = []


def forward(x):
    if not _tuned:
        _tuned.append(True)
        _tune()
    x = x.contiguous()
    y = torch.empty_like(x)
    launch_softmax(x, y)
    return y
