"""Whose work it is, by the work (issue 33.2): the elements each PyTorch kernel touches, not its
share of the GPU's time.

A candidate with kernels of its own may still call PyTorch: small ops on its parameters (a
BatchNorm's per-channel scale and shift from 64–512 weights, a reciprocal of a norm) or on
shapes and scalars are its set-up, not the task's work, however much of the GPU's time their
launches take on a small shape (robust-kbench's ResNet block: 47 % of its time in torch
kernels on parameter vectors, every per-element operation on the activations in its own
fused kernel). The task's work is what the reference computes on the activations. So each
PyTorch kernel the candidate launches is measured by the elements its operator was given
(the profiler's input shapes, record_shapes): at least ACTIVATION_FRACTION of the
activations' size (the largest tensor among the case's arguments: a module's parameters are
not activations, and a large weight must not make the activations look small) is work on the
activations; less is set-up. A kernel the profiler could not tie to an operator counts as
work (the rule is never more lenient for lack of shapes).

The verdict (own_kernel.judge, through torch_work): a fallback when PyTorch kernels on the
activations do work the reference does (a kernel of the reference's, launched on
activation-sized data), or take more GPU time than the candidate's own kernels. Library
kernels (cuBLAS, cuDNN) keep their own rule in own_kernel.py.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Mapping

ACTIVATION_FRACTION = 1 / 16  # of the activations' elements: below, a kernel is set-up


def elements_of(shapes: Iterable[Any]) -> int:
    """The most elements among an operator's input shapes (lists of ints; [] for a scalar)."""
    most = 0
    for shape in shapes or ():
        if isinstance(shape, (list, tuple)) and shape and all(isinstance(d, int) for d in shape):
            most = max(most, math.prod(shape))
    return most


def kernel_elements(events: Iterable[Any]) -> dict[str, int]:
    """Kernel name → the most elements the operators that launched it were given, from the
    profiler's events (torch.autograd.profiler's FunctionEvent: an operator with the kernels it
    launched in .kernels and its input shapes in .input_shapes, record_shapes=True). Kernels no
    operator owns are absent."""
    out: dict[str, int] = {}
    for event in events:
        kernels = getattr(event, "kernels", None) or ()
        if not kernels:
            continue
        n = elements_of(getattr(event, "input_shapes", None) or ())
        for kernel in kernels:
            name = getattr(kernel, "name", None)
            if isinstance(name, str):
                out[name] = max(out.get(name, 0), n)
    return out


def profile_elements(fn: Callable[[], Any]) -> dict[str, int] | None:
    """kernel_elements of one call of fn on the GPU, or None where the profiler gives no
    shapes (then the rule falls back to the time share alone)."""
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
            fn()
            torch.cuda.synchronize()
        return kernel_elements(prof.events() or ())
    except Exception:  # no shapes: the time share decides, as before
        return None


def activation_elements(args: Iterable[Any]) -> int:
    """The activations' size: the most elements of any tensor among the case's arguments."""
    return max((int(t.numel()) for t in args if hasattr(t, "numel")), default=0)


def setup_kernels(torch_names: Iterable[str], elements: Mapping[str, int] | None, activation: int) -> set[str]:
    """The PyTorch kernels that are set-up: measured, and on fewer elements than
    ACTIVATION_FRACTION of the activations (none where nothing is measured)."""
    if elements is None or activation <= 0:
        return set()
    return {n for n in torch_names if n in elements and elements[n] < ACTIVATION_FRACTION * activation}


def torch_work(
    config: str,
    cand: Mapping[str, float],
    torch_names: Iterable[str],
    own_us: float,
    ref_names: Iterable[str],
    elements: Mapping[str, int] | None,
    activation: int,
    short: Callable[[Iterable[str]], str],
) -> str | None:
    """Why PyTorch does the candidate's work on one configuration, or None where it does not.
    cand: its kernels' µs; torch_names: those of them that are PyTorch's; elements: kernel →
    elements touched (None: unknown, every PyTorch kernel counts as work, as the time share
    always had it); activation: the activations' elements."""
    torch_names = set(torch_names)
    setup = setup_kernels(torch_names, elements, activation)
    working = torch_names - setup
    total = sum(cand.values()) or 1.0
    on_activations = working if elements is not None and activation > 0 else set()
    shared = {n for n in on_activations if n in elements and n in set(ref_names)} if elements else set()
    if shared:
        most = max(elements[n] for n in shared) if elements else 0
        return (
            f"PyTorch's kernels do the reference's work on the activations on configuration {config}: "
            f"{short(shared)} ({most} elements, the activations {activation})"
            + (f"; set-up on parameters and shapes aside ({short(setup)})" if setup else "")
            + ": the work is PyTorch's"
        )
    working_us = sum(cand[n] for n in working)
    if working_us > own_us:
        what = "on the activations " if on_activations else ""
        return (
            f"PyTorch's kernels {what}({short(working)}) take {working_us / total:.0%} of its GPU time on "
            f"configuration {config}, its own kernels {own_us / total:.0%}"
            + (f" (set-up on parameters and shapes not counted: {short(setup)})" if setup else "")
            + ": the work is PyTorch's"
        )
    return None
