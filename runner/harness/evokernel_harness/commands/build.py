"""`build`: compile a candidate (cached by content hash)."""

from __future__ import annotations

import argparse

from ..record import Record
from .common import default_cache, parse_defines, parse_flags


def cmd_build(args: argparse.Namespace) -> Record:
    from ..candidates.build import build

    arch = args.arch or "sm_90"
    return build(
        args.candidate,
        args.cache or default_cache(),
        parse_defines(args.defines),
        arch,
        args.timeout,
        parse_flags(args.nvcc_flags),
    )
