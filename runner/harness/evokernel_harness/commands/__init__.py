"""The harness's commands, one module each: a function from the command's typed request
(command_request.py: from the command line or from the runner's JSON) to the command's JSON
record. COMMANDS registers each; tests/test_contract.py holds it to the requests, the command
line and the contract. run() runs one as the command line always has, for cli.py and for the
fork server's children and worker, which therefore never go through cli.py."""

import sys
import traceback
from typing import Any, Callable, Mapping, Optional

from .. import gpulock, limits, workdir
from ..command_request import CommandRequest, EvaluateRequest
from .bench import cmd_bench
from .build import cmd_build
from .ceilings import cmd_ceilings
from .common import write_record
from .device import cmd_device
from .evaluate import cmd_evaluate
from .inspect import cmd_inspect
from .static import cmd_static, cmd_static_context
from .verify import cmd_verify


# name → the command: its request's dataclass (command_request.REQUESTS[name]) → its record
# (record.py's kind; None: evaluate writes its own)
COMMANDS: dict[str, Callable[[Any], Optional[Mapping[str, Any]]]] = {
    "device": cmd_device,
    "static": cmd_static,
    "static-context": cmd_static_context,
    "build": cmd_build,
    "inspect": cmd_inspect,
    "verify": cmd_verify,
    "bench": cmd_bench,
    "evaluate": cmd_evaluate,
    "ceilings": cmd_ceilings,
}


OUT_OF_MEMORY = (
    "the harness ran out of GPU memory outside the candidate's calls (no verdict on the candidate): "
    "torch's message above says how much other processes on this GPU hold; run one GPU job at a time "
    "on this GPU, or give the task smaller configurations"
)


def run(request: CommandRequest) -> int:
    """The request's command, its record written to --out (or stdout): exit 0, 3 when an
    allocation went past the command's memory limit outside a candidate's call (limits.py: a
    MemoryLimitError line naming the limit and the allocation; a FileSizeLimitError or
    ProcessLimitError line for the sandbox's other limits), or 4 when the harness itself
    failed (its traceback on stderr). SystemExit passes through. The command runs in a private
    working folder (workdir.py): candidate code writes there."""
    try:
        _memory_limit(request)
        # machine-wide: one GPU job at a time
        with workdir.private(request) as request, gpulock.held_for_gpu_work(request.gpu_work):
            record = COMMANDS[request.command](request)
    except SystemExit:
        raise
    except Exception as err:  # the harness itself failed: say so on stderr, exit non-zero
        if limits.out_of_memory(err):
            doing = f"the harness's {request.command} (the task's inputs, its reference, or a build)"
            said = limits.over_limit(limits.memory_limit_mb(), doing, err)
            print(f"MemoryLimitError: {said}", file=sys.stderr, flush=True)
            return 3
        said = limits.over_resource_limit(f"the harness's {request.command}", err)
        if said is not None:  # the sandbox's file-size or process-count limit
            print(said, file=sys.stderr, flush=True)
            return 3
        traceback.print_exc()
        if type(err).__name__ == "OutOfMemoryError":  # torch's, raised outside a candidate's call
            print(OUT_OF_MEMORY, file=sys.stderr, flush=True)
        return 4
    if record is not None and not isinstance(request, EvaluateRequest):  # evaluate wrote its own
        write_record(record, request.out)
    return 0


def _memory_limit(request: CommandRequest) -> int:
    """The command's memory limit (limits.py), from what the process holds as it starts: torch,
    where the command loads it after, counts against it (about 140 MiB on the CPU). `device`
    runs nothing of a task's."""
    if request.command == "device":
        return 0
    return limits.apply_memory_limit()
