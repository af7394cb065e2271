"""`evaluate`: the search's cascade for one candidate in one process (quick check, full
verification, timing), each stage's record written as soon as it ends."""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, cast

from ..options import STAGES
from .bench import bench_run, no_gpu_record
from .common import log, write_record
from .verify import begin, load, verify_loaded

if TYPE_CHECKING:
    from ..record import Record
    from .verify import Loaded


def cmd_evaluate(args: argparse.Namespace) -> None:
    """The search's cascade for one candidate in one process: the quick check (smallest
    configuration), the full verification, then timing beside the baseline, exactly as
    `verify --quick`, `verify` and `bench` run them, with the task and the candidate loaded
    once. Each stage's record is written to its file (--quick-out, --verify-out, --bench-out)
    as soon as the stage ends; the first record that is not ok ends the run. Each stage draws
    its own seed, as each command does (--seed: the same for all three, as given to each).
    Between stages, what a fresh child had (_fresh). On the CPU (--device cpu) timing cannot
    run: the bench record says so. Returns None (nothing for --out)."""
    outs = {"quick": args.quick_out, "verify": args.verify_out, "bench": args.bench_out}
    loaded: Loaded | None = None
    backend: str | None = None
    for stage in STAGES:
        started = time.perf_counter()
        if stage != "quick":
            _fresh(backend)
        if stage == "bench":
            if backend != "cuda":
                record = no_gpu_record(
                    cast("Loaded", loaded)[0].name,  # the stages before loaded it
                    "evaluate --device cpu: verified on the CPU; timing needs a CUDA GPU, so bench did not run",
                )
            else:
                task, _, _, _, cand = cast("Loaded", loaded)
                record = bench_run(args, started, task, cand, screen=True)
        else:
            quick = stage == "quick"
            backend, rec, t0 = begin(args, started)
            record: Record | None = rec
            if backend is not None:
                if loaded is None:  # the first stage loads the task and the candidate, for all of them
                    loaded, record = load(args, backend, rec)
                if loaded is not None:
                    t0 = cast(float, t0)  # begin() gives one with a backend
                    record = verify_loaded(args, rec, backend, loaded, t0, quick=quick, heldout=args.heldout)
            record = cast("Record", record)  # load() gives a loaded candidate or a record
        write_record(record, outs[stage])
        log(f"evaluate: {stage} {'ok' if record['ok'] else 'not ok: ' + str(record.get('reason'))}")
        if not record["ok"]:
            break
    return None


def _fresh(backend: str | None) -> None:
    """Between stages, what a fresh child had: garbage collected, the allocator's cache
    emptied, no memory fraction (verify sets one, bench never does)."""
    import gc

    gc.collect()
    if backend == "cuda":
        import torch

        torch.cuda.empty_cache()
        torch.cuda.set_per_process_memory_fraction(1.0)  # the whole GPU: a fresh child's default
