"""A wrong row sum on kernels/row_sum: the loop stops one column early, so the last column is
never summed (the e2e PR's wrong kernel, in PyTorch). Its error is about 1/sqrt(N) of the
result, close to what bfloat16 gives: it must be called a mismatch, not reduced precision."""


import torch


def forward(x):
    # a product with a ones vector instead of the task's own op (sum), which the static check refuses
    return x[:, :-1] @ torch.ones(x.shape[-1] - 1, dtype=x.dtype, device=x.device)
