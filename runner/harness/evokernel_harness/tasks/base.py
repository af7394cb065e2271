"""What every task shape (native, KernelBench, robust-kbench) looks like to the verifier.

A task turns a configuration and a seed into a Case (the arguments of the function under
test, and for module-based tasks the module holding the parameters), runs the reference on
a case, and runs a candidate's entry on a case the same way.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

Device = torch.device | str
Entry = Callable[..., Any]  # a reference's or a candidate's entry: called with a case's args
Outputs = tuple[torch.Tensor, ...]
Tolerance = dict[str, float]  # atol, rtol, norm

DEFAULT_TOLERANCE: dict[str, Tolerance] = {
    # fp32: far under what fp16/bf16/TF32 arithmetic gives (~3e-4 and up)
    "float32": {"atol": 1e-5, "rtol": 1e-5, "norm": 1e-5},
    "float64": {"atol": 1e-9, "rtol": 1e-9, "norm": 1e-10},
    "float16": {"atol": 1e-3, "rtol": 1e-3, "norm": 1e-3},
    "bfloat16": {"atol": 1e-2, "rtol": 1e-2, "norm": 5e-3},
}


class TaskError(ValueError):
    """The task itself is malformed or unusable; the message says what to fix."""


@dataclass
class Config:
    name: str
    dims: dict
    init: str | None = None  # default init of float inputs (None: the task's own)
    dtype: str | None = None  # override of float input dtypes
    heldout: bool = False
    derived: bool = False
    extra: dict = field(default_factory=dict)
    # its place among the task's visible configurations when --config chose some (None: its
    # place in the list run): bench seeds a configuration's inputs by it
    seed_slot: int | None = None


@dataclass
class Case:
    args: list  # tensors and scalars, in the order the entry receives them
    # the torch.nn.Module holding the parameters (KernelBench's, robust-kbench's Model; always
    # there in their cases), None for function tasks: Any, as those tasks call it unchecked
    module: Any = None
    meta: dict = field(default_factory=dict)

    def clone(self) -> Case:
        args = [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in self.args]
        module = copy.deepcopy(self.module) if self.module is not None else None
        return Case(args=args, module=module, meta=dict(self.meta))

    def tensors(self) -> list[tuple[str, torch.Tensor]]:
        """Every tensor the implementation can see: arguments and module state."""
        out = [(f"arg{i}", a) for i, a in enumerate(self.args) if isinstance(a, torch.Tensor)]
        if self.module is not None:
            out += [(f"param:{n}", p) for n, p in self.module.named_parameters()]
            out += [(f"buffer:{n}", b) for n, b in self.module.named_buffers()]
        return out


class Task:
    name: str = ""
    format: str = ""
    path: str = ""
    backward: bool = False
    baseline: str | None = None
    entry: str = "forward"
    libraries: str = "allow"  # "deny": no vendor-library kernels in a candidate (own_kernel.py)
    # "require": a candidate must run kernels of its own (a PyTorch rewrite is refused, saying
    # so); "allow": a rewrite is verified and timed like any candidate, reported as a rewrite
    own_kernels: str = "allow"

    def own_kernels_rule(self) -> str:
        """Why this task requires own kernels, in a refusal's words."""
        return 'the task says "ownKernels": "require"'

    def __init__(self) -> None:
        self.configs: list[Config] = []
        self.notes: list[str] = []
        self.tolerances: dict[str, Tolerance] = dict(DEFAULT_TOLERANCE)
        # --config named the configurations to run (held-out ones run without --heldout)
        self.selected = False

    # --- to implement -------------------------------------------------------------
    def make_case(self, config: Config, seed: int, device: Device, init: str | None = None) -> Case:
        raise NotImplementedError

    def reference_entry(self) -> Entry | None:
        """A callable with the candidate entry's signature that computes the reference."""
        raise NotImplementedError

    def meta_entry(self, case: Case) -> Entry | None:
        """A callable with the entry's signature whose outputs have the shapes the entry
        must produce (evk candidates get their outputs allocated from it)."""
        return self.reference_entry()

    def invoke(self, entry: Any, case: Case) -> Outputs:
        """Run an entry (reference or candidate) on a case; returns a tuple of tensors."""
        return as_tuple(entry(*case.args))

    def staged(self, entry: Any, case: Case) -> Callable[[], Any]:
        """Set-up done now, and the call to profile returned: for most tasks the whole call;
        a backward task runs its forward pass first, outside the returned call."""
        return lambda: self.invoke(entry, case)

    def staged_candidate(self, candidate: Any, case: Case) -> Callable[[], Any]:
        """staged() for a loaded candidate. A KernelBench ModelNew is built on its first call
        of a case (its parameters' random init launches kernels of PyTorch's): that call runs
        here, outside what is profiled."""
        if getattr(candidate, "entry", None) is None:
            candidate.run(case)
            return lambda: candidate.run(case)
        if candidate.format == "evk":
            return lambda: candidate.run(case)
        return self.staged(candidate.entry, case)

    def instantiate(self, module_cls: type, case: Case) -> torch.nn.Module:
        raise TaskError(f"{self.format} tasks take function candidates, not a ModelNew class")

    def reference_ops(self) -> set[str]:
        """Names of the torch ops the reference calls (a candidate calling them falls back)."""
        return set()

    def cost(self, config: Config, case: Case, outputs: Outputs) -> tuple[int, int]:
        """(bytes, flops) for the roofline: inputs read once, outputs written once; flops
        counted on a run of the reference (matrix products, convolutions, attention: what
        torch's FlopCounterMode counts), so a GEMM's floor is not its bytes alone."""
        return self.cost_bytes(case, outputs), self.cost_flops(case)

    def cost_bytes(self, case: Case, outputs: Outputs) -> int:
        nbytes = sum(t.numel() * t.element_size() for _, t in case.tensors())
        return nbytes + sum(t.numel() * t.element_size() for t in outputs)

    def cost_flops(self, case: Case) -> int:
        return count_flops(lambda: self.invoke(self.reference_entry(), case.clone()))

    def prune(self, device: Device) -> None:
        """Drop configurations the reference cannot run (derived ones only; see KernelBench)."""

    # --- shared -------------------------------------------------------------------
    def visible_configs(self) -> list[Config]:
        return [c for c in self.configs if not c.heldout]

    def tolerance(self, dtype_name: str) -> Tolerance:
        tol = self.tolerances.get(dtype_name)
        if tol is None:
            return {"atol": 0.0, "rtol": 0.0, "norm": 0.0}  # integers and bools: exact
        return tol


def count_flops(fn: Callable[[], Any]) -> int:
    """Flops of one call as torch's FlopCounterMode counts them; 0 where torch has none (< 2.1)
    or the count fails (then the floor is bytes alone, as before)."""
    try:
        # torch < 2.1 has none: the ImportError below
        from torch.utils.flop_counter import FlopCounterMode  # pyright: ignore[reportMissingImports]
    except ImportError:
        return 0
    try:
        with FlopCounterMode(display=False) as counter:
            fn()
        return int(counter.get_total_flops())
    except Exception:  # a count is a refinement of the floor, never a failure
        return 0


def as_tuple(out: Any) -> tuple[Any, ...]:
    if isinstance(out, (tuple, list)):
        return tuple(out)
    return (out,)
