"""Did the candidate's own kernel run? (hack 12: a candidate that quietly calls PyTorch.)"""

import torch


def launched_kernels(fn):
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    names = set()
    for evt in prof.events():
        if getattr(evt, "device_type", None) == torch.autograd.DeviceType.CUDA:
            names.add(evt.name)
    return names


def check_own_kernel(candidate, case):
    """(ok, detail). A candidate that defines kernels must launch at least one of them."""
    if not candidate.kernels:
        return False, "the candidate defines no GPU kernel of its own (__global__ or @triton.jit)"
    try:
        names = launched_kernels(lambda: candidate.run(case))
    except Exception as err:  # noqa: BLE001 — the profiler may be unavailable: say so, don't fail
        return True, f"profiler unavailable ({err}); own-kernel check skipped"
    if not names:
        return True, "the profiler saw no kernels at all; own-kernel check inconclusive"
    ours = sorted(n for n in names if any(k in n for k in candidate.kernels))
    if not ours:
        return False, f"none of its kernels ({', '.join(sorted(candidate.kernels))}) ran; launched: {', '.join(sorted(names))[:400]}"
    return True, f"ran {', '.join(ours)[:300]}"
