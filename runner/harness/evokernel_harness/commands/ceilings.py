"""`ceilings`: measure this GPU's bandwidth and matmul rates."""

from __future__ import annotations

import argparse

from ..record import Record
from .common import SCHEMA


def cmd_ceilings(args: argparse.Namespace) -> Record:
    from ..env import device_info
    from ..roofline import measure_ceilings

    return {"schema": SCHEMA, "kind": "ceilings", **measure_ceilings(device_info("cuda")["name"])}
