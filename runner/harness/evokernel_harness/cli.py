"""The harness's command line: each command writes one JSON record to --out (or stdout)."""

import argparse
import json
import os
import random
import sys
import time
import traceback

from . import gpulock

SCHEMA = 1


def _write(record, out):
    text = json.dumps(record, allow_nan=False, default=str)
    if out:
        tmp = out + ".tmp"
        try:  # whatever is there (a symlink a candidate left) goes; the record is a new file
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, out)  # a reader never sees half a record
    else:
        print(text)


def _log(msg):
    print(f"[harness] {msg}", file=sys.stderr, flush=True)


def _default_cache():
    return os.environ.get("EVOKERNEL_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "evokernel")


def _parse_defines(values):
    out = []
    for v in values or []:
        if "=" not in v or not v.split("=", 1)[0].isidentifier():
            raise SystemExit(f"--define takes NAME=VALUE, got {v!r}")
        out.append(v)
    return out


def _parse_flags(values):
    from .candidates.build import FlagError, check_flags

    try:
        return check_flags(values or [])
    except FlagError as e:
        raise SystemExit(str(e))


def _device_backend(requested):
    import torch

    if requested == "cpu":
        return "cpu"
    if not torch.cuda.is_available():
        return None
    return "cuda"


def _precise_math():
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if hasattr(torch, "set_float32_matmul_precision"):
        torch.set_float32_matmul_precision("highest")


def cmd_device(args):
    from .env import device_info
    import torch

    cuda = torch.cuda.is_available()
    return {"schema": SCHEMA, "kind": "device", "cuda": cuda, "device": device_info("cuda" if cuda else "cpu")}


def cmd_static(args):
    from .candidates import detect_format, read_source
    from .static_check import check

    source = read_source(args.candidate)
    ref_ops, libraries = frozenset(), "allow"
    if args.reference_ops is not None:
        # what `static-context` said of the task: no torch import here (~2 s a candidate)
        ref_ops, libraries = frozenset(_ops_list(args.reference_ops)), args.libraries
    elif args.task:
        from .tasks import load_task

        task = load_task(args.task)
        ref_ops, libraries = frozenset(task.reference_ops()), task.libraries
    return check(
        args.candidate,
        source,
        detect_format(args.candidate, source),
        ref_ops,
        strict=not args.relaxed,
        libraries=libraries,
    )


def _ops_list(text):
    try:
        ops = json.loads(text)
    except ValueError:
        ops = None
    if not isinstance(ops, list) or not all(isinstance(o, str) for o in ops):
        raise SystemExit("--reference-ops must be a JSON list of op names, as `static-context` gives")
    return ops


def cmd_static_context(args):
    """What the static check needs of a task (the ops its reference calls, its library rule),
    once per search: `static --reference-ops … --libraries …` then needs no torch."""
    from .tasks import load_task

    task = load_task(args.task)
    return {
        "schema": SCHEMA,
        "kind": "static-context",
        "task": task.name,
        "referenceOps": sorted(task.reference_ops()),
        "libraries": task.libraries,
    }


def cmd_build(args):
    from .candidates.build import build

    arch = args.arch or "sm_90"
    return build(
        args.candidate,
        args.cache or _default_cache(),
        _parse_defines(args.define),
        arch,
        args.timeout,
        _parse_flags(args.nvcc_flag),
    )


def cmd_inspect(args):
    from .tasks import TaskError, load_task

    base = {
        "schema": SCHEMA,
        "kind": "task",
        "path": os.path.abspath(args.task.split("#")[0]),
        "ok": False,
        "error": None,
        "name": os.path.basename(args.task.rstrip("/")),
        "format": "native",
        "backward": False,
        "baseline": None,
        "configs": [],
        "notes": [],
        "probe": None,
    }
    try:
        task = load_task(args.task)
    except TaskError as err:
        return {**base, "error": str(err)}
    except Exception as err:  # a task whose Python fails to import is invalid, with its error
        return {**base, "error": f"cannot load the task: {type(err).__name__}: {err}"}
    configs = []
    if args.probe:
        task.prune("cpu")
    for c in task.configs:
        entry = {
            "name": c.name,
            "heldout": c.heldout,
            "derived": c.derived,
            "dims": {k: v for k, v in c.dims.items() if isinstance(v, int) and not isinstance(v, bool)},
            "init": c.init or "declared",
            "inputs": [],
        }
        if hasattr(task, "inputs"):  # native: shapes without building tensors
            entry["inputs"] = [
                {"name": i["name"], "shape": task._shape(i, c), "dtype": i.get("dtype", "float32")} for i in task.inputs
            ]
        configs.append(entry)
    record = {
        **base,
        "ok": True,
        "name": task.name,
        "format": task.format,
        "path": task.path,
        "backward": task.backward,
        "baseline": task.baseline,
        "configs": configs,
        "notes": task.notes,
    }
    if args.probe:
        from .verify import Reject, Verifier

        smallest = min(task.configs, key=lambda c: sum(v for v in c.dims.values() if isinstance(v, int)))
        v = Verifier(task, None, "cpu", 1234, log=_log)
        try:
            v.check_task(smallest)
            record["probe"] = {
                "ok": True,
                "reason": None,
                "message": f"reference runs on {smallest.name}; output is not degenerate",
            }
        except Reject as r:
            record["probe"] = {"ok": False, "reason": r.reason, "message": r.message}
            record["ok"] = False
            record["error"] = r.message
        except Exception as err:
            record["probe"] = {"ok": False, "reason": "reference-error", "message": f"{type(err).__name__}: {err}"}
            record["ok"] = False
            record["error"] = f"the reference fails on {smallest.name}: {err}"
    return record


def _load_for_run(args, backend):
    """Task, static check, build and load: a failure here is a record, not an exception."""
    from .candidates import CandidateError, detect_format, read_source
    from .candidates.build import build
    from .candidates.load import Candidate
    from .env import cuda_arch
    from .static_check import check
    from .tasks import load_task

    task = load_task(args.task)
    task.prune(backend)
    path = args.candidate or task.baseline
    if not path:
        raise CandidateError(f"task {task.name} has no baseline kernel: pass --candidate FILE")
    source = read_source(path)
    fmt = detect_format(path, source)
    static = check(
        path, source, fmt, frozenset(task.reference_ops()), strict=backend != "cpu", libraries=task.libraries
    )
    if not static["ok"]:
        return task, path, fmt, static, None
    artifact = args.artifact
    if artifact is None:
        b = build(
            path,
            args.cache or _default_cache(),
            _parse_defines(args.define),
            cuda_arch(),
            flags=_parse_flags(args.nvcc_flag),
        )
        if not b["ok"]:
            raise CandidateError(b["log"][-4000:], kind="compile-error")
        artifact = b["artifact"]
    return task, path, fmt, static, Candidate(path, artifact, task)


def _verify_begin(args, started):
    """A verify stage's seed, backend and record; the record is final at once when there is no
    backend. Returns (backend, rec, t0): t0 is when loading starts."""
    from .env import device_info

    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 2**31)
    backend = _device_backend(args.device)
    rec = {
        "schema": SCHEMA,
        "kind": "verify",
        "task": args.task,
        "candidate": args.candidate or "",
        "format": "",
        "ok": False,
        "status": "error",
        "reason": None,
        "hack": None,
        "message": "",
        "mismatch": None,
        "configs": [],
        "checks": [],
        "warnings": [],
        "seed": seed,
        "kernelShares": None,
        "libraryKernels": [],
        "seconds": {"load": 0.0, "verify": 0.0},
        "phases": {},
        "device": None,
    }
    if backend is None:
        return (
            None,
            {
                **rec,
                "reason": "no-gpu",
                "device": device_info("cpu"),
                "message": (
                    "no CUDA GPU on this machine: verification needs one (run on a GPU runner, or --device cpu for "
                    "Python candidates)"
                ),
            },
            None,
        )
    _precise_math()
    rec["device"] = device_info(backend)
    t0 = time.perf_counter()
    # where the seconds go (as bench's phases): start, load, then the verifier's own, then
    # the own-kernel profile
    rec["phases"]["start"] = round(t0 - started, 4)
    return backend, rec, t0


def _verify_load(args, backend, rec):
    """_load_for_run, or the record of a task or candidate that does not load:
    returns (loaded, None) or (None, record)."""
    from .candidates import CandidateError
    from .tasks import TaskError

    try:
        return _load_for_run(args, backend), None
    except TaskError as err:
        return None, {**rec, "reason": "task-invalid", "message": str(err)}
    except CandidateError as err:
        if err.kind == "compile-error":
            return None, {**rec, "status": "compile-error", "reason": "compile-error", "message": str(err)}
        return None, {**rec, "status": "rejected", "reason": "load-error", "message": str(err)}


def _verify_loaded(args, rec, backend, loaded, t0, quick, heldout, dump=None):
    """Verification of a loaded candidate (_load_for_run's result): the record of cmd_verify.
    dump: an outputs.Dump keeping each passing trial's outputs for the judge (judge.py)."""
    task, path, fmt, static, cand = loaded
    seed = rec["seed"]
    rec.update(task=task.name, candidate=os.path.abspath(path), format=fmt)
    rec["warnings"] += task.notes
    rec["checks"].append({"name": "static", "ok": static["ok"], "detail": f"{len(static['findings'])} findings"})
    # static findings are evidence: warnings here, confirmed or not by what the run shows
    rec["warnings"] += [
        f"static check, line {f['line']}: {f['message']}" for f in static["findings"] if f["severity"] == "warn"
    ]
    if cand is None:
        first = next(f for f in static["findings"] if f["severity"] == "reject")
        return {
            **rec,
            "status": "rejected",
            "reason": first["code"],
            "hack": first["hack"],
            "message": f"static check, line {first['line']}: {first['message']} ({first['text']})",
            "static": static,
        }
    if backend == "cuda":
        import torch

        torch.cuda.set_per_process_memory_fraction(float(os.environ.get("EVOKERNEL_GPU_MEM_FRACTION", "0.9")))
    rec["seconds"]["load"] = time.perf_counter() - t0
    rec["phases"]["load"] = round(rec["seconds"]["load"], 4)
    from .verify import verify

    result, verifier = verify(
        task,
        cand,
        backend,
        seed,
        include_heldout=heldout and not quick,
        trials=args.trials,
        log=_log,
        quick=quick,
        dump=dump,
    )
    static_check = rec["checks"][0]
    static_warnings = rec["warnings"]
    rec.update({k: v for k, v in result.items() if k not in ("seconds", "phases")})
    rec["phases"].update(result["phases"])
    rec["checks"] = [static_check] + result["checks"]
    rec["warnings"] = static_warnings + result["warnings"]
    rec["seconds"]["verify"] = result["seconds"]
    own = None
    if rec["ok"] and backend == "cuda" and fmt != "evk":  # evk code cannot reach torch at all
        from .own_kernel import check_own_kernel

        cases = ((c.name, task.make_case(c, seed, "cuda")) for c in task.visible_configs())
        profiled = time.perf_counter()
        own = check_own_kernel(cand, task, cases, libraries=task.libraries)
        rec["phases"]["profiler"] = round(time.perf_counter() - profiled, 4)
        rec["checks"].append({"name": "own-kernel-ran", "ok": own["ok"], "detail": own["detail"]})
        rec["kernelShares"] = own["shares"]
        rec["libraryKernels"] = own["libraryKernels"]
    if rec["ok"]:
        from .verdict import after_verification

        after_verification(rec, task, cand, backend, own)
        if rec["ok"] and backend == "cuda" and not quick:  # the full verification's, once
            from .verdict import check_streams

            profiled = time.perf_counter()
            check_streams(rec, task, cand, seed)
            rec["phases"]["profiler"] = round(rec["phases"].get("profiler", 0.0) + time.perf_counter() - profiled, 4)
    elif cand is not None:
        from .evidence import summary

        # a refusal for another reason still says what its code handled (a failed build …)
        rec["warnings"] += summary(cand.evidence.handled())
    return rec


def cmd_verify(args):
    """The verdict is the judge's (judge.py): the candidate is verified in a process of its own
    and its passing outputs compared again where it never ran."""
    from .judge import verify_judged

    return verify_judged(args, _verify_in_process)


def _verify_in_process(args, dump):
    """The verification in the candidate's process: its record is only a claim."""
    started = time.perf_counter()
    backend, rec, t0 = _verify_begin(args, started)
    if backend is None:
        return rec
    loaded, failed = _verify_load(args, backend, rec)
    if failed is not None:
        return failed
    return _verify_loaded(args, rec, backend, loaded, t0, quick=args.quick, heldout=args.heldout, dump=dump)


def _no_gpu_bench(task, message="no CUDA GPU on this machine: timing needs one"):
    from .env import device_info

    return {
        "schema": SCHEMA,
        "kind": "bench",
        "task": task,
        "ok": False,
        "reason": "no-gpu",
        "message": message,
        "device": device_info("cpu"),
        "ceilings": None,
        "configs": [],
        "seconds": 0.0,
    }


def _bench_run(args, started, task, candidate=None, screen=False):
    """Timing on a loaded task (pruned for CUDA): ceilings, the baseline, the candidate (loaded
    from --candidate/--artifact here unless one is given, already loaded), then bench().
    The record of cmd_bench. screen: the search's timing (evaluate): the candidate beside the
    baseline only (the search compares nothing else), with the short head start that timing.py
    checks call by call; bench's own timing keeps eager and the full head start."""
    from .bench import bench
    from .timing import HEAD_START_CYCLES, SCREEN_HEAD_START_CYCLES
    from .candidates.build import build
    from .candidates.load import Candidate
    from .env import cuda_arch, device_info

    _precise_math()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 2**31)
    info = device_info("cuda")
    ceilings = None
    if args.ceilings and os.path.exists(args.ceilings):
        with open(args.ceilings) as f:
            ceilings = json.load(f)
    if ceilings is None or ceilings.get("device") != info["name"]:
        from .roofline import measure_ceilings

        ceilings = measure_ceilings(info["name"])
        if args.ceilings:
            _write(ceilings, args.ceilings)

    def load(path, artifact):
        if not path:
            return None
        if artifact is None:
            b = build(path, args.cache or _default_cache(), [], cuda_arch())
            if not b["ok"]:
                raise SystemExit(f"cannot build {path}:\n{b['log'][-2000:]}")
            artifact = b["artifact"]
        return Candidate(path, artifact, task)

    baseline_path = args.baseline if args.baseline else (None if args.no_baseline else task.baseline)
    baseline = load(baseline_path, args.baseline_artifact)
    if candidate is None:
        candidate = load(args.candidate, args.artifact)
    loaded = round(time.perf_counter() - started, 4)
    probes = None
    if not args.no_probe_cache:
        from .probe_cache import ProbeCache

        probes = ProbeCache(os.path.join(args.cache or _default_cache(), "probe"))
    race = None
    if screen and getattr(args, "race", None):
        race = _race_arg(args.race)
    result = bench(
        task,
        candidate,
        baseline,
        ceilings,
        info,
        seed,
        log=_log,
        budget_s=args.budget,
        compile_baseline=not args.no_compile,
        probe_cache=probes,
        head_start_cycles=SCREEN_HEAD_START_CYCLES if screen else HEAD_START_CYCLES,
        time_eager=not screen,
        adaptive=screen,
        race=race,
    )
    # the task, the GPU, ceilings and the kernels loaded (a build, if none was given) come first
    result["phases"] = {"load": loaded, **result["phases"]}
    return {
        "schema": SCHEMA,
        "kind": "bench",
        "task": task.name,
        "device": info,
        "ceilings": ceilings,
        "baseline": os.path.abspath(baseline_path) if baseline_path else None,
        "candidate": os.path.abspath(args.candidate) if args.candidate else None,
        "seed": seed,
        **result,
    }


def _race_arg(text):
    """--race: a JSON object, configuration name → the leader's least favourable speedup there."""
    try:
        race = json.loads(text)
    except ValueError:
        race = None
    if not isinstance(race, dict) or not all(
        isinstance(k, str) and isinstance(v, (int, float)) and v > 0 for k, v in race.items()
    ):
        raise SystemExit("--race takes a JSON object: configuration name → a positive speedup")
    return {k: float(v) for k, v in race.items()}


def cmd_bench(args):
    started = time.perf_counter()
    from .bench import bench  # noqa: F401 — imported inside the "load" phase, as it always was
    from .tasks import load_task

    import torch

    if not torch.cuda.is_available():
        return _no_gpu_bench(args.task)
    _precise_math()  # before the task's own code runs, as always (_bench_run sets it again)
    task = load_task(args.task)
    task.prune("cuda")
    return _bench_run(args, started, task, screen=args.screen)


STAGES = ("quick", "verify", "bench")


def cmd_evaluate(args):
    """The search's cascade for one candidate in one process: the quick check (smallest
    configuration), the full verification, then timing beside the baseline, exactly as
    `verify --quick`, `verify` and `bench` run them, with the task and the candidate loaded
    once. Each stage's record is written to its file (--quick-out, --verify-out, --bench-out)
    as soon as the stage ends; the first record that is not ok ends the run. Each stage draws
    its own seed, as each command does (--seed: the same for all three, as given to each).
    Between stages, what a fresh child had (_fresh). On the CPU (--device cpu) timing cannot
    run: the bench record says so. Returns None (nothing for --out)."""
    outs = {"quick": args.quick_out, "verify": args.verify_out, "bench": args.bench_out}
    loaded = backend = None
    for stage in STAGES:
        started = time.perf_counter()
        if stage != "quick":
            _fresh(backend)
        if stage == "bench":
            if backend != "cuda":
                record = _no_gpu_bench(
                    loaded[0].name,
                    "evaluate --device cpu: verified on the CPU; timing needs a CUDA GPU, " "so bench did not run",
                )
            else:
                task, _, _, _, cand = loaded
                record = _bench_run(args, started, task, cand, screen=True)
        else:
            quick = stage == "quick"
            backend, rec, t0 = _verify_begin(args, started)
            record = rec
            if backend is not None:
                if loaded is None:  # the first stage loads the task and the candidate, for all of them
                    loaded, record = _verify_load(args, backend, rec)
                if loaded is not None:
                    record = _verify_loaded(args, rec, backend, loaded, t0, quick=quick, heldout=args.heldout)
        _write(record, outs[stage])
        _log(f"evaluate: {stage} {'ok' if record['ok'] else 'not ok: ' + str(record.get('reason'))}")
        if not record["ok"]:
            break
    return None


def _fresh(backend):
    """Between stages, what a fresh child had: garbage collected, the allocator's cache
    emptied, no memory fraction (verify sets one, bench never does)."""
    import gc

    gc.collect()
    if backend == "cuda":
        import torch

        torch.cuda.empty_cache()
        torch.cuda.set_per_process_memory_fraction(1.0)  # the whole GPU: a fresh child's default


def cmd_ceilings(args):
    from .env import device_info
    from .roofline import measure_ceilings

    return {"schema": SCHEMA, "kind": "ceilings", **measure_ceilings(device_info("cuda")["name"])}


def build_parser():
    p = argparse.ArgumentParser(prog="evokernel_harness", description="evokernel's verification and timing harness")
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp):
        sp.add_argument("--out", help="write the JSON record here (default: stdout)")
        return sp

    common(sub.add_parser("device", help="what this machine has"))
    sp = common(sub.add_parser("static", help="static check of a candidate's source"))
    sp.add_argument("--candidate", required=True)
    sp.add_argument("--task")
    sp.add_argument("--relaxed", action="store_true", help="flag only the reference's own ops (CPU tests)")
    sp.add_argument(
        "--reference-ops", help="the task's reference ops as a JSON list (from static-context), instead of --task"
    )
    sp.add_argument(
        "--libraries", choices=("allow", "deny"), default="allow", help="with --reference-ops: the task's library rule"
    )
    sp = common(
        sub.add_parser("static-context", help="what the static check needs of a task (for static --reference-ops)")
    )
    sp.add_argument("--task", required=True)
    sp = common(sub.add_parser("build", help="compile a candidate (cached by content hash)"))
    sp.add_argument("--candidate", required=True)
    sp.add_argument("--cache")
    sp.add_argument("--define", action="append", help="NAME=VALUE passed as -D")
    sp.add_argument(
        "--nvcc-flag", action="append", help="a precision-keeping nvcc flag (write --nvcc-flag=-maxrregcount=64)"
    )
    sp.add_argument("--arch")
    sp.add_argument("--timeout", type=int, help="seconds (default: 120 for evk, 900 for torch extensions)")
    sp = common(sub.add_parser("inspect", help="load and validate a task"))
    sp.add_argument("--task", required=True)
    sp.add_argument("--probe", action="store_true", help="run the reference (CPU) and the degenerate-task check")
    for name in ("verify", "bench", "evaluate"):
        if name == "evaluate":  # three records, one file each: no --out
            sp = sub.add_parser(name, help="quick check, full verification and timing of a candidate in one process")
        else:
            sp = common(sub.add_parser(name, help=f"{name} a candidate"))
        sp.add_argument("--task", required=True)
        sp.add_argument("--candidate", required=name == "evaluate")
        sp.add_argument("--artifact")
        sp.add_argument("--cache")
        sp.add_argument("--define", action="append")
        sp.add_argument("--nvcc-flag", action="append")
        sp.add_argument("--seed", type=int)
        if name in ("verify", "evaluate"):
            sp.add_argument(
                "--heldout", action="store_true", help="include held-out configurations (final verification)"
            )
            sp.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
            sp.add_argument("--trials", type=int, default=2)
            if name == "verify":
                sp.add_argument(
                    "--quick", action="store_true", help="the smallest visible configuration only (a cheap first gate)"
                )
        if name in ("bench", "evaluate"):
            sp.add_argument("--baseline")
            sp.add_argument("--baseline-artifact")
            sp.add_argument("--no-baseline", action="store_true")
            sp.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline")
            sp.add_argument("--ceilings", help="JSON file caching this GPU's measured ceilings")
            sp.add_argument("--budget", type=float, default=1.5, help="seconds of timing per configuration")
            sp.add_argument(
                "--no-probe-cache",
                action="store_true",
                help="profile the reference on every configuration, never reading the probe cache",
            )
        if name == "bench":
            sp.add_argument(
                "--screen",
                action="store_true",
                help="time as the search's screen does: beside the baseline only, short head start, "
                "as many samples as the spread needs",
            )
        if name in ("bench", "evaluate"):
            sp.add_argument(
                "--race",
                help="the screen only: a JSON object, configuration → the leader's least "
                "favourable speedup there; a candidate slower than it beyond the noise "
                "stops after that configuration",
            )
        if name == "evaluate":
            for stage in STAGES:
                sp.add_argument(f"--{stage}-out", required=True, help=f"write the {stage} record here")
    common(sub.add_parser("ceilings", help="measure this GPU's bandwidth and matmul rates"))
    sub.add_parser("serve", help="fork server: JSON requests on stdin, one child each")
    return p


COMMANDS = {
    "device": cmd_device,
    "static": cmd_static,
    "static-context": cmd_static_context,
    "build": cmd_build,
    "inspect": cmd_inspect,
    "verify": cmd_verify,
    "bench": cmd_bench,
    "evaluate": cmd_evaluate,
    "ceilings": cmd_ceilings,
}


def main(argv):
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        from .server import serve

        return serve()
    try:
        with gpulock.held(argv if isinstance(argv, list) else list(argv)):  # machine-wide: one GPU job at a time
            record = COMMANDS[args.command](args)
    except SystemExit:
        raise
    except Exception:  # the harness itself failed: say so on stderr, exit non-zero
        traceback.print_exc()
        return 4
    if record is not None:  # evaluate wrote its own records
        _write(record, args.out)
    return 0
