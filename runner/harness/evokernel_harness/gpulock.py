"""One GPU, one piece of GPU work at a time, across every evokernel process on the machine.

Two processes that verify or time on one GPU at once disturb each other's timings and memory
(the app's local backend, a CLI run beside it, several `verify` commands). Inside a process
the GPU queue serialises; across processes, every harness command that uses the GPU holds an
exclusive `fcntl.flock` on `gpu-<index>.lock` for as long as it runs. The kernel drops the lock
when its holder dies, so a killed child never leaves the GPU locked.

Verifications may share a GPU (EVOKERNEL_GPU_SHARE, default 2: that many at once; 1 never):
their time is mostly the hand-off of outputs to the judge through host memory, and nothing in
a verdict is a timing. A shared holder takes one of the GPU's share slots (`gpu-<i>.share-<k>`),
then passes the gate (`gpu-<i>.gate`) to take the lock shared; an exclusive holder (any timing)
holds the gate while it waits for the lock, so verifications arriving after it wait behind it
and a timing is never starved. Where the gate or a slot cannot be opened (a folder another
user prepared without them) the holder takes the lock alone. Anything but a pass while shared
is not a verdict: the server runs that request again alone (server.py).

The folder is EVOKERNEL_GPU_LOCKS, else `<tmp>/evokernel-gpu-locks-<uid>`; EVOKERNEL_GPU_LOCKS=off
turns the lock off. The index is the first entry of CUDA_VISIBLE_DEVICES (0 when unset).
Which commands are GPU work is their request's to say (command_request.py, gpu_work). Imports
nothing outside the standard library.
"""

import contextlib
import dataclasses
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


SHARE = "EVOKERNEL_GPU_SHARE"
MAX_SHARE = 8  # share slots a folder of root's holds for each GPU (src/process/gpu-locks.ts)


def share_limit() -> int:
    """How many verifications may share one GPU (EVOKERNEL_GPU_SHARE, default 2, at least 1)."""
    raw = os.environ.get(SHARE, "").strip()
    if not raw:
        return 2
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{SHARE}={raw!r} is not a whole number of verifications (1 never shares)") from None
    if not 1 <= value <= MAX_SHARE:
        raise ValueError(f"{SHARE}={value} is out of range: 1 (never share a GPU) to {MAX_SHARE}")
    return value


def side_files(path: str, slots: int) -> tuple[str, list[str]]:
    """The gate and the share slots beside a GPU's lock file (src/process/gpu-locks.ts makes
    them too, for a folder of root's)."""
    stem = path[: -len(".lock")] if path.endswith(".lock") else path
    return f"{stem}.gate", [f"{stem}.share-{k}" for k in range(slots)]


def _try_open(path: str) -> int | None:
    try:
        return os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
    except OSError:
        return None


def _flock(fd: int, mode: int, on_wait: Callable[[], object] | None, said: list[bool]) -> None:
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except OSError:
        if on_wait is not None and not said[0]:
            said[0] = True
            on_wait()
        fcntl.flock(fd, mode)


@dataclasses.dataclass
class Hold:
    """What the holder got: the seconds it waited, and whether it shares the GPU."""

    waited: float = 0.0
    shared: bool = False


@contextlib.contextmanager
def hold(gpu_work: bool = True, on_wait: Callable[[], object] | None = None, share: bool = False) -> Iterator[Hold]:
    """Hold the GPU's lock while the body runs, when it is GPU work (a request's gpu_work) and no
    parent holds it for us: shared with other verifications when share is asked and allowed
    (EVOKERNEL_GPU_SHARE above 1, the gate and a slot open), else alone. on_wait() is called
    once when the holder has to wait."""
    path = None if os.environ.get(HELD) == "1" or not gpu_work else lock_path()
    if path is None:
        yield Hold()
        return
    # read-only: flock needs no write access, so a lock file another user made (the app's
    # local runner, uid 60998, and a root CLI's sandbox, uid 60999, share the folder and each
    # takes it over before it runs) opens for everyone who can read it
    fd = _open(path)
    held: list[int] = [fd]
    start = time.perf_counter()
    said = [False]
    try:
        limit = share_limit() if share else 1
        gate_path, slot_paths = side_files(path, limit)
        gate = _try_open(gate_path)
        slots = [_try_open(p) for p in slot_paths] if limit > 1 else []
        held += [f for f in [gate, *slots] if f is not None]
        shared = limit > 1 and gate is not None and all(f is not None for f in slots)
        if shared:
            # a slot first (not holding the gate while the slots are taken), then the gate
            assert gate is not None
            # whichever slot frees first (flock cannot wait on several files at once)
            free = [f for f in slots if f is not None]
            pause = 0.005
            while not any(_flock_nb(f) for f in free):
                if on_wait is not None and not said[0]:
                    said[0] = True
                    on_wait()
                time.sleep(pause)
                pause = min(pause * 2, 0.1)
            _flock(gate, fcntl.LOCK_EX, on_wait, said)
            _flock(fd, fcntl.LOCK_SH, on_wait, said)
            fcntl.flock(gate, fcntl.LOCK_UN)
        else:
            # alone: hold the gate (where there is one) while waiting, so verifications that come
            # after wait behind this timing instead of starving it
            if gate is not None:
                _flock(gate, fcntl.LOCK_EX, on_wait, said)
            _flock(fd, fcntl.LOCK_EX, on_wait, said)
            if gate is not None:
                fcntl.flock(gate, fcntl.LOCK_UN)
        yield Hold(time.perf_counter() - start, shared)
    finally:
        for f in held:
            os.close(f)  # closing a descriptor drops its lock


def _flock_nb(fd: int | None) -> bool:
    if fd is None:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False


@contextlib.contextmanager
def held_for_gpu_work(gpu_work: bool = True, on_wait: Callable[[], object] | None = None) -> Iterator[float]:
    """Hold the GPU's lock alone while the body runs (hold, unshared); yields the seconds spent
    waiting."""
    with hold(gpu_work, on_wait) as got:
        yield got.waited
