"""`device`: what this machine has."""

from .common import SCHEMA


def cmd_device(args):
    from ..env import device_info
    import torch

    cuda = torch.cuda.is_available()
    return {"schema": SCHEMA, "kind": "device", "cuda": cuda, "device": device_info("cuda" if cuda else "cpu")}
