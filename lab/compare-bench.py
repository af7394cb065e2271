"""The comparison's cost on the GPU: compare() (its float32 pass, float64 where that cannot
decide) against the float64 pass alone, and bitwise_equal, on the built-in tasks' output
sizes in float32 and bfloat16; the outputs close to the reference (an honest kernel's) and far
from it (a wrong one's). Prints a table of medians (p20-p80) of 15 calls each, in ms.

    python3 lab/compare-bench.py [--json FILE]
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "runner", "harness"))
import torch  # noqa: E402

from evokernel_harness.compare import bitwise_equal, compare, compare_float64  # noqa: E402
from evokernel_harness.tasks.base import DEFAULT_TOLERANCE  # noqa: E402

SHAPES = [(8192, 8192), (32768, 1024), (4097, 5003), (12289, 999), (777, 65537)]


def timed(fn, n=15):
    times = []
    for _ in range(n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        result = fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return {"median": statistics.median(times), "p20": times[n // 5], "p80": times[(4 * n) // 5]}, result


def measure(gen, shape, dtype, tol, noise):
    """One row: both comparisons and bitwise_equal timed on one pair of outputs."""
    expected = torch.randn(shape, device="cuda", generator=gen).to(dtype)
    got = (expected.float() * (1 + noise * torch.randn(shape, device="cuda", generator=gen))).to(dtype)
    slow, exact = timed(lambda: compare_float64(got, expected, tol))
    fast, answer = timed(lambda: compare(got, expected, tol))
    bitwise, _ = timed(lambda: bitwise_equal(expected, expected.clone()))
    return {
        "float64": slow,
        "compare": fast,
        "bitwise": bitwise,
        "ok": answer["ok"],
        "sameVerdict": exact["ok"] == answer["ok"],
    }


def ms(s):
    return f"{s['median']:7.2f} ({s['p20']:.2f}-{s['p80']:.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2
    gen = torch.Generator(device="cuda").manual_seed(0)
    rows = []
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    print(f"{'shape':>12} {'dtype':>9} {'outputs':>6}  {'float64 ms':>20}  {'compare ms':>20}  {'speedup':>7}", end="")
    print(f"  {'bitwise ms':>20}  same verdict")
    for dtype in (torch.float32, torch.bfloat16):
        tol = DEFAULT_TOLERANCE[str(dtype).removeprefix("torch.")]
        for shape in SHAPES:
            for label, noise in (("close", 0.1 * tol["rtol"]), ("far", 100 * tol["rtol"])):
                row = measure(gen, shape, dtype, tol, noise)
                rows.append({"shape": list(shape), "dtype": str(dtype), "outputs": label, **row})
                print(
                    f"{'x'.join(map(str, shape)):>12} {str(dtype)[6:]:>9} {label:>6}  {ms(row['float64']):>20}  "
                    f"{ms(row['compare']):>20}  {row['float64']['median'] / row['compare']['median']:6.1f}x  "
                    f"{ms(row['bitwise']):>20}  {row['sameVerdict']} ({'pass' if row['ok'] else 'fail'})"
                )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, fh, indent=1)
    return 0 if all(r["sameVerdict"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
