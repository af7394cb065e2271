"""One GPU, one piece of GPU work at a time, across every evokernel process on the machine.

Two processes that verify or time on one GPU at once disturb each other's timings and memory
(the app's local backend, a CLI run beside it, several `verify` commands). Inside a process
the GPU queue serialises; across processes, every harness command that uses the GPU holds an
exclusive `fcntl.flock` on `gpu-<index>.lock` for as long as it runs. The kernel drops the lock
when its holder dies, so a killed child never leaves the GPU locked.

The folder is EVOKERNEL_GPU_LOCKS, else `<tmp>/evokernel-gpu-locks-<uid>`; EVOKERNEL_GPU_LOCKS=off
turns the lock off. The index is the first entry of CUDA_VISIBLE_DEVICES (0 when unset).
Which commands are GPU work is their request's to say (command_request.py, gpu_work). Imports
nothing outside the standard library.
"""

import contextlib
import fcntl
import os
import tempfile
import time
from typing import Callable, Iterator

HELD = "EVOKERNEL_GPU_LOCK_HELD"  # set in a child whose parent (the fork server) holds the lock


def lock_path() -> str | None:
    folder = os.environ.get("EVOKERNEL_GPU_LOCKS", "")
    if folder == "off":
        return None
    folder = folder or os.path.join(tempfile.gettempdir(), f"evokernel-gpu-locks-{os.getuid()}")
    os.makedirs(folder, exist_ok=True)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip() or "0"
    name = "".join(c if c.isalnum() or c in "-_" else "_" for c in visible)
    return os.path.join(folder, f"gpu-{name}.lock")


def _open(path: str) -> int:
    try:
        return os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
    except OSError as err:
        raise OSError(
            err.errno,
            f"cannot open the GPU lock file {path} ({err.strerror}): where its folder is another user's "
            "it must hold a lock file for this GPU. The app's local backend makes one for each of its "
            "EVOKERNEL_GPUS, a root runner makes the one it needs; or point EVOKERNEL_GPU_LOCKS at a folder "
            "of this user's",
        ) from None


def check() -> None:
    """Raises, saying what to do, where this GPU's lock file cannot be opened: a GPU fork server
    checks at its start, so a search's lane that could never take its lock stops the run before
    the search (on two H200s such a lane read every candidate it took as a crash)."""
    path = lock_path()
    if path is not None:
        os.close(_open(path))


@contextlib.contextmanager
def held_for_gpu_work(gpu_work: bool = True, on_wait: Callable[[], object] | None = None) -> Iterator[float]:
    """Hold the GPU's lock while the body runs, when it is GPU work (a request's gpu_work) and no
    parent holds it for us; yields the seconds spent waiting. on_wait() is called once when
    another process holds the lock."""
    path = None if os.environ.get(HELD) == "1" or not gpu_work else lock_path()
    if path is None:
        yield 0.0
        return
    # read-only: flock needs no write access, so a lock file another user made (the app's
    # local runner, uid 60998, and a root CLI's sandbox, uid 60999, share the folder and each
    # takes it over before it runs) opens for everyone who can read it
    fd = _open(path)
    start = time.perf_counter()
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            if on_wait is not None:
                on_wait()
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield time.perf_counter() - start
    finally:
        os.close(fd)  # closing the descriptor drops the lock
