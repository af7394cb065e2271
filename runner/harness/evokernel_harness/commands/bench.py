"""`bench`: timing of a candidate beside eager PyTorch, torch.compile, the baseline kernel and
the roofline floor (bench.py does the timing), judged (bench_judge.py): the kernels are timed in
a process of their own, the rest and the verdict in one that never loads them. Its unjudged run
(stages.py's bench_run) is also the last stage of `evaluate` and `bench --screen`: the search's
screen."""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from typing import TYPE_CHECKING, Any

from ..command_request import BenchRequest
from ..record import BenchRecord, Record
from .common import default_cache, log, write_record
from .stages import bench_record, bench_run, new_seed, no_gpu_record

if TYPE_CHECKING:
    from ..bench import JudgedSide
    from ..bench_judge import Judging
    from ..tasks import Task


def cmd_bench(request: BenchRequest) -> BenchRecord:
    """bench --screen: the search's timing, in one process (its candidate is verified again by
    a judged verify and bench before it counts). Otherwise judged (bench_judge.py)."""
    if request.screen:
        return _bench_in_process(request, time.perf_counter(), screen=True)
    if request.warm_compile:
        return _reference_warm(request)
    from ..bench_judge import bench_judged

    # the judge chooses the seed: the candidate's process is told it
    seed = new_seed(request.seed)
    request = dataclasses.replace(request, seed=seed)
    try:  # the first profile or flop count in a process imports it (5-7 s on the H100, as the
        # fork server knows): here, once, for the judge and the candidate's process it forks
        import torch._dynamo  # noqa: F401 # pyright: ignore[reportMissingImports]
    except Exception:  # older torch, or a broken install: each imports what it needs
        pass
    return bench_judged(
        request.task,
        lambda side: _bench_in_process(request, time.perf_counter(), judged=side),
        lambda: _judge_side(request, seed),
    )


def _bench_in_process(
    request: BenchRequest, started: float, screen: bool = False, judged: JudgedSide | None = None
) -> BenchRecord:
    from ..bench import bench  # noqa: F401 — imported inside the "load" phase, as it always was
    from ..env import precise_math
    from ..tasks import task_from

    import torch

    if not torch.cuda.is_available():
        return no_gpu_record(request.task)
    precise_math()  # before the task's own code runs, as always (bench_run sets it again)
    task = task_from(request.task, request.task_spec, request.config)
    task.prune("cuda")
    try:
        return bench_run(request, started, task, screen=screen, judged=judged)
    except SystemExit as e:  # "cannot build": its message and exit code, as Python gives them
        if judged is not None and isinstance(e.code, str):
            print(e.code, file=sys.stderr, flush=True)
            raise SystemExit(1) from None
        raise


def _judge_side(request: BenchRequest, seed: int) -> tuple[BenchRecord, Judging | None]:
    """The judge's own bench (with the seed it chose), after the candidate's process has ended:
    the ceilings, then the reference alone (eager, torch.compile, probe, cost, floor) with the
    other half of the budget."""
    from ..bench_judge import Judging
    from ..env import precise_math
    from ..tasks import task_from

    import torch

    if not torch.cuda.is_available():
        return no_gpu_record(request.task), None
    precise_math()
    task = task_from(request.task, request.task_spec, request.config)
    task.prune("cuda")
    own, ceilings, info = _reference_alone(request, task, seed, compile_baseline=not request.no_compile)
    baseline = request.baseline if request.baseline else (None if request.no_baseline else task.baseline)
    judging = Judging(
        task,
        torch.device("cuda"),
        seed,
        os.path.abspath(baseline) if baseline else None,
        os.path.abspath(request.candidate) if request.candidate else None,
    )
    return BenchRecord(**{**own, "task": task.name, "device": info, "ceilings": ceilings}), judging


def _reference_alone(
    request: BenchRequest, task: Task, seed: int, compile_baseline: bool, compiled: Any = None
) -> tuple[Record, Record, Record]:
    """The reference alone, as a judge times it: (its bench, the ceilings, the device). The
    ceilings are measured here every time (an 8192² matmul in fp32 and bf16, 13 calls each, and
    a 1 GiB copy): --ceilings names a file of the build cache, which candidates can write, and
    the ceilings make the floor; written there for the screen, which reads it. Then eager,
    torch.compile (`compiled`: already compiled), the probe, cost and floor with half the budget."""
    from ..bench import bench
    from ..env import device_info
    from ..roofline import measure_ceilings

    info = device_info("cuda")
    ceilings = measure_ceilings(info["name"])
    if request.ceilings:
        write_record(ceilings, request.ceilings)
    probes = None
    if not request.no_probe_cache:
        from ..probe_cache import CostMeasured

        probes = CostMeasured(os.path.join(request.cache or default_cache(), "probe"))
    own = bench(
        task,
        None,
        None,
        ceilings,
        info,
        seed,
        log=log,
        budget_s=request.budget / 2,
        compile_baseline=compile_baseline,
        probe_cache=probes,
        compiled=compiled,
    )
    return own, ceilings, info


def _reference_warm(request: BenchRequest) -> BenchRecord:
    """bench --warm-compile: the reference alone, as a judged bench's judge times it (eager and
    torch.compile with half the budget, the ceilings measured, the floor), with torch.compile's
    baseline compiled for every visible configuration before the GPU's lock is taken. The search
    runs beside the compile (its few GPU calls, inductor's autotuning included, may overlap the
    search's screen, never a final timing); the timing waits for the lock. `optimize` takes
    torch.compile's times from here, so its final timings skip their warm-up (10-13 s on the H100)."""
    if request.candidate or request.baseline or not request.no_baseline or request.no_compile:
        raise SystemExit(
            "bench --warm-compile times the reference alone: give --no-baseline, and no --candidate, "
            "--baseline or --no-compile"
        )
    started = time.perf_counter()
    # two of inductor's compile workers, not one per core: the search beside it builds and
    # times on the same cores (a descheduled timing thread looks like escaped work)
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "2")
    import torch

    if not torch.cuda.is_available():
        return no_gpu_record(request.task)
    try:  # as a judged bench does: dynamo imported once, before the first compile
        import torch._dynamo  # noqa: F401 # pyright: ignore[reportMissingImports]
    except Exception:
        pass
    from .. import gpulock
    from ..bench import warm_compiled
    from ..env import precise_math
    from ..tasks import task_from

    precise_math()
    task = task_from(request.task, request.task_spec, request.config)
    task.prune("cuda")
    seed = new_seed(request.seed)
    imported = time.perf_counter()
    first_calls: dict[str, float] = {}
    compiled = warm_compiled(task, seed, log, first_calls)
    # where the warm-up went: the imports and the task, each configuration's first call (its
    # compile), and the rest of it ("warm-compile": torch.compile's setup)
    warm = {
        "imports": round(imported - started, 4),
        **{f"compile {name}": round(s, 4) for name, s in first_calls.items()},
        "warm-compile": round(max(0.0, time.perf_counter() - imported - sum(first_calls.values())), 4),
    }
    with gpulock.held_for_gpu_work() as waited:
        result, ceilings, info = _reference_alone(request, task, seed, compiled is not None, compiled)
    if compiled is None:
        result["notes"] = ["torch.compile could not compile the reference: not timed", *result["notes"]]
    result["phases"] = {**warm, "lock": round(waited, 4), **result["phases"]}
    return bench_record(task, info, ceilings, seed, result)
