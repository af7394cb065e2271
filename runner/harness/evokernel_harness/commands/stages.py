"""The stages `verify`, `bench` and `evaluate` share: a verification's start (begin), the task
and the candidate loaded (load), the verification of what loaded (verify_loaded), and the
timing of a loaded task (bench_run). `verify` runs the first three in the candidate's process
(judge.py decides); `bench --screen` runs the last; `evaluate`, the search's cascade, runs them
all in one process (quick check, full verification, timing), with the task and the candidate
loaded once."""

from __future__ import annotations

import copy
import json
import os
import random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeGuard, Union

from ..command_request import BenchRequest, EvaluateRequest, VerifyRequest
from ..record import BenchRecord, Record, StaticRecord, VerifyRecord
from .common import SCHEMA, default_cache, log, parse_defines, parse_flags, write_record

if TYPE_CHECKING:
    from ..bench import JudgedSide
    from ..candidates.load import Candidate
    from ..outputs import Dump
    from ..tasks import Task

Verification = Union[VerifyRequest, EvaluateRequest]  # the requests that verify a candidate
Timing = Union[BenchRequest, EvaluateRequest]  # the requests that time one


def new_seed(seed: int | None) -> int:
    """The request's seed, or a fresh one when it gives none."""
    return seed if seed is not None else random.SystemRandom().randrange(1, 2**31)


# --- verification --------------------------------------------------------------------
@dataclass(frozen=True)
class Loaded:
    """A verification's task and candidate (load): the candidate is None when the static check
    refused it (nothing of it was built or loaded)."""

    task: Task
    path: str
    fmt: str
    static: StaticRecord
    candidate: Candidate | None


@dataclass(frozen=True)
class Begun:
    """A verification started on a machine that can run it: its backend, its record so far, when
    loading starts, and its seed (the record's, never None here)."""

    backend: str
    rec: VerifyRecord
    t0: float
    seed: int


def _load_for_run(request: Verification, backend: str) -> Loaded:
    """Task, static check, build and load: a failure here is a record, not an exception. The
    static check is the one the request's `static` carries when the runner gives it (it ran
    `static` first)."""
    from ..candidates import CandidateError, detect_format, read_source
    from ..candidates.build import build
    from ..candidates.load import Candidate
    from ..env import cuda_arch
    from ..static_check import check
    from ..tasks import task_from

    task = task_from(request.task, request.task_spec, request.config)
    task.prune(backend)
    path = request.candidate or task.baseline
    if not path:
        raise CandidateError(f"task {task.name} has no baseline kernel: pass --candidate FILE")
    source = read_source(path)
    fmt = detect_format(path, source)
    if request.static is not None:  # the runner's `static` of this candidate: checked once, in that process
        static = given_static(request.static, fmt)
    else:
        static = check(
            path, source, fmt, frozenset(task.reference_ops()), strict=backend != "cpu", libraries=task.libraries
        )
    if not static["ok"]:
        return Loaded(task, path, fmt, static, None)
    artifact = request.artifact
    if artifact is None:
        b = build(
            path,
            request.cache or default_cache(),
            parse_defines(request.defines),
            cuda_arch(),
            flags=parse_flags(request.nvcc_flags),
        )
        if not b["ok"]:
            raise CandidateError(b["log"][-4000:], kind="compile-error")
        artifact = b["artifact"]
    if backend == "cpu" and fmt != "py":  # checked and built, as far as the CPU goes
        raise CandidateError(cpu_cannot_verify(fmt, static), kind="no-gpu")
    return Loaded(task, path, fmt, static, Candidate(path, artifact, task))


def given_static(text: str, fmt: str) -> StaticRecord:
    """--static's record (verify's and evaluate's): the static check `static` gave for this
    candidate, held to the shape `static` writes so that anything else stops here."""
    try:
        record = json.loads(text)
    except ValueError:
        record = None
    if not _is_static_record(record, fmt):
        raise SystemExit(f"--static must be this {fmt} candidate's record from `static`")
    return record


FINDING_FIELDS = ("code", "hack", "line", "text", "message")


def _is_static_record(record: object, fmt: str) -> TypeGuard[StaticRecord]:
    if not isinstance(record, dict) or record.get("kind") != "static" or record.get("format") != fmt:
        return False
    findings = record.get("findings")
    if not isinstance(findings, list) or not all(
        isinstance(f, dict) and f.get("severity") in ("reject", "warn") and all(k in f for k in FINDING_FIELDS)
        for f in findings
    ):
        return False
    ok = record.get("ok")
    return isinstance(ok, bool) and ok == all(f["severity"] != "reject" for f in findings)


CPU_CHECK_ONLY = "CPU check only, not a verdict"


def cpu_cannot_verify(fmt: str, static: StaticRecord) -> str:
    """--device cpu on a CUDA candidate (issue 33.8): what the CPU checked instead, and why no
    verdict: never a hack verdict for a machine without a GPU."""
    notes = sum(1 for f in static["findings"] if f["severity"] == "warn")
    return (
        f"a CUDA candidate ({fmt} format) runs only on a CUDA GPU, and this is --device cpu: no verdict, "
        f"nothing of it ran. What the CPU can check it did: the static check (passed, {notes} notes) and the "
        "build (it compiles: nvcc needs no GPU). Verify it on a machine with a GPU; --device cpu runs Python "
        f"candidates only, and their pass is a {CPU_CHECK_ONLY}"
    )


def begin(request: Verification, started: float) -> Begun | VerifyRecord:
    """A verify stage's seed, backend and record: Begun, or the final record when there is no
    backend."""
    from ..env import device_backend, device_info, precise_math
    from ..judge import base_record

    seed = new_seed(request.seed)
    backend = device_backend(request.device)
    rec = base_record(request.task, request.candidate, seed)
    if backend is None:
        return {
            **rec,
            "reason": "no-gpu",
            "device": device_info("cpu"),
            "message": (
                "no CUDA GPU on this machine: verification needs one (run on a GPU runner, or --device cpu for "
                "Python candidates)"
            ),
        }
    precise_math()
    rec["device"] = device_info(backend)
    t0 = time.perf_counter()
    # where the seconds go (as bench's phases): start, load, then the verifier's own, then
    # the own-kernel profile
    rec["phases"]["start"] = round(t0 - started, 4)
    return Begun(backend, rec, t0, seed)


def load(request: Verification, begun: Begun) -> Loaded | VerifyRecord:
    """_load_for_run, or the record of a task or candidate that does not load."""
    from ..candidates import CandidateError
    from ..tasks import TaskError

    rec = begun.rec
    try:
        return _load_for_run(request, begun.backend)
    except TaskError as err:
        return {**rec, "reason": "task-invalid", "message": str(err)}
    except CandidateError as err:
        if err.kind == "compile-error":
            return {**rec, "status": "compile-error", "reason": "compile-error", "message": str(err)}
        if err.kind == "no-gpu":  # the machine, not the candidate: no verdict (exit 3 in the CLI)
            return {**rec, "status": "error", "reason": "no-gpu", "message": str(err)}
        return {**rec, "status": "rejected", "reason": "load-error", "message": str(err)}


def verify_loaded(
    request: Verification,
    begun: Begun,
    loaded: Loaded,
    quick: bool,
    dump: Dump | None = None,
) -> VerifyRecord:
    """Verification of a loaded candidate (load's result): the record of cmd_verify, a new one
    (begun's stays as it was). quick: the smallest visible configuration only; otherwise the
    held-out ones too when the request says so. dump: an outputs.Dump keeping each passing
    trial's outputs for the judge (judge.py)."""
    task, path, fmt, static, cand = loaded.task, loaded.path, loaded.fmt, loaded.static, loaded.candidate
    backend = begun.backend
    rec = copy.deepcopy(begun.rec)
    seed = begun.seed
    rec.update(task=task.name, candidate=os.path.abspath(path), format=fmt)
    rec["warnings"] += task.notes
    rec["checks"].append({"name": "static", "ok": static["ok"], "detail": f"{len(static['findings'])} findings"})
    # static findings are evidence: warnings here, confirmed or not by what the run shows
    rec["warnings"] += [
        f"static check, line {f['line']}: {f['message']}" for f in static["findings"] if f["severity"] == "warn"
    ]
    if cand is None:
        first = next(f for f in static["findings"] if f["severity"] == "reject")
        return {
            **rec,
            "status": "rejected",
            "reason": first["code"],
            "hack": first["hack"],
            "message": f"static check, line {first['line']}: {first['message']} ({first['text']})",
            "static": static,
        }
    if backend == "cuda":
        import torch

        torch.cuda.set_per_process_memory_fraction(float(os.environ.get("EVOKERNEL_GPU_MEM_FRACTION", "0.9")))
    rec["seconds"]["load"] = time.perf_counter() - begun.t0
    rec["phases"]["load"] = round(rec["seconds"]["load"], 4)
    from ..verify import verify

    result, verifier = verify(
        task,
        cand,
        backend,
        seed,
        include_heldout=request.heldout and not quick,
        trials=request.trials,
        log=log,
        quick=quick,
        dump=dump,
    )
    static_check = rec["checks"][0]
    static_warnings = rec["warnings"]
    rec = VerifyRecord(**{**rec, **{k: v for k, v in result.items() if k not in ("seconds", "phases")}})
    rec["phases"].update(result["phases"])
    rec["checks"] = [static_check] + result["checks"]
    rec["warnings"] = static_warnings + result["warnings"]
    rec["seconds"]["verify"] = result["seconds"]
    own = None
    if rec["ok"] and backend == "cuda" and fmt != "evk":  # evk code cannot reach torch at all
        from ..own_kernel import check_own_kernel

        cases = ((c.name, task.make_case(c, seed, "cuda")) for c in task.visible_configs())
        profiled = time.perf_counter()
        own = check_own_kernel(cand, task, cases, libraries=task.libraries)
        rec["phases"]["profiler"] = round(time.perf_counter() - profiled, 4)
        rec["checks"].append({"name": "own-kernel-ran", "ok": own["ok"], "detail": own["detail"]})
        rec["kernelShares"] = own["shares"]
        rec["libraryKernels"] = own["libraryKernels"]
    if rec["ok"]:
        from ..verdict import after_verification

        rec = after_verification(rec, task, cand, backend, own)
        if rec["ok"] and backend == "cuda" and not quick:  # the full verification's, once
            from ..verdict import check_streams

            profiled = time.perf_counter()
            rec = check_streams(rec, task, cand, seed)
            rec["phases"]["profiler"] = round(rec["phases"].get("profiler", 0.0) + time.perf_counter() - profiled, 4)
    elif cand is not None:
        from ..evidence import summary

        # a refusal for another reason still says what its code handled (a failed build …)
        rec["warnings"] += summary(cand.evidence.handled())
    if rec["ok"] and backend == "cpu":
        rec["warnings"].append(
            f"{CPU_CHECK_ONLY}: its outputs were right on the CPU, but whose kernels did the work, its streams "
            "and its timing are checked on a GPU only"
        )
    return rec


# --- timing --------------------------------------------------------------------------
def no_gpu_record(task: str, message: str = "no CUDA GPU on this machine: timing needs one") -> BenchRecord:
    """The bench record of a machine without a CUDA GPU."""
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
    request: Timing,
    started: float,
    task: Task,
    candidate: Candidate | None = None,
    screen: bool = False,
    judged: JudgedSide | None = None,
) -> BenchRecord:
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
    seed = new_seed(request.seed)
    info = device_info("cuda")
    ceilings = None if judged is not None else _ceilings(request.ceilings, info)

    def load(path: str | None, artifact: str | None) -> Candidate | None:
        if not path:
            return None
        if artifact is None:
            b = build(path, request.cache or default_cache(), [], cuda_arch())
            if not b["ok"]:
                raise SystemExit(f"cannot build {path}:\n{b['log'][-2000:]}")
            artifact = b["artifact"]
        return Candidate(path, artifact, task)

    baseline_path = request.baseline if request.baseline else (None if request.no_baseline else task.baseline)
    baseline = load(baseline_path, request.baseline_artifact)
    if candidate is None:
        candidate = load(request.candidate, request.artifact)
    loaded = round(time.perf_counter() - started, 4)
    probes = None
    if not request.no_probe_cache:
        from ..probe_cache import ProbeCache

        probes = ProbeCache(os.path.join(request.cache or default_cache(), "probe"))
    race = race_ceilings = None
    if screen and request.race:
        race = _race_arg(request.race, "--race", "the leader's least favourable speedup there")
    if screen and request.race_ceilings:
        race_ceilings = _race_arg(
            request.race_ceilings, "--race-ceilings", "the kernel to beat's time there over the roofline floor"
        )
    result = bench(
        task,
        candidate,
        baseline,
        ceilings,
        info,
        seed,
        log=log,
        budget_s=request.budget / 2 if judged is not None else request.budget,
        compile_baseline=not request.no_compile and judged is None,
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
    return bench_record(task, info, ceilings, seed, result, baseline_path, request.candidate)


def bench_record(
    task: Task,
    info: Record,
    ceilings: Record | None,
    seed: int,
    result: Record,
    baseline: str | None = None,
    candidate: str | None = None,
) -> BenchRecord:
    """A bench record: what was timed, where, with which seed, then bench()'s fields."""
    return BenchRecord(
        **{
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
    )


def _ceilings(path: str | None, info: Record) -> Record:
    """The GPU's ceilings: read from the file `path` (--ceilings) when they are this GPU's, else
    measured (and written there)."""
    ceilings = None
    if path and os.path.exists(path):
        with open(path) as f:
            ceilings = json.load(f)
    if ceilings is None or ceilings.get("device") != info["name"]:
        from ..roofline import measure_ceilings

        ceilings = measure_ceilings(info["name"])
        if path:
            write_record(ceilings, path)
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
