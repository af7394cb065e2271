"""`build`: compile a candidate (cached by content hash)."""

from __future__ import annotations

import os

from ..command_request import BuildRequest
from ..record import BuildRecord
from .common import default_cache, parse_defines, parse_flags


def cmd_build(request: BuildRequest) -> BuildRecord:
    from ..candidates.build import build

    arch = request.arch or "sm_90"
    task = None
    skipped = ""
    # EVOKERNEL_BUILD_PREPARE=off: no construction here (the before of lab/gpu-lazy-builds.sh)
    prepare = os.environ.get("EVOKERNEL_BUILD_PREPARE", "on") != "off"
    if prepare and request.task and request.candidate.endswith(".py"):
        from ..candidates import read_source
        from ..candidates.build import BUILDS_AT_RUN_TIME

        if any(word in read_source(request.candidate) for word in BUILDS_AT_RUN_TIME):
            # only then: a KernelBench problem imports torch; verification reports a task that
            # does not load, with its own words
            from ..tasks import TaskError, task_from

            try:
                task = task_from(request.task, request.task_spec)
            except TaskError as err:
                skipped = f"\nevk-prepare: skipped: the task did not load here ({str(err)[:300]})\n"
    record = build(
        request.candidate,
        request.cache or default_cache(),
        parse_defines(request.defines),
        arch,
        request.timeout,
        parse_flags(request.nvcc_flags),
        task,
    )
    if skipped:
        record["log"] = (record.get("log") or "") + skipped
    return record
