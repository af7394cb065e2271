"""What a fresh harness child pays on first use, in order (run on the GPU machine):
CUDA's context, torch's FlopCounterMode and the profiler (CUPTI), each timed on its first and
second use, in two fresh processes with the two orders. Tells which costs a pre-import in the
fork server removes (an import is inherited by forked children; CUDA and CUPTI set-up are not).
    python3 lab/first-use-costs.py
"""

import json
import subprocess
import sys
import time

CHILD = r"""
import json, sys, time
t = time.perf_counter
out = {}
s = t(); import torch; out["import torch"] = t() - s
order = sys.argv[1]
def cuda():
    s = t(); torch.ones(1, device="cuda").add_(1); torch.cuda.synchronize(); return t() - s
def flops():
    s = t()
    from torch.utils.flop_counter import FlopCounterMode
    x = torch.randn(256, 256, device="cuda")
    with FlopCounterMode(display=False) as c:
        x @ x
    return t() - s
def profiler():
    s = t()
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        torch.ones(1, device="cuda").add_(1); torch.cuda.synchronize()
    p.key_averages()
    return t() - s
def imports():
    s = t()
    import torch.profiler, torch.utils.flop_counter  # noqa: F401
    return t() - s
steps = {"cuda": cuda, "flops": flops, "profiler": profiler, "imports": imports}
for name in order.split(","):
    key = name if name not in out else name + " (again)"
    out[key] = steps[name]()
print(json.dumps({k: round(v, 3) for k, v in out.items()}))
"""

ORDERS = [
    "cuda,flops,flops,profiler,profiler",
    "cuda,profiler,profiler,flops,flops",
    "imports,cuda,profiler,flops",
    "cuda,imports,profiler,flops",
]

for order in ORDERS:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, order], capture_output=True, text=True, timeout=300)
    line = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-500:]
    print(f"{order:40s} {line}  (process {time.perf_counter() - started:.1f} s)")
    sys.stdout.flush()
print(json.dumps({"torch": __import__("torch").__version__}))
