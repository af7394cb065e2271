"""`inspect`: load and validate a task; with --probe, run its reference on the CPU and refuse a
degenerate task."""

from __future__ import annotations

import contextlib
import os
import resource
from typing import Iterator

from ..command_request import InspectRequest
from ..limits import data_bytes, out_of_memory
from ..record import Record, TaskRecord
from .common import SCHEMA, log


def cmd_inspect(request: InspectRequest) -> TaskRecord:
    if not request.probe:
        return _inspect(request, None)
    # The probe builds the task's inputs and runs its reference, on the CPU: under a memory
    # limit of its own from loading the task to the end.
    limit_mb = probe_memory_mb()
    import torch  # noqa: F401  (its own memory is the harness's, not the task's: taken before the limit)

    with memory_limit(limit_mb):
        try:
            return _inspect(request, limit_mb)
        except Exception as err:
            if not out_of_memory(err):
                raise
            message = _over_limit(limit_mb, "loading it or building its configurations", err)
            return {
                **_base(request.task),
                "error": message,
                "probe": {"ok": False, "reason": "resources", "message": message},
            }


def _base(task: str) -> TaskRecord:
    return {
        "schema": SCHEMA,
        "kind": "task",
        "path": os.path.abspath(task.split("#")[0]),
        "ok": False,
        "error": None,
        "name": os.path.basename(task.rstrip("/")),
        "format": "native",
        "backward": False,
        "baseline": None,
        "configs": [],
        "notes": [],
        "probe": None,
    }


def _over_limit(limit_mb: int, where: str, err: BaseException) -> str:
    return (
        f"the task needs more memory than the probe's limit of {limit_mb} MiB ({PROBE_MEM_ENV}; by default "
        f"half the machine's memory) {where}: {type(err).__name__}: {err}. Make the task's inputs smaller, "
        f"or raise {PROBE_MEM_ENV} on a machine that has the memory"
    )


def _inspect(request: InspectRequest, limit_mb: int | None) -> TaskRecord:
    from ..tasks import TaskError, task_from
    from ..tasks.native import NativeTask

    base = _base(request.task)
    try:
        task = task_from(request.task, request.task_spec)
    except TaskError as err:
        return {**base, "error": str(err)}
    except Exception as err:  # a task whose Python fails to import is invalid, with its error
        if limit_mb is not None and out_of_memory(err):
            raise
        return {**base, "error": f"cannot load the task: {type(err).__name__}: {err}"}
    configs: list[Record] = []
    if request.probe:
        task.prune("cpu")
    for c in task.configs:
        entry: Record = {
            "name": c.name,
            "heldout": c.heldout,
            "derived": c.derived,
            "dims": {k: v for k, v in c.dims.items() if isinstance(v, int) and not isinstance(v, bool)},
            "init": c.init or "declared",
            "inputs": [],
        }
        if isinstance(task, NativeTask):  # shapes without building tensors
            entry["inputs"] = [
                {"name": i["name"], "shape": task._shape(i, c), "dtype": i.get("dtype", "float32")} for i in task.inputs
            ]
        configs.append(entry)
    record: TaskRecord = {
        **base,
        "ok": True,
        "name": task.name,
        "format": task.format,
        "path": task.path,
        "backward": task.backward,
        "baseline": task.baseline,
        "configs": configs,
        "notes": task.notes,
    }
    if request.probe:
        from ..verify import Reject, Verifier

        smallest = min(task.configs, key=lambda c: sum(v for v in c.dims.values() if isinstance(v, int)))
        v = Verifier(task, None, "cpu", 1234, log=log)
        try:
            v.check_task(smallest)
            record["probe"] = {
                "ok": True,
                "reason": None,
                "message": f"reference runs on {smallest.name}; output is not degenerate",
            }
        except Reject as r:
            record["probe"] = {"ok": False, "reason": r.reason, "message": r.message}
            record["ok"] = False
            record["error"] = r.message
        except Exception as err:
            if limit_mb is not None and out_of_memory(err):
                message = _over_limit(limit_mb, f"running its reference on {smallest.name}", err)
                record["probe"] = {"ok": False, "reason": "resources", "message": message}
                record["ok"] = False
                record["error"] = message
                return record
            record["probe"] = {"ok": False, "reason": "reference-error", "message": f"{type(err).__name__}: {err}"}
            record["ok"] = False
            record["error"] = f"the reference fails on {smallest.name}: {err}"
    return record


PROBE_MEM_ENV = "EVOKERNEL_PROBE_MEM_MB"


def probe_memory_mb() -> int:
    """What the probe's own allocations may take, in MiB: $EVOKERNEL_PROBE_MEM_MB, else half the
    machine's memory (a task whose inputs need more fails naming the limit, instead of the
    kernel's OOM killer choosing among the machine's processes)."""
    given = os.environ.get(PROBE_MEM_ENV, "").strip()
    if given:
        return max(1, int(given))
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return max(256, int(line.split()[1]) // 1024 // 2)
    except OSError:
        pass
    return 16384


@contextlib.contextmanager
def memory_limit(mb: int) -> Iterator[None]:
    """RLIMIT_DATA at what the process holds now plus `mb`: an allocation past it fails in this
    process (torch's DefaultCPUAllocator raises, Python raises MemoryError). The probe runs on
    the CPU only: no CUDA is initialised here (CUDA reserves address space, which RLIMIT_AS would
    refuse; RLIMIT_DATA counts private writable memory, what tensors on the CPU take)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    held = _data_bytes()
    wanted = held + (mb << 20)
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (wanted, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


def _data_bytes() -> int:
    return data_bytes()
