"""Benchmark a task: eager, torch.compile, the baseline kernel and a candidate, interleaved
per configuration in one process, against the roofline floor."""

from __future__ import annotations

import math
import os
import tempfile
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import torch

from . import guards
from .compare import compare
from .env import dtype_name
from .evidence import summary
from .streams import check as stream_check
from .own_kernel import launched_kernel_time_ms, top_kernels
from .phases import Phases as _Phases
from .probe_cache import probe_key, task_digest
from .roofline import floor_ms
from .timing import HEAD_START_CYCLES, Timer, stats
from .verify import refill_case, within_float64
from .record import Record
from .tasks.base import Case, Config, Task

if TYPE_CHECKING:
    from .candidates.load import Candidate
    from .outputs import Dump
    from .probe_cache import ProbeCache

Samples = dict[str, list[float]]  # one implementation's timing: {"event": [ms], "wall": [ms]}
StopFn = Callable[[dict[str, Samples], int], bool]  # Timer.interleaved's stop

TINY_MS = 0.02  # a reference faster than this measures launch overhead, not the kernel
BELOW_FLOOR = 0.85  # a time under 85 % of the floor is physically implausible
ROTATE = 4
# The search's screen takes as many samples as the spread needs: it stops once the candidate's
# and the baseline's p20-p80 spreads are within SCREEN_SPREAD of their medians (after at least
# SCREEN_MIN_ROUNDS rounds), or once the candidate is slower than the leader beyond the noise
# (after RACE_MIN_ROUNDS); never more than the budget gives. Bench's own timing is untouched.
SCREEN_MIN_ROUNDS = 10
SCREEN_SPREAD = 0.03
RACE_MIN_ROUNDS = 6
# The new values of the check after timing: refill_case(..., seed ^ AFTER_TIMING_SEED) writes every
# tensor of the case (arguments and module state), so the judge regenerates that case from the
# seed alone (make_case(config, seed ^ AFTER_TIMING_SEED)).
AFTER_TIMING_SEED = 0x71AE


@dataclass
class JudgedSide:
    """What bench() does differently as a judged bench's candidate side (bench_judge.py): it
    times the kernels only (the judge times eager and torch.compile and computes the floor),
    marks each configuration's timing for the judge's own clock, and keeps the outputs of its
    check after timing for the judge to compare."""

    dump: Dump  # the outputs after timing: outputs.key(visible configuration index, 0)
    mark: Callable[[int, str], object]  # mark(index, "start" | "end") around a configuration's timing


def slot(ci: int, config: Config) -> int:
    """The configuration's place among the task's visible ones, which seeds its inputs: its
    place in this run unless --config chose some (tasks.select_configs)."""
    return ci if config.seed_slot is None else config.seed_slot


def _geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def _upper_speedup(base: Record, cand: Record) -> float:
    """The candidate's speedup at its most favourable within the noise: baseline p80 over
    candidate p20."""
    return base["p80Ms"] / cand["p20Ms"] if cand["p20Ms"] > 0 else math.inf


def screen_stop(leader_lower: float | None) -> StopFn:
    """stop(out, n) for Timer.interleaved in the screen. leader_lower: the leader's speedup on
    this configuration at its least favourable (its baseline p20 over its p80), or None."""

    def stop(out: dict[str, Samples], n: int) -> bool:
        if "candidate" not in out or "baseline" not in out or n < RACE_MIN_ROUNDS:
            return False
        cand, base = stats(out["candidate"]["event"]), stats(out["baseline"]["event"])
        if leader_lower is not None and _upper_speedup(base, cand) < leader_lower:
            return True  # decided: slower than the leader beyond the noise
        if n < SCREEN_MIN_ROUNDS:
            return False
        return all(
            s["medianMs"] > 0 and (s["p80Ms"] - s["p20Ms"]) / s["medianMs"] <= SCREEN_SPREAD for s in (cand, base)
        )

    return stop


def private_compile_caches() -> str:
    """torch.compile's caches (inductor's generated code, Triton's kernels) in a new folder of
    this process's own, not the build cache's: the build cache is written by candidates, and
    inductor imports the Python it finds there under the name its hash gives, so a planted file
    would run in the process that times torch.compile (a judge, which never loads candidate
    code). Set before torch.compile's first compile in the process; returns the folder."""
    folder = tempfile.mkdtemp(prefix="evk-compile-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(folder, "inductor")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(folder, "triton")
    return folder


def _compiled(task, log):
    private_compile_caches()
    if not hasattr(torch, "compile"):
        log("torch.compile needs torch >= 2.0: skipped")
        return None
    ref = task.reference_entry()
    try:
        if ref is None:  # KernelBench: compile the Model
            cache = {}

            def run_compiled(case):
                key = id(case.module)
                if key not in cache:
                    cache[key] = getattr(torch, "compile")(case.module, dynamic=False)  # torch >= 2.0
                return cache[key](*case.args)

            return run_compiled
        compiled = getattr(torch, "compile")(ref, dynamic=False)
        return lambda case: task.invoke(compiled, case)
    except Exception as err:  # a baseline that cannot compile is noted, not fatal
        log(f"torch.compile failed: {err}")
        return None


def warm_compiled(
    task: Task, seed: int, log: Callable[[str], object], seconds: dict[str, float] | None = None
) -> Callable[[Any], Any] | None:
    """torch.compile's baseline, compiled for the shapes of every visible configuration: called
    once on each configuration's first input set, as bench's "compile" phase calls it. None when
    it cannot compile (the bench that follows then notes why). `seconds`, when given, gets each
    configuration's first call (its compile, inductor's autotuning included), by name."""
    compiled = _compiled(task, log)
    if compiled is None:
        return None
    grad_ctx = torch.enable_grad if task.backward else torch.no_grad
    device = torch.device("cuda")
    for ci, config in enumerate(task.visible_configs()):
        case = task.make_case(config, seed + 31 * slot(ci, config), device)
        torch.cuda.synchronize(device)
        started = time.perf_counter()
        try:
            with grad_ctx():
                compiled(case.clone())
            torch.cuda.synchronize(device)
        except Exception as err:  # as bench's compile phase: noted there, not fatal
            log(f"torch.compile failed on {config.name}: {type(err).__name__}: {str(err)[:300]}")
            return None
        if seconds is not None:
            seconds[config.name] = time.perf_counter() - started
        del case
    return compiled


def case_bytes(case: Case) -> int:
    return sum(t.numel() * t.element_size() for _, t in case.tensors())


def rotation(case: Case, device: torch.device) -> int:
    """How many input sets the timing rotates through: ROTATE, or fewer where that many sets
    (and the two sources of new values) would not fit in half of the GPU's free memory
    (KernelBench problems with inputs of several GiB)."""
    if device.type != "cuda":
        return ROTATE
    free, _ = torch.cuda.mem_get_info(device)
    # what PyTorch's allocator keeps cached from earlier configurations is free for these too
    free += max(0, torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device))
    size = max(1, case_bytes(case))
    return max(1, min(ROTATE, int(0.5 * free // size) - 2))


def bench(
    task: Task,
    candidate: Candidate | None,
    baseline: Candidate | None,
    ceilings: Record | None,
    device_info: Record,
    seed: int,
    log: Callable[[str], object] = print,
    budget_s: float = 1.5,
    compile_baseline: bool = True,
    probe_cache: ProbeCache | None = None,
    head_start_cycles: int = HEAD_START_CYCLES,
    time_eager: bool = True,
    adaptive: bool = False,
    race: dict[str, float] | None = None,
    race_ceilings: dict[str, float] | None = None,
    judged: JudgedSide | None = None,
    compiled: Callable[[Any], Any] | None = None,
) -> Record:
    """probe_cache: a ProbeCache (probe_cache.py) that holds the reference's launched-kernel
    time per configuration across processes; None profiles the reference every time.
    head_start_cycles: the timer's head start (timing.py); the search's screen passes a short
    one, every other timing keeps the full one. time_eager=False (the screen, which compares
    with the baseline only) leaves eager untimed: its row's "eager" is None.
    adaptive (the screen): as many samples as the spread needs (screen_stop), at most the
    budget's. race (the screen): configuration name → the leader's speedup there at its least
    favourable; race_ceilings: configuration name → the kernel to beat's time there over the
    roofline floor (the leader's run measured both). After each configuration, a candidate stops
    when even its most favourable speedup on the configurations timed so far, and on every other
    one the most a kernel can gain there (the floor's speedup over BELOW_FLOOR: a time below it
    is refused), make a geometric mean under the leader's least favourable one over them all:
    it can no longer win, whatever the rest would show. The record's "race" says where and by
    how much; the rest is not timed (nor checked after timing, nor profiled: it is no
    contender). A configuration with no ceiling (no floor known) keeps every candidate timed.
    judged: the candidate's side of a judged bench (JudgedSide); ceilings may then be None.
    compiled: torch.compile's baseline already compiled (warm_compiled), used instead of a new one."""
    start = time.perf_counter()
    run = _Bench(
        task, candidate, baseline, ceilings, device_info, seed, log, budget_s, probe_cache, race, race_ceilings, judged
    )
    run.set_up(head_start_cycles, compile_baseline, time_eager, adaptive, compiled)
    for ci, config in enumerate(task.visible_configs()):
        if run.config(ci, config):
            break  # raced out
    return run.summary(start)


class _Bench:
    """One run of bench(): what it keeps from one configuration to the next (the timer,
    torch.compile's baseline while it compiles, the rows, their reasons and notes) and its
    steps, in bench()'s order: set_up, then per configuration probe, inputs, cost,
    implementations, timing, the checks after timing and the profile; then summary."""

    def __init__(
        self,
        task,
        candidate,
        baseline,
        ceilings,
        device_info,
        seed,
        log,
        budget_s,
        probe_cache,
        race,
        race_ceilings,
        judged,
    ):
        self.task, self.candidate, self.baseline, self.judged = task, candidate, baseline, judged
        self.ceilings, self.device_info, self.seed, self.log = ceilings, device_info, seed, log
        self.budget_s, self.probe_cache, self.race = budget_s, probe_cache, race
        self.configs_out, self.reasons, self.notes = [], [], []
        self.details = {}  # configuration -> what a check found, in the user's words
        self.raced = None
        self.race_ceilings = race_ceilings or {}
        self.profile = None
        self.task_hash = None
        # what one configuration leaves alive until the next one's rebinds it (bench() held
        # them as loop variables: the next configuration's rotation() sees their memory)
        self.ref_out = self.checked_case = self.checked_out = None

    def set_up(self, head_start_cycles, compile_baseline, time_eager, adaptive, compiled=None):
        """The "start" phase: the timer and its overhead, the reference, torch.compile's baseline."""
        self.phases = _Phases()
        self.device = torch.device("cuda")
        if getattr(self.candidate, "evidence", None) is not None:
            self.candidate.evidence.phase = "bench"  # what its code handles while timed is told apart
        self.head_start_cycles, self.time_eager, self.adaptive = head_start_cycles, time_eager, adaptive
        self.timer = Timer(self.device, self.device_info.get("l2Bytes"), head_start_cycles)
        self.timer.overhead_ms()  # measured here, in the "start" phase, as before; reused per configuration
        # the head start asked for; per configuration, the one its timing ended with (the screen
        # fits it to the calls' host side: timing.py); the configurations timed again with the full one
        self.head_start = {"cycles": head_start_cycles, "used": {}, "retimed": []}
        self.ref = self.task.reference_entry()
        self.grad_ctx = torch.enable_grad if self.task.backward else torch.no_grad
        if not compile_baseline:
            self.compiled = None
        else:
            self.compiled = compiled if compiled is not None else _compiled(self.task, self.log)
        self.phases.lap("start")

    def config(self, ci, config):
        """One configuration's row (or its note, when it is not timed); True when the race ends
        the run on it."""
        device_ms, key, about = self.probe(ci, config)
        launch_bound = device_ms is not None and device_ms < TINY_MS
        self.phases.lap("probe")
        if launch_bound and device_ms is not None and config.derived:
            # derived configurations are for verification; a tiny one would time launches (the
            # judge notes it on a judged bench, from its own probe)
            if self.judged is None:
                self.notes.append(
                    f"{config.name}: not timed: a derived configuration whose reference runs "
                    f"{device_ms * 1e3:.1f} µs a call (launch-bound)"
                )
            self.log(f"bench {config.name}: derived and launch-bound ({device_ms * 1e3:.1f} µs): verified, not timed")
            return False
        cases, sources, new_values, ref_out = self.inputs(ci, config)
        nbytes, flops, floor = self.cost(config, key, about, cases, ref_out)
        impls = self.implementations(config, cases)
        raw, overhead = self.timing(ci, config, impls, cases, new_values)
        # what the checks below need: one input set (the float64 reference may need the room)
        sources.clear()
        del cases[:-1]
        self.reuse_outputs(False)
        row = {
            "name": config.name,
            "dims": {k: v for k, v in config.dims.items() if isinstance(v, int)},
            "bytes": nbytes,
            "flops": flops,
            "floorMs": floor,
            "reason": None,
            "derived": bool(config.derived),
            "launchBound": launch_bound,
            "eagerDeviceMs": device_ms,
        }
        for name in ("eager", "compile", "baseline", "candidate"):
            row[name] = stats(raw[name]["event"]) if name in raw else None
        if launch_bound and device_ms is not None and self.judged is None:
            # a declared configuration (the user's real shape) is timed, but launches dominate it:
            # marked, and kept out of the headline speedup and the search's fitness
            self.notes.append(
                f"{config.name}: launch-bound: the reference's kernels run {device_ms * 1e3:.1f} µs a call "
                f"(under {TINY_MS * 1e3:.0f} µs), so its times measure launch overhead; not in the headline speedup"
            )
        if self.race is not None and self.candidate is not None and self.baseline is not None and not launch_bound:
            self.raced = _race(self.race, self.race_ceilings, self.configs_out + [row])
        if self.raced is not None:
            self.configs_out.append(row)
            self.log(f"bench {config.name}: raced out: {self.raced['message']}")
            return True
        self.checks(ci, config, row, raw, overhead, floor, cases)
        self.profile_first(config, row, cases)
        if row["reason"]:
            self.reasons.append((config.name, row["reason"]))
        self.configs_out.append(row)
        self.log(
            f"bench {config.name}: "
            + ", ".join(
                f"{name} {row[name]['medianMs']:.4f} ms"
                for name in ("eager", "compile", "baseline", "candidate")
                if row[name]
            )
        )
        return False

    def probe(self, ci, config):
        """The reference's launched-kernel time on the configuration (from the probe cache when
        it has it): (device_ms, the cache's key, what the cache records it is about)."""
        task, seed, device, grad_ctx, ref = self.task, self.seed, self.device, self.grad_ctx, self.ref
        key = None
        if self.probe_cache is not None:
            self.task_hash = self.task_hash or task_digest(task)
            key = probe_key(self.task_hash, task, config, self.device_info)
        about = {"task": task.name, "config": config.name, "gpu": self.device_info.get("name")}

        def measure():
            probe = task.make_case(config, seed + 31 * slot(ci, config), device)
            with grad_ctx():
                return launched_kernel_time_ms(lambda: task.invoke(ref, probe.clone()))

        if self.probe_cache is None:
            device_ms = measure()
        else:
            device_ms, hit = self.probe_cache.probe(key, measure, about)
            if hit:
                self.log(f"bench {config.name}: reference probe from the cache ({device_ms * 1e3:.1f} µs a call)")
        return device_ms, key, about

    def inputs(self, ci, config):
        """The rotated input sets, the two sources of new values, prepare() that writes them, and
        the reference's output on the first set (the "inputs" phase)."""
        task, seed, device = self.task, self.seed, self.device
        cases = [task.make_case(config, seed + 31 * slot(ci, config), device)]
        rotate = rotation(cases[0], device)
        if rotate < ROTATE:
            self.notes.append(
                f"{config.name}: {rotate} input set(s) rotated instead of {ROTATE}: one set is "
                f"{case_bytes(cases[0]) / 2**30:.1f} GiB and the GPU's memory holds no more"
            )
        cases += [task.make_case(config, seed + 31 * slot(ci, config) + k, device) for k in range(1, rotate)]
        # every timed call sees new values (two sources, alternating per visit of a buffer),
        # written so that even a version counter shows it: a cache never hits honestly
        sources = [task.make_case(config, seed + 31 * slot(ci, config) + ROTATE + k, device) for k in range(2)]

        def new_values(case, i):
            src = sources[(i // rotate) % 2]
            with torch.no_grad():
                for (_, dst), (_, s) in zip(case.tensors(), src.tensors()):
                    dst.copy_(s)

        with self.grad_ctx():
            self.ref_out = ref_out = task.invoke(self.ref, cases[0].clone())
        self.phases.lap("inputs")
        return cases, sources, new_values, ref_out

    def cost(self, config, key, about, cases, ref_out):
        """Bytes and flops of the configuration (from the probe cache when it has them) and the
        roofline floor they give (the "cost" phase); none on a judged bench's candidate side (the
        judge computes them: a floor of 0 refuses nothing here)."""
        task = self.task
        if self.judged is not None:
            self.phases.lap("cost")
            return 0, 0, 0.0
        if self.probe_cache is None:
            nbytes, flops = task.cost(config, cases[0], ref_out)
        else:
            (nbytes, flops), _ = self.probe_cache.cost(key, lambda: task.cost(config, cases[0], ref_out), about)
        floor = floor_ms(nbytes, flops, dtype_name(ref_out[0].dtype), self.ceilings)
        self.phases.lap("cost")
        return nbytes, flops, floor

    def implementations(self, config, cases):
        """What is timed: eager (unless the screen), torch.compile's baseline compiled for these
        shapes (dropped for good when it fails), the baseline kernel and the candidate (the
        "compile" phase)."""
        task, ref = self.task, self.ref
        impls = {"eager": lambda case: task.invoke(ref, case)} if self.time_eager else {}
        if self.compiled is not None:
            try:  # compiles for this configuration's shapes, outside the timing
                with self.grad_ctx():
                    self.compiled(cases[0].clone())
                impls["compile"] = self.compiled
            except Exception as err:  # a baseline that cannot compile is noted, not fatal
                self.log(
                    f"torch.compile failed on {config.name}: {type(err).__name__}: {str(err)[:300]}; timing without it"
                )
                self.compiled = None
        if self.baseline is not None:
            impls["baseline"] = self.baseline.run
        if self.candidate is not None:
            impls["candidate"] = self.candidate.run
        self.reuse_outputs(True)
        self.phases.lap("compile")
        return impls

    def reuse_outputs(self, on):
        for c in (self.baseline, self.candidate):
            if c is not None and hasattr(c.entry, "reuse_outputs"):
                c.entry.reuse_outputs = on

    def timing(self, ci, config, impls, cases, new_values):
        """The interleaved timing (the "timing" phase): (raw samples, the timer's overhead at
        the head start it used); a configuration the short head start did not cover is noted."""
        stop = None
        if self.adaptive:
            stop = screen_stop(None if self.race is None else self.race.get(config.name))
        timer = self.timer
        if self.judged is not None:
            self.judged.mark(ci, "start")
        with self.grad_ctx():
            raw = timer.interleaved(
                impls, cases, budget_s=self.budget_s, seed=self.seed + slot(ci, config), prepare=new_values, stop=stop
            )
        if self.judged is not None:
            self.judged.mark(ci, "end")
        self.phases.lap("timing")
        overhead = timer.overhead_ms(timer.last_head_start)
        self.head_start["used"][config.name] = timer.last_head_start
        if timer.last_retimed:
            worst = max(timer.last_exposed, key=lambda name: timer.last_exposed[name])
            self.head_start["retimed"].append(config.name)
            self.notes.append(
                f"{config.name}: timed again with the full head start: with the short one, "
                f"{worst}'s host side outlasted it on {timer.last_exposed[worst]:.0%} of calls"
            )
        return raw, overhead

    def checks(self, ci, config, row, raw, overhead, floor, cases):
        """The candidate's checks after timing (the "checks" phase): wall against event time,
        the floor, its output on new values in the same buffers, every stream's work timed.
        The first that fails is the row's reason. On a judged bench the output after timing is
        also kept for the judge, which compares it again."""
        candidate, task, ref, grad_ctx = self.candidate, self.task, self.ref, self.grad_ctx
        wall_far = None  # the wall clock far above the event time: the trace below decides
        if candidate is not None:
            cand = row["candidate"]
            wall = stats(raw["candidate"]["wall"])["medianMs"] - overhead
            if wall > 2 * cand["medianMs"] + 0.05:
                wall_far = f"wall {wall:.3f} ms against event {cand['medianMs']:.3f} ms"
                self.log(f"{config.name}: {wall_far}")
            if cand["medianMs"] < BELOW_FLOOR * floor:
                row["reason"] = "below-floor"
            else:
                # the output of a timed call must still be right: new values, same buffers
                self.checked_case = case = cases[-1]
                refill_case(task, config, case, self.seed ^ AFTER_TIMING_SEED, None)
                with grad_ctx():
                    expected = task.invoke(ref, case.clone())
                    self.checked_out = got = candidate.run(case)
                torch.cuda.synchronize()
                if self.judged is not None:
                    try:
                        self.judged.dump.write(ci, 0, got)
                    except Exception as err:  # not tensors: the judge finds no outputs, and says so
                        self.log(f"{config.name}: the outputs after timing cannot be kept for the judge: {err}")
                results = [compare(g, e, task.tolerance(dtype_name(e.dtype))) for g, e in zip(got, expected)]
                del expected
                if not all(r["ok"] for r in results):
                    # as in verification: a kernel more accurate than the float32 reference is
                    # judged against the reference computed in float64, never more leniently
                    with grad_ctx():
                        truer = within_float64(task, got, case, lambda c: task.invoke(ref, c))
                    if truer:
                        self.notes.append(
                            f"{config.name}: after timing, outside the tolerance of the float32 reference "
                            "but within it of the reference computed in float64"
                        )
                    else:
                        i, res = next((i, r) for i, r in enumerate(results) if not r["ok"])
                        row["reason"] = "timing-output-mismatch"
                        self.log(
                            f"{config.name}: output {i} after timing: max abs {res['maxAbs']}, norm {res['normRel']}"
                        )
        if candidate is not None and not row["reason"]:
            # all of a call's work, on every stream, must lie where the events time it
            with grad_ctx():
                streamed = stream_check(lambda: candidate.run(cases[-1]))
            if not streamed["ok"]:
                row["reason"] = "side-stream"
                self.details[config.name] = streamed["detail"]
            elif wall_far is not None and not streamed.get("traced"):
                # the host's clock says work escaped, and no trace can say otherwise
                row["reason"] = "side-stream"
            elif wall_far is not None:
                # the host's clock alone: a descheduled thread (builds, torch.compile's workers
                # on every core) looks like escaped work; the trace saw every kernel of a call
                # inside the timed window (an honest softmax was refused on the wall alone on
                # the H100, 2026-11-26)
                self.notes.append(
                    f"{config.name}: {wall_far} (the host's clock), and the trace of a call saw all its "
                    "work inside the timed window: not work that escaped"
                )
        self.phases.lap("checks")

    def profile_first(self, config, row, cases):
        """Where the candidate spends its time, on the first configuration that passed its
        checks: for the next proposal (the "profiler" phase)."""
        candidate = self.candidate
        if candidate is not None and self.profile is None and not row["reason"]:
            with self.grad_ctx():
                kernels = top_kernels(lambda: candidate.run(cases[0]))
            if kernels:
                self.profile = {"config": config.name, "kernels": kernels}
            self.phases.lap("profiler")

    def summary(self, start):
        """The record's fields: the first reason (timer patching first of all), its message,
        the rows, notes, profile, phases, the probe cache's counts and the race's verdict."""
        candidate, reasons, details, configs_out, notes = (
            self.candidate,
            self.reasons,
            self.details,
            self.configs_out,
            self.notes,
        )
        if getattr(candidate, "evidence", None) is not None:
            notes += [f"while timed: {s}" for s in summary(candidate.evidence.handled(("bench",)))]
        changed = guards.tampered()
        if candidate is not None and (changed or getattr(candidate, "intact", True) is False):
            # the timer's functions, or the run-time record, replaced while it was timed
            what = ", ".join(changed) or "the harness's record of the exceptions its code handles"
            reasons.insert(0, (configs_out[-1]["name"] if configs_out else "-", "timer-patching"))
            details[reasons[0][0]] = f"the candidate replaced {what} while it was timed (hack 6)"
        reason = reasons[0][1] if reasons else None
        message = f"{MESSAGES[reason]} (configuration {reasons[0][0]})" if reason else "timed"
        if reason and reasons[0][0] in details:
            message = f"configuration {reasons[0][0]}: {details[reasons[0][0]]}"
        if reason is None and configs_out and all(row["launchBound"] for row in configs_out):
            message = (
                f"timed; every configuration is launch-bound (reference under {TINY_MS * 1e3:.0f} µs a call): "
                "no headline speedup; add a larger configuration to measure the kernel"
            )
        probe_cache = self.probe_cache
        cache = (
            None
            if probe_cache is None
            else {
                "hits": probe_cache.hits,
                "misses": probe_cache.misses,
                "costHits": probe_cache.cost_hits,
                "costMisses": probe_cache.cost_misses,
            }
        )
        if self.raced is not None and reason is None:
            message = f"raced out after {self.raced['config']}: {self.raced['message']}"
            notes.append(message)
        return {
            "ok": reason is None,
            "reason": reason,
            "message": message,
            "configs": configs_out,
            "notes": notes,
            "profile": self.profile,
            "phases": self.phases.seconds,
            "probeCache": cache,
            "headStart": self.head_start,
            "race": self.raced,
            "seconds": time.perf_counter() - start,
        }


MESSAGES = {
    "side-stream": (
        "wall-clock time with a device-wide synchronise is far above the event time: work escapes the timed "
        "stream (hack 3)"
    ),
    "below-floor": (
        f"faster than {BELOW_FLOOR:.0%} of the physical floor (bytes / measured bandwidth, flops / peak): "
        "impossible, so something is skipped (hack 16)"
    ),
    "timer-patching": "the candidate replaced the harness's timer or checks while it was timed (hack 6)",
    "timing-output-mismatch": (
        "the output of a call made after timing, on new inputs, was wrong: work is skipped when called "
        "repeatedly (hacks 11, 16)"
    ),
}


def _race(race: dict[str, float], ceilings: dict[str, float], rows: list[Record]) -> Record | None:
    """The race's verdict after the configurations in `rows`: a dict when the candidate cannot
    reach the leader over every configuration the leader was timed on (`race`), else None.
    Timed ones count at the candidate's most favourable speedup (baseline p80 / its p20); the
    others at the most any kernel could gain there (`ceilings`, over BELOW_FLOOR), so a
    candidate that loses the first configuration but could still win the rest goes on."""
    timed = [r for r in rows if not r["launchBound"] and r["candidate"] and r["baseline"] and r["name"] in race]
    if not timed:
        return None
    names = {r["name"] for r in timed}
    rest = [name for name in race if name not in names]
    if any(not ceilings.get(name, 0) > 0 for name in rest):
        return None  # no bound on what a configuration still to come could give
    upper = _geomean(
        [_upper_speedup(r["baseline"], r["candidate"]) for r in timed] + [ceilings[n] / BELOW_FLOOR for n in rest]
    )
    leader = _geomean(list(race.values()))
    if upper is None or leader is None or upper >= leader:
        return None
    rest_text = f"; at the floor's on {', '.join(rest)}" if rest else ""
    return {
        "config": timed[-1]["name"],
        "timed": [r["name"] for r in rows],
        "speedupUpper": upper,
        "leaderLower": leader,
        "message": f"at most {upper:.3f}x the kernel to beat over every configuration (baseline p80 / candidate "
        f"p20 on {', '.join(r['name'] for r in timed)}{rest_text}), under the leader's {leader:.3f}x "
        "(its p20 / p80): it cannot win",
    }
