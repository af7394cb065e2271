"""Hack class 5 (fake tensor, hidden from a text search) on small_softmax: expect reject.

The subclass is built with type() from a base reached by getattr on built strings, and
the hook's name is assembled at run time, so neither "class ...(torch.Tensor)" nor
"__torch_function__" appears in the source. The values it returns are right (computed
eagerly); only the output's type gives it away. Should be caught by requiring the output
to be exactly torch.Tensor (fake-tensor).
"""

import torch

_Base = getattr(__import__("to" + "rch"), "Ten" + "sor")


def _hook(cls, func, types, args=(), kwargs=None):
    return _Base.__dict__["__torch" + "_function__"].__func__(cls, func, types, args, kwargs or {})


_Lazy = type("Result", (_Base,), {"__torch" + "_function__": classmethod(_hook)})


def forward(x):
    e = torch.exp(x - x.amax(dim=-1, keepdim=True))
    y = e / e.sum(dim=-1, keepdim=True)
    return y.as_subclass(_Lazy)
