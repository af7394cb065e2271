"""`bench`: timing of a candidate beside eager PyTorch, torch.compile, the baseline kernel and
the roofline floor (bench.py does the timing). Its run is also the last stage of `evaluate`."""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from typing import TYPE_CHECKING

from ..record import Record
from .common import SCHEMA, default_cache, log, write_record

if TYPE_CHECKING:
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
    args: argparse.Namespace, started: float, task: Task, candidate: Candidate | None = None, screen: bool = False
) -> Record:
    """Timing on a loaded task (pruned for CUDA): ceilings, the baseline, the candidate (loaded
    from --candidate/--artifact here unless one is given, already loaded), then bench().
    The record of cmd_bench. screen: the search's timing (evaluate): the candidate beside the
    baseline only (the search compares nothing else), with the short head start that timing.py
    checks call by call; bench's own timing keeps eager and the full head start."""
    from ..bench import bench
    from ..timing import HEAD_START_CYCLES, SCREEN_HEAD_START_CYCLES
    from ..candidates.build import build
    from ..candidates.load import Candidate
    from ..env import cuda_arch, device_info, precise_math

    precise_math()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 2**31)
    info = device_info("cuda")
    ceilings = None
    if args.ceilings and os.path.exists(args.ceilings):
        with open(args.ceilings) as f:
            ceilings = json.load(f)
    if ceilings is None or ceilings.get("device") != info["name"]:
        from ..roofline import measure_ceilings

        ceilings = measure_ceilings(info["name"])
        if args.ceilings:
            write_record(ceilings, args.ceilings)

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
    race = None
    if screen and getattr(args, "race", None):
        race = _race_arg(args.race)
    result = bench(
        task,
        candidate,
        baseline,
        ceilings,
        info,
        seed,
        log=log,
        budget_s=args.budget,
        compile_baseline=not args.no_compile,
        probe_cache=probes,
        head_start_cycles=SCREEN_HEAD_START_CYCLES if screen else HEAD_START_CYCLES,
        time_eager=not screen,
        adaptive=screen,
        race=race,
    )
    # the task, the GPU, ceilings and the kernels loaded (a build, if none was given) come first
    result["phases"] = {"load": loaded, **result["phases"]}
    return {
        "schema": SCHEMA,
        "kind": "bench",
        "task": task.name,
        "device": info,
        "ceilings": ceilings,
        "baseline": os.path.abspath(baseline_path) if baseline_path else None,
        "candidate": os.path.abspath(args.candidate) if args.candidate else None,
        "seed": seed,
        **result,
    }


def _race_arg(text: str) -> dict[str, float]:
    """--race: a JSON object, configuration name → the leader's least favourable speedup there."""
    try:
        race = json.loads(text)
    except ValueError:
        race = None
    if not isinstance(race, dict) or not all(
        isinstance(k, str) and isinstance(v, (int, float)) and v > 0 for k, v in race.items()
    ):
        raise SystemExit("--race takes a JSON object: configuration name → a positive speedup")
    return {k: float(v) for k, v in race.items()}


def cmd_bench(args: argparse.Namespace) -> Record:
    started = time.perf_counter()
    from ..bench import bench  # noqa: F401 — imported inside the "load" phase, as it always was
    from ..env import precise_math
    from ..tasks import load_task

    import torch

    if not torch.cuda.is_available():
        return no_gpu_record(args.task)
    precise_math()  # before the task's own code runs, as always (bench_run sets it again)
    task = load_task(args.task)
    task.prune("cuda")
    return bench_run(args, started, task, screen=args.screen)
