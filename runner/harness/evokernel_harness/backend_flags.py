"""torch's process-wide backend flags, scoped to the code that sets them.

A candidate may set `torch.backends.cudnn.benchmark = True` or allow TF32 when it loads or
when it runs: honest tuning, but process-wide, so left alone it would also speed up (or
change the precision of) the reference and the baselines it is compared with. The harness
snapshots the flags before the candidate loads, keeps what the candidate set as its own
settings, applies them only around the candidate's calls and restores its own for
everything else. Precision flags (TF32, reduced-precision reductions, matmul precision) are
judged by the task's tolerance like any other arithmetic; the record names every flag the
candidate changed.
"""

from typing import Any

import torch
import torch.backends.cuda  # imported by torch itself; named for the type checker
import torch.backends.cudnn

# name -> (getter, setter); a flag this torch lacks is left out
_FLAGS = {
    "torch.backends.cudnn.benchmark": (
        lambda: torch.backends.cudnn.benchmark,
        lambda v: setattr(torch.backends.cudnn, "benchmark", v),
    ),
    "torch.backends.cudnn.deterministic": (
        lambda: torch.backends.cudnn.deterministic,
        lambda v: setattr(torch.backends.cudnn, "deterministic", v),
    ),
    "torch.backends.cudnn.enabled": (
        lambda: torch.backends.cudnn.enabled,
        lambda v: setattr(torch.backends.cudnn, "enabled", v),
    ),
    "torch.backends.cudnn.allow_tf32": (
        lambda: torch.backends.cudnn.allow_tf32,
        lambda v: setattr(torch.backends.cudnn, "allow_tf32", v),
    ),
    "torch.backends.cuda.matmul.allow_tf32": (
        lambda: torch.backends.cuda.matmul.allow_tf32,
        lambda v: setattr(torch.backends.cuda.matmul, "allow_tf32", v),
    ),
    "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction": (
        lambda: torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
        lambda v: setattr(torch.backends.cuda.matmul, "allow_fp16_reduced_precision_reduction", v),
    ),
    "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction": (
        lambda: torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
        lambda v: setattr(torch.backends.cuda.matmul, "allow_bf16_reduced_precision_reduction", v),
    ),
    "torch.float32_matmul_precision": (
        lambda: torch.get_float32_matmul_precision(),
        lambda v: torch.set_float32_matmul_precision(v),
    ),
    "torch.deterministic_algorithms": (
        lambda: torch.are_deterministic_algorithms_enabled(),
        lambda v: torch.use_deterministic_algorithms(v),
    ),
}
PRECISION = {
    "torch.backends.cudnn.allow_tf32",
    "torch.backends.cuda.matmul.allow_tf32",
    "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
    "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction",
    "torch.float32_matmul_precision",
}


def _readable():
    out = {}
    for name, (get, set_) in _FLAGS.items():
        try:
            out[name] = (get, set_, get())
        except (AttributeError, AssertionError, RuntimeError):  # a flag this torch lacks
            continue
    return out


_AVAILABLE = {name: (get, set_) for name, (get, set_, _) in _readable().items()}


def snapshot() -> dict[str, Any]:
    return {name: get() for name, (get, _) in _AVAILABLE.items()}


def apply(values: dict[str, Any]) -> None:
    for name, value in values.items():
        current = _AVAILABLE[name][0]()
        if current != value:
            _AVAILABLE[name][1](value)


def changed(base: dict[str, Any], now: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """The flags whose value in `now` differs from `base`: name -> (base value, new value)."""
    return {name: (base[name], value) for name, value in now.items() if base.get(name) != value}


class Scoped:
    """The candidate's own settings of the flags, applied only around its code.

    harness: the flags as the harness set them (taken when the candidate starts loading);
    own: the candidate's settings, updated after each of its calls."""

    def __init__(self) -> None:
        self.harness = snapshot()
        self.own = dict(self.harness)

    def enter(self) -> None:
        apply(self.own)

    def leave(self) -> None:
        now = snapshot()
        self.own = now
        apply(self.harness)

    def changes(self) -> dict[str, tuple[Any, Any]]:
        return changed(self.harness, self.own)

    def describe(self) -> list[str]:
        """Warnings for the record: each flag the candidate changed, and how it was scoped."""
        out = []
        for name, (was, now) in sorted(self.changes().items()):
            kind = (
                "a precision flag: its results are judged by the task's tolerance"
                if name in PRECISION
                else "applied around its own calls only"
            )
            out.append(
                f"the candidate sets {name} = {now!r} (the harness runs the reference and baselines "
                f"with {was!r}): {kind}"
            )
        return out
