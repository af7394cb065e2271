"""Lab model (issue 33.7): when do builds finish, with the machine's compile slots served in
ticket order (jobserver.slot) or in no order? Each of N builds runs its steps one after
another; a step is one or more compiler processes at once (ninja's units of a torch
extension: its CUDA unit and its binding unit, then the link), each holding one slot for its
seconds (a sleep: a machine with a core for every slot). All builds start at once, as a
verify of many lazily built candidates starts them, and each first spends up to JITTER
seconds outside the slots (importing torch, hashing its sources: so their first compilers
ask in no particular order). Prints each build's finish time, by start order, and their
first, median and last. No GPU, no compiler.

    python3 lab/slot-order.py [BUILDS [SLOTS [STEPS [JITTER]]]]   # default 24 16 4+4,0.3 1
    (STEPS: steps by commas, a step's units by +)
    EVK_JOBSERVER=DIR  use the jobserver.py in DIR (an older tree's, to compare)
"""

import importlib.util
import multiprocessing as mp
import os
import random
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = os.path.join(HERE, "..", "runner", "harness", "evokernel_harness", "candidates")


def load():
    path = os.path.join(os.environ.get("EVK_JOBSERVER", DEFAULT), "jobserver.py")
    spec = importlib.util.spec_from_file_location("jobserver", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def unit(seconds, slots, folder):
    with load().slot(1, total=slots, folder=folder):
        time.sleep(seconds)


def build(index, steps, slots, folder, t0, done, jitter):
    os.environ["EVOKERNEL_BUILD_TICKET"] = str(time.time_ns())
    time.sleep(random.Random(index).uniform(0, jitter))
    for step in steps:
        units = [mp.Process(target=unit, args=(seconds, slots, folder)) for seconds in step]
        for u in units:
            u.start()
        for u in units:
            u.join()
    done.put((index, time.time() - t0))


def main():
    argv = sys.argv[1:] + ["24", "16", "4+4,0.3", "1"][len(sys.argv) - 1 :]
    builds, slots, jitter = int(argv[0]), int(argv[1]), float(argv[3])
    steps = [[float(x) for x in step.split("+")] for step in argv[2].split(",")]
    with tempfile.TemporaryDirectory() as folder:
        done = mp.Queue()
        t0 = time.time()
        procs = [mp.Process(target=build, args=(i, steps, slots, folder, t0, done, jitter)) for i in range(builds)]
        for p in procs:
            p.start()
            time.sleep(0.01)  # started in this order: their tickets
        finished = sorted(done.get() for _ in procs)
        for p in procs:
            p.join()
    times = [t for _, t in finished]
    print(f"jobserver: {os.path.relpath(os.environ.get('EVK_JOBSERVER', DEFAULT))}")
    print(f"{builds} builds of steps {argv[2]} s after up to {jitter:g} s, {slots} slots")
    print("finished (s, by start order): " + " ".join(f"{t:.1f}" for t in times))
    print(f"first {min(times):.1f} s, median {statistics.median(times):.1f} s, last {max(times):.1f} s")


if __name__ == "__main__":
    main()
