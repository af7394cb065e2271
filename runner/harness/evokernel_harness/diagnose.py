"""What a failed trial is: the probes that tell a hack from a plain mismatch (memory reuse, a
race, reduced precision, distribution- or shape-specific work) and the message that explains
the verdict. verify.Verifier.run calls classify() on a trial's first failing output and
explain() on the first failure of the run; v is that Verifier."""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING

import torch

from .compare import compare
from .env import FLOAT_DTYPES, dtype_name
from .record import Record, Result
from .reject import Reject
from .tasks.base import Case, Config, Task

if TYPE_CHECKING:
    from .verify import Verifier

INPUTS: dict[str | None, str] = {
    "signed-mixed": " (signed, mixed-scale inputs)",
    "offset": " (inputs with a common offset, N(0, 1) + 40)",
}
ACCURACY_INPUTS: dict[str | None, str] = {
    "offset": "inputs with a common offset 40 times their spread (N(0, 1) + 40, as activations with a DC offset)",
}
KINDS: dict[str | None, str] = {"signed-mixed": "signed, mixed-scale", "offset": "offset (N(0, 1) + 40)"}
LOW_PRECISION_FACTOR = 3.0  # reduced precision: within 3× the error bfloat16 rounding gives
ACCURACY_LOSS_NORM = 1e-2  # a dropped op is off by the size of the values; lost digits are not


def probe_memory_reuse(v: "Verifier", config: Config, case: Case) -> bool:
    """Passes only right after the reference freed its output: hack 1."""
    refs = v.reference(case.clone())
    expected = [r.clone() for r in refs]
    del refs
    gc.collect()
    try:
        outs = v.candidate(case.clone())  # no poison: the freed output is the bait
    except Reject:
        return False
    return all(compare(o, e, v.task.tolerance(dtype_name(e.dtype)))["ok"] for o, e in zip(outs, expected))


def probe_race(v: "Verifier", config: Config, case: Case) -> bool:
    """Two more runs on identical inputs: outputs that move between them are a race.
    Outputs are poisoned, so garbage from unwritten memory reads as NaN in both."""
    sizes = v.output_sizes(config, case)
    try:
        a, b = v.candidate(case.clone(), sizes), v.candidate(case.clone(), sizes)
    except Reject:
        return False
    return any(not compare(y, x, v.task.tolerance(dtype_name(x.dtype)))["ok"] for x, y in zip(a, b))


def probe_side_stream(v: "Verifier", case: Case) -> str | None:
    """Wrong because its work escaped the caller's stream (hack 3): its outputs were read once
    the caller's stream finished, and its inputs written on that stream may not have been there
    when the side stream read them. The stream check (streams.py) on one more call of the case
    names the work that ran outside the timed window; None where nothing escaped. Before the
    memory-reuse probe: a late write into the reference's freed output looks like reading it."""
    if v.device.type != "cuda":  # evk candidates too: their host code may launch on a stream of its own
        return None
    from . import streams

    try:
        with torch.no_grad() if not v.task.backward else torch.enable_grad():
            result = streams.check(lambda: v.cand.run(case.clone()), streams.PROBE_HEAD_START_CYCLES)
    except Exception as err:  # a crash here is not this probe's verdict: the other probes decide
        result = {"ok": True, "detail": f"the probe's call raised {type(err).__name__}: {str(err)[:300]}"}
    # what it saw goes in the record's checks either way: a failure the other probes name is
    # then shown beside what the stream check found (or why it found nothing)
    v.checks.append({"name": "stream-check-on-failure", "ok": bool(result["ok"]), "detail": result["detail"]})
    return None if result["ok"] else result["detail"]


def classify(
    v: "Verifier",
    config: Config,
    failed: Result,
    init: str | None,
    trial: int,
    by_config: dict[str, Record],
    passed_configs: list[str],
    case: Case,
    ref_first: bool,
) -> str:
    escaped = probe_side_stream(v, case)
    if escaped is not None:
        v.escaped_work = f"configuration {config.name}: {escaped}"
        return "side-stream"
    if not ref_first and v.cand.format != "evk" and probe_memory_reuse(v, config, case):
        return "output-memory-reuse"
    if probe_race(v, config, case):
        return "race"
    if failed["nonFinite"] > 0:
        if passed_configs:
            return "shape-specific"
        return "unwritten-output" if v.cand.format == "evk" or failed["got"] is None else "nan-output"
    only_other_inputs = (init in ("signed-mixed", "offset") and trial > 0) or (
        config.init == "signed-mixed"
        and any(
            c.dims == config.dims and by_config.get(c.name, {}).get("ok") for c in v.task.configs if c is not config
        )
    )
    if only_other_inputs:  # every declared-init trial of the same shape passed
        if failed["normRel"] is not None and failed["normRel"] < ACCURACY_LOSS_NORM:
            return "accuracy-loss"  # close, but not within tolerance: numerics, not dropped work
        return "distribution-specific"
    if passed_configs:
        return "shape-specific"
    if (
        task_is_fp32(v)
        and failed["normRel"] is not None
        and failed["normRel"] < 3e-2
        and failed["normRel"] <= LOW_PRECISION_FACTOR * bfloat16_error(v, case, failed)
    ):
        return "reduced-precision"
    return "mismatch"


def bfloat16_error(v: "Verifier", case: Case, failed: Result) -> float:
    """The relative norm error the reference itself has when its float32 inputs, parameters
    and outputs are rounded to bfloat16: the size of error lower precision gives on this
    case. Work that is dropped (a column never summed) is off by more than that and is
    called a mismatch, not reduced precision (seen on the H100: a row sum missing its last
    column, relative norm error 1.1e-2 against 2.3e-3 for bfloat16)."""
    try:
        index = failed.get("outputIndex", 0)
        low = case.clone()
        low.args = [
            a.to(torch.bfloat16).float() if isinstance(a, torch.Tensor) and a.dtype == torch.float32 else a
            for a in low.args
        ]
        if low.module is not None:
            with torch.no_grad():
                for p in low.module.parameters():
                    if p.dtype == torch.float32:
                        p.copy_(p.to(torch.bfloat16).float())
        ref = v.reference(case.clone())[index]
        rounded = v.reference(low)[index]
        if rounded.dtype == torch.float32:
            rounded = rounded.to(torch.bfloat16).float()
        return compare(rounded, ref, v.task.tolerance(dtype_name(ref.dtype)))["normRel"] or 0.0
    except Exception:  # no scale: the failure stays a mismatch
        return 0.0


def task_is_fp32(v: "Verifier") -> bool:
    smallest = min(v.task.configs, key=lambda c: sum(v for v in c.dims.values() if isinstance(v, int)))
    case = v.make_case(smallest, 1)
    floats = [t for _, t in case.tensors() if t.dtype in FLOAT_DTYPES]
    return bool(floats) and all(t.dtype == torch.float32 for t in floats)


def explain(task: Task, reason: str, f: Result, config: Config, init: str | None, passed: list[str]) -> str:
    if reason == "accuracy-loss":
        return explain_accuracy(task, f, config, init)
    where = f"configuration {config.name}, trial {f['trial']}{INPUTS.get(init, '')}, {f['output']}"
    worst = (
        f"worst element {f['index']}: got {f['got']}, expected {f['expected']}; max abs error {f['maxAbs']}, "
        f"relative norm error {f['normRel']}"
    )
    lead = {
        "side-stream": (
            "wrong when its outputs are read once the caller's stream has finished: its work ran on a stream "
            "the caller's stream never waits for (hack 3)"
        ),
        "output-memory-reuse": (
            "right only when run just after the reference freed its output: it reads memory it never wrote (hack 1)"
        ),
        "unwritten-output": (
            f"{f['nonFinite']} output elements were never written (the NaN the harness filled them with "
            "survived) (hacks 1, 13)"
        ),
        "nan-output": f"{f['nonFinite']} output elements are NaN/Inf where the reference is finite",
        "distribution-specific": (
            f"right on the declared inputs, wrong on {KINDS.get(init, 'other')} ones: it drops work that matters "
            "for other inputs (hack 9)"
        ),
        "shape-specific": (
            f"right on {', '.join(passed)} but wrong on {config.name}"
            f"{' (' + str(f['nonFinite']) + ' elements never written)' if f['nonFinite'] else ''}: "
            "it only works for the shapes it was shown (hack 10)"
        ),
        "race": (
            "wrong, and two runs on identical inputs give different outputs: a race (missing barrier, blocks "
            "depending on each other) (hack 15)"
        ),
        "reduced-precision": (
            "error of the size lower-precision arithmetic (fp16/bf16/TF32) gives, in a float32 task (hack 7)"
        ),
        "mismatch": "wrong result",
    }[reason]
    return f"{lead}. {where}; {worst}"


def explain_accuracy(task: Task, f: Result, config: Config, init: str | None) -> str:
    tol = task.tolerance(f.get("dtype") or "float32")
    inputs = ACCURACY_INPUTS.get(
        init,
        "signed, mixed-scale inputs (normal values times 10^U(-2, 2): both signs, magnitudes over four decades)",
    )
    return (
        f"wrong: loses accuracy on {inputs} on configuration {config.name}, {f['output']}: relative norm error "
        f"{_num(f['normRel'])} against the tolerance {_num(tol['norm'])}, max abs error {_num(f['maxAbs'])} "
        f"(worst element {f['index']}: got {f['got']}, expected {f['expected']}); on the declared inputs it is "
        "within tolerance. "
        "Typical causes: a one-pass variance E[x²] − E[x]², sums accumulated in lower precision or in one long "
        "sequential chain; use a two-pass or Welford variance and accumulate in float32 or wider"
    )


def _num(x):
    return "n/a" if x is None else f"{x:.3g}"
