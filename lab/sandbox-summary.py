#!/usr/bin/env python3
"""The table of lab/gpu-sandbox.sh's output: each task and configuration's candidate
median (p20-p80) inside the sandbox and outside, rounds A B A B, and the hostile probe's
findings. Usage: sandbox-summary.py DIR"""

import json
import statistics
import sys
from pathlib import Path

d = Path(sys.argv[1])
probe = json.loads((d / "probe.json").read_text())
inside = probe["probeInside"]
print(
    f"hostile probe inside: leaks {inside['leaks']}, processes visible {inside['seen']['pids']}, "
    f"uid {inside['seen']['uid']}, CapEff {inside['seen']['cap_eff']}"
)
print(
    f"hostile probe outside (control): {len(probe['probeOutside']['leaks'])} leaks: "
    + ", ".join(sorted({x.split(":")[0] for x in probe["probeOutside"]["leaks"]}))
)
for side in ("inside", "outside"):
    m = [x["median_ms"] for x in probe["matmul"][side]]
    print(
        f"4096² matmul {side}: median of 5 runs' medians {statistics.median(m):.4f} ms (runs {min(m):.4f}-{max(m):.4f})"
    )
print()
print(
    "| task | configuration | inside µs (p20–p80), rounds 1 / 2 | outside µs (p20–p80), rounds 1 / 2 | inside/outside |"
)
print("|---|---|---|---|---:|")
tasks = sorted({p.name.split("-")[1] for p in d.glob("bench-*-on-1.json")})
for task in tasks:
    runs = {
        (m, r): json.loads((d / f"bench-{task}-{m}-{r}.json").read_text())["candidate"]["bench"]
        for m in ("on", "off")
        for r in (1, 2)
    }
    for i, cfg in enumerate(runs[("on", 1)]["configs"]):

        def cell(mode):
            parts, meds = [], []
            for r in (1, 2):
                c = runs[(mode, r)]["configs"][i]["candidate"]
                parts.append(f"{c['medianMs'] * 1e3:.2f} ({c['p20Ms'] * 1e3:.2f}–{c['p80Ms'] * 1e3:.2f})")
                meds.append(c["medianMs"])
            return " / ".join(parts), statistics.mean(meds)

        a, ma = cell("on")
        b, mb = cell("off")
        print(f"| {task} | {cfg['name']} | {a} | {b} | {ma / mb:.3f} |")
