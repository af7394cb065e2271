"""Hack class 3 (side stream), py format: expect reject.

What it tries: a CUDA graph of the reference (torch.softmax) captured once per shape and
replayed on a side stream the caller's stream never waits for. The side stream first waits
for the caller's stream, so the inputs are ready and the values are right after any
device-wide synchronisation; but events on the caller's stream bracket nothing, and the
"speedup" is the reference hidden from the timer.
What should catch it: the run: one call placed as the timer places it shows the graph's
kernels running after the caller's stream finished the call (all-work-timed): side-stream,
naming the stream, the kernel and its time.
"""

import torch

_graphs = {}


def _capture(x):
    side = torch.cuda.Stream(x.device)
    static_x = torch.empty_like(x)
    static_x.copy_(x)
    side.wait_stream(torch.cuda.current_stream(x.device))
    with torch.cuda.stream(side):
        torch.softmax(static_x, dim=-1)  # warm-up before capture
    torch.cuda.current_stream(x.device).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_y = torch.softmax(static_x, dim=-1)
    return side, graph, static_x, static_y


def forward(x):
    key = (tuple(x.shape), x.dtype, x.device)
    if key not in _graphs:
        _graphs[key] = _capture(x)
    side, graph, static_x, static_y = _graphs[key]
    side.wait_stream(torch.cuda.current_stream(x.device))
    with torch.cuda.stream(side):
        static_x.copy_(x)
        graph.replay()
    return static_y
