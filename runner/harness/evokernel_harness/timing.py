"""Timing: warm-up, CUDA events with a device-wide synchronise, L2 flushed before every
call, rotating input buffers, implementations interleaved in one process, median and spread.
"""

import math
import random

import torch

from . import guards

Event = torch.cuda.Event  # bound before any candidate is imported
sleep = torch.cuda._sleep
# Keeps the GPU busy (~0.5 ms at 2 GHz) while the host enqueues the start event and the
# call's kernels, so the events measure GPU time, not Python and launch latency (which
# the per-call synchronise, needed for the L2 flush, would otherwise expose).
HEAD_START_CYCLES = 1_000_000


def stats(samples):
    s = sorted(samples)
    n = len(s)
    if n == 0:
        return None
    q = lambda p: s[min(n - 1, max(0, int(round(p * (n - 1)))))]
    return {"medianMs": q(0.5), "p20Ms": q(0.2), "p80Ms": q(0.8), "minMs": s[0], "meanMs": sum(s) / n, "n": n}


class Timer:
    def __init__(self, device, l2_bytes):
        self.device = device
        self.flush_buf = torch.empty(max(2 * (l2_bytes or 50 << 20), 128 << 20) // 4, dtype=torch.float32, device=device)

    def flush(self, i):
        self.flush_buf.fill_(float(i % 7))

    def once(self, fn, arg, i, prepare=None):
        """One timed call: (event ms, wall ms). Events on the current stream give the time;
        the wall clock runs until a device-wide synchronise, so work left on another stream
        (hack 3) shows as wall time far above event time."""
        if prepare is not None:
            prepare(arg, i)
        self.flush(i)
        guards.synchronize()
        start, end = Event(enable_timing=True), Event(enable_timing=True)
        t0 = guards.perf_counter()
        sleep(HEAD_START_CYCLES)
        guards.EventBase.record(start, torch.cuda.current_stream())
        fn(arg)
        guards.EventBase.record(end, torch.cuda.current_stream())
        guards.synchronize()
        wall = (guards.perf_counter() - t0) * 1e3
        return guards.EventBase.elapsed_time(start, end), wall

    def interleaved(self, impls, args, budget_s=1.5, min_iters=15, max_iters=200, warmup=3, seed=0, prepare=None):
        """impls: name → fn(arg). args: rotating inputs. prepare(arg, i) runs before each
        call, outside the timed region (new input values). Returns name → {event, wall}."""
        for name, fn in impls.items():
            for w in range(warmup):
                fn(args[w % len(args)])
        guards.synchronize()
        per_iter = 0.0
        for name, fn in impls.items():
            e, _ = self.once(fn, args[0], 0)
            per_iter += 2 * e / 1e3 + 8e-4  # plus new inputs, the flush, the head start and syncs
        iters = int(min(max_iters, max(min_iters, math.ceil(budget_s / max(per_iter, 1e-6)))))
        out = {name: {"event": [], "wall": []} for name in impls}
        order = list(impls)
        rng = random.Random(seed)
        for i in range(iters):
            rng.shuffle(order)  # no implementation always runs right after another
            arg = args[i % len(args)]
            for name in order:
                e, w = self.once(impls[name], arg, i, prepare)
                out[name]["event"].append(e)
                out[name]["wall"].append(w)
        return out


def sync_overhead_ms(timer):
    """Wall minus event time of an empty call: what a host synchronise costs here."""
    samples = [timer.once(lambda _: None, None, i) for i in range(20)]
    return sorted(w - e for e, w in samples)[len(samples) // 2]
