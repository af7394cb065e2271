"""Benchmark a task: eager, torch.compile, the baseline kernel and a candidate, interleaved
per configuration in one process, against the roofline floor."""

import math
import time

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


def _geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def _upper_speedup(base, cand):
    """The candidate's speedup at its most favourable within the noise: baseline p80 over
    candidate p20."""
    return base["p80Ms"] / cand["p20Ms"] if cand["p20Ms"] > 0 else math.inf


def screen_stop(leader_lower):
    """stop(out, n) for Timer.interleaved in the screen. leader_lower: the leader's speedup on
    this configuration at its least favourable (its baseline p20 over its p80), or None."""

    def stop(out, n):
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


def _compiled(task, log):
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
                    cache[key] = torch.compile(case.module, dynamic=False)
                return cache[key](*case.args)

            return run_compiled
        compiled = torch.compile(ref, dynamic=False)
        return lambda case: task.invoke(compiled, case)
    except Exception as err:  # a baseline that cannot compile is noted, not fatal
        log(f"torch.compile failed: {err}")
        return None


def case_bytes(case):
    return sum(t.numel() * t.element_size() for _, t in case.tensors())


def rotation(case, device):
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
    task,
    candidate,
    baseline,
    ceilings,
    device_info,
    seed,
    log=print,
    budget_s=1.5,
    compile_baseline=True,
    probe_cache=None,
    head_start_cycles=HEAD_START_CYCLES,
    time_eager=True,
    adaptive=False,
    race=None,
):
    """probe_cache: a ProbeCache (probe_cache.py) that holds the reference's launched-kernel
    time per configuration across processes; None profiles the reference every time.
    head_start_cycles: the timer's head start (timing.py); the search's screen passes a short
    one, every other timing keeps the full one. time_eager=False (the screen, which compares
    with the baseline only) leaves eager untimed: its row's "eager" is None.
    adaptive (the screen): as many samples as the spread needs (screen_stop), at most the
    budget's. race (the screen): configuration name → the leader's speedup there at its least
    favourable; after each configuration, a candidate whose most favourable speedup over the
    configurations timed so far (geometric mean) is under the leader's least favourable one
    over the same configurations stops there: the record's "race" says where and by how much,
    the rest is not timed (nor checked after timing, nor profiled: it is no contender)."""
    start = time.perf_counter()
    phases = _Phases()
    device = torch.device("cuda")
    if getattr(candidate, "evidence", None) is not None:
        candidate.evidence.phase = "bench"  # what its code handles while timed is told apart
    timer = Timer(device, device_info.get("l2Bytes"), head_start_cycles)
    timer.overhead_ms()  # measured here, in the "start" phase, as before; reused per configuration
    head_start = {"cycles": head_start_cycles, "retimed": []}
    ref = task.reference_entry()
    grad_ctx = torch.enable_grad if task.backward else torch.no_grad
    compiled = _compiled(task, log) if compile_baseline else None
    phases.lap("start")
    configs_out, reasons, notes = [], [], []
    details = {}  # configuration -> what a check found, in the user's words
    raced = None
    profile = None
    task_hash = None
    for ci, config in enumerate(task.visible_configs()):
        key = None
        if probe_cache is not None:
            task_hash = task_hash or task_digest(task)
            key = probe_key(task_hash, task, config, device_info)
        about = {"task": task.name, "config": config.name, "gpu": device_info.get("name")}

        def measure(ci=ci, config=config):
            probe = task.make_case(config, seed + 31 * ci, device)
            with grad_ctx():
                return launched_kernel_time_ms(lambda: task.invoke(ref, probe.clone()))

        if probe_cache is None:
            device_ms = measure()
        else:
            device_ms, hit = probe_cache.probe(key, measure, about)
            if hit:
                log(f"bench {config.name}: reference probe from the cache ({device_ms * 1e3:.1f} µs a call)")
        launch_bound = device_ms is not None and device_ms < TINY_MS
        phases.lap("probe")
        if launch_bound and config.derived:
            # derived configurations are for verification; a tiny one would time launches
            notes.append(
                f"{config.name}: not timed: a derived configuration whose reference runs "
                f"{device_ms * 1e3:.1f} µs a call (launch-bound)"
            )
            log(f"bench {config.name}: derived and launch-bound ({device_ms * 1e3:.1f} µs): verified, not timed")
            continue
        cases = [task.make_case(config, seed + 31 * ci, device)]
        rotate = rotation(cases[0], device)
        if rotate < ROTATE:
            notes.append(
                f"{config.name}: {rotate} input set(s) rotated instead of {ROTATE}: one set is "
                f"{case_bytes(cases[0]) / 2**30:.1f} GiB and the GPU's memory holds no more"
            )
        cases += [task.make_case(config, seed + 31 * ci + k, device) for k in range(1, rotate)]
        # every timed call sees new values (two sources, alternating per visit of a buffer),
        # written so that even a version counter shows it: a cache never hits honestly
        sources = [task.make_case(config, seed + 31 * ci + ROTATE + k, device) for k in range(2)]

        def new_values(case, i, sources=sources, rotate=rotate):
            src = sources[(i // rotate) % 2]
            with torch.no_grad():
                for (_, dst), (_, s) in zip(case.tensors(), src.tensors()):
                    dst.copy_(s)

        with grad_ctx():
            ref_out = task.invoke(ref, cases[0].clone())
        phases.lap("inputs")
        if probe_cache is None:
            nbytes, flops = task.cost(config, cases[0], ref_out)
        else:
            (nbytes, flops), _ = probe_cache.cost(key, lambda: task.cost(config, cases[0], ref_out), about)
        floor = floor_ms(nbytes, flops, dtype_name(ref_out[0].dtype), ceilings)
        impls = {"eager": lambda case: task.invoke(ref, case)} if time_eager else {}
        phases.lap("cost")
        if compiled is not None:
            try:  # compiles for this configuration's shapes, outside the timing
                with grad_ctx():
                    compiled(cases[0].clone())
                impls["compile"] = compiled
            except Exception as err:  # a baseline that cannot compile is noted, not fatal
                log(f"torch.compile failed on {config.name}: {type(err).__name__}: {str(err)[:300]}; timing without it")
                compiled = None
        if baseline is not None:
            impls["baseline"] = baseline.run
        if candidate is not None:
            impls["candidate"] = candidate.run
        for c in (baseline, candidate):
            if c is not None and hasattr(c.entry, "reuse_outputs"):
                c.entry.reuse_outputs = True
        phases.lap("compile")
        stop = None
        if adaptive:
            stop = screen_stop(None if race is None else race.get(config.name))
        with grad_ctx():
            raw = timer.interleaved(impls, cases, budget_s=budget_s, seed=seed + ci, prepare=new_values, stop=stop)
        phases.lap("timing")
        overhead = timer.overhead_ms(timer.last_head_start)
        if timer.last_head_start != head_start_cycles:
            worst = max(timer.last_exposed, key=timer.last_exposed.get)
            head_start["retimed"].append(config.name)
            notes.append(
                f"{config.name}: timed again with the full head start: with the short one, "
                f"{worst}'s host side outlasted it on {timer.last_exposed[worst]:.0%} of calls"
            )
        # what the checks below need: one input set (the float64 reference may need the room)
        sources.clear()
        del cases[:-1]
        for c in (baseline, candidate):
            if c is not None and hasattr(c.entry, "reuse_outputs"):
                c.entry.reuse_outputs = False
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
        if launch_bound:
            # a declared configuration (the user's real shape) is timed, but launches dominate it:
            # marked, and kept out of the headline speedup and the search's fitness
            notes.append(
                f"{config.name}: launch-bound: the reference's kernels run {device_ms * 1e3:.1f} µs a call "
                f"(under {TINY_MS * 1e3:.0f} µs), so its times measure launch overhead; not in the headline speedup"
            )
        if race is not None and candidate is not None and baseline is not None and not launch_bound:
            raced = _race(race, configs_out + [row])
        if raced is not None:
            configs_out.append(row)
            log(f"bench {config.name}: raced out: {raced['message']}")
            break
        if candidate is not None:
            cand = row["candidate"]
            wall = stats(raw["candidate"]["wall"])["medianMs"] - overhead
            if wall > 2 * cand["medianMs"] + 0.05:
                row["reason"] = "side-stream"
                log(f"{config.name}: wall {wall:.3f} ms vs event {cand['medianMs']:.3f} ms")
            elif cand["medianMs"] < BELOW_FLOOR * floor:
                row["reason"] = "below-floor"
            else:
                # the output of a timed call must still be right: new values, same buffers
                case = cases[-1]
                refill_case(task, config, case, seed ^ 0x71AE, None)
                with grad_ctx():
                    expected = task.invoke(ref, case.clone())
                    got = candidate.run(case)
                torch.cuda.synchronize()
                results = [compare(g, e, task.tolerance(dtype_name(e.dtype))) for g, e in zip(got, expected)]
                del expected
                if not all(r["ok"] for r in results):
                    # as in verification: a kernel more accurate than the float32 reference is
                    # judged against the reference computed in float64, never more leniently
                    with grad_ctx():
                        truer = within_float64(task, got, case, lambda c: task.invoke(ref, c))
                    if truer:
                        notes.append(
                            f"{config.name}: after timing, outside the tolerance of the float32 reference "
                            "but within it of the reference computed in float64"
                        )
                    else:
                        i, res = next((i, r) for i, r in enumerate(results) if not r["ok"])
                        row["reason"] = "timing-output-mismatch"
                        log(f"{config.name}: output {i} after timing: max abs {res['maxAbs']}, norm {res['normRel']}")
        if candidate is not None and not row["reason"]:
            # all of a call's work, on every stream, must lie where the events time it
            with grad_ctx():
                streamed = stream_check(lambda: candidate.run(cases[-1]))
            if not streamed["ok"]:
                row["reason"] = "side-stream"
                details[config.name] = streamed["detail"]
        phases.lap("checks")
        if candidate is not None and profile is None and not row["reason"]:
            # where the candidate spends its time, on the first configuration: for the next proposal
            with grad_ctx():
                kernels = top_kernels(lambda: candidate.run(cases[0]))
            if kernels:
                profile = {"config": config.name, "kernels": kernels}
            phases.lap("profiler")
        if row["reason"]:
            reasons.append((config.name, row["reason"]))
        configs_out.append(row)
        log(
            f"bench {config.name}: "
            + ", ".join(
                f"{name} {row[name]['medianMs']:.4f} ms"
                for name in ("eager", "compile", "baseline", "candidate")
                if row[name]
            )
        )
        del cases
    messages = {
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
    if getattr(candidate, "evidence", None) is not None:
        notes += [f"while timed: {s}" for s in summary(candidate.evidence.handled(("bench",)))]
    changed = guards.tampered()
    if candidate is not None and (changed or getattr(candidate, "intact", True) is False):
        # the timer's functions, or the run-time record, replaced while it was timed
        what = ", ".join(changed) or "the harness's record of the exceptions its code handles"
        reasons.insert(0, (configs_out[-1]["name"] if configs_out else "-", "timer-patching"))
        details[reasons[0][0]] = f"the candidate replaced {what} while it was timed (hack 6)"
    reason = reasons[0][1] if reasons else None
    message = f"{messages[reason]} (configuration {reasons[0][0]})" if reason else "timed"
    if reason and reasons[0][0] in details:
        message = f"configuration {reasons[0][0]}: {details[reasons[0][0]]}"
    if reason is None and configs_out and all(row["launchBound"] for row in configs_out):
        message = (
            f"timed; every configuration is launch-bound (reference under {TINY_MS * 1e3:.0f} µs a call): "
            "no headline speedup; add a larger configuration to measure the kernel"
        )
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
    if raced is not None and reason is None:
        message = f"raced out after {raced['config']}: {raced['message']}"
        notes.append(message)
    return {
        "ok": reason is None,
        "reason": reason,
        "message": message,
        "configs": configs_out,
        "notes": notes,
        "profile": profile,
        "phases": phases.seconds,
        "probeCache": cache,
        "headStart": head_start,
        "race": raced,
        "seconds": time.perf_counter() - start,
    }


def _race(race, rows):
    """The race's verdict after the configurations in `rows` (timed, not launch-bound): a dict
    when the candidate is slower than the leader beyond the noise, else None."""
    timed = [r for r in rows if not r["launchBound"] and r["candidate"] and r["baseline"] and r["name"] in race]
    if not timed:
        return None
    upper = _geomean([_upper_speedup(r["baseline"], r["candidate"]) for r in timed])
    leader = _geomean([race[r["name"]] for r in timed])
    if upper is None or leader is None or upper >= leader:
        return None
    return {
        "config": timed[-1]["name"],
        "timed": [r["name"] for r in rows],
        "speedupUpper": upper,
        "leaderLower": leader,
        "message": f"at most {upper:.3f}x the kernel to beat on {', '.join(r['name'] for r in timed)} "
        f"(baseline p80 / candidate p20), under the leader's {leader:.3f}x (its p20 / p80)",
    }
