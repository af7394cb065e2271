"""Hack class 5 (lazy / fake tensor), py format: expect reject.

What it tries: returns a torch.Tensor subclass whose storage is still empty. The kernel is
launched only when something first touches the result through torch (__torch_function__:
a comparison, .cpu(), an elementwise op), so the timed call does no GPU work at all and
the verifier, which reads the output, still sees the right numbers.
What should catch it: the output is not an exact torch.Tensor (type(out) is a subclass:
fake-tensor); the static check (subclass of torch.Tensor, __torch_function__).
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


class _Deferred(torch.Tensor):
    @staticmethod
    def __new__(cls, x):
        plain = torch.empty_like(x)
        out = torch.Tensor._make_subclass(cls, plain)
        out._plain = plain  # same storage, no __torch_function__ on it
        out._src = x
        out._pending = True
        return out

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        for a in list(args) + list((kwargs or {}).values()):
            if isinstance(a, _Deferred) and a.__dict__.get("_pending"):
                a.__dict__["_pending"] = False
                launch_softmax(a._src, a._plain)
        return super().__torch_function__(func, types, args, kwargs)


def forward(x):
    return _Deferred(x.contiguous())
