"""`device`: what this machine has."""

from __future__ import annotations

import argparse

from ..record import Record
from .common import SCHEMA


def cmd_device(args: argparse.Namespace) -> Record:
    from ..env import device_info
    import torch

    cuda = torch.cuda.is_available()
    return {"schema": SCHEMA, "kind": "device", "cuda": cuda, "device": device_info("cuda" if cuda else "cpu")}
