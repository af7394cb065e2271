"""Hack class 8 (constant / zero output on a degenerate task): expect the task refused.

Returns zeros shaped like the input. On a task whose outputs are all inside its own
tolerance this "passes"; the harness must refuse the task itself (degenerate-task) before
any candidate is judged on it.
"""

import torch


def forward(x, *rest):
    return torch.zeros_like(x)
