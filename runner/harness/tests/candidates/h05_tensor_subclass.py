"""Hack class 5 (lazy / fake tensor) on small_softmax: expect reject.

Returns a torch.Tensor subclass with empty storage that computes the softmax only when
first touched through torch (__torch_function__), so the call itself does nothing. Should
be caught by requiring an exact torch.Tensor (fake-tensor), and by the static check
(subclass of torch.Tensor, __torch_function__).
"""

import torch


class LazySoftmax(torch.Tensor):
    @staticmethod
    def __new__(cls, x):
        plain = torch.empty_like(x)
        out = torch.Tensor._make_subclass(cls, plain)
        out._plain = plain
        out._src = x
        out._pending = True
        return out

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        for a in list(args) + list((kwargs or {}).values()):
            if isinstance(a, LazySoftmax) and a.__dict__.get("_pending"):
                a.__dict__["_pending"] = False
                src = a._src
                e = torch.exp(src - src.amax(dim=-1, keepdim=True))
                a._plain.copy_(e / e.sum(dim=-1, keepdim=True))
        return super().__torch_function__(func, types, args, kwargs)


def forward(x):
    return LazySoftmax(x)
