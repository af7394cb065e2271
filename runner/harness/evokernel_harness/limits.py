"""Each harness command's memory limit of its own (issue 34.3): the task's and the candidate's
code (inputs, reference, candidate, build) may allocate at most $EVOKERNEL_MEM_LIMIT_MB beyond
what the harness holds when the command starts, by default half the machine's memory. An
allocation past it fails in the process that makes it (RLIMIT_DATA: torch's CPU allocator
raises, Python raises MemoryError, a compiler exits), said as a MemoryLimitError naming the
limit and the allocation, exit 3: never the kernel's OOM killer choosing among the machine's
processes (a probe of KernelBench's 19_ReLU reached 23.6 GB on a 23 GB machine). The process
count and file size are capped where the sandbox starts the process (runner/sandbox/enter.sh:
prlimit, sized from the machine by runner/src/sandbox/sandbox.ts unless $EVOKERNEL_SANDBOX_NPROC
and $EVOKERNEL_SANDBOX_FSIZE say), and a hit is said here too, exit 3 (over_resource_limit); the
wall time by each request's timeout (the runner's client, the fork server).

RLIMIT_DATA counts private writable memory, what tensors on the CPU take; not the address
space CUDA reserves (RLIMIT_AS would refuse that), nor GPU memory."""

import errno
import os
import re
import resource

MEM_ENV = "EVOKERNEL_MEM_LIMIT_MB"
FSIZE_ENV = "EVOKERNEL_SANDBOX_FSIZE"
NPROC_ENV = "EVOKERNEL_SANDBOX_NPROC"
DEFAULT_FALLBACK_MB = 16384

_applied: "int | None" = None


class MemoryLimitError(Exception):
    """An allocation the command's memory limit refused."""


def machine_mb() -> "int | None":
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return None


def memory_limit_mb() -> int:
    """$EVOKERNEL_MEM_LIMIT_MB, else half the machine's memory (at least 256 MiB)."""
    given = os.environ.get(MEM_ENV, "").strip()
    if given:
        try:
            return max(1, int(given))
        except ValueError:
            raise ValueError(f"{MEM_ENV}={given} is not a number of MiB: set it to e.g. 16384, or unset it") from None
    total = machine_mb()
    return DEFAULT_FALLBACK_MB if total is None else max(256, total // 2)


def data_bytes() -> int:
    """What this process holds of private writable memory now (VmData)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) << 10
    except OSError:
        pass
    return 0


def apply_memory_limit() -> int:
    """Sets RLIMIT_DATA (soft and hard: code the command runs cannot raise it) at what the
    process holds now plus the limit, once per process (a fork server's worker runs many
    commands under the first one's). Returns the limit in MiB."""
    global _applied
    mb = memory_limit_mb()
    if _applied is not None:
        return _applied
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    wanted = data_bytes() + (mb << 20)
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (wanted, wanted))
    _applied = mb
    return mb


def out_of_memory(err: BaseException) -> bool:
    """An allocation refused in this process: Python's MemoryError, or torch's CPU allocator
    saying so (not torch's CUDA OutOfMemoryError: GPU memory is not this limit's)."""
    if type(err).__name__ == "OutOfMemoryError":
        return False
    if isinstance(err, MemoryError):
        return True
    text = str(err)
    return "can't allocate memory" in text or "DefaultCPUAllocator" in text


def over_limit(mb: int, doing: str, err: BaseException) -> str:
    """What to say when the limit refused an allocation: the allocation (as the allocator named
    it), the limit, what was being done, and what to change. First, so a one-line summary keeps it."""
    found = re.search(r"allocate (\d+) bytes", str(err))
    if found:
        size = int(found.group(1))
        allocation = f"an allocation of {size} bytes ({size / 2**30:.1f} GiB)"
    else:
        allocation = f"an allocation ({type(err).__name__}: {str(err).strip()[:200]})"
    return (
        f"{allocation} went past the memory limit of {mb} MiB ({MEM_ENV}; by default half the "
        f"machine's memory) in {doing}: give the task smaller configurations, or raise {MEM_ENV} "
        "on a machine that has the memory"
    )


def _limit(which: int) -> str:
    soft, _ = resource.getrlimit(which)
    return "none" if soft == resource.RLIM_INFINITY else str(soft)


def over_resource_limit(doing: str, err: BaseException) -> "str | None":
    """The line to print when err is the sandbox's file-size or process-count limit refusing
    (a write past RLIMIT_FSIZE: EFBIG, Python ignores SIGXFSZ; a process or thread past
    RLIMIT_NPROC: EAGAIN), naming the limit in force and its setting; None for anything else."""
    if isinstance(err, OSError) and err.errno == errno.EFBIG:
        size = _limit(resource.RLIMIT_FSIZE)
        shown = f"{size} bytes ({int(size) / 2**20:.0f} MiB)" if size.isdigit() else size
        return (
            f"FileSizeLimitError: a write went past the file-size limit of {shown} ({FSIZE_ENV}; by "
            "default half the free space of the runner's temporary folder, 256 MiB to 16 GiB) in "
            f"{doing}: write smaller files, or raise {FSIZE_ENV} on a machine that has the disk"
        )
    fork_refused = isinstance(err, BlockingIOError) and err.errno == errno.EAGAIN
    if fork_refused or (isinstance(err, RuntimeError) and "can't start new thread" in str(err)):
        return (
            f"ProcessLimitError: a new process or thread was refused ({type(err).__name__}: {err}): "
            f"the process-count limit of {_limit(resource.RLIMIT_NPROC)} ({NPROC_ENV}; by default 256 "
            f"a CPU, 1024 to 8192) in {doing}: start fewer processes or threads, or raise {NPROC_ENV}"
        )
    return None
