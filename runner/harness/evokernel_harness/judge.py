"""The verdict, decided in a process that never loaded the candidate (issue 16.1).

`verify` runs in two processes. The judge (this module, the command's own process) forks the
candidate's process before it initialises CUDA or loads anything of the candidate's; that
process runs the whole verification as before (verify.py) and leaves two things in a scratch
folder only it and the judge share: its record (the claim) and the outputs of every passing
trial (outputs.py). When it has ended, the judge stops every process it left (the judge is
their subreaper: setsid or a double fork does not escape it), and only then decides:

- a claim that is not a pass stays a failure (a candidate can only lose by forging one);
- a pass counts only when the judge, regenerating each trial's inputs from the seeds it chose
  itself, running the reference and comparing (compare.py, in this process), finds the
  candidate's outputs right on every trial the rule of outputs.py keeps, the task not
  degenerate, and every file well-formed. Otherwise the pass is refused with what was wrong.

The judge writes the record. Nothing the candidate's process did to itself (patched compare
functions, a record written by hand, os._exit) reaches that record. What the judge cannot
check are the claims only the candidate's process could observe (its kernels in the trace,
its streams, threads, the exceptions it handled): a candidate that takes over its own process
can hide those, but not produce a pass without right outputs. docs/SECURITY.md says what
bounds what.

The judge is not dumpable (no process of the same user may trace it or read its memory), and
it imports everything it runs before the fork, so a candidate that rewrites files on disk
(possible only with the sandbox off) does not change the code the judge already holds.
"""

from __future__ import annotations

import ctypes
import dataclasses
import json
import os
import random
import shutil
import signal
import stat
import sys
import tempfile
import time
import traceback
from typing import Any, Callable, Mapping

import torch

from . import compare as _compare  # noqa: F401 — bound before the fork (see above)
from . import limits, outputs
from .command_request import VerifyRequest
from .env import device_backend, device_info, precise_math
from .record import Record, VerifyRecord
from .tasks.base import Config, Task
from .verify import REFILL_SEED, SCALAR_AS_ONE_ELEMENT, Reject, Verifier, trial_seed

SCHEMA = 1
CLAIM_LIMIT = 32 << 20  # bytes: a verify record is kilobytes
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
HACK = 6  # patching the harness's checks or its record: docs/DESIGN.md's class 6


def _log(msg):
    print(f"[harness] {msg}", file=sys.stderr, flush=True)


def _prctl(option, value):
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


# --- the candidate's process -----------------------------------------------------
def run_candidate(fn: Callable[[], Mapping[str, Any]], claim_path: str) -> tuple[int, float, frozenset[int]]:
    """Forks; the child runs fn() (its record, the claim) and ends with os._exit. Returns
    (pid, the parent's clock at the fork, the judge's children before it: not the candidate's)."""
    before = frozenset(p for p, (pp, _) in _processes().items() if pp == os.getpid())
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 4
        try:
            record = fn()
            text = json.dumps(record, allow_nan=False, default=str)
            with open(claim_path, "w") as f:
                f.write(text)
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 2
        except BaseException as err:  # the harness failed in the candidate's process
            doing = "the task's inputs or reference (made in the candidate's process)"
            if limits.out_of_memory(err):  # the task's inputs or reference, past the memory limit
                print(f"MemoryLimitError: {limits.over_limit(limits.memory_limit_mb(), doing, err)}", file=sys.stderr)
                code = 3
            elif (said := limits.over_resource_limit(doing, err)) is not None:
                print(said, file=sys.stderr)  # the sandbox's file-size or process-count limit
                code = 3
            else:
                traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    return pid, time.perf_counter(), before


def wait_and_stop(pid: int, keep: frozenset[int] = frozenset()) -> int:
    """Waits for the candidate's process, then kills every process it left behind (all are
    the judge's descendants: it is their subreaper). keep: the judge's children that are not
    the candidate's (none where the judge is a command's own process). Returns the wait status."""
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    stop_descendants(keep)
    return status


def _processes():
    """pid → (parent pid, state) of every process /proc shows."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            found[int(entry)] = (int(fields[1]), fields[0])
        except (OSError, IndexError, ValueError):
            continue
    return found


def _descendants(root, keep):
    procs = _processes()
    found, frontier = set(), {root}
    while frontier:
        frontier = {p for p, (pp, _) in procs.items() if pp in frontier and p not in found and p not in keep}
        found |= frontier
    return {p: procs[p] for p in found}


def stop_descendants(keep: frozenset[int] = frozenset(), rounds: int = 200) -> None:
    """SIGKILL every descendant (but `keep` and theirs) until none is left (one that forks while
    it is killed is found on the next round); the judge's own children are reaped (the others
    are their parents' to reap, or become the judge's when their parent dies). Raises
    RuntimeError if some outlive it."""
    me = os.getpid()
    for _ in range(rounds):
        found = _descendants(me, keep)
        if not found:
            return
        for pid, (_, state) in found.items():
            if state != "Z":
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        for pid, (parent, _) in found.items():
            if parent == me:
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass
        time.sleep(0.005)
    raise RuntimeError("processes the candidate started could not be stopped")


# --- the claim ---------------------------------------------------------------------
def read_claim(path: str, kind: str = "verify") -> Record | None:
    """The candidate's record as a dict, or None (missing, a symlink, too large, not JSON, not
    a record of `kind`)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > CLAIM_LIMIT:
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(CLAIM_LIMIT + 1)
    finally:
        os.close(fd)
    try:
        claim = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return claim if isinstance(claim, dict) and claim.get("kind") == kind else None


def base_record(task: str, candidate: str | None, seed: int) -> VerifyRecord:
    """A verify record that has decided nothing yet: where the command and the judge start."""
    return {
        "schema": SCHEMA,
        "kind": "verify",
        "task": task,
        "candidate": candidate or "",
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


def as_failure(claim: Record) -> VerifyRecord:
    """A claim that is not a pass, held to that whatever its fields say."""
    rec = VerifyRecord(**{**claim, "schema": SCHEMA, "kind": "verify", "ok": False})
    if rec.get("status") == "passed" or not isinstance(rec.get("status"), str):
        rec.update(
            status="rejected",
            reason=rec.get("reason") or "record-invalid",
            hack=HACK,
            message="the candidate's process wrote a record that says both passed and not ok",
        )
    return rec


# --- the judge ----------------------------------------------------------------------
def verify_judged(
    request: VerifyRequest, in_process: Callable[[VerifyRequest, outputs.Dump], VerifyRecord]
) -> VerifyRecord:
    """cmd_verify: in_process(request, dump) (the verification as it always ran, keeping its
    passing outputs in `dump`) runs in a forked process; the record returned is the judge's."""
    started = time.perf_counter()
    # the judge chooses the seed: the candidate's process is told it
    seed = request.seed if request.seed is not None else random.SystemRandom().randrange(1, 2**31)
    request = dataclasses.replace(request, seed=seed)
    _prctl(PR_SET_DUMPABLE, 0)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    scratch = tempfile.mkdtemp(prefix="evk-verdict-")
    try:
        claim_path = os.path.join(scratch, "claim.json")
        folder = os.path.join(scratch, "outputs")
        os.mkdir(folder, 0o700)
        pid, forked, keep = run_candidate(lambda: in_process(request, outputs.Dump(folder)), claim_path)
        status = wait_and_stop(pid, keep)
        candidate_s = time.perf_counter() - forked
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            _log(f"the candidate's process was killed by signal {sig}")
            died = died_after_passing(request, seed, folder, sig)
            if died is not None:
                return died
            _end_like(sig)  # as the command's own process would have ended: a crash
        if os.WEXITSTATUS(status) != 0:
            raise SystemExit(os.WEXITSTATUS(status))
        claim = read_claim(claim_path)
        if claim is None:
            return {
                **base_record(request.task, request.candidate, seed),
                "reason": "no-record",
                "hack": HACK,
                "message": "the candidate's process ended (exit 0) without a readable record of its verification",
            }
        if claim.get("ok") is not True:
            return as_failure(claim)
        checked = time.perf_counter()
        rec = recheck(request, seed, claim, folder)
        phases = rec.get("phases")
        phases = phases if isinstance(phases, dict) else {}
        rec["phases"] = {**phases, "recheck": round(time.perf_counter() - checked, 4)}
        _log(
            f"judge: {'pass confirmed' if rec['ok'] else 'refused: ' + str(rec['reason'])} "
            f"({time.perf_counter() - started - candidate_s:.3f} s outside the candidate's process)"
        )
        return rec
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def died_after_passing(request: VerifyRequest, seed: int, folder: str, sig: int) -> VerifyRecord | None:
    """A candidate whose process a signal ended (a segfault, an abort) after other
    configurations passed only works for the shapes it was shown (issue 18.8): the record says
    so, with the signal. None when none had passed (a plain crash)."""
    from .tasks import task_from
    from .verify import HACKS

    try:
        names = [c.name for c in task_from(request.task, request.task_spec, request.config).configs]
    except Exception:  # the task is the caller's; a crash stays a crash
        return None
    passed = outputs.passed_before_death(folder, names)
    if not passed:
        return None
    try:
        name = signal.Signals(sig).name
    except ValueError:
        name = f"signal {sig}"
    return {
        **base_record(request.task, request.candidate, seed),
        "status": "rejected",
        "reason": "shape-specific",
        "hack": HACKS.get("shape-specific"),
        "message": (
            f"right on {', '.join(passed)}, but its process was killed by {name} on the next configuration "
            "(a crash, e.g. an out-of-bounds access): it only works for the shapes it was shown (hack 10)"
        ),
    }


def _end_like(sig):
    signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)
    os._exit(128 + sig)  # a signal that does not end a process by default


def recheck(request: VerifyRequest, seed: int, claim: Record, folder: str) -> VerifyRecord:
    """The judge's own verdict on a claimed pass (with the seed it chose): the record."""
    from .tasks import task_from

    backend = device_backend(request.device)
    if backend is None:
        return {
            **base_record(request.task, request.candidate, seed),
            "reason": "no-gpu",
            "device": device_info("cpu"),
            "message": "the candidate's process reported a pass, but the judge finds no CUDA GPU",
        }
    precise_math()
    rec = VerifyRecord(**{**claim, "schema": SCHEMA, "kind": "verify", "seed": seed, "device": device_info(backend)})
    try:
        task = task_from(request.task, request.task_spec, request.config)
        task.prune(backend)
        if backend == "cuda":
            torch.cuda.set_per_process_memory_fraction(float(os.environ.get("EVOKERNEL_GPU_MEM_FRACTION", "0.9")))
        v = Verifier(task, None, backend, seed, trials=request.trials, log=lambda _: None)
        quick = request.quick
        configs = v.configs_to_run(include_heldout=request.heldout and not quick, quick=quick)
        v.check_task(configs[0])
        kept = {"bytes": 0}  # what the rule of outputs.required has kept so far, in its order
        stages = outputs.Stages()  # pinned buffers the outputs come to the GPU through, kept
        entries = [check_config(v, task, config, folder, plan, kept, stages) for config, plan in _planned(v, configs)]
    except Reject as r:
        return refuse(rec, r.reason, r.message, r.mismatch)
    except outputs.OutputError as e:
        return refuse(
            rec,
            e.reason,
            e.message + ". The candidate's process reported a pass; a process that never "
            "loaded the candidate checks every pass against the outputs it wrote",
        )
    except Exception as err:  # the judge itself failed: never a pass
        traceback.print_exc()
        return {
            **rec,
            "ok": False,
            "status": "error",
            "reason": "recheck-error",
            "hack": None,
            "mismatch": None,
            "message": f"the judge could not check the candidate's outputs: {type(err).__name__}: {err}",
        }
    trials = sum(e["trials"] for e in entries)
    return {
        **rec,
        "ok": True,
        "status": "passed",
        "reason": None,
        "hack": None,
        "mismatch": None,
        "task": task.name,
        "configs": entries,
        "message": f"passed {trials} trials on {len(entries)} configurations",
    }


def refuse(rec: VerifyRecord, reason: str, message: str, mismatch: dict[str, Any] | None = None) -> VerifyRecord:
    from .verify import HACKS

    return {
        **rec,
        "ok": False,
        "status": "rejected",
        "reason": reason,
        "hack": HACKS.get(reason),
        "message": message,
        "mismatch": mismatch,
    }


def _planned(v, configs):
    plan = v.plan(configs)
    return [(c, plan[c.name]) for c in configs]


def check_config(
    v: Verifier,
    task: Task,
    config: Config,
    folder: str,
    inits: list[str | None],
    kept: dict[str, int],
    stages: outputs.Stages | None = None,
) -> Record:
    """The configuration's entry in the record, from the judge's own comparisons of every trial
    the rule keeps. Raises Reject (verdict-forged) or outputs.OutputError."""
    index = next(i for i, c in enumerate(task.configs) if c.name == config.name)
    entry = {
        "name": config.name,
        "heldout": config.heldout,
        "derived": config.derived,
        "ok": True,
        "trials": len(inits),
        "maxAbs": 0.0,
        "normRel": 0.0,
        "reason": None,
    }
    size = None
    for trial in outputs.trial_keys(len(inits)):
        if size is not None and not outputs.required(trial, size, kept["bytes"]):
            continue
        refill = trial == outputs.REFILL
        number = trial if isinstance(trial, int) else 0  # the refill is trial 0's
        init = inits[number]
        tseed = trial_seed(v.seed, config, 0) ^ REFILL_SEED if refill else trial_seed(v.seed, config, number)
        case = v.make_case(config, tseed, init=init)
        refs = v.reference(case.clone())
        size = outputs.nbytes_of(refs)
        kept["bytes"] += size
        where = f"configuration {config.name}, {'the same-buffer refill' if refill else f'trial {trial}'}"
        outs = outputs.read(
            folder,
            index,
            trial,
            refs,
            where,
            accepts_shape=lambda shape, ref: _one_element(task, shape, ref),
            device=v.device,
            stages=stages,
        )
        results = v.check_outputs(outs, refs, config, number)
        failed = next((r for r in results if not r["ok"]), None)
        if failed is not None and v.within_truth(outs, case, config, where):
            failed = None
        if failed is not None:
            raise Reject(
                "verdict-forged",
                f"{where}: the candidate's process reported a pass, but the outputs it wrote "
                f"are wrong against the reference run in a process that never loaded the candidate "
                f"({failed['output']}: max abs error {failed['maxAbs']}, relative norm error {failed['normRel']}): "
                "it tampered with the verification in its own process (hack 6)",
                failed,
            )
        if not refill:
            for r in results:
                entry["maxAbs"] = max(entry["maxAbs"], r["maxAbs"]) if r["maxAbs"] is not None else entry["maxAbs"]
                entry["normRel"] = max(entry["normRel"], r["normRel"]) if r["normRel"] is not None else entry["normRel"]
        del outs, refs, case
    return entry


def _one_element(task, shape, ref):
    n = 1
    for s in shape:
        n *= s
    return task.format in SCALAR_AS_ONE_ELEMENT and n == 1 and ref.numel() == 1
