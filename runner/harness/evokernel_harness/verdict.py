"""The verdict after a candidate's outputs passed: what it did when it ran decides.

Evidence: the kernels that ran and whose (own_kernel.py's trace, on the GPU), the exceptions
its code raised and handled (evidence.py), the backend flags it set (backend_flags.py).

- Its own kernels did not do the work: a fallback (hack 12). Where an `except` branch of its
  code ran (a build that failed, a launch that raised), the message says so in its words.
- No kernel of its own at all: a PyTorch rewrite, verified and timed like any candidate and
  reported as one; refused only where the task requires own kernels, saying exactly that.
- On the CPU (no trace) an `except` branch that ran during a call is the fallback's evidence.
- Everything else it did (handled exceptions, flags) is stated in the record's warnings.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from . import evidence as _evidence
from .record import VerifyRecord
from .verify import HACKS

if TYPE_CHECKING:
    from .candidates.load import Candidate
    from .tasks.base import Task


def fallback_message(handled: list[dict[str, Any]], detail: str) -> str:
    """'the extension build failed: …; the fallback ran (launched: …)', or the trace's detail."""
    ran = _evidence.summary(handled)
    if not ran:
        return f"the candidate's own kernel does not do the work: {detail} (hack 12)"
    return f"{'; '.join(ran)}; the fallback ran: {detail} (hack 12)"


def after_verification(
    rec: VerifyRecord, task: Task, cand: Candidate, backend: str, own: dict[str, Any] | None
) -> VerifyRecord:
    """A passed verify record `rec`, updated from the run's evidence (a new record: rec stays as
    it was). own: check_own_kernel's result (None where it did not run: the CPU, evk candidates)."""
    rec = copy.deepcopy(rec)
    handled = cand.evidence.handled()
    in_calls = [e for e in handled if e["phase"] != "load"]
    rec["evidence"] = {
        "handledExceptions": handled,
        "monitor": _evidence.backend(),
        "backendFlags": {k: [a, b] for k, (a, b) in cand.flags.changes().items()},
    }
    rec["warnings"] += cand.flags.describe()
    if own is not None and own.get("rewrite"):
        rec["checks"][-1]["name"] = "pytorch-rewrite"
        if task.own_kernels == "require":
            rec.update(
                ok=False,
                status="rejected",
                reason="own-kernel-required",
                hack=None,
                message=f"{own['detail']}: this task requires the candidate's own kernels ({task.own_kernels_rule()}), "
                "so a rewrite in PyTorch ops does not count, however fast",
            )
            return rec
        rec["warnings"].append(f"{own['detail']}: verified and timed like any candidate, reported as a rewrite")
    elif own is not None and not own["ok"]:
        rec.update(
            ok=False,
            status="rejected",
            reason="torch-fallback",
            hack=HACKS["torch-fallback"],
            message=fallback_message(handled, own["detail"]),
        )
        return rec
    elif own is None and backend == "cpu" and in_calls:
        rec.update(
            ok=False,
            status="rejected",
            reason="torch-fallback",
            hack=HACKS["torch-fallback"],
            message=fallback_message(
                in_calls, "its except branch computed the result (no kernel of its own can run on the CPU)"
            ),
        )
        return rec
    # whose kernels did the work is one fact, the trace's (own_kernel.judge's ownKernels):
    # never "its own kernels did the work" beside a check that says none of them ran
    worked = own.get("ownKernels") if own is not None and own["ok"] else None
    rec["warnings"] += [
        f"{s}: its own kernels ({_short(worked)}) did the work anyway" if worked else s
        for s in _evidence.summary(handled)
    ]
    return rec


def _short(names: list[str], limit: int = 3) -> str:
    text = ", ".join(n[:80] for n in names[:limit])
    return text + (f" and {len(names) - limit} more" if len(names) > limit else "")


def check_streams(rec: VerifyRecord, task: Task, cand: Candidate, seed: int, device: str = "cuda") -> VerifyRecord:
    """On the GPU: one call placed as the timer places it (streams.py); work outside the timed
    window refuses it as side-stream, naming the work, its stream and its time. Returns the
    record with that check (a new record: rec stays as it was)."""
    import torch

    from . import streams

    config = task.visible_configs()[0]
    case = task.make_case(config, seed, device)
    grad = torch.enable_grad if task.backward else torch.no_grad
    with grad():
        # whole calls, as the timer makes them: the check makes several, and a staged backward
        # runs once (autograd frees its graph); a backward call stages its forward on the
        # caller's stream, inside the window, where it hides nothing
        result = streams.check(lambda: cand.run(case))
    rec = copy.deepcopy(rec)
    rec["checks"].append({"name": "all-work-timed", "ok": result["ok"], "detail": f"{config.name}: {result['detail']}"})
    rec["evidence"] = {**rec.get("evidence", {}), "streams": result["streams"]}
    if not result["ok"]:
        rec.update(
            ok=False,
            status="rejected",
            reason="side-stream",
            hack=3,
            message=f"configuration {config.name}: {result['detail']}",
        )
    return rec
