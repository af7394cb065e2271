"""Compare a candidate's output with the reference's: elementwise and norm error.

Computed in float64 with the functions bound in guards.py. NaN/Inf never pass where the
reference is finite. Large outputs (a KernelBench problem's gigabytes) are compared in
chunks, so the float64 copies and temporaries stay a few hundred megabytes whatever the
output's size; the result is the same as one pass over the whole tensor.
"""

from typing import Any

import torch

from . import guards

CHUNK = 1 << 24  # elements per chunk: 128 MB of float64 per temporary


def compare(got: torch.Tensor, expected: torch.Tensor, tol: dict[str, float], chunk: int = CHUNK) -> dict[str, Any]:
    """Return a dict: ok, maxAbs, maxRel, normRel, nonFinite, index, got, expected."""
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
    if a.is_floating_point():
        both_nan = guards.isnan(a) & guards.isnan(b)
        return bool(((a == b) | both_nan).all().item())
    return guards.equal(a, b)


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
