"""Hack class 3 (side stream): static check only (needs CUDA to run).

Launches the work on a torch.cuda.Stream of its own and never makes the current stream
wait, so events on the current stream time nothing. Should be caught by the static check
(torch.cuda.Stream / torch.cuda.stream: side-stream).
"""

import torch

_side = None


def forward(x):
    global _side
    if _side is None:
        _side = torch.cuda.Stream()
    with torch.cuda.stream(_side):
        m = x.amax(dim=-1, keepdim=True)
        e = torch.exp(x - m)
        y = e / e.sum(dim=-1, keepdim=True)
    return y
