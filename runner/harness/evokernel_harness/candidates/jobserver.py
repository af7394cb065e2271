"""One build pool per machine: compile slots shared by every evokernel process.

A slot is an exclusive `fcntl.flock` on one of N files `slot-<i>.lock` in a machine-wide
folder. The kernel drops a flock when its holder dies, so a killed build never leaks a slot
and nothing has to detect stale locks. Every compiler process the harness starts takes one
slot for as long as it runs (an evk nvcc; each translation unit and the link of a torch
extension, through the compiler wrappers of `ccwrap`), so N is the most compilers running on
the machine at once, however many evokernel commands build at the same time.

N is EVOKERNEL_BUILD_JOBS, else the cores this process may run on. The folder is
EVOKERNEL_BUILD_SLOTS, else `<tmp>/evokernel-build-slots-<uid>` (one per machine and user).
Imports nothing outside the standard library: `ccwrap` runs it in a bare interpreter.
"""

import contextlib
import fcntl
import os
import random
import tempfile
import time
from typing import Iterator


def total_slots() -> int:
    text = os.environ.get("EVOKERNEL_BUILD_JOBS", "").strip()
    if text.isdigit() and int(text) > 0:
        return int(text)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def slots_dir() -> str:
    folder = os.environ.get("EVOKERNEL_BUILD_SLOTS") or os.path.join(
        tempfile.gettempdir(), f"evokernel-build-slots-{os.getuid()}"
    )
    os.makedirs(folder, exist_ok=True)
    return folder


def _try_lock(path):
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


@contextlib.contextmanager
def slot(weight: int = 1, total: int | None = None, folder: str | None = None) -> Iterator[list[int]]:
    """Hold `weight` of the machine's compile slots (all or none, so two wide builds never
    deadlock holding half each); yields the indices held. Polls: a slot frees when a
    compiler ends, and compiles take seconds."""
    total = total or total_slots()
    weight = max(1, min(weight, total))
    folder = folder or slots_dir()
    held = []
    delay = 0.02
    while True:
        start = random.randrange(total)  # spread the waiters over the slots
        for k in range(total):
            i = (start + k) % total
            fd = _try_lock(os.path.join(folder, f"slot-{i}.lock"))
            if fd is not None:
                held.append((i, fd))
                if len(held) == weight:
                    break
        if len(held) == weight:
            break
        for _, fd in held:
            os.close(fd)
        held = []
        time.sleep(delay * (0.5 + random.random()))
        delay = min(delay * 1.5, 0.25)
    try:
        yield [i for i, _ in held]
    finally:
        for _, fd in held:
            os.close(fd)


@contextlib.contextmanager
def exclusive(path: str) -> Iterator[None]:
    """A blocking exclusive lock on `path` (created if missing): one holder at a time, across
    processes; released when the holder ends, however it ends."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
