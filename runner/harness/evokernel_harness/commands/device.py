"""`device`: what this machine has."""

from __future__ import annotations

from ..command_request import DeviceRequest
from ..record import DeviceRecord
from .common import SCHEMA


def cmd_device(request: DeviceRequest) -> DeviceRecord:
    from ..env import device_info
    import torch

    cuda = torch.cuda.is_available()
    return {"schema": SCHEMA, "kind": "device", "cuda": cuda, "device": device_info("cuda" if cuda else "cpu")}
