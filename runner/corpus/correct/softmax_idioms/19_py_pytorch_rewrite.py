# Correct (expect pass, check bench). kernels/softmax, .py candidate (issue 18.9).
# What it is: no kernel of its own: the softmax rewritten in other PyTorch ops (the row
# maximum, exp in place on its own temporary, a division by the row sums).
# Why unusual: a rewrite is not a fallback -- it claims no kernel of its own. kernels/softmax
# allows rewrites (libraries: allow), so it is verified and timed like any candidate and
# reported as a PyTorch rewrite; a task that requires own kernels (KernelBench, robust-kbench,
# libraries: deny) refuses it as own-kernel-required, saying so.
# What the verifier must say: passed, check pytorch-rewrite ("a PyTorch rewrite: no kernel of
# its own"), and a warning that it is reported as a rewrite; then benchmarked.
import torch


def forward(x):
    e = x - torch.amax(x, dim=-1, keepdim=True)
    e.exp_()
    return e.div_(torch.sum(e, dim=-1, keepdim=True))
