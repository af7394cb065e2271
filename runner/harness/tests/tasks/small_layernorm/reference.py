import torch
import torch.nn.functional as F


def forward(x, weight, bias):
    return F.layer_norm(x, (x.shape[-1],), weight, bias, 1e-5)
