"""`evaluate`: the search's cascade for one candidate in one process (quick check, full
verification, timing: the stages of stages.py), each stage's record written as soon as it ends."""

from __future__ import annotations

import time

from ..command_request import STAGES, EvaluateRequest
from ..record import BenchRecord, VerifyRecord
from .common import log, write_record
from .stages import Begun, Loaded, begin, bench_run, load, no_gpu_record, verify_loaded


def cmd_evaluate(request: EvaluateRequest) -> None:
    """The search's cascade for one candidate in one process: the quick check (smallest
    configuration), the full verification, then timing beside the baseline, exactly as
    `verify --quick`, `verify` and `bench` run them, with the task and the candidate loaded
    once. Each stage's record is written to its file (--quick-out, --verify-out, --bench-out)
    as soon as the stage ends; the first record that is not ok ends the run. Each stage draws
    its own seed, as each command does (--seed: the same for all three, as given to each).
    Between stages, what a fresh child had (_fresh). On the CPU (--device cpu) timing cannot
    run: the bench record says so. Returns None (nothing for --out)."""
    outs = request.outs()
    loaded: Loaded | None = None
    backend: str | None = None
    for stage in STAGES:
        started = time.perf_counter()
        if stage != "quick":
            _fresh(backend)
        if stage == "bench":
            record = _timing(request, started, backend, loaded)
        else:
            record, backend, loaded = _verification(request, started, loaded, quick=stage == "quick")
        write_record(record, outs[stage])
        log(f"evaluate: {stage} {'ok' if record['ok'] else 'not ok: ' + str(record.get('reason'))}")
        if not record["ok"]:
            break
    return None


def _verification(
    request: EvaluateRequest, started: float, loaded: Loaded | None, quick: bool
) -> tuple[VerifyRecord, str | None, Loaded | None]:
    """A verification stage: (its record, the backend, what is loaded). The first stage loads
    the task and the candidate, for all of them."""
    begun = begin(request, started)
    if not isinstance(begun, Begun):
        return begun, None, loaded
    if loaded is None:
        got = load(request, begun)
        if not isinstance(got, Loaded):
            return got, begun.backend, None
        loaded = got
    return verify_loaded(request, begun, loaded, quick=quick), begun.backend, loaded


def _timing(request: EvaluateRequest, started: float, backend: str | None, loaded: Loaded | None) -> BenchRecord:
    """The bench stage, after verifications that passed (so loaded their candidate)."""
    if loaded is None:
        raise AssertionError("evaluate times a candidate only after a verification of it passed")
    if backend != "cuda":
        return no_gpu_record(
            loaded.task.name,
            "evaluate --device cpu: verified on the CPU; timing needs a CUDA GPU, so bench did not run",
        )
    return bench_run(request, started, loaded.task, loaded.candidate, screen=True)


def _fresh(backend: str | None) -> None:
    """Between stages, what a fresh child had: garbage collected, the allocator's cache
    emptied, no memory fraction (verify sets one, bench never does)."""
    import gc

    gc.collect()
    if backend == "cuda":
        import torch

        torch.cuda.empty_cache()
        torch.cuda.set_per_process_memory_fraction(1.0)  # the whole GPU: a fresh child's default
