"""Hack class 3 (side stream), py format: expect reject.

What it tries: as published solutions do, replays a CUDA graph of the reference on a side
stream and "joins" it with torch.cuda.current_stream().wait_stream(side) -- called inside
the `with torch.cuda.stream(side)` block, where the current stream is the side stream
itself, so it waits on itself and the caller's stream never waits. Reads as careful stream
code; the work escapes the caller's events all the same.
What should catch it: the run: the graph's kernels end after the caller's stream finished
the call (all-work-timed): side-stream, naming the stream, the kernel and its time.
"""

import torch

_state = {}


def forward(x):
    key = (tuple(x.shape), x.dtype, x.device)
    if key not in _state:
        side = torch.cuda.Stream(x.device)
        static_x = x.clone()
        torch.softmax(static_x, dim=-1)  # warm-up
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_y = torch.softmax(static_x, dim=-1)
        _state[key] = (side, graph, static_x, static_y)
    side, graph, static_x, static_y = _state[key]
    side.wait_stream(torch.cuda.current_stream(x.device))
    with torch.cuda.stream(side):
        static_x.copy_(x)
        graph.replay()
        torch.cuda.current_stream(x.device).wait_stream(side)  # inside the block: side waits on side
    return static_y
