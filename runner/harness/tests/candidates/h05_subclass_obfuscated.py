"""Hack class 5 (fake tensor, hidden from the static check) on small_softmax: expect reject.

The subclass is built with type() from a base reached by getattr on a built string, and
the hook and constructor names are assembled at run time, so no "class ...(torch.Tensor)",
"__torch_function__", "_make_subclass" or "as_subclass" appears in the source. The values
it returns are right (computed eagerly); only the output's type gives it away. Should be
caught by requiring the output to be exactly torch.Tensor (fake-tensor).
"""

import torch

_Base = getattr(torch, "Ten" + "sor")
_hook_name = "__torch" + "_function__"
_default = getattr(_Base, _hook_name).__func__


def _hook(cls, func, types, args=(), kwargs=None):
    return _default(cls, func, types, args, kwargs or {})


_Result = type("Result", (_Base,), {_hook_name: classmethod(_hook)})
_wrap = getattr(_Base, "_make" + "_subclass")


def forward(x):
    e = torch.exp(x - x.amax(dim=-1, keepdim=True))
    y = e / e.sum(dim=-1, keepdim=True)
    return _wrap(_Result, y)
