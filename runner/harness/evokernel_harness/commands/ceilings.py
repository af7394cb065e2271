"""`ceilings`: measure this GPU's bandwidth and matmul rates."""

from __future__ import annotations

from ..command_request import CeilingsRequest
from ..record import CeilingsRecord
from .common import SCHEMA


def cmd_ceilings(request: CeilingsRequest) -> CeilingsRecord:
    from ..env import device_info
    from ..roofline import measure_ceilings

    return CeilingsRecord(schema=SCHEMA, kind="ceilings", **measure_ceilings(device_info("cuda")["name"]))
