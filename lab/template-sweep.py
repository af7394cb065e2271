"""Every combination of a template kernel's tunables, checked and timed (run on the GPU machine).

For each task (kernels/<task>/task.json with "tunables"), every combination its "constraints"
allow is built (all cores, the harness's build cache), checked against the reference on
every configuration, held-out ones included (one input set each, the configuration's own
init, the task's tolerance; on the odd-sized configuration also with every float input moved
one element off its alignment), and the correct ones are timed on the visible
configurations beside eager PyTorch and torch.compile, in two rounds of successive halving:
round 1 times every correct combination a few times (short head start), round 2 the fastest
--keep of each configuration again with the full head start, with the template's defaults,
eager and torch.compile, interleaved in one process, L2 flushed before every call.

This is a sweep, not a verdict: the verifier's full checks (several inits, poisoned memory,
races, …) run when the tuner proposes a combination; a combination this sweep calls wrong is
a bug in the template to fix. A crash (an illegal address ends the CUDA context) costs the
task's child process: the parent records the combination and goes on in a fresh one.

    python3 lab/template-sweep.py [TASK...] --out DIR [--fix NAME=V]... [--all]
        [--keep 6] [--no-compile] [--deadline SECONDS]
Without --all, UNROLL stays at its default (its values triple the space and it moves
little); --fix pins other tunables the same way (in each task that has the tunable and
takes that value; another task's axis stays free, and the sweep says so). Writes DIR/<task>.json (every combination:
built, correct, errors, round-1 and round-2 medians) and prints a table per task: per
configuration eager, torch.compile, the defaults, the best combination and the floor.
"""

import argparse
import ast
import concurrent.futures
import itertools
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
HARNESS = os.path.join(ROOT, "runner", "harness")
ORDER = [
    "softmax",
    "layernorm",
    "rmsnorm",
    "cross_entropy",
    "row_sum",
    "softmax_bf16",
    "layernorm_bf16",
    "fused_elementwise",
    "rmsnorm_backward",
    "gemm_bias_relu",
]


# --- the space -------------------------------------------------------------------------------

_C_TO_PY = (("&&", " and "), ("||", " or "))


def constraint_fn(text):
    """A C-like constraint over tunables' names as a predicate on a dict of values (the same
    language as runner/src/tasks/constraints.ts: integers, names, + - * / %, comparisons,
    && || !, parentheses; / is integer division)."""
    py = text
    for c, p in _C_TO_PY:
        py = py.replace(c, p)
    py = py.replace("!=", "\0").replace("!", " not ").replace("\0", "!=").replace("/", "//")
    tree = ast.parse(py, mode="eval")
    allowed = (
        ast.Expression,
        ast.BoolOp,
        ast.And,
        ast.Or,
        ast.UnaryOp,
        ast.Not,
        ast.USub,
        ast.UAdd,
        ast.BinOp,
        ast.Add,
        ast.Sub,
        ast.Mult,
        ast.FloorDiv,
        ast.Mod,
        ast.Compare,
        ast.Lt,
        ast.LtE,
        ast.Gt,
        ast.GtE,
        ast.Eq,
        ast.NotEq,
        ast.Name,
        ast.Load,
        ast.Constant,
    )
    for node in ast.walk(tree):
        if not isinstance(node, allowed) or (isinstance(node, ast.Constant) and not isinstance(node.value, int)):
            raise SystemExit(f"constraint {text!r}: {type(node).__name__} is not allowed")
    code = compile(tree, "<constraint>", "eval")
    return lambda values: bool(eval(code, {"__builtins__": {}}, dict(values)))  # noqa: S307 — checked above


def defaults_of(source, names):
    """The value each tunable has when no -D is given: its `#define NAME value` under #ifndef."""
    import re

    out = {}
    for name in names:
        m = re.search(rf"#ifndef {name}\s*\n\s*#define {name} (\S+)", source)
        if m:
            out[name] = int(m.group(1)) if m.group(1).lstrip("-").isdigit() else m.group(1)
    return out


def space(task_dir, fixed, every):
    with open(os.path.join(task_dir, "task.json")) as f:
        spec = json.load(f)
    tunables = spec.get("tunables") or {}
    with open(os.path.join(task_dir, spec.get("kernel", "kernel.cu"))) as f:
        source = f.read()
    defaults = defaults_of(source, tunables)
    rules = [constraint_fn(c) for c in spec.get("constraints", [])]
    axes = {}
    for name, values in tunables.items():
        if name in fixed and fixed[name] in values:
            axes[name] = [fixed[name]]
        elif name in fixed:
            # one --fix for several tasks: a value this task's tunable does not take leaves it free
            print(f"{spec.get('name', task_dir)}: {name}={fixed[name]} is not one of its values {values}: not pinned")
            axes[name] = list(values)
        elif name == "UNROLL" and not every and name in defaults:
            axes[name] = [defaults[name]]
        else:
            axes[name] = list(values)
    combos = []
    for values in itertools.product(*axes.values()):
        combo = {**defaults, **dict(zip(axes, values))}
        if all(rule(combo) for rule in rules):
            combos.append(dict(zip(axes, values)))
    default = {name: defaults.get(name) for name in axes}
    if default not in combos:
        combos.insert(0, default)
    return spec, combos, default


def task_path(task):
    """A built-in task's name (kernels/<name>), or a task folder's path."""
    return os.path.abspath(task) if os.sep in task else os.path.join(ROOT, "kernels", task)


def label(combo):
    return " ".join(f"{k}={v}" for k, v in combo.items())


# --- the parent: builds, children, the table -----------------------------------------------------


def build_all(jobs, cache):
    sys.path.insert(0, HARNESS)
    from evokernel_harness.candidates.build import build

    def one(job):
        path, combo = job
        defines = [f"{k}={v}" for k, v in combo.items() if v is not None]
        try:
            r = build(path, cache, defines, "sm_90")
        except Exception as err:  # noqa: BLE001 — a build that cannot start is this combination's failure
            return {"ok": False, "log": f"{type(err).__name__}: {err}", "seconds": 0.0}
        return r

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1))
    return pool, [pool.submit(one, job) for job in jobs]


def run_child(task, work, out_json, args):
    """Runs children until every combination of `work` has a result; returns the results."""
    results = {}
    todo = list(range(len(work["combos"])))
    attempts = 0
    while True:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({**work, "todo": todo, "checked": results}, f)
            spec_path = f.name
        lines_path = spec_path + ".lines"
        env = {**os.environ, "PYTHONPATH": HARNESS, "PYTHONUNBUFFERED": "1"}
        argv = [
            sys.executable,
            os.path.abspath(__file__),
            "--child",
            spec_path,
            "--lines",
            lines_path,
            "--keep",
            str(args.keep),
            "--budget",
            str(args.budget),
        ]
        argv += (["--no-compile"] if args.no_compile else []) + (["--dry-run"] if args.dry_run else [])
        proc = subprocess.run(argv, env=env, timeout=1800, stdout=sys.stdout, stderr=sys.stderr)
        started = None
        timing = None
        if os.path.exists(lines_path):
            with open(lines_path) as f:
                for line in f:
                    rec = json.loads(line)
                    if rec["kind"] == "start":
                        started = rec["i"]
                    elif rec["kind"] == "check":
                        results[rec["i"]] = rec
                        started = None
                    elif rec["kind"] == "timing":
                        timing = rec
        if proc.returncode == 0 and timing is not None:
            return results, timing
        attempts += 1
        if started is not None:
            results[started] = {
                "kind": "check",
                "i": started,
                "ok": False,
                "reason": "crash",
                "message": f"the child ended with {proc.returncode} while checking it",
            }
        todo = [i for i in todo if i not in results]
        if attempts > 8:
            return results, {"kind": "timing", "error": f"gave up after {attempts} children (exit {proc.returncode})"}
        print(f"  {task}: child exit {proc.returncode}; {len(todo)} combinations left, again", flush=True)


def main_parent(args):
    tasks = args.tasks or [t for t in ORDER if os.path.exists(os.path.join(ROOT, "kernels", t, "task.json"))]
    fixed = {}
    for item in args.fix or []:
        name, _, value = item.partition("=")
        fixed[name] = int(value) if value.lstrip("-").isdigit() else value
    cache = os.environ.get("EVOKERNEL_CACHE", os.path.join(tempfile.gettempdir(), "evokernel-cache"))
    os.makedirs(cache, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    plans = []
    jobs = []
    for task in tasks:
        task_dir = task_path(task)
        task = os.path.basename(task_dir.rstrip("/"))
        spec, combos, default = space(task_dir, fixed, args.all)
        kernel = os.path.join(task_dir, spec.get("kernel", "kernel.cu"))
        plans.append((task, task_dir, kernel, combos, default, len(jobs)))
        jobs += [(kernel, c) for c in combos]
        print(f"{task}: {len(combos)} combinations", flush=True)
    pool, futures = build_all(jobs, cache)
    summary = []
    for task, task_dir, kernel, combos, default, first in plans:
        if args.deadline and time.time() - t0 > args.deadline:
            print(f"{task}: skipped (past the deadline of {args.deadline} s)", flush=True)
            continue
        built = [f.result() for f in futures[first : first + len(combos)]]
        tb = time.time()
        work = {
            "task": task,
            "taskDir": task_dir,
            "kernel": kernel,
            "default": default,
            "combos": combos,
            "artifacts": [b.get("artifact") if b.get("ok") else None for b in built],
        }
        failed_builds = [(c, b) for c, b in zip(combos, built) if not b.get("ok")]
        results, timing = run_child(task, work, None, args)
        rows = []
        for i, (combo, b) in enumerate(zip(combos, built)):
            check = results.get(i, {})
            rows.append(
                {
                    "combo": combo,
                    "built": bool(b.get("ok")),
                    "buildSeconds": b.get("seconds"),
                    "buildLog": None if b.get("ok") else (b.get("log") or "")[-3000:],
                    "ok": check.get("ok", False),
                    "reason": check.get("reason"),
                    "message": check.get("message"),
                    "configs": check.get("configs"),
                }
            )
        record = {
            "task": task,
            "seconds": round(time.time() - tb, 1),
            "combinations": len(combos),
            "built": sum(r["built"] for r in rows),
            "correct": sum(r["ok"] for r in rows),
            "default": default,
            "rows": rows,
            "timing": timing,
        }
        with open(os.path.join(args.out, f"{task}.json"), "w") as f:
            json.dump(record, f, indent=1)
        summary.append(record)
        print_task(record, failed_builds)
    pool.shutdown(wait=False, cancel_futures=True)
    print(f"sweep done in {time.time() - t0:.0f} s", flush=True)


def print_task(record, failed_builds):
    task = record["task"]
    wrong = [r for r in record["rows"] if r["built"] and not r["ok"]]
    print(
        f"\n## {task}: {record['combinations']} combinations, {record['built']} built, {record['correct']} correct, "
        f"{record['seconds']} s",
        flush=True,
    )
    for combo, b in failed_builds[:5]:
        tail = (b.get("log") or "").strip().splitlines()[-3:]
        print(f"  BUILD FAILED {label(combo)}: {' | '.join(tail)[:400]}")
    for r in wrong[:12]:
        print(f"  WRONG {label(r['combo'])}: {r['reason']}: {(r['message'] or '')[:300]}")
    timing = record.get("timing") or {}
    if timing.get("error"):
        print(f"  timing: {timing['error']}")
    for cfg in timing.get("configs", []):
        d, b = cfg.get("default"), cfg.get("best")
        ratio = lambda a, c: f"{a / c:.2f}x" if a and c else "-"  # noqa: E731
        print(
            f"  {cfg['name']:>16s}: eager {fmt(cfg.get('eager'))} compile {fmt(cfg.get('compile'))} "
            f"default {fmt(d)} best {fmt(b)} [{cfg.get('bestLabel')}] floor {cfg['floorMs']:.4f} ms; "
            f"best vs default {ratio(d, b)}, vs eager {ratio(cfg.get('eager'), b)}, "
            f"vs compile {ratio(cfg.get('compile'), b)}, best {100 * cfg['floorMs'] / b if b else 0:.0f}% of floor"
        )
    if timing.get("bestOverall"):
        o = timing["bestOverall"]
        print(
            f"  one set for every configuration: [{o['label']}] geomean vs default {o['vsDefault']:.2f}x, "
            f"vs compile {o['vsCompile']:.2f}x"
            if o.get("vsCompile")
            else f"  one set for every configuration: [{o['label']}] geomean vs default {o['vsDefault']:.2f}x"
        )


def fmt(ms):
    return f"{ms:.4f}" if ms else "-"


# --- the child: checks and timing in one process ------------------------------------------------


def main_child(args):
    import torch

    from evokernel_harness.bench import _compiled
    from evokernel_harness.candidates.load import Candidate
    from evokernel_harness.compare import compare
    from evokernel_harness.env import device_info, dtype_name
    from evokernel_harness.roofline import floor_ms, measure_ceilings
    from evokernel_harness.tasks import load_task
    from evokernel_harness.timing import HEAD_START_CYCLES, SCREEN_HEAD_START_CYCLES, Timer, stats

    if args.dry_run:  # the plumbing on a machine without a GPU: each "combination" is the reference
        Candidate, Timer, measure_ceilings = _DryCandidate, _DryTimer, _dry_ceilings

    with open(args.child) as f:
        work = json.load(f)
    lines = open(args.lines, "a")

    def emit(rec):
        lines.write(json.dumps(rec, default=str) + "\n")
        lines.flush()

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cpu" if args.dry_run else "cuda")
    task = load_task(work["taskDir"])
    task.prune(dev.type)
    ref = task.reference_entry()
    grad = torch.enable_grad if task.backward else torch.no_grad

    configs = list(task.configs)
    visible = task.visible_configs()
    odd = [c for c in visible if any(isinstance(v, int) and v % 2 for v in c.dims.values())]
    cases, refs = {}, {}
    for ci, config in enumerate(configs):
        case = task.make_case(config, 1000 + ci, dev)
        with grad():
            refs[config.name] = [o.detach() for o in task.invoke(ref, case.clone())]
        cases[config.name] = case

    def shifted(case):
        """Every float tensor moved one element off its alignment (same values)."""
        c = case.clone()
        for i, a in enumerate(c.args):
            if isinstance(a, torch.Tensor) and a.is_floating_point():
                buf = torch.empty(a.numel() + 1, dtype=a.dtype, device=a.device)
                view = buf[1:].view(a.shape)
                view.copy_(a)
                c.args[i] = view
        return c

    checks = [(c.name, cases[c.name], refs[c.name]) for c in configs]
    if odd:
        checks.append((odd[0].name + "+shifted", shifted(cases[odd[0].name]), refs[odd[0].name]))
    loaded = {}
    checked = work.get("checked", {})
    for i in work["todo"]:
        art = work["artifacts"][i]
        if art is None:
            emit({"kind": "check", "i": i, "ok": False, "reason": "compile-error", "message": "did not build"})
            continue
        emit({"kind": "start", "i": i})
        if args.dry_run and os.environ.get("EVK_SWEEP_DRY_CRASH") == str(i):
            os._exit(9)  # the test's stand-in for an illegal address: the child dies mid-check
        try:
            cand = Candidate(work["kernel"], art, task)
            rows, bad = [], None
            for name, case, expected in checks:
                with grad():
                    got = cand.run(case)
                _sync(dev)
                res = [compare(g, e, task.tolerance(dtype_name(e.dtype))) for g, e in zip(got, expected)]
                rows.append(
                    {
                        "name": name,
                        "ok": all(r["ok"] for r in res),
                        "maxAbs": max((r["maxAbs"] or 0.0) for r in res),
                        "normRel": max((r["normRel"] or 0.0) for r in res),
                    }
                )
                if bad is None and not rows[-1]["ok"]:
                    bad = name
                del got
            if bad is None:
                loaded[i] = cand
            emit(
                {
                    "kind": "check",
                    "i": i,
                    "ok": bad is None,
                    "reason": None if bad is None else "mismatch",
                    "message": None if bad is None else f"wrong on {bad}",
                    "configs": rows,
                }
            )
        except Exception as err:  # noqa: BLE001 — a launch error is this combination's failure
            emit({"kind": "check", "i": i, "ok": False, "reason": "error", "message": f"{type(err).__name__}: {err}"})
            try:
                _sync(dev)
            except Exception:  # noqa: BLE001 — a sticky error (illegal address): a fresh child goes on
                lines.close()
                os._exit(3)
    # the combinations that passed (in this child or an earlier one) are timed
    for key, rec in checked.items():
        i = int(key)
        if rec.get("ok") and i not in loaded and work["artifacts"][i]:
            loaded[i] = Candidate(work["kernel"], work["artifacts"][i], task)
    passed = {i for i in loaded}
    ok_ids = sorted(passed)
    default_i = next((i for i, c in enumerate(work["combos"]) if c == work["default"]), None)

    info = device_info(dev.type)
    ceilings = measure_ceilings(info["name"])
    compiled = None if args.no_compile or args.dry_run else _compiled(task, print)
    timer1 = Timer(dev, info.get("l2Bytes"), SCREEN_HEAD_START_CYCLES)
    timer2 = Timer(dev, info.get("l2Bytes"), HEAD_START_CYCLES)
    out_cfgs = []
    per_combo = {i: {} for i in ok_ids}
    for ci, config in enumerate(visible):
        rot = [cases[config.name]] + [task.make_case(config, 2000 + ci, dev)]
        shared = {}  # one set of output buffers for every combination (not one each: memory)
        for i in ok_ids:
            loaded[i].entry.reuse_outputs = True
            loaded[i].entry.reused = shared
        impls = {f"c{i}": loaded[i].run for i in ok_ids}
        with grad():
            raw = timer1.interleaved(impls, rot, budget_s=0.0, min_iters=5, max_iters=5, warmup=1, seed=ci)
        r1 = {i: statistics.median(raw[f"c{i}"]["event"]) for i in ok_ids}
        for i in ok_ids:
            per_combo[i][config.name] = r1[i]
        keep = sorted(ok_ids, key=lambda i: r1[i])[: args.keep]
        if default_i is not None and default_i in loaded and default_i not in keep:
            keep.append(default_i)
        impls2 = {f"c{i}": loaded[i].run for i in keep}
        impls2["eager"] = lambda case: task.invoke(ref, case)
        if compiled is not None:
            try:
                with grad():
                    compiled(rot[0].clone())
                impls2["compile"] = compiled
            except Exception as err:  # noqa: BLE001
                print(f"torch.compile failed on {config.name}: {err}")
        with grad():
            raw2 = timer2.interleaved(impls2, rot, budget_s=args.budget, min_iters=15, max_iters=60, seed=100 + ci)
        s2 = {name: stats(v["event"]) for name, v in raw2.items()}
        with grad():
            nbytes, flops = task.cost(config, rot[0], refs[config.name])
        floor = floor_ms(nbytes, flops, dtype_name(refs[config.name][0].dtype), ceilings)
        best_i = min(keep, key=lambda i: s2[f"c{i}"]["medianMs"]) if keep else None
        out_cfgs.append(
            {
                "name": config.name,
                "floorMs": floor,
                "eager": s2["eager"]["medianMs"],
                "compile": s2["compile"]["medianMs"] if "compile" in s2 else None,
                "default": s2[f"c{default_i}"]["medianMs"] if default_i is not None and f"c{default_i}" in s2 else None,
                "best": s2[f"c{best_i}"]["medianMs"] if best_i is not None else None,
                "bestCombo": work["combos"][best_i] if best_i is not None else None,
                "bestLabel": label(work["combos"][best_i]) if best_i is not None else None,
                "round2": {name: s for name, s in s2.items()},
                "round2Labels": {f"c{i}": label(work["combos"][i]) for i in keep},
            }
        )
        for i in ok_ids:
            loaded[i].entry.reuse_outputs = False
            loaded[i].entry.reused = {}
        del rot, shared
    # one set of values for every configuration: round 1's geometric mean against the defaults
    overall = None
    if default_i is not None and default_i in per_combo and ok_ids:
        d = per_combo[default_i]
        gm = lambda i: math.exp(statistics.mean(math.log(d[c] / per_combo[i][c]) for c in d))  # noqa: E731
        best = max(ok_ids, key=gm)
        comp = [c for c in out_cfgs if c.get("compile")]
        overall = {
            "combo": work["combos"][best],
            "label": label(work["combos"][best]),
            "vsDefault": gm(best),
            "round1": per_combo[best],
        }
        if comp and all(per_combo[best].get(c["name"]) for c in comp):
            overall["vsCompile"] = math.exp(
                statistics.mean(math.log(c["compile"] / per_combo[best][c["name"]]) for c in comp)
            )
    emit(
        {
            "kind": "timing",
            "configs": out_cfgs,
            "round1": {str(i): per_combo[i] for i in ok_ids},
            "bestOverall": overall,
            "device": info,
            "ceilings": ceilings,
        }
    )
    lines.close()


def _sync(dev):
    if dev.type == "cuda":
        import torch

        torch.cuda.synchronize()


class _DryCandidate:
    """--dry-run: the task's reference stands in for the built kernel."""

    def __init__(self, path, artifact, task):
        class Entry:
            reuse_outputs = False
            reused = {}

        self.entry = Entry()
        self.task = task
        self.ref = task.reference_entry()

    def run(self, case):
        return self.task.invoke(self.ref, case)


class _DryTimer:
    """--dry-run: wall-clock times, the Timer's interface."""

    def __init__(self, device, l2_bytes, head_start_cycles=0):
        pass

    def interleaved(self, impls, args, budget_s=1.5, min_iters=15, max_iters=200, warmup=3, seed=0, prepare=None):
        out = {name: {"event": [], "wall": []} for name in impls}
        for i in range(min_iters):
            for name, fn in impls.items():
                t0 = time.perf_counter()
                fn(args[i % len(args)])
                ms = (time.perf_counter() - t0) * 1e3
                out[name]["event"].append(ms)
                out[name]["wall"].append(ms)
        return out


def _dry_ceilings(name):
    return {"bandwidthGBs": 3000.0, "fp32Tflops": 60.0, "bf16Tflops": 900.0, "device": name}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("tasks", nargs="*")
    p.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "template-sweep"))
    p.add_argument("--fix", action="append", help="NAME=VALUE: that tunable at that value only")
    p.add_argument("--all", action="store_true", help="UNROLL's values too")
    p.add_argument("--keep", type=int, default=6, help="combinations per configuration in round 2")
    p.add_argument("--budget", type=float, default=0.3, help="round 2's seconds of timing per configuration")
    p.add_argument("--no-compile", action="store_true")
    p.add_argument("--deadline", type=float, default=0.0, help="start no task after this many seconds")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--lines", help=argparse.SUPPRESS)
    p.add_argument("--list", action="store_true", help="print each task's combinations and exit (no GPU)")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="the script's plumbing without a GPU: every combination is built, then the reference "
        "stands in for it on the CPU (for the script's own test)",
    )
    args = p.parse_args()
    if args.child:
        sys.path.insert(0, HARNESS)
        return main_child(args)
    if args.list:
        for task in args.tasks or ORDER:
            task_dir = task_path(task)
            if not os.path.exists(os.path.join(task_dir, "task.json")):
                continue
            _, combos, default = space(task_dir, {}, args.all)
            print(json.dumps({"task": task, "default": default, "combinations": combos}))
        return 0
    return main_parent(args)


if __name__ == "__main__":
    sys.exit(main() or 0)
