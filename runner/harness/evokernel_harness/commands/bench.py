"""`bench`: timing of a candidate beside eager PyTorch, torch.compile, the baseline kernel and
the roofline floor (bench.py does the timing), judged (bench_judge.py): the kernels are timed in
a process of their own, the rest and the verdict in one that never loads them. Its unjudged run
(bench_run) is also the last stage of `evaluate` and `bench --screen`: the search's screen."""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from typing import TYPE_CHECKING, Any

from ..record import Record
from .common import SCHEMA, default_cache, log, write_record

if TYPE_CHECKING:
    from ..bench import JudgedSide
    from ..bench_judge import Judging
    from ..candidates.load import Candidate
    from ..tasks import Task


def no_gpu_record(task: str, message: str = "no CUDA GPU on this machine: timing needs one") -> Record:
    from ..env import device_info

    return {
        "schema": SCHEMA,
        "kind": "bench",
        "task": task,
        "ok": False,
        "reason": "no-gpu",
        "message": message,
        "device": device_info("cpu"),
        "ceilings": None,
        "configs": [],
        "seconds": 0.0,
    }


def bench_run(
    args: argparse.Namespace,
    started: float,
    task: Task,
    candidate: Candidate | None = None,
    screen: bool = False,
    judged: JudgedSide | None = None,
) -> Record:
    """Timing on a loaded task (pruned for CUDA): ceilings, the baseline, the candidate (loaded
    from --candidate/--artifact here unless one is given, already loaded), then bench().
    screen: the search's timing (evaluate): the candidate beside the baseline only (the search
    compares nothing else), with the short head start that timing.py checks call by call;
    bench's own timing keeps eager and the full head start. judged: bench's candidate side
    (bench_judge.py): the baseline and the candidate alone, with half the budget; no ceilings
    (the judge times eager and torch.compile with the other half, and computes the floor)."""
    from ..bench import bench
    from ..timing import HEAD_START_CYCLES, SCREEN_HEAD_START_CYCLES
    from ..candidates.build import build
    from ..candidates.load import Candidate
    from ..env import cuda_arch, device_info, precise_math

    precise_math()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 2**31)
    info = device_info("cuda")
    ceilings = None if judged is not None else _ceilings(args, info)

    def load(path: str | None, artifact: str | None) -> Candidate | None:
        if not path:
            return None
        if artifact is None:
            b = build(path, args.cache or default_cache(), [], cuda_arch())
            if not b["ok"]:
                raise SystemExit(f"cannot build {path}:\n{b['log'][-2000:]}")
            artifact = b["artifact"]
        return Candidate(path, artifact, task)

    baseline_path = args.baseline if args.baseline else (None if args.no_baseline else task.baseline)
    baseline = load(baseline_path, args.baseline_artifact)
    if candidate is None:
        candidate = load(args.candidate, args.artifact)
    loaded = round(time.perf_counter() - started, 4)
    probes = None
    if not args.no_probe_cache:
        from ..probe_cache import ProbeCache

        probes = ProbeCache(os.path.join(args.cache or default_cache(), "probe"))
    race = race_ceilings = None
    if screen and getattr(args, "race", None):
        race = _race_arg(args.race, "--race", "the leader's least favourable speedup there")
    if screen and getattr(args, "race_ceilings", None):
        race_ceilings = _race_arg(
            args.race_ceilings, "--race-ceilings", "the kernel to beat's time there over the roofline floor"
        )
    result = bench(
        task,
        candidate,
        baseline,
        ceilings,
        info,
        seed,
        log=log,
        budget_s=args.budget / 2 if judged is not None else args.budget,
        compile_baseline=not args.no_compile and judged is None,
        probe_cache=probes,
        head_start_cycles=SCREEN_HEAD_START_CYCLES if screen else HEAD_START_CYCLES,
        time_eager=not screen and judged is None,
        adaptive=screen,
        race=race,
        race_ceilings=race_ceilings,
        judged=judged,
    )
    # the task, the GPU, ceilings and the kernels loaded (a build, if none was given) come first
    result["phases"] = {"load": loaded, **result["phases"]}
    return _record(task, info, ceilings, seed, result, baseline_path, args.candidate)


def _record(
    task: Task,
    info: Record,
    ceilings: Record | None,
    seed: int,
    result: Record,
    baseline: str | None = None,
    candidate: str | None = None,
) -> Record:
    """A bench record: what was timed, where, with which seed, then bench()'s fields."""
    return {
        "schema": SCHEMA,
        "kind": "bench",
        "task": task.name,
        "device": info,
        "ceilings": ceilings,
        "baseline": os.path.abspath(baseline) if baseline else None,
        "candidate": os.path.abspath(candidate) if candidate else None,
        "seed": seed,
        **result,
    }


def _ceilings(args: argparse.Namespace, info: Record) -> Record:
    """The GPU's ceilings: read from --ceilings when they are this GPU's, else measured (and
    written there)."""
    ceilings = None
    if args.ceilings and os.path.exists(args.ceilings):
        with open(args.ceilings) as f:
            ceilings = json.load(f)
    if ceilings is None or ceilings.get("device") != info["name"]:
        from ..roofline import measure_ceilings

        ceilings = measure_ceilings(info["name"])
        if args.ceilings:
            write_record(ceilings, args.ceilings)
    return ceilings


def _race_arg(text: str, flag: str, what: str) -> dict[str, float]:
    """--race, --race-ceilings: a JSON object, configuration name → a positive number."""
    try:
        race = json.loads(text)
    except ValueError:
        race = None
    if not isinstance(race, dict) or not all(
        isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
        for k, v in race.items()
    ):
        raise SystemExit(f"{flag} takes a JSON object: configuration name → {what} (a positive number)")
    return {k: float(v) for k, v in race.items()}


def cmd_bench(args: argparse.Namespace) -> Record:
    """bench --screen: the search's timing, in one process (its candidate is verified again by
    a judged verify and bench before it counts). Otherwise judged (bench_judge.py)."""
    if args.screen:
        return _bench_in_process(args, time.perf_counter(), screen=True)
    if args.warm_compile:
        return _reference_warm(args)
    from ..bench_judge import bench_judged

    if args.seed is None:  # the judge chooses the seed: the candidate's process is told it
        args.seed = random.SystemRandom().randrange(1, 2**31)
    try:  # the first profile or flop count in a process imports it (5-7 s on the H100, as the
        # fork server knows): here, once, for the judge and the candidate's process it forks
        import torch._dynamo  # noqa: F401 # pyright: ignore[reportMissingImports]
    except Exception:  # older torch, or a broken install: each imports what it needs
        pass
    return bench_judged(
        args.task,
        lambda side: _bench_in_process(args, time.perf_counter(), judged=side),
        lambda: _judge_side(args),
    )


def _bench_in_process(
    args: argparse.Namespace, started: float, screen: bool = False, judged: JudgedSide | None = None
) -> Record:
    from ..bench import bench  # noqa: F401 — imported inside the "load" phase, as it always was
    from ..env import precise_math
    from ..tasks import task_from

    import torch

    if not torch.cuda.is_available():
        return no_gpu_record(args.task)
    precise_math()  # before the task's own code runs, as always (bench_run sets it again)
    task = task_from(args)
    task.prune("cuda")
    try:
        return bench_run(args, started, task, screen=screen, judged=judged)
    except SystemExit as e:  # "cannot build": its message and exit code, as Python gives them
        if judged is not None and isinstance(e.code, str):
            print(e.code, file=sys.stderr, flush=True)
            raise SystemExit(1) from None
        raise


def _judge_side(args: argparse.Namespace) -> tuple[Record, Judging | None]:
    """The judge's own bench, after the candidate's process has ended: the ceilings, then the
    reference alone (eager, torch.compile, probe, cost, floor) with the other half of the budget."""
    from ..bench_judge import Judging
    from ..env import precise_math
    from ..tasks import task_from

    import torch

    if not torch.cuda.is_available():
        return no_gpu_record(args.task), None
    precise_math()
    task = task_from(args)
    task.prune("cuda")
    own, ceilings, info = _reference_alone(args, task, args.seed, compile_baseline=not args.no_compile)
    baseline = args.baseline if args.baseline else (None if args.no_baseline else task.baseline)
    judging = Judging(
        task,
        torch.device("cuda"),
        args.seed,
        os.path.abspath(baseline) if baseline else None,
        os.path.abspath(args.candidate) if args.candidate else None,
    )
    return {**own, "task": task.name, "device": info, "ceilings": ceilings}, judging


def _reference_alone(
    args: argparse.Namespace, task: Task, seed: int, compile_baseline: bool, compiled: Any = None
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
    if args.ceilings:
        write_record(ceilings, args.ceilings)
    probes = None
    if not args.no_probe_cache:
        from ..probe_cache import CostMeasured

        probes = CostMeasured(os.path.join(args.cache or default_cache(), "probe"))
    own = bench(
        task,
        None,
        None,
        ceilings,
        info,
        seed,
        log=log,
        budget_s=args.budget / 2,
        compile_baseline=compile_baseline,
        probe_cache=probes,
        compiled=compiled,
    )
    return own, ceilings, info


def _reference_warm(args: argparse.Namespace) -> Record:
    """bench --warm-compile: the reference alone, as a judged bench's judge times it (eager and
    torch.compile with half the budget, the ceilings measured, the floor), with torch.compile's
    baseline compiled for every visible configuration before the GPU's lock is taken. The search
    runs beside the compile (its few GPU calls, inductor's autotuning included, may overlap the
    search's screen, never a final timing); the timing waits for the lock. `optimize` takes
    torch.compile's times from here, so its final timings skip their warm-up (10-13 s on the H100)."""
    if args.candidate or args.baseline or not args.no_baseline or args.no_compile:
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
        return no_gpu_record(args.task)
    try:  # as a judged bench does: dynamo imported once, before the first compile
        import torch._dynamo  # noqa: F401 # pyright: ignore[reportMissingImports]
    except Exception:
        pass
    from .. import gpulock
    from ..bench import warm_compiled
    from ..env import precise_math
    from ..tasks import task_from

    precise_math()
    task = task_from(args)
    task.prune("cuda")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 2**31)
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
        result, ceilings, info = _reference_alone(args, task, seed, compiled is not None, compiled)
    if compiled is None:
        result["notes"] = ["torch.compile could not compile the reference: not timed", *result["notes"]]
    result["phases"] = {**warm, "lock": round(waited, 4), **result["phases"]}
    return _record(task, info, ceilings, seed, result)
