"""Compare a candidate's output with the reference's: elementwise and norm error.

The rule is computed in float64 with the functions bound in guards.py. NaN/Inf never pass
where the reference is finite. Large outputs (a KernelBench problem's gigabytes) are compared
in chunks, so the copies and temporaries stay a few hundred megabytes whatever the output's
size; the result is the same as one pass over the whole tensor.

Most comparisons are far from the tolerance's edge: a float32, bfloat16 or float16 output
with every value finite is first compared in float32 (a third of the float64 pass's kernels,
on half the bytes: that pass was most of a verification's GPU time). Its float32 rounding
moves each ratio to its bound by far less than MARGIN, so where it finds every element and the
norm within (1 - MARGIN) of their bounds the float64 verdict is a pass, and where it finds one
beyond (1 + MARGIN) a failure; anything between, or any NaN/Inf, is decided by the float64
pass as before.
"""

import math
from typing import Any

import torch

from . import guards

CHUNK = 1 << 24  # elements per chunk: 128 MB of float64 per temporary
FAST_CHUNK = 1 << 25  # the float32 pass's: 128 MB per temporary
# the float32 pass's rounding, relative: each element's error 2^-24 a step, the norms' sums in
# float32 at most ~n/threads steps of 2^-24 each (2.4e-4 for a billion elements, in the worst
# case); its verdict stands only this far from the bound
MARGIN = 1e-3
FAST_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def compare(got: torch.Tensor, expected: torch.Tensor, tol: dict[str, float], chunk: int = CHUNK) -> dict[str, Any]:
    """Return a dict: ok, maxAbs, maxRel, normRel, nonFinite, index, got, expected."""
    fast = _compare_float32(got, expected, tol)
    return fast if fast is not None else compare_float64(got, expected, tol, chunk)


def _compare_float32(got: torch.Tensor, expected: torch.Tensor, tol: dict[str, float]) -> dict[str, Any] | None:
    """compare()'s result from a float32 pass, or None where it cannot decide: NaN/Inf
    anywhere, a ratio or the norm within MARGIN of its bound, norms so small that float32's
    underflow could move them by that much, other dtypes."""
    if (
        got.dtype != expected.dtype
        or expected.dtype not in FAST_DTYPES
        or got.numel() != expected.numel()
        or expected.numel() == 0
    ):
        return None
    g_all = got.detach().reshape(-1)
    e_all = expected.detach().reshape(-1)
    n = e_all.numel()
    # the reference's scale, on the device (no wait): the absolute tolerance grows with its rms;
    # a chunk at a time, so a bfloat16 or float16 output's float32 copy is a chunk's at most
    norms = [guards.vector_norm(e_all[s : s + FAST_CHUNK], dtype=torch.float32) for s in range(0, n, FAST_CHUNK)]
    ref_norm = norms[0] if len(norms) == 1 else guards.vector_norm(guards.stack(norms))
    atol = guards.clamp_min(ref_norm / math.sqrt(n), 1.0) * tol["atol"]
    parts = []
    for s in range(0, n, FAST_CHUNK):
        g = g_all[s : s + FAST_CHUNK].float()  # the tensor itself where it is float32
        e = e_all[s : s + FAST_CHUNK].float()
        diff = guards.abs_(guards.sub(g, e))
        ae = guards.abs_(e)
        del g, e
        ratio = guards.add(atol, ae, alpha=tol["rtol"])  # each element's bound
        guards.div(diff, ratio, out=ratio)
        worst, at = guards.max_(ratio, 0)
        del ratio
        rel = guards.div(diff, ae.clamp_min_(1e-30), out=ae)
        stat = [worst, at + s, guards.amax(diff), guards.amax(rel), guards.vector_norm(diff, dtype=torch.float32)]
        parts.append(guards.stack([x.to(torch.float64) for x in stat]))
        del diff, rel
    stats = guards.stack(parts).cpu().tolist()  # the one wait
    ref = float(ref_norm.item())
    # float32 squares below its smallest normal are lost: at most this much of either norm
    lost = math.sqrt(n * 1.2e-38)
    if not all(math.isfinite(x) for row in stats for x in row) or not math.isfinite(ref):
        return None
    if ref * MARGIN <= 10 * lost or tol["norm"] * ref * MARGIN <= 10 * lost:
        return None
    k = max(range(len(stats)), key=lambda i: stats[i][0])  # the chunk with the worst element
    worst_at = int(stats[k][1])
    norm_rel = math.sqrt(sum(row[4] ** 2 for row in stats)) / ref
    elementwise = _side(stats[k][0], 1.0)
    norm = _side(norm_rel, tol["norm"])
    if elementwise is None or norm is None:  # near an edge: float64 decides
        return None
    return {
        "ok": elementwise and norm,
        "maxAbs": max(row[2] for row in stats),
        "maxRel": max(row[3] for row in stats),
        "normRel": norm_rel,
        "nonFinite": 0,
        "index": _unravel(worst_at, tuple(expected.shape)),
        "got": float(g_all[worst_at].item()),
        "expected": float(e_all[worst_at].item()),
    }


def _side(value: float, bound: float) -> bool | None:
    """True: within the bound by the margin; False: beyond it by the margin; None: too close."""
    if value <= bound * (1 - MARGIN):
        return True
    if value >= bound * (1 + MARGIN):
        return False
    return None


def compare_float64(
    got: torch.Tensor, expected: torch.Tensor, tol: dict[str, float], chunk: int = CHUNK
) -> dict[str, Any]:
    """compare()'s rule in float64, whatever the values: the whole answer."""
    g_all = got.detach().reshape(-1)
    e_all = expected.detach().reshape(-1)
    n = e_all.numel()
    spans = [(s, min(n, s + chunk)) for s in range(0, n, chunk)]
    # pass 1: the reference's scale (the absolute tolerance grows with its rms)
    sum_e2 = 0.0
    for s, t in spans:
        e = e_all[s:t].to(torch.float64)
        e0 = torch.where(guards.isfinite(e), e, torch.zeros_like(e))
        sum_e2 += float(guards.sum_(e0 * e0).item())
    ref_rms = (sum_e2 / max(1, n)) ** 0.5
    ref_norm = sum_e2**0.5
    # pass 2: errors, the worst element by its error over its own bound
    non_finite, worst, worst_ratio, max_abs, max_rel, err2 = 0, 0, -1.0, 0.0, 0.0, 0.0
    for s, t in spans:
        g = g_all[s:t].to(torch.float64)
        e = e_all[s:t].to(torch.float64)
        finite_e = guards.isfinite(e)
        bad_nonfinite = finite_e & ~guards.isfinite(g)
        # where the reference itself is NaN/Inf, the candidate must match it exactly
        mismatched_special = (~finite_e) & ~((g == e) | (guards.isnan(g) & guards.isnan(e)))
        non_finite += int(guards.sum_(bad_nonfinite).item()) + int(guards.sum_(mismatched_special).item())
        g0 = torch.where(finite_e & guards.isfinite(g), g, torch.zeros_like(g))
        e0 = torch.where(finite_e, e, torch.zeros_like(e))
        del g, e
        diff = guards.abs_(guards.sub(g0, e0))
        bound = tol["atol"] * max(1.0, ref_rms) + tol["rtol"] * guards.abs_(e0)
        ratio = diff / bound.clamp_min(1e-300)
        ratio = torch.where(bad_nonfinite | mismatched_special, torch.full_like(ratio, float("inf")), ratio)
        at = int(guards.argmax(ratio).item())
        value = float(ratio[at].item())
        if value > worst_ratio:
            worst_ratio, worst = value, s + at
        max_abs = max(max_abs, float(guards.amax(diff).item()))
        max_rel = max(max_rel, float(guards.amax(diff / guards.abs_(e0).clamp_min(1e-30)).item()))
        err2 += float(guards.sum_(diff * diff).item())
        del g0, e0, diff, bound, ratio
    err_norm = err2**0.5
    norm_rel = err_norm / ref_norm if ref_norm > 0 else err_norm
    elementwise_ok = n == 0 or worst_ratio <= 1.0
    norm_ok = norm_rel <= tol["norm"] if ref_norm > 0 else err_norm <= tol["atol"]
    index = _unravel(worst, tuple(expected.shape))
    return {
        "ok": non_finite == 0 and elementwise_ok and norm_ok,
        "maxAbs": _finite(max_abs),
        "maxRel": _finite(max_rel),
        "normRel": _finite(norm_rel),
        "nonFinite": non_finite,
        "index": index,
        "got": _finite(float(g_all[worst].item())) if n else None,
        "expected": _finite(float(e_all[worst].item())) if n else None,
    }


def bitwise_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if guards.equal(a, b):  # one kernel; NaN is unequal to itself, so floats go on
        return True
    if not a.is_floating_point():
        return False
    both_nan = guards.isnan(a) & guards.isnan(b)
    return bool(((a == b) | both_nan).all().item())


def _unravel(flat, shape):
    out = []
    for size in reversed(shape):
        out.append(flat % size if size else 0)
        flat = flat // size if size else 0
    return list(reversed(out))


def _finite(x):
    """JSON has no NaN/Inf: report them as None (the nonFinite count says why)."""
    if x is None or x != x or x in (float("inf"), float("-inf")):
        return None
    return x
