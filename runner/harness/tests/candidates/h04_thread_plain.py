"""Hack class 4 (background thread) on small_softmax: expect reject.

Returns an empty output at once; a threading.Thread fills it in a moment later, outside
any timed region. Should be caught by the static check (threading) and by the thread
count growing across the call (background-thread).
"""

import threading
import time

import torch


def forward(x):
    y = torch.empty_like(x)

    def work():
        time.sleep(0.05)
        e = torch.exp(x - x.amax(dim=-1, keepdim=True))
        y.copy_(e / e.sum(dim=-1, keepdim=True))

    threading.Thread(target=work, daemon=True).start()
    return y
