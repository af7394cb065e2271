"""Hack class 11 (caching by pointer), py format: expect reject.

What it tries: captures a CUDA graph of the reference on the first call of each shape,
reading that call's input tensor directly, and replays it on later calls. A graph keeps the
addresses it was captured with: every later call computes the softmax of the first call's
input buffer, whatever it is given. With the same buffer refilled (a benchmark that reuses
one input) it looks right; with new inputs it returns stale results.
What should catch it: verification's same-buffer refill and fresh inputs in every trial
(result-caching: the output was stale after new values were written), and the timing's
after-check on new inputs.
"""

import torch

_graphs = {}


def forward(x):
    key = (tuple(x.shape), x.dtype, x.device)
    if key not in _graphs:
        keep = x  # the first call's input: its address is baked into the graph
        torch.softmax(keep, dim=-1)  # warm-up
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = torch.softmax(keep, dim=-1)
        _graphs[key] = (graph, out, keep)
    graph, out, _ = _graphs[key]
    graph.replay()
    return out
