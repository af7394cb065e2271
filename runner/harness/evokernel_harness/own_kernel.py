"""Did the candidate's own kernel run? (hack 12: a candidate that quietly calls PyTorch.)"""

import re

import torch


def _kernel_stats(fn):
    """GPU kernels one call launches: name -> (total device time in µs, launches) (CUPTI)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return {
        e.key: (getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0), e.count)
        for e in prof.key_averages()
        if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA
    }


def _kernel_times_us(fn):
    return {name: us for name, (us, _) in _kernel_stats(fn).items()}


def top_kernels(fn, limit=5):
    """The kernels one call spends its GPU time in, longest first: a profile a proposal can
    read. [{name, us, calls}], or None when the profiler is unavailable."""
    try:
        stats = _kernel_stats(fn)
    except Exception:  # noqa: BLE001 — no profiler: no profile, never a failure
        return None
    ranked = sorted(stats.items(), key=lambda kv: -kv[1][0])[:limit]
    return [{"name": name[:200], "us": round(float(us), 2), "calls": int(calls)} for name, (us, calls) in ranked]


def launched_kernels(fn):
    return set(_kernel_times_us(fn))


def launched_kernel_time_ms(fn):
    """GPU time of the kernels one call launches, without host gaps; None if unknown."""
    try:
        total_us = sum(_kernel_times_us(fn).values())
    except Exception:  # noqa: BLE001 — no profiler: the check is skipped, not failed
        return None
    return total_us / 1e3 if total_us else None


HARMLESS = re.compile(r"fill|copy|memset|memcpy|Memcpy|Memset", re.I)


def check_own_kernel(candidate, task, case):
    """(ok, detail). The candidate must launch a kernel of its own, and none of the kernels
    the reference launches (beyond fills and copies): those would be PyTorch doing the work."""
    if not candidate.kernels:
        return False, "the candidate defines no GPU kernel of its own (__global__ or @triton.jit)"
    grad = torch.enable_grad if task.backward else torch.no_grad
    try:
        with grad():
            names = launched_kernels(lambda: candidate.run(case.clone()))
            ref = launched_kernels(lambda: task.invoke(task.reference_entry(), case.clone()))
    except Exception as err:  # noqa: BLE001 — the profiler may be unavailable: say so, don't fail
        return True, f"profiler unavailable ({err}); own-kernel check skipped"
    if not names:
        return True, "the profiler saw no kernels at all; own-kernel check inconclusive"
    ours = sorted(n for n in names if any(k in n for k in candidate.kernels))
    if not ours:
        return False, f"none of its kernels ({', '.join(sorted(candidate.kernels))}) ran; launched: {', '.join(sorted(names))[:400]}"
    borrowed = sorted(n for n in names & ref if not HARMLESS.search(n) and n not in ours)
    if borrowed:
        return False, f"it launches the reference's own kernels: {', '.join(borrowed)[:400]}"
    return True, f"ran {', '.join(ours)[:300]}"
