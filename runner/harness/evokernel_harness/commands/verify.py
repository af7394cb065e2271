"""`verify`: the verdict on a candidate, the judge's (judge.py). Its stages (begin, load, the
verification of what loaded) are also the first two of `evaluate`'s cascade."""

from __future__ import annotations

import argparse
import os
import random
import time
from typing import TYPE_CHECKING, cast

from ..record import Record
from .common import default_cache, log, parse_defines, parse_flags
from .static import given_static

if TYPE_CHECKING:
    from ..candidates.load import Candidate
    from ..outputs import Dump
    from ..tasks import Task

    # _load_for_run: the task, the candidate's path and format, the static check's record and
    # the loaded candidate (None when the static check refused it)
    Loaded = tuple[Task, str, str, Record, Candidate | None]


def _load_for_run(args: argparse.Namespace, backend: str) -> Loaded:
    """Task, static check, build and load: a failure here is a record, not an exception. The
    static check is the one --static carries when the runner gives it (it ran `static` first)."""
    from ..candidates import CandidateError, detect_format, read_source
    from ..candidates.build import build
    from ..candidates.load import Candidate
    from ..env import cuda_arch
    from ..static_check import check
    from ..tasks import task_from

    task = task_from(args)
    task.prune(backend)
    path = args.candidate or task.baseline
    if not path:
        raise CandidateError(f"task {task.name} has no baseline kernel: pass --candidate FILE")
    source = read_source(path)
    fmt = detect_format(path, source)
    if args.static is not None:  # the runner's `static` of this candidate: checked once, in that process
        static = given_static(args.static, fmt)
    else:
        static = check(
            path, source, fmt, frozenset(task.reference_ops()), strict=backend != "cpu", libraries=task.libraries
        )
    if not static["ok"]:
        return task, path, fmt, static, None
    artifact = args.artifact
    if artifact is None:
        b = build(
            path,
            args.cache or default_cache(),
            parse_defines(args.defines),
            cuda_arch(),
            flags=parse_flags(args.nvcc_flags),
        )
        if not b["ok"]:
            raise CandidateError(b["log"][-4000:], kind="compile-error")
        artifact = b["artifact"]
    if backend == "cpu" and fmt != "py":  # checked and built, as far as the CPU goes
        raise CandidateError(cpu_cannot_verify(fmt, static), kind="no-gpu")
    return task, path, fmt, static, Candidate(path, artifact, task)


CPU_CHECK_ONLY = "CPU check only, not a verdict"


def cpu_cannot_verify(fmt: str, static: Record) -> str:
    """--device cpu on a CUDA candidate (issue 33.8): what the CPU checked instead, and why no
    verdict: never a hack verdict for a machine without a GPU."""
    notes = sum(1 for f in static["findings"] if f["severity"] == "warn")
    return (
        f"a CUDA candidate ({fmt} format) runs only on a CUDA GPU, and this is --device cpu: no verdict, "
        f"nothing of it ran. What the CPU can check it did: the static check (passed, {notes} notes) and the "
        "build (it compiles: nvcc needs no GPU). Verify it on a machine with a GPU; --device cpu runs Python "
        f"candidates only, and their pass is a {CPU_CHECK_ONLY}"
    )


def begin(args: argparse.Namespace, started: float) -> tuple[str | None, Record, float | None]:
    """A verify stage's seed, backend and record; the record is final at once when there is no
    backend. Returns (backend, rec, t0): t0 is when loading starts."""
    from ..env import device_backend, device_info, precise_math
    from ..judge import base_record

    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 2**31)
    backend = device_backend(args.device)
    rec = base_record(args, seed)
    if backend is None:
        return (
            None,
            {
                **rec,
                "reason": "no-gpu",
                "device": device_info("cpu"),
                "message": (
                    "no CUDA GPU on this machine: verification needs one (run on a GPU runner, or --device cpu for "
                    "Python candidates)"
                ),
            },
            None,
        )
    precise_math()
    rec["device"] = device_info(backend)
    t0 = time.perf_counter()
    # where the seconds go (as bench's phases): start, load, then the verifier's own, then
    # the own-kernel profile
    rec["phases"]["start"] = round(t0 - started, 4)
    return backend, rec, t0


def load(args: argparse.Namespace, backend: str, rec: Record) -> tuple[Loaded, None] | tuple[None, Record]:
    """_load_for_run, or the record of a task or candidate that does not load:
    returns (loaded, None) or (None, record)."""
    from ..candidates import CandidateError
    from ..tasks import TaskError

    try:
        return _load_for_run(args, backend), None
    except TaskError as err:
        return None, {**rec, "reason": "task-invalid", "message": str(err)}
    except CandidateError as err:
        if err.kind == "compile-error":
            return None, {**rec, "status": "compile-error", "reason": "compile-error", "message": str(err)}
        if err.kind == "no-gpu":  # the machine, not the candidate: no verdict (exit 3 in the CLI)
            return None, {**rec, "status": "error", "reason": "no-gpu", "message": str(err)}
        return None, {**rec, "status": "rejected", "reason": "load-error", "message": str(err)}


def verify_loaded(
    args: argparse.Namespace,
    rec: Record,
    backend: str,
    loaded: Loaded,
    t0: float,
    quick: bool,
    heldout: bool,
    dump: Dump | None = None,
) -> Record:
    """Verification of a loaded candidate (_load_for_run's result): the record of cmd_verify.
    dump: an outputs.Dump keeping each passing trial's outputs for the judge (judge.py)."""
    task, path, fmt, static, cand = loaded
    seed = rec["seed"]
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
    rec["seconds"]["load"] = time.perf_counter() - t0
    rec["phases"]["load"] = round(rec["seconds"]["load"], 4)
    from ..verify import verify

    result, verifier = verify(
        task,
        cand,
        backend,
        seed,
        include_heldout=heldout and not quick,
        trials=args.trials,
        log=log,
        quick=quick,
        dump=dump,
    )
    static_check = rec["checks"][0]
    static_warnings = rec["warnings"]
    rec.update({k: v for k, v in result.items() if k not in ("seconds", "phases")})
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

        after_verification(rec, task, cand, backend, own)
        if rec["ok"] and backend == "cuda" and not quick:  # the full verification's, once
            from ..verdict import check_streams

            profiled = time.perf_counter()
            check_streams(rec, task, cand, seed)
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


def cmd_verify(args: argparse.Namespace) -> Record:
    """The verdict is the judge's (judge.py): the candidate is verified in a process of its own
    and its passing outputs compared again where it never ran."""
    from ..judge import verify_judged

    return verify_judged(args, _verify_in_process)


def _verify_in_process(args: argparse.Namespace, dump: Dump | None) -> Record:
    """The verification in the candidate's process: its record is only a claim."""
    started = time.perf_counter()
    backend, rec, t0 = begin(args, started)
    if backend is None:
        return rec
    loaded, failed = load(args, backend, rec)
    if failed is not None:
        return failed
    # begin() gave a t0 with the backend; load() a Loaded where it gave no failure
    loaded, t0 = cast("Loaded", loaded), cast(float, t0)
    return verify_loaded(args, rec, backend, loaded, t0, quick=args.quick, heldout=args.heldout, dump=dump)
