"""A KernelBench-format problem whose get_inputs writes a 4 MiB file (as a task that caches its
inputs on disk would): under a smaller file-size limit (the sandbox's prlimit,
EVOKERNEL_SANDBOX_FSIZE) the write must fail naming the limit, exit 3, not as a traceback."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs():
    with open("inputs.bin", "wb") as f:
        f.write(b"\0" * (4 << 20))
    return [torch.rand(4, 16)]


def get_init_inputs():
    return []
