"""What the floor asks of a kernel at each configuration's size (run on the GPU machine).

The roofline floor of a memory-bound configuration is its bytes over the bandwidth of a 1 GiB
copy (roofline.py). A call of tens of megabytes, with L2 flushed before it as every timing
flushes it, pays a launch and a ramp that a 1 GiB copy hides. For each configuration of each
task named, this times the simplest kernel that moves the same bytes, a device copy of half
of them into the other half's worth of buffer (bytes read + written = the task's bytes), with
the harness's own timer (L2 flushed, head start, events), and prints its time as a share of
the floor: what a kernel at the floor would have to beat.
    PYTHONPATH=runner/harness python3 lab/copy-floor.py TASK... [--json FILE]
"""

import json
import os
import statistics
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "runner", "harness"))

import torch  # noqa: E402

from evokernel_harness.env import device_info, precise_math  # noqa: E402
from evokernel_harness.roofline import floor_ms, measure_ceilings  # noqa: E402
from evokernel_harness.tasks import load_task  # noqa: E402
from evokernel_harness.timing import Timer  # noqa: E402

CALLS = 30


def main(argv: list[str]) -> int:
    out = None
    if "--json" in argv:
        at = argv.index("--json")
        out = argv[at + 1]
        argv = argv[:at] + argv[at + 2 :]
    if not argv or "--help" in argv:
        print(__doc__)
        return 0 if "--help" in argv else 2
    if not torch.cuda.is_available():
        print("copy-floor: no CUDA GPU", file=sys.stderr)
        return 3
    precise_math()
    info = device_info("cuda")
    ceilings = measure_ceilings(info["name"])
    device = torch.device("cuda")
    timer = Timer(device, info.get("l2Bytes"))
    rows = []
    for name in argv:
        task = load_task(os.path.join(ROOT, "kernels", name) if os.sep not in name else name)
        task.prune("cuda")
        for config in task.visible_configs():
            case = task.make_case(config, 1, device)
            with torch.no_grad():
                outputs = task.invoke(task.reference_entry(), case.clone())
            nbytes = task.cost_bytes(case, outputs)  # as bench's floor counts them (no flops)
            floor = floor_ms(nbytes, 0, "float32", ceilings)
            src = torch.empty(nbytes // 2, dtype=torch.uint8, device=device)
            dst = torch.empty_like(src)
            times = [timer.once(lambda a, out=dst: out.copy_(a), src, i)[0] for i in range(CALLS)]
            ms = statistics.median(times)
            rows.append(
                {
                    "task": task.name,
                    "config": config.name,
                    "bytes": nbytes,
                    "floorMs": floor,
                    "copyMs": ms,
                    "copyShareOfFloor": floor / ms,
                }
            )
            print(
                f"{task.name:16} {config.name:16} {nbytes / 1e6:9.1f} MB  floor {floor:.4f} ms  "
                f"copy {ms:.4f} ms  ({100 * floor / ms:.0f} % of the floor)",
                flush=True,
            )
            del case, outputs, src, dst
    if out is not None:
        with open(out, "w") as f:
            json.dump({"device": info, "ceilings": ceilings, "rows": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
