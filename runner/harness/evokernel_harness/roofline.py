"""The physical floor: bytes over measured bandwidth, flops over the arithmetic peak."""

import datetime
from typing import Any

import torch
import torch.backends.cuda  # imported by torch itself; named for the type checker

from . import guards


def _median_ms(fn, iters=15):
    times = []
    for _ in range(3):
        fn()
    guards.synchronize()
    for _ in range(iters):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(torch.cuda.current_stream())  # what record() does without a stream
        fn()
        e.record(torch.cuda.current_stream())
        guards.synchronize()
        times.append(s.elapsed_time(e))
    times.sort()
    return times[len(times) // 2]


def _copy_bandwidth():
    """GB/s of a 1 GiB fp32 copy (bytes read + written); its buffers are freed on return."""
    n = 256 << 20  # 1 GiB of fp32
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    ms = _median_ms(lambda: y.copy_(x))
    return 2 * x.numel() * 4 / (ms / 1e3) / 1e9


def _matmul_tflops(dtype):
    """TFLOP/s of an 8192² matmul in dtype; its operands are freed on return."""
    m = 8192
    a, b = torch.randn(m, m, device="cuda", dtype=dtype), torch.randn(m, m, device="cuda", dtype=dtype)
    ms = _median_ms(lambda: torch.mm(a, b), iters=10)
    return 2 * m**3 / (ms / 1e3) / 1e12


def measure_ceilings(device_name: str) -> dict[str, Any]:
    """Copy bandwidth (bytes read + written) and matmul rates, measured on this GPU."""
    bandwidth = _copy_bandwidth()
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    rates = {}
    for name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        rates[name] = _matmul_tflops(dtype)
    torch.backends.cuda.matmul.allow_tf32 = prev
    peak = theoretical_peaks()
    return {
        "bandwidthGBs": bandwidth,
        # the library rate is a lower bound of the peak; never let the floor exceed the chip
        "fp32Tflops": max(rates["fp32"], peak.get("fp32", 0.0)),
        "bf16Tflops": max(rates["bf16"], peak.get("bf16", 0.0)),
        "measuredAt": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": device_name,
    }


def theoretical_peaks() -> dict[str, float]:
    """Per-SM arithmetic rates for Hopper (sm_90): 128 fp32 FMA and 2048 dense bf16 FMA a clock."""
    props = torch.cuda.get_device_properties(0)
    if (props.major, props.minor) != (9, 0):
        return {}
    clock_ghz = 1.98  # H100/H200 SXM maximum boost clock
    return {
        "fp32": props.multi_processor_count * 128 * 2 * clock_ghz / 1e3,
        "bf16": props.multi_processor_count * 4096 * clock_ghz / 1e3,
    }


def floor_ms(nbytes: int, flops: int, dtype_name: str, ceilings: dict[str, Any]) -> float:
    mem = nbytes / (ceilings["bandwidthGBs"] * 1e9) * 1e3
    rate = ceilings["bf16Tflops"] if dtype_name in ("bfloat16", "float16") else ceilings["fp32Tflops"]
    compute = flops / (rate * 1e12) * 1e3 if flops else 0.0
    return max(mem, compute)
