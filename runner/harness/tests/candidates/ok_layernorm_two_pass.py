# A correct layernorm with a two-pass variance: stable on offset inputs.
import torch


def forward(x, w, b):
    n = x.shape[-1]
    m = x.sum(dim=-1, keepdim=True) / n
    d = x - m
    var = (d * d).sum(dim=-1, keepdim=True) / n
    return d * torch.rsqrt(var + 1e-5) * w + b
