"""Random input generation: the init methods tasks declare, always fresh, never zeros."""

import contextlib
import math
from typing import Any, ContextManager, Sequence

import torch

from .env import FLOAT_DTYPES

INITS = ("normal", "uniform", "signed-mixed", "positive", "offset")
LN10 = math.log(10.0)
OFFSET = 40.0  # offset inputs: N(0, 1) + 40, a common offset 40× the spread


def on_device(device: torch.device | str) -> ContextManager[Any]:
    """Factory calls (torch.randn in a problem's get_inputs, a Model's parameters) create their
    tensors on `device` directly: a KernelBench problem's gigabytes of inputs are drawn on the
    GPU in milliseconds instead of on the CPU in seconds. A no-op on the CPU, or where torch
    has no device context (< 2.0)."""
    device = torch.device(device)
    if device.type == "cpu" or not hasattr(device, "__enter__"):
        return contextlib.nullcontext()
    return device  # pyright: ignore[reportReturnType] — a context manager from torch 2.0 (hasattr above)


def generator(seed: int, device: torch.device | str) -> torch.Generator:
    gen = torch.Generator(device=device)
    gen.manual_seed(int(seed) % (2**63))
    return gen


def make_tensor(
    shape: Sequence[int],
    dtype: torch.dtype,
    init: str | dict[str, Any] | None,
    gen: torch.Generator,
    device: torch.device | str,
) -> torch.Tensor:
    """One tensor of `shape` and `dtype` drawn with `init` (a name or {"randint": [lo, hi]})."""
    if isinstance(init, dict) and "randint" in init:
        lo, hi = init["randint"]
        return torch.randint(int(lo), int(hi), tuple(shape), generator=gen, device=device, dtype=torch.int64).to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, tuple(shape), generator=gen, device=device).bool()
    if dtype not in FLOAT_DTYPES:
        return torch.randint(-100, 100, tuple(shape), generator=gen, device=device).to(dtype)
    base = torch.float64 if dtype == torch.float64 else torch.float32
    init = init or "normal"
    if init == "normal":
        t = torch.randn(tuple(shape), generator=gen, device=device, dtype=base)
    elif init == "uniform":
        t = torch.rand(tuple(shape), generator=gen, device=device, dtype=base)
    elif init == "positive":
        t = torch.randn(tuple(shape), generator=gen, device=device, dtype=base).abs_().add_(0.1)
    elif init == "signed-mixed":
        t = signed_mixed_like(torch.empty(tuple(shape), device=device, dtype=base), gen)
    elif init == "offset":
        t = offset_like(torch.empty(tuple(shape), device=device, dtype=base), gen)
    else:
        raise ValueError(f"unknown init {init!r}; use one of {', '.join(INITS)} or {{'randint': [lo, hi]}}")
    return t.to(dtype)


def signed_mixed_like(t: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Signed values whose magnitudes span four decades: catches dropped ops and lost precision."""
    base = torch.randn(t.shape, generator=gen, device=t.device, dtype=torch.float32)
    scale = torch.rand(t.shape, generator=gen, device=t.device, dtype=torch.float32).mul_(4.0).sub_(2.0)
    base.mul_(scale.mul_(LN10).exp_())  # in place: 10**scale, no third tensor of t's size
    del scale
    return base.to(t.dtype if t.is_floating_point() else torch.float32)


def offset_like(t: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Values around a common offset 40 times their spread, as activations with a DC offset
    are: a one-pass variance E[x²] − E[x]² loses its digits to cancellation here, while a
    two-pass or Welford one does not."""
    base = torch.randn(t.shape, generator=gen, device=t.device, dtype=torch.float32)
    return base.add_(OFFSET).to(t.dtype if t.is_floating_point() else torch.float32)


def perturbed_like(x: torch.Tensor, mode: str | None, gen: torch.Generator) -> torch.Tensor:
    """A float input redrawn for a verification trial's distribution, or x as it is."""
    if not x.is_floating_point():
        return x
    if mode == "signed-mixed":
        return signed_mixed_like(x, gen)
    if mode == "offset":
        return offset_like(x, gen)
    return x
