"""`build`: compile a candidate (cached by content hash)."""

from __future__ import annotations

import argparse
import os

from ..record import Record
from .common import default_cache, parse_defines, parse_flags


def cmd_build(args: argparse.Namespace) -> Record:
    from ..candidates.build import build

    arch = args.arch or "sm_90"
    task = None
    skipped = ""
    # EVOKERNEL_BUILD_PREPARE=off: no construction here (the before of lab/gpu-lazy-builds.sh)
    prepare = os.environ.get("EVOKERNEL_BUILD_PREPARE", "on") != "off"
    if prepare and getattr(args, "task", None) and args.candidate.endswith(".py"):
        from ..candidates import read_source
        from ..candidates.build import BUILDS_AT_RUN_TIME

        if any(word in read_source(args.candidate) for word in BUILDS_AT_RUN_TIME):
            # only then: a KernelBench problem imports torch; verification reports a task that
            # does not load, with its own words
            from ..tasks import TaskError, task_from

            try:
                task = task_from(args)
            except TaskError as err:
                skipped = f"\nevk-prepare: skipped: the task did not load here ({str(err)[:300]})\n"
    record = build(
        args.candidate,
        args.cache or default_cache(),
        parse_defines(args.defines),
        arch,
        args.timeout,
        parse_flags(args.nvcc_flags),
        task,
    )
    if skipped:
        record["log"] = (record.get("log") or "") + skipped
    return record
