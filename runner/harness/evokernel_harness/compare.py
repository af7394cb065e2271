"""Compare a candidate's output with the reference's: elementwise and norm error.

Computed in float64 with the functions bound in guards.py. NaN/Inf never pass where the
reference is finite.
"""

import torch

from . import guards


def compare(got, expected, tol):
    """Return a dict: ok, maxAbs, maxRel, normRel, nonFinite, index, got, expected."""
    g = got.detach().to(torch.float64)
    e = expected.detach().to(torch.float64)
    finite_e = guards.isfinite(e)
    bad_nonfinite = finite_e & ~guards.isfinite(g)
    non_finite = int(guards.sum_(bad_nonfinite).item())
    # where the reference itself is NaN/Inf, the candidate must match it exactly
    mismatched_special = (~finite_e) & ~((g == e) | (guards.isnan(g) & guards.isnan(e)))
    non_finite += int(guards.sum_(mismatched_special).item())
    g0 = torch.where(finite_e & guards.isfinite(g), g, torch.zeros_like(g))
    e0 = torch.where(finite_e, e, torch.zeros_like(e))
    diff = guards.abs_(guards.sub(g0, e0))
    n = max(1, e0.numel())
    ref_rms = float(guards.sqrt(guards.sum_(e0 * e0) / n).item())
    bound = tol["atol"] * max(1.0, ref_rms) + tol["rtol"] * guards.abs_(e0)
    ratio = diff / bound.clamp_min(1e-300)
    ratio = torch.where(bad_nonfinite | mismatched_special, torch.full_like(ratio, float("inf")), ratio)
    worst = int(guards.argmax(ratio.reshape(-1)).item()) if ratio.numel() else 0
    max_abs = float(guards.amax(diff).item()) if diff.numel() else 0.0
    denom_rel = guards.abs_(e0).clamp_min(1e-30)
    max_rel = float(guards.amax(diff / denom_rel).item()) if diff.numel() else 0.0
    ref_norm = float(guards.sqrt(guards.sum_(e0 * e0)).item())
    err_norm = float(guards.sqrt(guards.sum_(diff * diff)).item())
    norm_rel = err_norm / ref_norm if ref_norm > 0 else err_norm
    elementwise_ok = ratio.numel() == 0 or float(guards.amax(ratio).item()) <= 1.0
    norm_ok = norm_rel <= tol["norm"] if ref_norm > 0 else err_norm <= tol["atol"]
    index = _unravel(worst, tuple(e.shape))
    flat_g, flat_e = g.reshape(-1), e.reshape(-1)
    return {
        "ok": non_finite == 0 and elementwise_ok and norm_ok,
        "maxAbs": _finite(max_abs),
        "maxRel": _finite(max_rel),
        "normRel": _finite(norm_rel),
        "nonFinite": non_finite,
        "index": index,
        "got": _finite(float(flat_g[worst].item())) if flat_g.numel() else None,
        "expected": _finite(float(flat_e[worst].item())) if flat_e.numel() else None,
    }


def bitwise_equal(a, b):
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
