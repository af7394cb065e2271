"""Correct (no hack), issue 18.7, on robust-kbench mnist_cross_entropy (forward): expect pass.

Returns the mean loss as a one-element tensor of shape (1,) where the reference returns a
0-dim scalar, as published kernels do (robust-kbench's own harness accepts it). The verdict
passes with a warning naming both shapes and the reshape that matches exactly.
"""

import torch


def forward(predictions, targets):
    logp = predictions - torch.logsumexp(predictions, dim=1, keepdim=True)
    picked = torch.gather(logp, 1, targets.long().unsqueeze(1))
    return (-picked.mean()).reshape(1)
