"""Bench's timings, judged in a process that never loaded the candidate (issue 16.1).

`bench` runs in two processes, as `verify` does (judge.py). The judge (the command's own
process) forks the candidate's process before it initialises CUDA; that process loads the
candidate and the baseline kernel and times those two, interleaved as always (bench.py with a
JudgedSide). It writes a line on a pipe when each configuration's timing starts and ends, which
the judge timestamps on its own clock, and it keeps the outputs of its check after timing
(outputs.py's raw bytes). When it has ended and every process it left is stopped, the judge
initialises CUDA and, never loading candidate code:

- measures what needs no candidate itself: the ceilings, the reference's probe, the roofline's
  bytes, flops and floor, and eager PyTorch and torch.compile, timed with its half of the
  budget (the candidate's process gets the other half, so a bench costs the GPU time it did);
- holds the claimed times to bounds it knows without trusting that process: under the floor is
  `below-floor`; more GPU time in a configuration's samples than the wall time the judge saw
  its timing take is `verdict-forged`;
- compares the outputs after timing against its own reference on inputs it regenerates from the
  seed it chose (`timing-output-mismatch`; `outputs-missing`/`outputs-invalid` for files that
  are not there or not what the reference's outputs are);
- writes the record. A claimed failure stays a failure: a candidate can only lose by forging one.

What the bounds cannot see: a forged time between the floor and the wall (a fast time above the
floor for the candidate, a slower one for the baseline kernel that its wall still holds).
docs/SECURITY.md says what bounds that.
"""

from __future__ import annotations

import math
import os
import re
import select
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from . import judge, outputs
from .bench import AFTER_TIMING_SEED, BELOW_FLOOR, MESSAGES, TINY_MS, JudgedSide
from .compare import compare
from .env import dtype_name
from .record import BenchRecord, Record
from .schemas import enum
from .tasks.base import Config, Task
from .timing import MAX_ITERS, MIN_ITERS
from .verify import refill_case, within_float64

REASONS = frozenset(enum("reason.schema.json"))
# The bound above: every timed call of a configuration runs between the "start" and "end" lines
# its process writes (each call starts after a synchronise that follows "start" and ends before
# one that precedes "end"), so its samples sum to less than that wall. The judge's clock can see
# the window only shorter than it was by the delay in reading "start" (a scheduling delay:
# microseconds, rarely milliseconds on a machine loaded twice over, never WALL_SLACK_S), and the
# GPU's event clock may run at another rate than the host's by parts per million, far inside
# WALL_FACTOR. Generous on purpose: an honest kernel never trips it; only a time inflated past the
# wall it really spent does.
WALL_FACTOR = 1.1
WALL_SLACK_S = 0.25
MARKS_LIMIT = 64 << 10  # bytes of marks read: an honest process writes two short lines a configuration
MARK = re.compile(rb"(start|end) ([0-9]{1,6})")
NOTES_LIMIT = 200
TEXT_LIMIT = 2000
# A derived configuration the candidate's process did not time is dropped, not refused, when the
# judge's own probe of the reference is near the launch-bound line (under this many times it):
# the two probes of a noisy 20 µs call may fall either side of it.
PROBE_NOISE = 2.0
HACK6 = ("verdict-forged", "outputs-missing", "outputs-invalid", "record-invalid", "no-record", "timer-patching")


@dataclass
class Judging:
    """What the judge knows of a bench without its candidate's process: the task, loaded and
    pruned in the judge; the device; the seed it chose; the kernels it asked to time."""

    task: Task
    device: torch.device
    seed: int
    baseline: str | None  # the baseline kernel's path, None where none is timed
    candidate: str | None
    # pinned buffers the outputs after timing come to the GPU through, kept for every configuration
    stages: outputs.Stages = field(default_factory=outputs.Stages)


# JudgeSide: after the candidate's process has ended, the judge's own bench() of the reference
# alone (or a record without configurations that says why there is none) and what it knows.
JudgeSide = Callable[[], tuple[BenchRecord, "Judging | None"]]


def _log(msg: str) -> None:
    judge._log(msg)


def bench_judged(
    task_name: str, candidate_side: Callable[[JudgedSide], BenchRecord], judge_side: JudgeSide
) -> BenchRecord:
    """cmd_bench: candidate_side(side) (bench() with the JudgedSide, the claim) runs in a forked
    process; judge_side() here once it has ended; the record returned is the judge's."""
    started = time.perf_counter()
    judge._prctl(judge.PR_SET_DUMPABLE, 0)
    judge._prctl(judge.PR_SET_CHILD_SUBREAPER, 1)
    scratch = tempfile.mkdtemp(prefix="evk-bench-")
    try:
        claim_path = os.path.join(scratch, "claim.json")
        folder = os.path.join(scratch, "after-timing")
        os.mkdir(folder, 0o700)
        read_end, write_end = os.pipe()

        def in_process() -> BenchRecord:
            os.close(read_end)  # the marks are the judge's to read
            return candidate_side(JudgedSide(outputs.Dump(folder), _marker(write_end)))

        try:
            pid, _, keep = judge.run_candidate(in_process, claim_path)
        finally:
            os.close(write_end)
        try:
            status, marks = watch(pid, read_end, keep)
        finally:
            os.close(read_end)
        candidate_s = time.perf_counter() - started
        if os.WIFSIGNALED(status):  # as the command's own process would have ended
            _log(f"the candidate's process was killed by signal {os.WTERMSIG(status)}")
            judge._end_like(os.WTERMSIG(status))
        if os.WEXITSTATUS(status) != 0:
            raise SystemExit(os.WEXITSTATUS(status))
        claim = judge.read_claim(claim_path, "bench")
        if claim is None:
            return failure(
                task_name, "no-record", "the candidate's process ended (exit 0) without a readable record of its timing"
            )
        if not claim.get("ok") and not claim.get("configs"):  # no GPU, a task that does not load …
            return failure(task_name, _reason(claim.get("reason")) or "record-invalid", _text(claim.get("message")))
        own, judging = judge_side()
        if judging is None:  # no GPU here either: the judge's own record says so
            return own
        checked = time.perf_counter()
        rec = decide(claim, own, judging, windows(marks), folder)
        phases = {**rec.get("phases", {}), "judge": round(time.perf_counter() - checked, 4)}
        # the judge's own bench (the ceilings, eager and torch.compile's warm-up and timing):
        # where a final timing's seconds went that the candidate's process never saw
        for name, seconds in (own.get("phases") or {}).items():
            phases[f"judge {name}"] = seconds
        rec["phases"] = phases
        rec["seconds"] = time.perf_counter() - started
        _log(
            f"judge: {'timings accepted' if rec['ok'] else 'refused: ' + str(rec['reason'])} "
            f"({rec['seconds'] - candidate_s:.3f} s outside the candidate's process)"
        )
        return rec
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _marker(fd: int) -> Callable[[int, str], None]:
    def mark(index: int, what: str) -> None:
        os.write(fd, f"{what} {int(index)}\n".encode())

    return mark


# --- the judge's clock ----------------------------------------------------------------
def watch(pid: int, fd: int, keep: frozenset[int]) -> tuple[int, list[tuple[float, bytes]]]:
    """Waits for the candidate's process, timestamping each line it writes on the pipe `fd` as
    it arrives, then stops every process it left (judge.wait_and_stop). Returns (wait status,
    [(the judge's perf_counter at arrival, line)])."""
    marks, pending, read = [], b"", 0
    while True:
        ready, _, _ = select.select([fd], [], [], 0.05)
        now = time.perf_counter()
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:  # every writer closed it: nothing more to time
                return judge.wait_and_stop(pid, keep), marks
            read += len(chunk)
            if read <= MARKS_LIMIT:
                pending += chunk
                *lines, pending = pending.split(b"\n")
                marks += [(now, line) for line in lines]
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            judge.stop_descendants(keep)
            return status, marks


def windows(marks: list[tuple[float, bytes]]) -> dict[int, float] | None:
    """Configuration index → seconds between its "start" and "end" on the judge's clock, from
    marks that must read start i, end i, start j, end j … with i < j < …; None otherwise (an
    honest process never writes anything else)."""
    found, last, opened = {}, -1, None
    for at, line in marks:
        m = MARK.fullmatch(line)
        if m is None:
            return None
        what, index = m.group(1), int(m.group(2))
        if what == b"start" and opened is None and index > last:
            opened = (index, at)
        elif what == b"end" and opened is not None and opened[0] == index:
            found[index], last, opened = at - opened[1], index, None
        else:
            return None
    return found if opened is None else None


# --- the verdict ----------------------------------------------------------------------
def decide(
    claim: Record, own: BenchRecord, judging: Judging, spans: dict[int, float] | None, folder: str
) -> BenchRecord:
    """The record: the judge's own rows (eager, torch.compile, cost, floor, launch-bound) with
    the claimed kernel times that hold, and the reason of the first configuration that fails."""
    task = judging.task
    index = {c.name: i for i, c in enumerate(task.visible_configs())}
    configs = {c.name: c for c in task.visible_configs()}
    claimed = {
        r["name"]: r for r in claim.get("configs") or [] if isinstance(r, dict) and isinstance(r.get("name"), str)
    }
    rows, reasons, details, notes = [], [], {}, list(own.get("notes") or [])
    # a failure the claim reports stands, whatever its rows say (timer-patching: its own guards saw it)
    failed = None if claim.get("ok") is True else (_reason(claim.get("reason")) or "record-invalid")
    for mine in own["configs"]:
        name = mine["name"]
        row = {**mine, "baseline": None, "candidate": None, "reason": None}
        probe_ms = mine["eagerDeviceMs"]
        if name not in claimed and configs[name].derived and probe_ms is not None and probe_ms < PROBE_NOISE * TINY_MS:
            notes.append(
                f"{name}: not timed: a derived configuration the candidate's process found launch-bound "
                f"(the judge's probe: {probe_ms * 1e3:.1f} µs a call)"
            )
            continue
        row, reason, detail, note = judge_row(
            row, claimed.get(name), judging, configs[name], index[name], spans, folder
        )
        row["reason"] = reason
        if reason:
            reasons.append((name, reason))
            if detail:
                details[name] = detail
        if note:
            notes.append(note)
        rows.append(row)
    # tampering first (as the harness's timer-patching always was), then in configuration order
    reasons.sort(key=lambda r: r[1] not in HACK6)
    reason = reasons[0][1] if reasons else None
    message = "timed"
    if failed is not None and (failed == "timer-patching" or reason is None):
        reason, message = failed, _text(claim.get("message"))
    elif reason:
        where = reasons[0][0]
        message = (
            f"configuration {where}: {details[where]}"
            if where in details
            else f"{MESSAGES.get(reason, reason)} (configuration {where})"
        )
    elif rows and all(r["launchBound"] for r in rows):
        message = (
            f"timed; every configuration is launch-bound (reference under {TINY_MS * 1e3:.0f} µs a call): "
            "no headline speedup; add a larger configuration to measure the kernel"
        )
    notes += [n for n in _texts(claim.get("notes")) if n not in notes]
    return {
        "schema": 1,
        "kind": "bench",
        "task": task.name,
        "device": own["device"],
        "ceilings": own["ceilings"],
        "baseline": judging.baseline,
        "candidate": judging.candidate,
        "seed": judging.seed,
        "ok": reason is None,
        "reason": reason,
        "message": message,
        "configs": rows,
        "notes": notes[:NOTES_LIMIT],
        "profile": _profile(claim.get("profile")),
        "phases": _phases(claim.get("phases")),
        "probeCache": own.get("probeCache"),
        "headStart": claim.get("headStart") if isinstance(claim.get("headStart"), dict) else None,
        "race": None,
        "seconds": 0.0,
    }


def judge_row(
    row: Record,
    claimed: Record | None,
    judging: Judging,
    config: Config,
    index: int,
    spans: dict[int, float] | None,
    folder: str,
) -> tuple[Record, str | None, str | None, str | None]:
    """The row with its kernel times from the claim (a new row: the caller's stays as it was),
    and (reason, what was wrong, a note)."""
    row = dict(row)
    name = config.name
    if claimed is None:
        return row, "verdict-forged", f"the candidate's process reported no timing of configuration {name}", None
    for kernel, asked in (("baseline", judging.baseline), ("candidate", judging.candidate)):
        got = claimed.get(kernel)
        if (got is None) != (asked is None):
            return (
                row,
                "record-invalid",
                f"the candidate's process {'left out' if got is None else 'added'} the {kernel}'s times",
                None,
            )
        if got is not None:
            problem = stat_problem(got)
            if problem:
                return row, "record-invalid", f"the {kernel}'s claimed times {problem}", None
            row[kernel] = {k: got[k] for k in ("medianMs", "p20Ms", "p80Ms", "minMs", "meanMs", "n")}
    span = None if spans is None else spans.get(index)
    if span is None:
        return (
            row,
            "verdict-forged",
            "the judge saw no timing of it by the candidate's process (no start and end marks in order)",
            None,
        )
    spent = sum(implied_ms(row[k]) for k in ("baseline", "candidate") if row[k] is not None)
    if spent > (WALL_FACTOR * span + WALL_SLACK_S) * 1e3:
        return (
            row,
            "verdict-forged",
            f"the candidate's process claims {spent:.1f} ms of timed calls in a timing the judge saw take "
            f"{span * 1e3:.1f} ms: its times are forged (hack 6)",
            None,
        )
    said = claimed.get("reason")
    if said is not None and said not in REASONS:
        return (
            row,
            "record-invalid",
            f"the candidate's process gave the reason {_text(said)[:60]!r}, which is none",
            None,
        )
    if said == "side-stream" and not os.path.exists(os.path.join(folder, f"{outputs.key(index, 0)}.json")):
        return row, said, None, None  # the wall against the event time, which precedes the floor
    cand = row["candidate"]
    if cand is not None and cand["medianMs"] < BELOW_FLOOR * row["floorMs"]:
        return row, "below-floor", None, None
    if cand is not None:
        reason, detail, note = after_timing(judging, config, index, folder)
        if reason:
            return row, reason, detail, None
        return row, said, None, note
    return row, said, None, None


def stat_problem(s: Any) -> str | None:
    """What is wrong with claimed timing statistics, or None."""
    keys = ("medianMs", "p20Ms", "p80Ms", "minMs", "meanMs")
    if not isinstance(s, dict) or not all(_number(s.get(k)) for k in keys):
        return "are not timing statistics"
    n = s.get("n")
    if not isinstance(n, int) or isinstance(n, bool) or not MIN_ITERS <= n <= MAX_ITERS:
        return f"count {_text(n)[:20]} samples, where the timer takes {MIN_ITERS} to {MAX_ITERS}"
    if not s["minMs"] <= s["p20Ms"] <= s["medianMs"] <= s["p80Ms"] or s["meanMs"] < s["minMs"]:
        return "are not in order (min, p20, median, p80; mean at least min)"
    return None


def implied_ms(s: Record) -> float:
    """The least total GPU time samples with these statistics hold: mean × n, and at least the
    median for every sample from the median's rank on (timing.stats's quantile)."""
    n = s["n"]
    m = min(n - 1, max(0, int(round(0.5 * (n - 1)))))
    return max(s["meanMs"] * n, s["medianMs"] * (n - m) + s["minMs"] * m)


def after_timing(
    judging: Judging, config: Config, index: int, folder: str
) -> tuple[str | None, str | None, str | None]:
    """The judge's check of the output after timing: the candidate's process refilled its
    buffers with make_case(config, seed ^ AFTER_TIMING_SEED)'s values; the judge makes that case
    itself, runs the reference and compares. (reason, detail, note)."""
    task, device = judging.task, judging.device
    ref = task.reference_entry()
    grad_ctx = torch.enable_grad if task.backward else torch.no_grad
    seed = judging.seed ^ AFTER_TIMING_SEED
    case = task.make_case(config, seed, device)
    refill_case(task, config, case, seed, None)  # as its process wrote them (where it makes them, too)
    with grad_ctx():
        expected = task.invoke(ref, case.clone())
    where = f"configuration {config.name}, after timing"
    try:
        got = outputs.read(
            folder,
            index,
            0,
            expected,
            where,
            accepts_shape=lambda shape, r: judge._one_element(task, shape, r),
            device=device,
            stages=judging.stages,
        )
    except outputs.OutputError as e:
        return e.reason, e.message + ": the judge compares the output of a call after timing itself", None
    results = [compare(g, e, task.tolerance(dtype_name(e.dtype))) for g, e in zip(got, expected)]
    del expected
    if all(r["ok"] for r in results):
        return None, None, None
    with grad_ctx():
        truer = within_float64(task, got, case, lambda c: task.invoke(ref, c))
    if truer:
        return (
            None,
            None,
            f"{config.name}: after timing, outside the tolerance of the float32 reference "
            "but within it of the reference computed in float64",
        )
    i, res = next((i, r) for i, r in enumerate(results) if not r["ok"])
    return (
        "timing-output-mismatch",
        f"{MESSAGES['timing-output-mismatch']}: output {i} against the reference run in a process that never "
        f"loaded the candidate (max abs error {res['maxAbs']}, relative norm error {res['normRel']})",
        None,
    )


# --- what the claim may carry into the record -------------------------------------------
def failure(task_name: str, reason: str, message: str) -> BenchRecord:
    """A bench record that timed nothing."""
    from .env import device_info

    return {
        "schema": 1,
        "kind": "bench",
        "task": task_name,
        "ok": False,
        "reason": reason,
        "message": message,
        "device": device_info("cuda" if torch.cuda.is_available() else "cpu"),
        "ceilings": None,
        "configs": [],
        "seconds": 0.0,
    }


def _reason(value: Any) -> str | None:
    return value if isinstance(value, str) and value in REASONS else None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def _text(value: Any) -> str:
    return str(value)[:TEXT_LIMIT]


def _texts(value: Any) -> list[str]:
    return [_text(v) for v in value[:NOTES_LIMIT] if isinstance(v, str)] if isinstance(value, list) else []


def _phases(value: Any) -> dict[str, float]:
    if not isinstance(value, dict):
        return {}
    return {str(k)[:40]: float(v) for k, v in list(value.items())[:40] if _number(v)}


def _profile(value: Any) -> Record | None:
    """The candidate's own profile (a hint for the next proposal, never a verdict), if well-formed."""
    if (
        not isinstance(value, dict)
        or not isinstance(value.get("config"), str)
        or not isinstance(value.get("kernels"), list)
    ):
        return None
    kernels = value["kernels"][:50]
    if not all(
        isinstance(k, dict)
        and isinstance(k.get("name"), str)
        and _number(k.get("us"))
        and isinstance(k.get("calls"), int)
        and not isinstance(k.get("calls"), bool)
        and k["calls"] >= 0
        for k in kernels
    ):
        return None
    return {
        "config": _text(value["config"]),
        "kernels": [{"name": _text(k["name"]), "us": float(k["us"]), "calls": k["calls"]} for k in kernels],
    }
