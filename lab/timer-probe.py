"""Where the search's screen spends its timing seconds (run on the GPU machine).

For each task named, its baseline kernel is timed as the candidate beside itself, as the
search's screen times (bench --screen: short head start, as many samples as the spread needs,
0.5 s a configuration at most), in this process with the timer instrumented. Prints per
configuration: the rounds the budget allowed, the rounds run, whether the run was timed again
with the full head start, the seconds, and per timed call the milliseconds spent writing new
values (prepare), flushing L2 and synchronising, and in the call itself behind the head start.
    PYTHONPATH=runner/harness python3 lab/timer-probe.py TASK... [--json FILE]
"""

import json
import os
import sys
import tempfile
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "runner", "harness"))

from evokernel_harness import timing  # noqa: E402
from evokernel_harness.bench import bench  # noqa: E402
from evokernel_harness.candidates.build import build  # noqa: E402
from evokernel_harness.candidates.load import Candidate  # noqa: E402
from evokernel_harness.env import cuda_arch, device_info, precise_math  # noqa: E402
from evokernel_harness.tasks import load_task  # noqa: E402

RUNS = []  # one entry per Timer._run: what it was asked and what it did
CALLS = {"prepare": 0.0, "flush": 0.0, "call": 0.0, "n": 0}
# ceilings so high that every floor is ~0: the probe measures the timer, not the roofline
NO_FLOOR = {"bandwidthGBs": 1e12, "bf16Tflops": 1e12, "fp32Tflops": 1e12}


def instrument():
    run, once = timing.Timer._run, timing.Timer.once

    def timed_run(self, impls, args, iters, seed, prepare, cycles, stop=None):
        before = dict(CALLS)
        t0 = time.perf_counter()
        out, exposed = run(self, impls, args, iters, seed, prepare, cycles, stop)
        done = len(next(iter(out.values()))["event"])
        RUNS.append(
            {
                "iters": iters,
                "rounds": done,
                "cycles": cycles,
                "seconds": time.perf_counter() - t0,
                "exposed": exposed,
                "calls": {k: CALLS[k] - before[k] for k in CALLS},
            }
        )
        return out, exposed

    def timed_once(self, fn, arg, i, prepare=None, cycles=None):
        sync = timing.guards.synchronize
        t0 = time.perf_counter()
        if prepare is not None:
            prepare(arg, i)
            sync()
        t1 = time.perf_counter()
        self.flush(i)
        sync()
        t2 = time.perf_counter()
        result = once(self, fn, arg, i, None, cycles)  # flushes again: a few µs on a flushed L2
        t3 = time.perf_counter()
        CALLS["prepare"] += t1 - t0
        CALLS["flush"] += t2 - t1
        CALLS["call"] += t3 - t2
        CALLS["n"] += 1
        return result

    timing.Timer._run = timed_run
    timing.Timer.once = timed_once


def main(argv):
    dump = None
    if "--json" in argv:
        i = argv.index("--json")
        dump, argv = argv[i + 1], argv[:i] + argv[i + 2 :]
    precise_math()
    instrument()
    info = device_info("cuda")
    cache = os.environ.get("EVOKERNEL_CACHE", os.path.join(tempfile.gettempdir(), "evokernel-cache"))
    report = {}
    for name in argv:
        task = load_task(os.path.join(ROOT, "kernels", name))
        task.prune("cuda")
        b = build(task.baseline, cache, [], cuda_arch())
        if not b["ok"]:
            raise SystemExit(f"{name}: the baseline does not build:\n{b['log'][-2000:]}")
        kernel = Candidate(task.baseline, b["artifact"], task)
        other = Candidate(task.baseline, b["artifact"], task)
        RUNS.clear()
        t0 = time.perf_counter()
        rec = bench(
            task,
            kernel,
            other,
            NO_FLOOR,
            info,
            11,
            log=lambda _: None,
            budget_s=0.5,
            compile_baseline=False,
            head_start_cycles=timing.SCREEN_HEAD_START_CYCLES,
            time_eager=False,
            adaptive=True,
        )
        whole = time.perf_counter() - t0
        rows = []
        names = [c["name"] for c in rec["configs"]]
        # the timer's runs in order: a configuration timed again has two
        k = 0
        for c in rec["configs"]:
            runs = [RUNS[k]]
            k += 1
            short = runs[0]["cycles"] < timing.HEAD_START_CYCLES
            if short and k < len(RUNS) and RUNS[k]["cycles"] == timing.HEAD_START_CYCLES:
                runs.append(RUNS[k])
                k += 1
            for r in runs:
                n = max(1, r["calls"]["n"])
                rows.append({"config": c["name"], **r})
                print(
                    f"{name:16s} {c['name']:16s} head start {r['cycles']:>9,} cycles: {r['rounds']:>3} of "
                    f"{r['iters']:>3} rounds in {r['seconds']:.3f} s; per call ms: prepare "
                    f"{1e3 * r['calls']['prepare'] / n:.3f}, flush {1e3 * r['calls']['flush'] / n:.3f}, "
                    f"call {1e3 * r['calls']['call'] / n:.3f}; exposed "
                    + ", ".join(f"{m} {v:.0%}" for m, v in r["exposed"].items())
                )
        phase = rec["phases"].get("timing", 0)
        print(f"{name:16s} bench {whole:.2f} s, its timing phase {phase:.2f} s ({', '.join(names)})")
        report[name] = {"rows": rows, "seconds": whole, "phases": rec["phases"]}
    if dump:
        with open(dump, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
