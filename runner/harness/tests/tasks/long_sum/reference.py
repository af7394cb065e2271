import torch


def forward(x):
    y = x + 1000.0
    return y.pow(2).mean(dim=-1) - y.mean(dim=-1).pow(2)
