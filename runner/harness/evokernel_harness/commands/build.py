"""`build`: compile a candidate (cached by content hash)."""

from __future__ import annotations

import argparse

from ..record import Record
from .common import default_cache, parse_defines, parse_flags


def cmd_build(args: argparse.Namespace) -> Record:
    from ..candidates.build import build

    arch = args.arch or "sm_90"
    task = None
    if getattr(args, "task", None) and args.candidate.endswith(".py"):
        from ..candidates import read_source
        from ..candidates.build import BUILDS_AT_RUN_TIME

        if any(word in read_source(args.candidate) for word in BUILDS_AT_RUN_TIME):
            # only then: a KernelBench problem imports torch; verification reports a task that
            # does not load, with its own words
            from ..tasks import TaskError, task_from

            try:
                task = task_from(args)
            except TaskError:
                task = None
    return build(
        args.candidate,
        args.cache or default_cache(),
        parse_defines(args.defines),
        arch,
        args.timeout,
        parse_flags(args.nvcc_flags),
        task,
    )
