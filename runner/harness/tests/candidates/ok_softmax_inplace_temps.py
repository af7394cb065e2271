"""Correct (expect pass) on small_softmax: in-place ops, but only on its own temporaries.

Guards against a verifier that flags every in-place op as input mutation: the input is
read, never written.
"""


def forward(x):
    e = x - x.amax(dim=-1, keepdim=True)  # a new tensor: safe to modify
    e.exp_()
    e.div_(e.sum(dim=-1, keepdim=True))
    return e
