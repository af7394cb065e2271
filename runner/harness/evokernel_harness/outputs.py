"""A candidate's outputs, carried from the process that ran it to the judge (judge.py), which
never loads candidate code and compares them with its own reference.

The candidate's process writes, per trial, `<key>.json` (a small header: each output's dtype
and shape) and each output's raw bytes (C order) in parts of PART bytes: `<key>.<i>.bin`, then
`<key>.<i>.<j>.bin` for part j > 0, so both sides move a large output's parts side by side
(one tmpfs file takes one writer at a time). Nothing in these files is trusted: the judge
names the files itself (never a path read from them), opens them without following symlinks,
reads only regular files of exactly the size the reference's output gives each part, parses
the header as JSON and the data as raw bytes of a dtype it knows (no pickle, ever), and copies
the bytes straight to the device it compares on, through pinned buffers.

Which trials must be there is a rule both sides compute: the first trial of each
configuration and its same-buffer refill always; each further trial while the bytes kept so
far stay within the budget (EVOKERNEL_VERDICT_DUMP_BYTES, 2 GiB by default), so a problem with
gigabyte outputs does not fill the scratch folder's tmpfs. A candidate cannot choose to leave
out a trial the rule keeps.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

import torch

from .env import DTYPES

DUMP_BUDGET = int(os.environ.get("EVOKERNEL_VERDICT_DUMP_BYTES", str(2 << 30)))
HEADER_LIMIT = 64 << 10  # bytes: a header names a few outputs
STAGE = 32 << 20  # bytes of pinned host memory each worker copies through (GPU ↔ file)
PART = 64 << 20  # bytes of one output per file (the last part holds the rest)
WORKERS = max(1, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))
MAX_OUTPUTS = 64
MAX_DIMS = 16
REFILL = "refill"

# Every plain dtype torch has, not only the tasks' input dtypes: the in-process verification
# compares any output dtype equal to the reference's (int16, complex64, float8, …), and the
# judge must read what it would have passed. Quantized dtypes have no raw-bytes form.
ALLOWED: dict[Any, torch.dtype] = {
    **{
        str(value).removeprefix("torch."): value
        for value in vars(torch).values()
        if isinstance(value, torch.dtype) and not str(value).startswith(("torch.qint", "torch.quint"))
    },
    **DTYPES,
}


class OutputError(Exception):
    """The outputs for one trial are missing or not what the reference's outputs are."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason, self.message = reason, message


def key(config_index: int, trial: int | str) -> str:
    return f"c{int(config_index)}-{trial if trial == REFILL else int(trial)}"


def trial_keys(trials: int) -> list[int | str]:
    """The order both sides count the budget in: trial 0, its refill, then the others."""
    return [0, REFILL] + list(range(1, trials))


def required(trial: int | str, nbytes: int, kept: int, budget: int = DUMP_BUDGET) -> bool:
    """Whether the rule keeps this trial's outputs, `kept` bytes being kept before it."""
    return trial in (0, REFILL) or kept + nbytes <= budget


def nbytes_of(tensors: Sequence[torch.Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def parts(nbytes: int) -> list[tuple[int, int]]:
    """(offset, length) of each part of an output of nbytes: the rule both sides compute."""
    return [(start, min(PART, nbytes - start)) for start in range(0, nbytes, PART)] or [(0, 0)]


def part_file(name: str, output: int, part: int) -> str:
    return f"{name}.{output}.bin" if part == 0 else f"{name}.{output}.{part}.bin"


class Stages:
    """Pinned host buffers of STAGE bytes, one per worker at a time, made as first needed and
    kept (pinning is slow); None where pinned memory cannot be had (a copy through pageable
    memory then, as before)."""

    def __init__(self) -> None:
        self.free: list[torch.Tensor] = []
        self.lock = threading.Lock()
        self.unpinnable = False

    @contextlib.contextmanager
    def take(self, device: torch.device):
        if device.type != "cuda" or self.unpinnable:
            yield None
            return
        with self.lock:
            stage = self.free.pop() if self.free else None
        if stage is None:
            try:
                stage = torch.empty(STAGE, dtype=torch.uint8, pin_memory=True)
            except RuntimeError:
                self.unpinnable = True
                yield None
                return
        try:
            yield stage
        finally:
            with self.lock:
                self.free.append(stage)


def side_by_side(jobs: Sequence[Callable[[], None]]) -> None:
    """Runs the jobs on up to WORKERS threads (file reads and writes and copies release the
    GIL); the first error raised is raised here, after every job has ended."""
    if len(jobs) <= 1 or WORKERS == 1:
        for job in jobs:
            job()
        return
    with ThreadPoolExecutor(min(WORKERS, len(jobs))) as pool:
        futures = [pool.submit(job) for job in jobs]
    for f in futures:
        f.result()


class Dump:
    """The candidate's side: writes each trial's outputs as the rule says (verify.Verifier)."""

    def __init__(self, folder: str, budget: int = DUMP_BUDGET) -> None:
        self.folder, self.budget, self.kept = folder, budget, 0
        self.stages = Stages()
        os.makedirs(folder, exist_ok=True)

    def write(self, config_index: int, trial: int | str, outs: Sequence[torch.Tensor]) -> bool:
        size = nbytes_of(outs)
        if not required(trial, size, self.kept, self.budget):
            return False
        self.kept += size
        name = key(config_index, trial)
        header = {"outputs": []}
        jobs, paths = [], []
        for i, o in enumerate(outs):
            t = o.detach()
            header["outputs"].append({"dtype": _dtype_name(t.dtype), "shape": list(t.shape)})
            data = t.contiguous().reshape(-1).view(torch.uint8)
            for j, (start, length) in enumerate(parts(data.numel())):
                path = os.path.join(self.folder, part_file(name, i, j))
                paths.append(path)
                jobs.append(lambda path=path, piece=data[start : start + length]: self._write_part(path, piece))
        try:
            side_by_side(jobs)
        except OSError as err:
            if err.errno != errno.ENOSPC:
                raise
            _no_room(paths, self.folder, size, err)
        with open(os.path.join(self.folder, f"{name}.json"), "w") as f:
            json.dump(header, f)
        return True

    def _write_part(self, path: str, data: torch.Tensor) -> None:
        """One part's bytes into its file. From the GPU through a pinned buffer, a piece at a
        time (a copy into pageable memory made and faulted in a new buffer the size of each
        output first was most of a final verification's "dump" phase)."""
        with open(path, "wb") as f, self.stages.take(data.device) as stage:
            if stage is None:  # on the CPU: its own memory; no pinned memory: through pageable
                f.write(memoryview(data.cpu().numpy()))
                return
            step = stage.numel()
            for start in range(0, data.numel(), step):
                piece = data[start : start + step]
                part = stage[: piece.numel()]
                part.copy_(piece)  # synchronous: the pinned buffer is whole before it is written
                f.write(memoryview(part.numpy()))

    def passed(self, config_name: str) -> None:
        """A configuration that passed, as it passes: what the judge can still say of a run
        whose process a signal ended on a later one (shape-specific, not a bare crash)."""
        with open(os.path.join(self.folder, PASSED), "a") as f:
            f.write(config_name[:200].replace("\n", " ") + "\n")


PASSED = "passed.txt"


def _no_room(paths: Sequence[str], folder: str, size: int, err: OSError) -> None:
    """The judge's copy of a trial's outputs does not fit: a machine's limit, said plainly (the
    harness fails, exit 4: no verdict on the candidate)."""
    for path in paths:
        with contextlib.suppress(OSError):
            os.remove(path)
    try:
        st = os.statvfs(folder)
        room = f"{st.f_bavail * st.f_frsize / 2**30:.1f} of {st.f_blocks * st.f_frsize / 2**30:.1f} GiB free"
    except OSError:
        room = "its free space unknown"
    print(
        f"the judge's copy of one trial's outputs ({size / 2**30:.1f} GiB) does not fit in {folder} "
        f"({room}; {err.strerror}): outputs this large need a machine with more memory for the "
        "sandbox's /tmp (half of it), or smaller configurations in the task",
        file=sys.stderr,
        flush=True,
    )
    raise SystemExit(4)


def passed_before_death(folder: str, names: Sequence[str]) -> list[str]:
    """The configurations the candidate's process said had passed, among the task's own names
    (the list is the candidate's word: it can only turn a crash into another refusal)."""
    try:
        with open(os.path.join(folder, PASSED), "rb") as f:
            lines = f.read(1 << 16).decode("utf-8", "replace").splitlines()
    except OSError:
        return []
    return [n for n in dict.fromkeys(lines) if n in names]


def _dtype_name(dtype):
    return next((n for n, d in ALLOWED.items() if d == dtype), str(dtype))


def read(
    folder: str,
    config_index: int,
    trial: int | str,
    refs: Sequence[torch.Tensor],
    where: str,
    accepts_shape: Callable[[tuple[int, ...], torch.Tensor], bool] = lambda got, ref: False,
    device: torch.device | str = "cpu",
    stages: Stages | None = None,
) -> list[torch.Tensor]:
    """The candidate's outputs for one trial as tensors on `device`, validated against the
    reference's outputs `refs` (count, dtype and shape before any data is read; each file's
    exact byte size before it is read). accepts_shape(shape, ref): a format's own rule for a shape that differs
    (one element for a scalar). stages: pinned buffers to keep between calls. Raises
    OutputError with the true reason."""
    name = key(config_index, trial)
    raw = _read_file(os.path.join(folder, f"{name}.json"), None, HEADER_LIMIT, where, "the header")
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise OutputError("outputs-invalid", f"{where}: the header of the candidate's outputs is not JSON") from None
    items = header.get("outputs") if isinstance(header, dict) else None
    if not isinstance(items, list) or len(items) > MAX_OUTPUTS:
        raise OutputError("outputs-invalid", f"{where}: the header of the candidate's outputs lists no outputs")
    if len(items) != len(refs):
        raise OutputError("outputs-invalid", f"{where}: {len(items)} outputs written, the reference has {len(refs)}")
    device = torch.device(device)
    stages = stages or Stages()
    checked = [_check_item(item, ref, i, where, accepts_shape) for i, (item, ref) in enumerate(zip(items, refs))]
    outs, jobs = [], []
    for i, ((dtype, shape), ref) in enumerate(zip(checked, refs)):
        size = ref.numel() * ref.element_size()
        data = torch.empty(size, dtype=torch.uint8, device=device)
        split = parts(size)
        for j, (start, length) in enumerate(split):
            what = f"output {i}" if len(split) == 1 else f"output {i} (part {j + 1} of {len(split)})"
            path = os.path.join(folder, part_file(name, i, j))
            jobs.append(
                lambda path=path, dst=data[start : start + length], what=what: _read_part(
                    path, dst, stages, where, what
                )
            )
        outs.append((data, dtype, shape))
    side_by_side(jobs)
    return [
        torch.empty(shape, dtype=dtype, device=device) if data.numel() == 0 else data.view(dtype).reshape(shape)
        for data, dtype, shape in outs
    ]


def _check_item(item, ref, i, where, accepts_shape):
    if not isinstance(item, dict):
        raise OutputError("outputs-invalid", f"{where}: output {i}'s header is not an object")
    dtype = ALLOWED.get(item.get("dtype")) if isinstance(item.get("dtype"), str) else None
    if dtype is None:
        raise OutputError(
            "outputs-invalid",
            f"{where}: output {i} has dtype {str(item.get('dtype'))[:40]!r}, which the judge does not read",
        )
    if dtype != ref.dtype:
        raise OutputError(
            "outputs-invalid",
            f"{where}: output {i} is written as {item['dtype']}, the reference's is {_dtype_name(ref.dtype)}",
        )
    shape = item.get("shape")
    if (
        not isinstance(shape, list)
        or len(shape) > MAX_DIMS
        or not all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 2**62 for n in shape)
    ):
        raise OutputError("outputs-invalid", f"{where}: output {i}'s shape is not a list of sizes")
    if tuple(shape) != tuple(ref.shape) and not accepts_shape(tuple(shape), ref):
        raise OutputError(
            "outputs-invalid",
            f"{where}: output {i} is written with shape {tuple(shape)[:8]}, the reference's is {tuple(ref.shape)}",
        )
    return dtype, tuple(shape)


def _open_file(path, size, limit, where, what):
    """A descriptor of a regular file (never through a symlink) of at most `limit` bytes,
    exactly `size` where size is given. Raises OutputError."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise OutputError(
            "outputs-missing", f"{where}: the candidate's process wrote no file for {what} of its outputs"
        ) from None
    except OSError as err:  # ELOOP: a symlink
        raise OutputError(
            "outputs-invalid",
            f"{where}: {what} of the candidate's outputs cannot be opened as a file "
            f"of its own ({os.strerror(err.errno) if err.errno else err}): a symlink or not a file",
        ) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OutputError("outputs-invalid", f"{where}: {what} of the candidate's outputs is not a regular file")
        if st.st_size > limit or (size is not None and st.st_size != size):
            expected = f"{size} bytes" if size is not None else f"at most {limit} bytes"
            raise OutputError(
                "outputs-invalid",
                f"{where}: {what} of the candidate's outputs holds {st.st_size} bytes, expected {expected}",
            )
    except BaseException:
        os.close(fd)
        raise
    return fd


def _fill(fd, view, offset, where, what):
    """view's bytes from the file at offset; a file that ends early is refused."""
    got = 0
    while got < len(view):
        n = os.preadv(fd, [view[got:]], offset + got)
        if n <= 0:
            raise OutputError("outputs-invalid", f"{where}: {what} of the candidate's outputs changed size while read")
        got += n


def _read_part(path: str, dst: torch.Tensor, stages: Stages, where: str, what: str) -> None:
    """A part's file, checked (a regular file of exactly dst's size) and read into dst (uint8,
    on the CPU or the GPU): on the CPU straight into its memory; to the GPU through a pinned
    buffer, a piece at a time. One descriptor open per worker at a time."""
    fd = _open_file(path, dst.numel(), dst.numel(), where, what)
    try:
        _read_into(fd, dst, stages, where, what)
    finally:
        os.close(fd)


def _read_into(fd: int, dst: torch.Tensor, stages: Stages, where: str, what: str) -> None:
    with stages.take(dst.device) as stage:
        if stage is None and dst.device.type == "cpu":
            _fill(fd, memoryview(dst.numpy()), 0, where, what)
            return
        if stage is None:
            host = torch.empty(dst.numel(), dtype=torch.uint8)
            _fill(fd, memoryview(host.numpy()), 0, where, what)
            dst.copy_(host)
            return
        step = stage.numel()
        for start in range(0, dst.numel(), step):
            piece = dst[start : start + step]
            part = stage[: piece.numel()]
            _fill(fd, memoryview(part.numpy()), start, where, what)
            piece.copy_(part)  # synchronous: the buffer is free again when it returns


def _read_file(path, size, limit, where, what):
    """The whole of a regular file (never through a symlink), at most `limit` bytes; exactly
    `size` where size is given."""
    fd = _open_file(path, size, limit, where, what)
    try:
        st = os.fstat(fd)
        buf = bytearray(st.st_size)
        _fill(fd, memoryview(buf), 0, where, what)
        return buf
    finally:
        os.close(fd)
