"""Each command's private working folder (issue 33.4): a fresh, empty, writable directory under
the temporary folder (the sandbox's own tmpfs /tmp), the process's cwd while the command runs,
removed when it ends.

Candidates build into relative folders (`build_directory="cuda_extensions"`,
`os.makedirs("build")`) and write scratch files (`cuda_code/kernel.cu`). In the sandbox the
working folder was its read-only root: those writes failed with EROFS, the candidate's
`except` branch ran its fallback and the verdict named the sandbox, not the candidate's code.
Without the sandbox they landed wherever the harness was started (a checkout). Now whatever a
candidate writes relative to its cwd lands in a folder of its own: the build works, or fails
with the compiler's words; nothing reaches the repository, the build cache or the next
candidate (the fork server's worker runs each request in a new folder and goes back to its
own afterwards).

Every process that runs candidate code gets here through commands.run (the command's own
process; verify's and bench's candidate processes are forked from it and inherit the folder,
which the judge removes once they and everything they started have been stopped). Paths the
command was given relative to where it started are made absolute first.
"""

import contextlib
import dataclasses
import os
import shutil
import tempfile
from typing import Iterator, TypeVar

from .command_request import CommandRequest

R = TypeVar("R", bound=CommandRequest)

PREFIX = "evk-work-"
# the requests' fields (command_request.py) that name files or folders (a relative one is relative to where the
# command started, not to the private folder)
PATH_OPTIONS = (
    "task",
    "candidate",
    "artifact",
    "cache",
    "baseline",
    "baseline_artifact",
    "ceilings",
    "out",
    "quick_out",
    "verify_out",
    "bench_out",
)
# environment variables that name folders the harness reads or writes later in the command
PATH_VARIABLES = ("EVOKERNEL_CACHE", "EVOKERNEL_GPU_LOCKS")
BACKWARD = "#backward"  # a task path's suffix (tasks/__init__.py)


def absolute(request: R) -> R:
    """A copy of request whose paths are absolute (a task keeps its #backward)."""
    changes: dict[str, str] = {}
    for f in dataclasses.fields(request):
        value = getattr(request, f.name)
        if f.name not in PATH_OPTIONS or not isinstance(value, str) or not value or os.path.isabs(value):
            continue
        suffix = BACKWARD if f.name == "task" and value.endswith(BACKWARD) else ""
        changes[f.name] = os.path.abspath(value[: len(value) - len(suffix)]) + suffix
    return dataclasses.replace(request, **changes)


def _absolute_environment() -> None:
    for name in PATH_VARIABLES:
        value = os.environ.get(name)
        if value and value != "off" and not os.path.isabs(value):
            os.environ[name] = os.path.abspath(value)


@contextlib.contextmanager
def private(request: R) -> Iterator[R]:
    """With a fresh folder as the cwd: yields request with absolute paths; afterwards the cwd is
    the one before and the folder is gone, whatever the command left in it."""
    request = absolute(request)
    _absolute_environment()
    folder = tempfile.mkdtemp(prefix=PREFIX)
    try:
        home = os.open(".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:  # a cwd that cannot be opened: the root is where we go back to
        home = None
    os.chdir(folder)
    try:
        yield request
    finally:
        try:
            if home is not None:
                os.fchdir(home)
            else:
                os.chdir("/")
        except OSError:
            os.chdir("/")
        finally:
            if home is not None:
                os.close(home)
        shutil.rmtree(folder, ignore_errors=True)
