"""Did all of a call's GPU work run where the timer sees it? (hack 3, without a rule on streams)

The timer (timing.py) keeps the caller's stream busy with a head start (a sleep kernel),
records its start event, makes the call, records its end event. Work on the caller's stream,
and on any stream the caller's stream waits for before the end event, lies between the two:
honest multi-stream code (a side stream that waits for the caller's stream and is joined back
with wait_stream or an event) is timed in full. Work on a stream nobody joins escapes: it
runs beside the head start, or after the end event.

One call is profiled as the timer makes it: a sleep on the caller's stream, the call, a
second short sleep where the end event would be. Any of the call's kernels (on any stream)
that starts before the first sleep ends or ends after the second one starts ran outside the
timed window; the record names them, their streams and their time.
"""

import math
from typing import Any, Callable

import torch

from . import guards

MARK = "spin_kernel"  # ATen's kernel behind torch.cuda._sleep
EPS_US = 1.0  # clock alignment between streams
HEAD_START_CYCLES = 1_000_000
END_CYCLES = 1_000
# The head start of the probe that asks why outputs were wrong (diagnose.py): about 10 ms on an
# H100, longer than any host-side delay before a call's launches (allocating and poisoning a
# 256 MB output took most of the 0.5 ms above on the H100, so an evk kernel launched on a stream
# of its own started after the head start ended and, running beside the caller's copies, ended
# inside the window: softmax/03a named unwritten-output on 8192x8192, side-stream on the others).
# Work on a stream the caller's stream never waits for then starts while the caller's stream is
# still asleep; work that waits for it cannot.
PROBE_HEAD_START_CYCLES = 20_000_000


def profile_call(
    fn: Callable[[], Any], head_start_cycles: int = HEAD_START_CYCLES
) -> list[tuple[str, Any, float, float]]:
    """[(name, stream, start µs, end µs)] of the GPU activity of one call placed as the timer
    places it, with the two marker sleeps on the caller's stream."""
    return trace_call(fn, head_start_cycles)[0]


def trace_call(
    fn: Callable[[], Any], head_start_cycles: int = HEAD_START_CYCLES
) -> tuple[list[tuple[str, Any, float, float]], bool]:
    """profile_call's events, and whether the head start outlasted the call's launches: an event
    recorded behind the first marker has not completed when the call returns. When it has (a
    host descheduled on a busy machine, slow host code, a wait inside the call), work the call
    launched on a stream of its own after that may start inside the window: the trace cannot
    tell it from timed work, and the caller should ask again with a longer head start."""
    from torch.profiler import ProfilerActivity, profile

    guards.synchronize()
    behind = torch.cuda.Event()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        guards.sleep(head_start_cycles)
        guards.EventBase.record(behind, torch.cuda.current_stream())
        fn()
        covered = not guards.EventBase.query(behind)
        guards.sleep(END_CYCLES)
        guards.synchronize()
    out = []
    cuda = torch.autograd.DeviceType.CUDA  # pyright: ignore[reportPrivateImportUsage] — torch's own enum
    for e in prof.events():  # pyright: ignore[reportOptionalIterable] — a profile that ran has events
        if getattr(e, "device_type", None) != cuda:
            continue
        stream = getattr(e, "device_resource_id", None)
        out.append((e.name, stream, float(e.time_range.start), float(e.time_range.end)))
    return out, covered


def escaped(events: list[tuple[str, Any, float, float]]) -> dict[str, Any] | None:
    """The work outside the timed window: {window, streams, escaped: [(name, stream, µs, why)]},
    or None when the markers are not in the trace (no profiler activity: nothing to say)."""
    marks = sorted((e for e in events if MARK in e[0]), key=lambda e: e[2])
    if len(marks) < 2:
        return None
    first, last = marks[0], marks[-1]
    lo, hi = first[3], last[2]
    work = [e for e in events if e is not first and e is not last]
    out = []
    for name, stream, start, end in work:
        if start < lo - EPS_US:
            out.append((name, stream, end - start, "started before the caller's stream reached the call"))
        elif end > hi + EPS_US:
            out.append((name, stream, end - start, "ended after the caller's stream had finished the call"))
    return {
        "windowUs": hi - lo,
        "streams": sorted({str(e[1]) for e in work if e[1] is not None}),
        "escaped": out,
        "events": len(work),
    }


def describe(result: dict[str, Any]) -> str:
    """The user's words for escaped work, with numbers."""
    total = sum(us for _, _, us, _ in result["escaped"])
    by_stream = {}
    for name, stream, us, why in result["escaped"]:
        by_stream.setdefault(stream, []).append((name, us, why))
    parts = []
    for stream, items in by_stream.items():
        names = ", ".join(sorted({n[:80] for n, _, _ in items})[:3])
        whys = sorted({w for _, _, w in items})
        parts.append(f"stream {stream}: {names} ({sum(us for _, us, _ in items) / 1e3:.3f} ms; {'; '.join(whys)})")
    return (
        f"{total / 1e3:.3f} ms of its GPU work ran outside the timed window on the caller's stream "
        f"({result['windowUs'] / 1e3:.3f} ms): {'; '.join(parts)}: the caller's stream never waited for it, "
        "so events on it do not time it (hack 3)"
    )


# The head starts a trace is asked with, each 8x the one before (about 0.5, 4 and 32 ms): the
# first that outlasts the call's launches decides (trace_call). On the H200 under a full
# acceptance run (four lanes, builds on every core, 2026-11-29) the 0.5 ms head start ended
# before an evk side-stream candidate's launch once in four runs, and the candidate passed.
HEAD_START_GROWTH = 8
HEAD_START_TRIES = 3
TAIL_MS = 0.1  # the device busy this long after the caller's stream finished, and no trace: work escaped
TAIL_RUNS = 3
TAIL_CONFIRM_RUNS = 12  # a tail over TAIL_MS is measured again before it counts


def tail_ms(fn: Callable[[], Any], head_start_cycles: int = HEAD_START_CYCLES) -> float:
    """How long the device stays busy after the caller's stream has finished a call placed as
    the timer places it (the least of TAIL_RUNS calls): the witness where the trace cannot
    speak (no profiler, or none of the call's work in it). Where the trace saw the call's work,
    the trace decides: the driver's own work after a call (a spilling kernel's) keeps the
    device busy too, with nothing of the call's running."""
    best = _least_tail(fn, head_start_cycles, TAIL_RUNS)
    if best > TAIL_MS:
        # The host's clock measures this: a thread descheduled between the two waits (a busy
        # machine, builds on every core) looks like a busy GPU. Work that escaped the caller's
        # stream is there on every call; a descheduling is not, so the least of more calls
        # tells them apart.
        best = min(best, _least_tail(fn, head_start_cycles, TAIL_CONFIRM_RUNS))
    return best


def _least_tail(fn: Callable[[], Any], head_start_cycles: int, runs: int) -> float:
    best = math.inf  # runs > 0: a measured time
    for _ in range(runs):
        guards.synchronize()
        end = torch.cuda.Event()
        guards.sleep(head_start_cycles)
        fn()
        guards.EventBase.record(end, torch.cuda.current_stream())
        guards.EventBase.synchronize(end)
        t1 = guards.perf_counter()
        guards.synchronize()
        ms = (guards.perf_counter() - t1) * 1e3
        best = min(best, ms)
    return best


def check(fn: Callable[[], Any], head_start_cycles: int = HEAD_START_CYCLES) -> dict[str, Any]:
    """{ok, detail, streams} for one call: the trace's verdict, and the device's tail."""
    tail = tail_ms(fn, head_start_cycles)
    late = (
        f"after the caller's stream had finished the call the GPU stayed busy {tail:.3f} ms with work it never "
        "waited for: events on the caller's stream do not time it (hack 3)"
    )
    try:
        result, uncovered = _trace_until_covered(fn, head_start_cycles)
    except Exception as err:  # no profiler: the tail is the evidence
        if tail > TAIL_MS:
            return {"ok": False, "detail": late, "streams": []}
        return {
            "ok": True,
            "detail": f"profiler unavailable ({type(err).__name__}); the device was idle once the "
            "caller's stream finished",
            "streams": [],
        }
    if result is not None and result["escaped"]:
        return {"ok": False, "detail": describe(result), "streams": result["streams"]}
    if result is None or not result.get("events"):
        # the trace cannot speak (no markers, none of the call's work in it): the tail decides
        if tail > TAIL_MS:
            return {"ok": False, "detail": late, "streams": [] if result is None else result["streams"]}
        return {"ok": True, "detail": "no GPU activity seen; stream check inconclusive", "streams": []}
    # The trace saw the call's kernels, copies and memsets, every one inside the window: it
    # decides. A device busy after the caller's stream finished, with none of the call's work
    # running then, is the driver's own (an honest GEMM capped to 64 registers by
    # __launch_bounds__, spilling, left a 0.12-0.14 ms tail on every call on the H100; an honest
    # BatchNorm once did too): said in the detail, not a refusal.
    many = len(result["streams"]) > 1
    detail = (
        f"its work on {len(result['streams'])} streams lies within the timed window"
        if many
        else "its work lies within the timed window"
    )
    if tail > TAIL_MS:
        detail += (
            f"; the device stayed busy {tail:.3f} ms after the call with none of its kernels, copies "
            "or memsets running (driver work the trace does not show as the call's)"
        )
    if uncovered:
        # Every head start ended before the call returned: a call that waits for the device
        # (a synchronize, an .item()) cannot be placed any other way. Work launched after the
        # wait on a stream of its own and ended before the caller's stream finished is not told
        # apart: said, with the tail (above) still the witness of what ran on after the call.
        detail += (
            f"; the check's longest head start ({uncovered:.1f} ms) ended before the call returned on each of "
            f"{HEAD_START_TRIES} tries (the call waits for the device, or its host was descheduled), so work "
            "launched after that is judged by the device's tail alone"
        )
    return {"ok": True, "streams": result["streams"], "detail": detail, "traced": True}


def _trace_until_covered(fn: Callable[[], Any], head_start_cycles: int) -> tuple[dict[str, Any] | None, float]:
    """escaped() of the first trace whose head start outlasted the call's launches, growing the
    head start HEAD_START_GROWTH-fold up to HEAD_START_TRIES times; any trace that shows escaped
    work decides at once. The float: 0.0 when a head start covered the call, else the last head
    start's length in ms (the trace then is the last one)."""
    cycles = head_start_cycles
    result: dict[str, Any] | None = None
    head_ms = 0.0
    for _ in range(HEAD_START_TRIES):
        events, covered = trace_call(fn, cycles)
        result = escaped(events)
        if result is None or result["escaped"] or covered:
            return result, 0.0
        marks = sorted((e for e in events if MARK in e[0]), key=lambda e: e[2])
        head_ms = (marks[0][3] - marks[0][2]) / 1e3
        cycles *= HEAD_START_GROWTH
    return result, head_ms
