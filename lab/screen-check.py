"""Does the search's screen time what bench times, in less time? (run on the GPU machine)

For each built-in task, its baseline kernel is timed as the candidate, beside itself as the
baseline, four times in turn: bench (eager, full head start) and bench --screen (baseline
only, short head start), A B A B, at the search's budget (0.5 s a configuration), without
torch.compile. Prints, per configuration, the candidate's median in each run and the
screen's over bench's, then per task the timing phase's seconds and the configurations the
screen timed again with the full head start. A screen that agrees shows ratios inside the
spread of the two bench runs.
    python3 lab/screen-check.py [TASK...] [--json FILE]
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def bench(task, screen, cache):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "bench.json")
        argv = [
            sys.executable,
            "-m",
            "evokernel_harness",
            "bench",
            "--task",
            os.path.join(ROOT, "kernels", task),
            "--candidate",
            os.path.join(ROOT, "kernels", task, "kernel.cu"),
            "--budget",
            "0.5",
            "--no-compile",
            "--cache",
            cache,
            "--ceilings",
            os.path.join(cache, "ceilings.json"),
            "--seed",
            "11",
            "--out",
            out,
        ]
        if screen:
            argv.append("--screen")
        env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "runner", "harness")}
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
        if proc.returncode != 0 or not os.path.exists(out):
            raise SystemExit(f"{task}: bench exit {proc.returncode}\n{proc.stderr[-2000:]}")
        with open(out) as f:
            return json.load(f)


def main(argv):
    dump = None
    if "--json" in argv:
        i = argv.index("--json")
        dump = argv[i + 1]
        argv = argv[:i] + argv[i + 2 :]
    tasks = argv or sorted(
        d
        for d in os.listdir(os.path.join(ROOT, "kernels"))
        if os.path.exists(os.path.join(ROOT, "kernels", d, "task.json"))
    )
    cache = os.environ.get("EVOKERNEL_CACHE", os.path.join(tempfile.gettempdir(), "evokernel-cache"))
    os.makedirs(cache, exist_ok=True)
    rows, ratios, saved = [], [], []
    for task in tasks:
        runs = [bench(task, screen, cache) for screen in (False, True, False, True)]
        full, screen = [runs[0], runs[2]], [runs[1], runs[3]]
        if runs[0]["reason"] == "no-gpu":
            raise SystemExit("no CUDA GPU here: run this on the GPU machine")
        for r in runs:
            if not r["ok"]:
                print(f"{task}: bench not ok: {r['reason']}: {r['message']}")
        for ci, config in enumerate(runs[0]["configs"]):
            f = [r["configs"][ci]["candidate"]["medianMs"] for r in full]
            s = [r["configs"][ci]["candidate"]["medianMs"] for r in screen]
            ratio = statistics.median(s) / statistics.median(f)
            ratios.append(ratio)
            rows.append(
                {
                    "task": task,
                    "config": config["name"],
                    "bench": f,
                    "screen": s,
                    "ratio": ratio,
                    "benchSpread": max(f) / min(f) - 1,
                }
            )
            n = [r["configs"][ci]["candidate"]["n"] for r in screen]
            rows[-1]["screenSamples"] = n
            print(
                f"{task:18s} {config['name']:10s} bench {f[0]:.4f} {f[1]:.4f} ms  screen {s[0]:.4f} {s[1]:.4f} ms  "
                f"screen/bench {ratio:.3f}  (bench runs differ {max(f) / min(f) - 1:.1%}; "
                f"screen samples {n[0]}, {n[1]})"
            )
        tf = statistics.median(r["phases"].get("timing", 0.0) for r in full)
        ts = statistics.median(r["phases"].get("timing", 0.0) for r in screen)
        retimed = sorted({c for r in screen for c in r.get("headStart", {}).get("retimed", [])})
        saved.append((tf, ts))
        print(
            f"{task:18s} timing s: bench {tf:.2f}, screen {ts:.2f}"
            + (f"; timed again with the full head start: {', '.join(retimed)}" if retimed else "")
        )
    if not ratios:
        raise SystemExit("nothing was timed (no CUDA GPU here?)")
    print(
        f"screen/bench medians: median {statistics.median(ratios):.3f}, range {min(ratios):.3f}-{max(ratios):.3f}; "
        f"timing s summed: bench {sum(t for t, _ in saved):.1f}, screen {sum(t for _, t in saved):.1f}"
    )
    if dump:
        with open(dump, "w") as f:
            json.dump({"rows": rows, "timing": dict(zip(tasks, saved))}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
