#!/usr/bin/env python3
"""How much GPUs of one model differ (issue 38.1): on each visible GPU, in turn, the same ops
timed the same way (CUDA events, an L2 flush before each call): a 1 GiB copy, softmax and
layer_norm of 8192x8192 fp32, a 4096^3 fp32 matmul. Medians and spread per GPU, and each GPU's
median against the first GPU's.
    python3 lab/gpu-spread.py [--reps 60] [--json FILE]"""

import argparse
import json
import statistics

import torch


def timed(fn, reps, flush):
    times = []
    for _ in range(reps):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return {"median": statistics.median(times), "p10": times[len(times) // 10], "p90": times[(9 * len(times)) // 10]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=60)
    parser.add_argument("--json")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    for index in range(torch.cuda.device_count()):
        with torch.cuda.device(index):
            flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
            t = {
                "big": torch.randn(1 << 28, device="cuda"),
                "out": torch.empty(1 << 28, device="cuda"),
                "x": torch.randn(8192, 8192, device="cuda"),
                "a": torch.randn(4096, 4096, device="cuda"),
                "b": torch.randn(4096, 4096, device="cuda"),
            }
            ops = {
                "copy 1 GiB": lambda: t["out"].copy_(t["big"]),
                "softmax 8192x8192": lambda: torch.softmax(t["x"], dim=-1),
                "layer_norm 8192x8192": lambda: torch.nn.functional.layer_norm(t["x"], (8192,)),
                "matmul 4096^3 fp32": lambda: t["a"] @ t["b"],
            }
            for fn in ops.values():  # warm up
                fn()
            torch.cuda.synchronize()
            row = {"gpu": index, "name": torch.cuda.get_device_name(index)}
            row.update({name: timed(fn, args.reps, flush) for name, fn in ops.items()})
            rows.append(row)
            del flush
            t.clear()
            torch.cuda.empty_cache()
    first = rows[0]
    for row in rows:
        print(f"GPU {row['gpu']} ({row['name']})")
        for name in ("copy 1 GiB", "softmax 8192x8192", "layer_norm 8192x8192", "matmul 4096^3 fp32"):
            t = row[name]
            print(
                f"  {name:22s} {t['median']:.4f} ms (p10 {t['p10']:.4f}, p90 {t['p90']:.4f})"
                f"  {t['median'] / first[name]['median']:.3f}x GPU {first['gpu']}'s"
            )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
