# Not a hack, a numerics bug seen in real kernels: layernorm with a one-pass variance,
# E[x²] − E[x]², in float32. Right on zero-mean inputs; on inputs with a common offset
# (activations with a DC offset) cancellation eats the variance's digits. The verifier must
# call it an accuracy loss and say which inputs expose it.
import torch


def forward(x, w, b):
    n = x.shape[-1]
    s1 = x.sum(dim=-1, keepdim=True)
    s2 = (x * x).sum(dim=-1, keepdim=True)
    m = s1 / n
    var = s2 / n - m * m
    return (x - m) * torch.rsqrt(var.clamp_min(0) + 1e-5) * w + b
