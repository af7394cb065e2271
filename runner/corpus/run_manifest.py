"""Run the GPU adversarial corpus through the harness CLI and compare with manifest.json.

On a GPU machine, from the repository root:

    python3 runner/corpus/run_manifest.py --out results.json [--only SUBSTRING]... [--jobs 8]
    python3 runner/corpus/run_manifest.py --manifest runner/corpus/correct/manifest.json --out r.json

A task path `shared:REST` names public task data under $EVOKERNEL_SHARED_DATA (default
<repo>/../shared/data).

Builds every candidate first (in parallel: torch extensions take a minute each), then runs
each entry's check (verify, or bench for the timing-only classes; a kernel that must pass a bench
check is verified first) one at a time, as the
TypeScript worker would: `python -m evokernel_harness <command> ... --out FILE`. Prints one
line per entry and writes every record to --out. Exit code 0 when every entry met its
expectation, 1 otherwise.
"""

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
HARNESS = os.path.join(REPO, "runner", "harness")


def task_path(task):
    """A manifest task path for the harness: `shared:REST` is REST under
    $EVOKERNEL_SHARED_DATA (default <repo>/../shared/data), public task data that is never
    copied into the repository; a `#backward` suffix stays. Other paths are unchanged."""
    if task.startswith("shared:"):
        data = os.environ.get("EVOKERNEL_SHARED_DATA") or os.path.join(os.path.dirname(REPO), "shared", "data")
        return os.path.join(data, task[len("shared:"):])
    return task


def harness(argv, timeout):
    """(record or None, seconds, log tail) of one harness process."""
    out = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"evk-corpus-{os.getpid()}-{time.monotonic_ns()}.json")
    env = dict(os.environ)
    env["PYTHONPATH"] = HARNESS + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    start = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "evokernel_harness", *argv, "--out", out], cwd=REPO,
                              env=env, capture_output=True, text=True, timeout=timeout)
        log = (proc.stdout + proc.stderr)[-3000:]
    except subprocess.TimeoutExpired:
        return None, time.perf_counter() - start, f"timeout after {timeout} s"
    seconds = time.perf_counter() - start
    if not os.path.exists(out):
        return None, seconds, f"exit {proc.returncode}, no record: {log}"
    with open(out) as f:
        rec = json.load(f)
    os.unlink(out)
    return rec, seconds, log


def outcome(entry, rec):
    """(met, got) for one entry: did the record say what the manifest expects?"""
    if rec is None:
        return False, "no record"
    if entry["check"] == "bench":
        reasons = [rec.get("reason")] + [c.get("reason") for c in rec.get("configs", [])]
        got = next((r for r in reasons if r), None)
        if entry["expect"] == "pass" and entry.get("launchBound"):
            marked = [c.get("launchBound") for c in rec.get("configs", [])]
            return bool(rec.get("ok")) and bool(marked) and all(marked), f"ok={rec.get('ok')} launch-bound={marked}"
        if entry["expect"] == "pass":
            return bool(rec.get("ok")) and got is None, f"ok={rec.get('ok')} reason={got}"
        return got in entry["reasons"], f"ok={rec.get('ok')} reason={got}"
    got = rec.get("reason")
    if entry["expect"] == "pass":
        return rec.get("status") == "passed", f"{rec.get('status')} {got or ''}".strip()
    return rec.get("status") == "rejected" and got in entry["reasons"], f"{rec.get('status')} {got}"


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--manifest", default=os.path.join(HERE, "manifest.json"))
    p.add_argument("--out", required=True, help="JSON file for every record and verdict")
    p.add_argument("--only", action="append", help="run entries whose file contains this (repeatable)")
    p.add_argument("--cache", default=os.path.join(REPO, ".cache", "evk-corpus"))
    p.add_argument("--jobs", type=int, default=8, help="parallel builds")
    p.add_argument("--timeout", type=int, default=300, help="seconds per harness run")
    p.add_argument("--heldout", action="store_true", help="verify with held-out configurations too")
    args = p.parse_args(argv)

    with open(args.manifest) as f:
        entries = json.load(f)
    if args.only:
        entries = [e for e in entries if any(s in e["file"] for s in args.only)]

    # build everything first, in parallel (the GPU is not needed for this), Python candidates
    # too, as the runner's build pool does: a load_inline extension compiles in its build
    # (20-50 s each on the H100), not one at a time inside its verification; a build that
    # fails leaves the verification to build it itself, as before
    artifacts = {}
    to_build = sorted({e["file"] for e in entries})
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(harness, ["build", "--candidate", f, "--cache", args.cache], 900): f for f in to_build}
        for fut in concurrent.futures.as_completed(futures):
            rec, seconds, log = fut.result()
            f = futures[fut]
            ok = bool(rec and rec.get("ok"))
            artifacts[f] = rec.get("artifact") if ok else None
            print(f"build {'ok ' if ok else 'ERR'} {seconds:6.1f}s {f}" + ("" if ok else f"\n{(rec or {}).get('log', log)[-1500:]}"), flush=True)

    results, failures = [], 0
    for e in entries:
        art = ["--artifact", artifacts[e["file"]]] if artifacts.get(e["file"]) else []
        verify_argv = ["verify", "--task", task_path(e["task"]), "--candidate", e["file"], *art, "--cache", args.cache]
        if e["check"] == "bench" and e["expect"] == "pass":
            # a kernel that must pass is verified before it is timed, as the cascade does
            rec, seconds, log = harness(verify_argv + (["--heldout"] if args.heldout else []), args.timeout)
            if rec is None or rec.get("status") != "passed":
                got = f"verify: {(rec or {}).get('status')} {(rec or {}).get('reason') or ''}".strip()
                failures += 1
                msg = (rec or {}).get("message") or log
                print(f"MISS {seconds:6.1f}s {e['file']}: want pass; got {got}\n      {str(msg)[:600]}", flush=True)
                results.append({**e, "met": False, "got": got, "seconds": round(seconds, 2), "record": rec,
                                "log": None if rec else log})
                continue
            for w in rec.get("warnings", []):
                print(f"     warning: {w[:300]}", flush=True)
        if e["check"] == "bench":
            argv_ = ["bench", "--task", task_path(e["task"]), "--candidate", e["file"], *art, "--no-baseline", "--cache", args.cache]
        else:
            argv_ = list(verify_argv)
            if args.heldout:
                argv_.append("--heldout")
        rec, seconds, log = harness(argv_, args.timeout)
        met, got = outcome(e, rec)
        failures += not met
        want = "pass" if e["expect"] == "pass" else "|".join(e["reasons"])
        msg = (rec or {}).get("message") or log
        print(f"{'OK  ' if met else 'MISS'} {seconds:6.1f}s {e['file']}: want {want}; got {got}" +
              ("" if met else f"\n      {str(msg)[:600]}"), flush=True)
        if met and e["expect"] == "reject" and rec:
            print(f"     message: {str(rec.get('message'))[:400]}", flush=True)
        results.append({**e, "met": met, "got": got, "seconds": round(seconds, 2), "record": rec,
                        "log": None if rec else log})

    with open(args.out, "w") as f:
        json.dump({"results": results, "failures": failures}, f, indent=1, default=str)
    print(f"{len(entries) - failures}/{len(entries)} entries met their expectation")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
