"""The physical floor: bytes over measured bandwidth, flops over the arithmetic peak.

The peak for fp32 results is the faster of fp32 FMA on the CUDA cores and 3xTF32 on the tensor
cores (three TF32 products a multiply, with fp32-level accuracy: what the verifier's fp32
tolerance admits). A floor from the FMA rate alone would call an honest tensor-core kernel
faster than physics (below-floor) and turn it away."""

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
    # the library rate is a lower bound of the peak, so the floor takes the larger; where the
    # chip's peak is known it is the larger, and the library is not timed (a judged bench
    # measures its ceilings every time)
    peak = theoretical_peaks()
    prev = torch.backends.cuda.matmul.allow_tf32
    rates = {}
    try:
        for name, dtype, tf32 in (
            ("fp32", torch.float32, False),
            ("bf16", torch.bfloat16, False),
            ("tf32", torch.float32, True),
        ):
            if name not in peak:
                torch.backends.cuda.matmul.allow_tf32 = tf32
                rates[name] = _matmul_tflops(dtype)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev

    def rate(name: str) -> float:
        return max(rates.get(name, 0.0), peak.get(name, 0.0))

    return {
        "bandwidthGBs": bandwidth,
        "fp32Tflops": rate("fp32"),
        "bf16Tflops": rate("bf16"),
        # fp32-accurate products on the tensor cores: three TF32 products each (3xTF32)
        "tf32x3Tflops": rate("tf32") / 3,
        "measuredAt": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": device_name,
    }


def theoretical_peaks() -> dict[str, float]:
    """Per-SM arithmetic rates for Hopper (sm_90): 128 fp32 FMA, 1024 dense TF32 FMA and 2048
    dense bf16 FMA a clock."""
    props = torch.cuda.get_device_properties(0)
    if (props.major, props.minor) != (9, 0):
        return {}
    clock_ghz = 1.98  # H100/H200 SXM maximum boost clock
    return {
        "fp32": props.multi_processor_count * 128 * 2 * clock_ghz / 1e3,
        "tf32": props.multi_processor_count * 2048 * clock_ghz / 1e3,
        "bf16": props.multi_processor_count * 4096 * clock_ghz / 1e3,
    }


def floor_ms(nbytes: int, flops: int, dtype_name: str, ceilings: dict[str, Any]) -> float:
    mem = nbytes / (ceilings["bandwidthGBs"] * 1e9) * 1e3
    if dtype_name in ("bfloat16", "float16"):
        rate = ceilings["bf16Tflops"]
    else:  # fp32 results: FMA or 3xTF32, whichever is faster (ceilings from before it: FMA)
        rate = max(ceilings["fp32Tflops"], ceilings.get("tf32x3Tflops", 0.0))
    compute = flops / (rate * 1e12) * 1e3 if flops else 0.0
    return max(mem, compute)
