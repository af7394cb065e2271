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

# name -> (getter, setter); a flag this torch lacks is left out. torch ≥ 2.9 has a second API
# for the float32 precision (`fp32_precision` per backend and op), and the old flags
# (`allow_tf32`, `set_float32_matmul_precision`) write through to it: there the harness keeps
# the old matmul precision (a candidate may set it, and torch.compile reads it) and the new
# per-op settings, and leaves the old TF32 booleans out (they are views of the new ones; reading
# them after a mix of both APIs raises). The old one is applied first, so a new-API value set
# after it wins.
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


def _has_new_api() -> bool:
    try:  # torch 1.x's matmul object raises AssertionError for an unknown name, not AttributeError
        return isinstance(getattr(torch.backends.cuda.matmul, "fp32_precision"), str)
    except (AttributeError, AssertionError):
        return False


_NEW_API = _has_new_api()


def _attr_flag(path: str) -> tuple[Any, Any]:
    """(getter, setter) of a dotted attribute under torch, e.g. torch.backends.cudnn.conv.fp32_precision."""
    *owners, attr = path.split(".")[1:]

    def owner() -> Any:
        obj: Any = torch
        for part in owners:
            obj = getattr(obj, part)
        return obj

    return (lambda: getattr(owner(), attr)), (lambda v: setattr(owner(), attr, v))


if _NEW_API:
    for _path in (
        "torch.backends.fp32_precision",
        "torch.backends.cuda.matmul.fp32_precision",
        "torch.backends.cudnn.fp32_precision",
        "torch.backends.cudnn.conv.fp32_precision",
        "torch.backends.cudnn.rnn.fp32_precision",
    ):
        _FLAGS[_path] = _attr_flag(_path)
else:
    _FLAGS["torch.backends.cudnn.allow_tf32"] = (
        lambda: torch.backends.cudnn.allow_tf32,
        lambda v: setattr(torch.backends.cudnn, "allow_tf32", v),
    )
    _FLAGS["torch.backends.cuda.matmul.allow_tf32"] = (
        lambda: torch.backends.cuda.matmul.allow_tf32,
        lambda v: setattr(torch.backends.cuda.matmul, "allow_tf32", v),
    )
PRECISION = {
    "torch.backends.cudnn.allow_tf32",
    "torch.backends.cuda.matmul.allow_tf32",
    "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
    "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction",
    "torch.float32_matmul_precision",
    "torch.backends.fp32_precision",
    "torch.backends.cuda.matmul.fp32_precision",
    "torch.backends.cudnn.fp32_precision",
    "torch.backends.cudnn.conv.fp32_precision",
    "torch.backends.cudnn.rnn.fp32_precision",
}
# A getter torch refuses to answer (the old matmul precision after a candidate mixed the two
# APIs): the value is unknown, never applied, and never reported as a change.
UNREADABLE = "<unreadable>"


def _readable():
    out = {}
    for name, (get, set_) in _FLAGS.items():
        try:
            out[name] = (get, set_, get())
        except (AttributeError, AssertionError, RuntimeError):  # a flag this torch lacks
            continue
    return out


_AVAILABLE = {name: (get, set_) for name, (get, set_, _) in _readable().items()}


def _read(get) -> Any:
    try:
        return get()
    except RuntimeError:
        return UNREADABLE


def snapshot() -> dict[str, Any]:
    return {name: _read(get) for name, (get, _) in _AVAILABLE.items()}


def apply(values: dict[str, Any]) -> None:
    for name, value in values.items():
        if value == UNREADABLE:
            continue
        get, set_ = _AVAILABLE[name]
        if _read(get) != value:
            set_(value)


def changed(base: dict[str, Any], now: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """The flags whose value in `now` differs from `base`: name -> (base value, new value)."""
    return {
        name: (base[name], value)
        for name, value in now.items()
        if base.get(name) != value and UNREADABLE not in (value, base.get(name))
    }


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
