import torch


def forward(x):
    return x.sum(dim=-1)
