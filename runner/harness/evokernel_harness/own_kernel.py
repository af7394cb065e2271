"""Did the candidate's own kernel do the work? (hack 12: a candidate that quietly calls PyTorch.)

The profiler sees the GPU kernels of one call of the candidate and of the reference, on
every visible configuration. Each candidate kernel is one of: its own (its name is exactly
that of a function in what the candidate built, mangled or demangled: kernel_symbols.py;
never a name of PyTorch's or a library's, whatever the candidate calls its kernels), a vendor
library's (cuBLAS, cuDNN, CUTLASS, cuFFT: a GEMM through
at::mm is good engineering), a fill or copy, or PyTorch's own (ATen). The rule (judge):

- its own kernel must run, on every configuration (a kernel that never runs, or a branch
  that never takes the fast path, is a fallback);
- it is a fallback when the kernels it shares with the reference make up the reference's
  work: every non-trivial reference kernel appears in its trace (the reference's ops plus a
  token kernel), or PyTorch's kernels do the reference's work on the activations or take
  more of its GPU time than its own do, set-up on parameters and shapes not counted (work.py:
  measured by the elements each kernel's operator was given, not by time alone), or the
  reference's work is a library call and so is most of the candidate's;
- otherwise it passes, and the record states the share of its GPU time in library kernels.

A task may set "libraries": "deny": then no vendor-library kernel and no kernel of the
reference's may appear at all (the strict benchmark rule).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Collection, Iterable, Mapping

import torch

from . import kernel_symbols
from . import work as work_rule

if TYPE_CHECKING:
    from .candidates.load import Candidate
    from .tasks.base import Case, Task

HARMLESS = re.compile(r"fill|copy|memset|memcpy|Memcpy|Memset", re.I)
LIBRARY = re.compile(
    r"gemm|gemv|nvjet|cutlass|cublas|cudnn|xmma|splitKreduce|implicit_convolve|convolve_|winograd|"
    r"fft|cusparse|cutensor|trsm|syrk|getrf|dot_kernel",
    re.I,
)
# PyTorch's and the libraries' kernels (namespaces, vendor name shapes): never the candidate's,
# even where it built a function of that name (an ATen template instantiated in its own
# object, a cuBLAS kernel name copied for an extern "C" kernel of its own)
FOREIGN = re.compile(
    r"\b(?:at|c10|torch|caffe2|at_cuda_detail|cub|thrust|cutlass|cute)::|cublas|cudnn|cufft|cusparse|cutensor|"
    r"nvjet|xmma|^(?:void\s+)?(?:sm\d+|ampere|volta|turing|maxwell|hopper|blackwell)_\w*(?:gemm|conv|fft)",
    re.I,
)
NON_TRIVIAL_SHARE = 0.01  # a reference kernel under 1 % of its GPU time is set-up, not its work


def _kernel_stats(fn):
    """GPU kernels one call launches: name -> (total device time in µs, launches) (CUPTI)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    cuda = torch.autograd.DeviceType.CUDA  # pyright: ignore[reportPrivateImportUsage] — torch's own enum
    return {
        e.key: (getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0), e.count)
        for e in prof.key_averages()
        if getattr(e, "device_type", None) == cuda
    }


def _kernel_times_us(fn):
    return {name: us for name, (us, _) in _kernel_stats(fn).items()}


def top_kernels(fn: Callable[[], Any], limit: int = 5) -> list[dict[str, Any]] | None:
    """The kernels one call spends its GPU time in, longest first: a profile a proposal can
    read. [{name, us, calls}], or None when the profiler is unavailable."""
    try:
        stats = _kernel_stats(fn)
    except Exception:  # no profiler: no profile, never a failure
        return None
    ranked = sorted(stats.items(), key=lambda kv: -kv[1][0])[:limit]
    return [{"name": name[:200], "us": round(float(us), 2), "calls": int(calls)} for name, (us, calls) in ranked]


def launched_kernel_time_ms(fn: Callable[[], Any]) -> float | None:
    """GPU time of the kernels one call launches, without host gaps; None if unknown."""
    try:
        total_us = sum(_kernel_times_us(fn).values())
    except Exception:  # no profiler: the check is skipped, not failed
        return None
    return total_us / 1e3 if total_us else None


@dataclass(frozen=True)
class OwnKernels:
    """What the candidate built, by identity: `names`, the exact names (mangled and
    demangled) of the functions in its own compiled objects and of its Triton/CuPy kernels;
    `declared`, its kernels as its source declares them (for messages only); `objects`, the
    files the names were read from."""

    names: frozenset[str]
    declared: tuple[str, ...] = ()
    objects: tuple[str, ...] = ()

    def owns(self, kernel: str) -> bool:
        """Whether a launched kernel (the profiler's name) is the candidate's: exactly one of
        its names, and not PyTorch's or a library's."""
        return kernel in self.names and not FOREIGN.search(kernel)

    def describe(self) -> str:
        return _short(self.declared or self.names) or "none declared"


def as_own(own: OwnKernels | Collection[str]) -> OwnKernels:
    """OwnKernels, or exact names given as a collection (tests, traces read back)."""
    return own if isinstance(own, OwnKernels) else OwnKernels(frozenset(own))


def own_kernels(candidate: Candidate) -> OwnKernels:
    """The candidate's kernels by identity (kernel_symbols.py): its torch extension's object
    and every object it loaded from outside Python, the toolkit and the system, plus the
    kernels its module's Triton and CuPy objects compiled. Read after its calls ran, so a
    build in its first call is loaded."""
    extra = [candidate.artifact] if candidate.format == "torch-ext" and candidate.artifact else []
    objects = kernel_symbols.candidate_objects(extra)
    symbols: set[str] = set()
    for path in objects:
        symbols |= kernel_symbols.object_kernels(path)
    symbols |= kernel_symbols.module_kernels(getattr(candidate, "module", None))
    return OwnKernels(frozenset(kernel_symbols.exact_names(symbols)), tuple(sorted(candidate.kernels)), tuple(objects))


def classify(name: str, own: OwnKernels | Collection[str]) -> str:
    """own | library | harmless | torch, for one kernel name of a candidate's trace. own:
    the candidate's OwnKernels, or exact names."""
    if as_own(own).owns(name):
        return "own"
    if HARMLESS.search(name):
        return "harmless"
    if LIBRARY.search(name) and "at::native" not in name:  # ATen's own kernels are PyTorch's
        return "library"
    return "torch"


def _short(names, limit=3):
    names = sorted(names)
    text = ", ".join(n[:100] for n in names[:limit])
    return text + (f" and {len(names) - limit} more" if len(names) > limit else "")


def judge(
    traces: list[tuple[str, dict[str, float], dict[str, float]]],
    own: OwnKernels | Collection[str],
    libraries: str = "allow",
    work: Mapping[str, tuple[dict[str, int] | None, int]] | None = None,
) -> dict[str, Any]:
    """traces: [(config name, candidate {name: µs}, reference {name: µs})]; own: the
    candidate's kernels (OwnKernels, or their exact names). Returns {ok, detail, ownKernels,
    shares: {own, library, torch, harmless}, libraryKernels}; shares are fractions of the
    candidate's GPU time summed over configurations. ownKernels (its own kernels that did the
    work: empty unless ok) is the one fact every statement of whose kernels did the work is
    drawn from: the detail here, the verdict's warnings (verdict.py); the own share and it
    come from the same classification (classify). work: config name → (the candidate's
    kernel → elements its operator was given, the activations' elements), work.py's measure
    of whose work it is (without it, every PyTorch kernel counts as work)."""
    own = as_own(own)
    totals = {"own": 0.0, "library": 0.0, "torch": 0.0, "harmless": 0.0}
    library_names, own_seen = set(), set()
    for config, cand, ref in traces:
        kinds = {name: classify(name, own) for name in cand}
        for name, us in cand.items():
            totals[kinds[name]] += float(us)
        ours = {n for n, k in kinds.items() if k == "own"}
        own_seen |= ours
        library_names |= {n for n, k in kinds.items() if k == "library"}
        if not ours:
            built = "" if own.names else " (no object it built is loaded: its build failed, or it loaded none)"
            return _fail(
                f"none of its kernels ({own.describe()}) ran on configuration {config}{built}; "
                f"launched: {_short(cand) or 'nothing'}",
                totals,
                library_names,
            )
        ref_work = {n: us for n, us in ref.items() if not HARMLESS.search(n)}
        ref_total = sum(ref_work.values()) or 1.0
        non_trivial = {n for n, us in ref_work.items() if us >= NON_TRIVIAL_SHARE * ref_total}
        # PyTorch's kernels by the work they do (work.py): set-up on parameters and shapes is
        # not the reference's work, whatever kernel it shares a name with
        elements, activation = (work or {}).get(config, (None, 0))
        torch_names = {n for n, k in kinds.items() if k == "torch"}
        setup = work_rule.setup_kernels(torch_names, elements, activation)
        shared = (set(cand) & set(ref_work)) - ours - setup
        if libraries == "deny":
            banned = shared | {n for n, k in kinds.items() if k == "library"}
            if banned:
                return _fail(
                    f"it launches {_short(banned)} on configuration {config}, and this task forbids "
                    'library and reference kernels ("libraries": "deny")',
                    totals,
                    library_names,
                )
            continue
        # a fallback launches the reference's kernels as the reference does, its own beside them:
        # every one of them, or the ones the work is in where those are PyTorch's own. Library
        # GEMMs beside an own kernel that replaces the reference's other kernels (cuBLAS for an
        # FFN's GEMMs, its own fused SwiGLU) are the candidate's design: the library share says so
        replaced = set(ref_work) - shared
        torch_work = {n for n in non_trivial if classify(n, ()) != "library"}
        if ref_work and (not replaced or (non_trivial <= shared and torch_work)):
            return _fail(
                f"it launches every kernel the reference does its work in ({_short(non_trivial)}) on "
                f"configuration {config}: PyTorch does the work, its own {_short(ours)} is extra",
                totals,
                library_names,
            )
        cand_total = sum(cand.values()) or 1.0
        own_us = sum(us for n, us in cand.items() if kinds[n] == "own")
        why = work_rule.torch_work(config, cand, torch_names, own_us, ref_work, elements, activation, _short)
        if why is not None:
            return _fail(why, totals, library_names)
        lib_us = sum(us for n, us in cand.items() if kinds[n] == "library")
        ref_all_library = bool(ref_work) and all(classify(n, ()) == "library" for n in ref_work)
        if ref_all_library and lib_us > 0.5 * cand_total:
            return _fail(
                f"the reference's work is a library call ({_short(non_trivial)}) and library kernels take "
                f"{lib_us / cand_total:.0%} of the candidate's GPU time on configuration {config}: "
                "it calls the same library",
                totals,
                library_names,
            )
    shares = _shares(totals)
    detail = f"ran {_short(own_seen)} on {len(traces)} configuration{'s' if len(traces) != 1 else ''}"
    if library_names:
        detail += f"; {shares['library']:.0%} of its GPU time in library kernels ({_short(library_names)})"
    if shares["torch"] > 0:
        detail += f"; {shares['torch']:.0%} in PyTorch kernels"
    return {
        "ok": True,
        "detail": detail,
        "ownKernels": sorted(n[:200] for n in own_seen),
        "shares": shares,
        "libraryKernels": sorted(n[:200] for n in library_names),
    }


def _shares(totals):
    total = sum(totals.values()) or 1.0
    return {k: round(v / total, 4) for k, v in totals.items()}


def _fail(detail, totals, library_names):
    return {
        "ok": False,
        "detail": detail,
        "ownKernels": [],  # a fallback: whatever of its own ran, the work is not its
        "shares": _shares(totals),
        "libraryKernels": sorted(n[:200] for n in library_names),
    }


def check_own_kernel(
    candidate: Candidate, task: Task, cases: Iterable[tuple[str, Case]], libraries: str = "allow"
) -> dict[str, Any]:
    """The judge's verdict on the candidate's and the reference's traces, one per case.
    `cases` yields (configuration name, case) one at a time, so a problem's gigabytes of
    inputs are alive for one configuration at a time. A backward task's forward pass runs
    before the profiler starts (task.staged)."""
    rewrite = not candidate.kernels
    grad = torch.enable_grad if task.backward else torch.no_grad
    try:
        _kernel_stats(lambda: torch.ones(1, device="cuda").add_(1))
    except Exception as err:  # no profiler on this machine: say so, don't fail
        return {
            "ok": True,
            "detail": f"profiler unavailable ({type(err).__name__}: {err}); own-kernel check skipped",
            "ownKernels": [],
            "shares": None,
            "libraryKernels": [],
        }
    traces, work = [], {}
    for name, case in cases:
        with grad():
            try:
                staged = task.staged_candidate(candidate, case.clone())
                scoped: Any = getattr(candidate, "scoped", None)
                cand = _kernel_times_us(staged if scoped is None else (lambda: scoped(staged)))
                # the elements each kernel's operator was given, on a call of its own (shapes
                # cost the profiler time: the times above are measured without them)
                again = task.staged_candidate(candidate, case.clone())
                elements = work_rule.profile_elements(again if scoped is None else (lambda: scoped(again)))
            except Exception as err:  # it passed unprofiled: failing profiled is a tell
                return {
                    "ok": False,
                    "detail": f"it raised under the profiler on configuration {name} "
                    f"({type(err).__name__}: {str(err)[:200]}), after passing without it",
                    "ownKernels": [],
                    "shares": None,
                    "libraryKernels": [],
                }
            ref = _kernel_times_us(task.staged(task.reference_entry(), case.clone()))
            work[name] = (elements, work_rule.activation_elements(case.args))
        traces.append((name, cand, ref))
        del case
    if not any(cand for _, cand, _ in traces):
        return {
            "ok": True,
            "detail": "the profiler saw no kernels at all; own-kernel check inconclusive",
            "ownKernels": [],
            "shares": None,
            "libraryKernels": [],
        }
    if rewrite:
        return rewrite_verdict(traces)
    return judge(traces, own_kernels(candidate), libraries, work)


def rewrite_verdict(traces: list[tuple[str, dict[str, float], dict[str, float]]]) -> dict[str, Any]:
    """A candidate with no kernel of its own: a PyTorch rewrite, not a fallback (nothing of its
    own was claimed). Its shares say whose kernels do the work; the task decides whether a
    rewrite may compete (verdict.py)."""
    totals = {"own": 0.0, "library": 0.0, "torch": 0.0, "harmless": 0.0}
    library_names, same = set(), []
    for config, cand, ref in traces:
        for name, us in cand.items():
            totals[classify(name, ())] += float(us)
        library_names |= {n for n in cand if classify(n, ()) == "library"}
        ref_work = {n for n in ref if not HARMLESS.search(n)}
        same.append(bool(ref_work) and ref_work == {n for n in cand if not HARMLESS.search(n)})
    shares = _shares(totals)
    detail = f"a PyTorch rewrite: no kernel of its own; {shares['torch']:.0%} of its GPU time in PyTorch kernels" + (
        f", {shares['library']:.0%} in library kernels ({_short(library_names)})" if library_names else ""
    )
    if all(same):
        detail += "; it launches exactly the reference's kernels"
    return {
        "ok": True,
        "rewrite": True,
        "detail": detail,
        "ownKernels": [],
        "shares": shares,
        "libraryKernels": sorted(n[:200] for n in library_names),
    }
