"""Verification: does the candidate compute the reference's function on any valid input?

For each configuration: several trials with fresh inputs and fresh weights (the declared
init and signed, mixed-scale inputs), candidate and reference on separate clones, the
candidate run both before and after the reference, outputs NaN-poisoned, inputs checked
bit for bit afterwards, timers and threads checked after every call; on the first trial a
repeat run (races) and a same-buffer refill (result caching). Failures are classified into
the named hack classes of docs/DESIGN.md.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any, Callable, Sequence, cast

import torch

from . import guards
from .candidates.load import LaunchError
from .compare import bitwise_equal, compare
from .diagnose import classify, explain, probe_side_stream
from .env import dtype_name
from .phases import Phases
from .record import Record, Result
from .reject import Crash, Reject
from .schemas import consts
from .tasks.base import Case, Config, Outputs, Task

if TYPE_CHECKING:
    from .candidates.load import Candidate
    from .outputs import Dump

# a run's first failure: (reason, the Reject raised or the failing output's Result, where, the init)
Failure = tuple[str, Any, Config, str | None]

# reason → hack class (docs/DESIGN.md), from the contract (src/shared/contract/reasons.ts)
HACKS = consts("hack-classes.schema.json")


def _sync(device):
    if device.type == "cuda":
        guards.synchronize()


def poison_allocator(sizes: Sequence[int], device: torch.device) -> None:
    """Leave NaN in the blocks the caching allocator will hand out next: blocks of exactly
    the output sizes, so a candidate's empty() of an output gets one of them."""
    if device.type != "cuda":
        return
    blocks = [torch.full((max(1, n // 4),), float("nan"), device=device) for n in sizes for _ in range(2)]
    del blocks


def refill_case(
    task: Task,
    config: Config,
    case: Case,
    seed: int,
    init: str | None,
    observable: bool = False,
    only: Callable[[str], bool] | None = None,
) -> None:
    """Write new values into the case's tensors in place (same pointers). Through .data by
    default, so not even the tensor's version counter shows the change (a cache keyed by
    pointer and version must miss it); observable=True bumps versions (timing). only: which
    tensors, by their name in Case.tensors() (every one by default)."""
    fresh = task.make_case(config, seed, case.args[0].device if case.args else "cpu", init=init)
    with torch.no_grad():
        for (name, dst), (_, src) in zip(case.tensors(), fresh.tensors()):
            if only is None or only(name):
                (dst if observable else dst.data).copy_(src)


def input_kinds(case: Case) -> dict[str, Callable[[str], bool]]:
    """The kinds of input a refill writes, by Case.tensors()'s names: a module's case has
    activations (its arguments) and parameters (the module's weights and buffers); a function
    task's arguments are its inputs."""
    if case.module is None:
        return {"inputs": lambda name: True}
    return {"activations": lambda name: name.startswith("arg"), "parameters": lambda name: not name.startswith("arg")}


def stale_message(refilled: Sequence[str], ignored: Sequence[str], constructed: bool) -> str:
    """What went stale, in words: which inputs got new values in the same buffers, and which
    of them the output ignored."""
    head = f"after new values were written into the same buffers ({' and '.join(refilled)}) the output was stale"
    followed = [k for k in refilled if k not in ignored]
    if list(ignored) == ["parameters"]:
        where = (
            "computed from a copy made at construction"
            if constructed
            else "computed from a copy of them, or a result, kept from an earlier call"
        )
        return f"{head}: its output ignores new weights ({where}); it follows new {' and '.join(followed)}"
    if not ignored:
        return f"{head}: each kind alone is followed, not both together: results cached by pointer or by value"
    tail = f"; it follows new {' and '.join(followed)}" if followed else ""
    return f"{head}: its output ignores new {' and new '.join(ignored)}: results cached by pointer or by value{tail}"


def trial_seed(seed: int, config: Config, trial: int) -> int:
    """The inputs' seed of one trial: the judge (judge.py) regenerates them from it."""
    return (seed * 1000003 + trial * 7919 + sum(map(ord, config.name)) * 31) & 0x7FFFFFFF


REFILL_SEED = 0xCAC4E  # the same-buffer refill's new values: trial_seed(...) ^ REFILL_SEED


class Verifier:
    def __init__(
        self,
        task: Task,
        candidate: Candidate | None,
        device: torch.device | str,
        seed: int,
        trials: int = 2,
        log: Callable[[str], object] = print,
        dump: Dump | None = None,
    ) -> None:
        # candidate None: the judge's verifier, which runs the reference only
        self.task, self.cand, self.device, self.seed = task, cast("Candidate", candidate), torch.device(device), seed
        self.trials = trials
        self.escaped_work: str | None = None  # what the side-stream probe found (diagnose.py)
        # outputs.Dump: the outputs of each passing trial, for the judge's own comparison
        self.dump = dump
        self.config_index = {c.name: i for i, c in enumerate(task.configs)}
        self.checks, self.warnings, self.configs = [], [], []
        self.ref_entry = task.reference_entry()
        self.sizes = {}
        self.last_case = None  # see run_config
        self.log = log
        # where the seconds go: making inputs, the reference's calls, the candidate's calls,
        # and the rest ("checks": comparisons, clones, classification), laid down by verify()
        self.phases = Phases()

    def make_case(self, config: Config, seed: int, init: str | None = None) -> Case:
        with self.phases.part("inputs"):
            return self.task.make_case(config, seed, self.device, init=init)

    # --- one call of each side ----------------------------------------------------
    def reference(self, case: Case) -> Outputs:
        with self.phases.part("reference"):
            with torch.no_grad() if not self.task.backward else torch.enable_grad():
                out = self.task.invoke(self.ref_entry, case)
            _sync(self.device)
        return out

    def candidate(self, case: Case, out_sizes: Sequence[int] = ()) -> Outputs:
        with self.phases.part("candidate"):
            return self._candidate(case, out_sizes)

    def _candidate(self, case, out_sizes=()):
        poison_allocator(out_sizes, self.device)
        threads = guards.thread_count()
        try:
            with torch.no_grad() if not self.task.backward else torch.enable_grad():
                out = self.cand.run(case)
            _sync(self.device)
        except LaunchError as err:
            raise Reject("launch-error", str(err)) from None
        except Reject:
            raise
        except Exception as err:  # a candidate's exception is a verdict
            if "CUDA" in str(err) or "cuda" in type(err).__name__.lower():
                raise Crash(f"{type(err).__name__}: {err}") from None
            raise Reject("crash", f"the candidate raised {type(err).__name__}: {err}") from None
        if getattr(self.cand, "intact", True) is False:
            raise Reject(
                "timer-patching",
                "the candidate switched off the harness's record of the exceptions its code "
                "handles (sys.monitoring / sys.settrace)",
            )
        changed = guards.tampered()
        if changed:
            raise Reject("timer-patching", f"the candidate replaced {', '.join(changed)}")
        after = guards.thread_count()
        if after[0] > threads[0] or after[1] > threads[1]:
            raise Reject("background-thread", f"threads before/after the call: {threads} → {after} (Python, native)")
        return out

    # --- checks -------------------------------------------------------------------
    def check_outputs(
        self, outs: Sequence[Any], refs: Sequence[torch.Tensor], config: Config, trial: int
    ) -> list[Result]:
        """The comparison of each output with the reference's (the results, one per output),
        once every output is a real tensor of the reference's shape, dtype and device."""
        self.check_kinds(outs, refs)
        results = []
        for i, (o, r) in enumerate(zip(outs, refs)):
            res = compare(o, r, self.task.tolerance(dtype_name(r.dtype)))
            res.update(
                {
                    "config": config.name,
                    "trial": trial,
                    "output": f"output {i}",
                    "outputIndex": i,
                    "dtype": dtype_name(r.dtype),
                }
            )
            results.append(res)
        return results

    def check_kinds(self, outs: Sequence[Any], refs: Sequence[torch.Tensor]) -> None:
        """Every output a plain tensor with storage, on the device, of the reference's shape
        (or one its format accepts) and dtype: else a Reject."""
        if len(outs) != len(refs):
            raise Reject("wrong-shape", f"{len(outs)} outputs, the reference has {len(refs)}")
        for i, (o, r) in enumerate(zip(outs, refs)):
            if type(o) is not torch.Tensor:
                raise Reject(
                    "fake-tensor", f"output {i} is a {type(o).__module__}.{type(o).__name__}, not a plain torch.Tensor"
                )
            try:
                # untyped_storage: torch >= 2.0, hence the hasattr
                untyped = "untyped_storage"
                storage = getattr(o, untyped)() if hasattr(o, untyped) else o.storage()
                if o.numel() and storage.data_ptr() == 0:
                    raise Reject("fake-tensor", f"output {i} has no storage")
            except (RuntimeError, NotImplementedError):
                raise Reject("fake-tensor", f"output {i} has no real storage") from None
            if o.device.type != self.device.type:
                raise Reject("wrong-shape", f"output {i} is on {o.device}, expected {self.device.type}")
            if tuple(o.shape) != tuple(r.shape):
                if not self.format_accepts_shape(o, r):
                    raise Reject("wrong-shape", shape_message(i, tuple(o.shape), tuple(r.shape)))
                self.warn_once(
                    f"output {i} has shape {tuple(o.shape)} where the reference returns {tuple(r.shape)}: "
                    f"accepted, as {self.task.format}'s own harness compares one value with one value; "
                    f"return out.reshape({tuple(r.shape)}) to match it exactly"
                )
            if o.dtype != r.dtype:
                raise Reject("wrong-dtype", f"output {i} is {dtype_name(o.dtype)}, expected {dtype_name(r.dtype)}")

    def format_accepts_shape(self, out: torch.Tensor, ref: torch.Tensor) -> bool:
        """A public format's own rule: robust-kbench's harness accepts a one-element loss where
        its reference returns a scalar (and the reverse); every other shape must match."""
        return self.task.format in SCALAR_AS_ONE_ELEMENT and out.numel() == 1 and ref.numel() == 1

    def warn_once(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)

    def check_unchanged(self, pristine: Case, seen: Case) -> None:
        for (name, a), (_, b) in zip(pristine.tensors(), seen.tensors()):
            if not bitwise_equal(a, b):
                raise Reject("input-mutation", f"the candidate changed its input {name}")

    # --- the protocol -------------------------------------------------------------
    def check_task(self, config: Config) -> None:
        """Refuse a degenerate task: an output that zeros or a constant would match."""
        case = self.make_case(config, self.seed ^ 0x5EED)
        refs = self.reference(case.clone())
        for i, r in enumerate(refs):
            if not r.is_floating_point():
                continue
            if not bool(guards.isfinite(r).all()):
                raise Reject(
                    "degenerate-task",
                    f"the reference's output {i} has NaN/Inf on configuration {config.name}: fix the task's inputs",
                )
            tol = self.task.tolerance(dtype_name(r.dtype))
            fakes = [("zeros", torch.zeros_like(r))]
            if r.numel() > 1:  # a one-element output is always its own mean
                fakes.append(("a constant", torch.full_like(r, float(r.double().mean()))))
            for label, fake in fakes:
                if compare(fake, r, tol)["ok"]:
                    raise Reject(
                        "degenerate-task",
                        f"{label} would pass output {i} on configuration {config.name} within the task's own "
                        "tolerance: "
                        "the task cannot tell a working kernel from one that does nothing (use larger-magnitude "
                        "outputs or tighter tolerances)",
                    )
        other = self.reference(self.make_case(config, self.seed ^ 0xD1FF))
        if all(bitwise_equal(a, b) for a, b in zip(refs, other)):
            raise Reject(
                "degenerate-task",
                f"the reference's output does not depend on its inputs (two seeds, identical outputs) on {config.name}",
            )
        self.checks.append(
            {
                "name": "task-not-degenerate",
                "ok": True,
                "detail": f"zeros and constants fail on {config.name}; output depends on inputs",
            }
        )

    def within_truth(self, outs: Sequence[torch.Tensor], case: Case, config: Config, where: str) -> bool:
        """A float32 reference is itself off by rounding, and on long reductions over signed,
        mixed-scale inputs by more than the tolerance: a kernel more accurate than the
        reference must not be turned away for disagreeing with it. When the candidate is
        within the same tolerance of the reference computed in float64, it passes, with a
        warning that says so. Never more lenient than the truth."""
        ok = within_float64(self.task, outs, case, self.reference)
        if ok:
            self.warnings.append(
                f"{config.name}, {where}: outside the tolerance of the float32 reference but within it of the "
                "reference "
                "computed in float64: the reference's own rounding error is the larger one here"
            )
        return ok

    def output_sizes(self, config: Config, case: Case) -> list[int]:
        if config.name not in self.sizes:
            self.sizes[config.name] = [r.numel() * r.element_size() for r in self.reference(case.clone())]
        return self.sizes[config.name]

    def init_of(self, case: Case) -> str | None:
        return case.meta.get("init")

    def keep(self, config: Config, trial: int | str, outs: Sequence[torch.Tensor]) -> None:
        """Hands a passing trial's outputs to the dump (the judge compares them again)."""
        if self.dump is not None:
            with self.phases.part("dump"):
                self.dump.write(self.config_index[config.name], trial, outs)

    def run_trial(self, config: Config, trial: int, init: str | None) -> tuple[list[Result], Result | None, Case, bool]:
        seed = trial_seed(self.seed, config, trial)
        case = self.make_case(config, seed, init=init)
        case.meta["init"] = init
        cand_case = case.clone()
        ref_first = trial % 2 == 1
        if ref_first:  # reference output stays alive while the candidate runs
            refs = self.reference(case.clone())
            outs = self.candidate(cand_case, [r.numel() * r.element_size() for r in refs])
        else:
            outs = self.candidate(cand_case, self.output_sizes(config, case))
            refs = self.reference(case.clone())
        self.check_unchanged(case, cand_case)
        results = self.check_outputs(outs, refs, config, trial)
        failed = next((r for r in results if not r["ok"]), None)
        del refs
        if failed is not None and self.within_truth(outs, case, config, f"trial {trial}"):
            failed = None
        if failed is None:
            self.keep(config, trial, outs)
        if failed is None and trial == 0:
            self.repeat_checks(config, case, outs, seed)
        del outs
        return results, failed, case, ref_first

    def repeat_checks(self, config: Config, case: Case, first: Outputs, seed: int) -> None:
        """The first trial's two more runs: the same inputs again (a race), then new values in
        the same buffers (a cached result)."""
        again = self.repeat_run(config, case, first)  # alive through the refill, as always
        self.refill(config, case, seed)
        del again
        self.checks.append(
            {
                "name": f"repeat-and-refill:{config.name}",
                "ok": True,
                "detail": "identical runs agree; new values in the same buffers give new results",
            }
        )

    def repeat_run(self, config: Config, case: Case, first: Outputs) -> Outputs:
        """The candidate again on identical inputs: its outputs, which must agree with the first
        run's (first) within tolerance."""
        again = self.candidate(case.clone())
        for i, (a, b) in enumerate(zip(first, again)):
            res = compare(b, a, self.task.tolerance(dtype_name(a.dtype)))
            if not res["ok"]:
                res.update({"config": config.name, "trial": 0, "output": f"output {i} (repeat run)", "outputIndex": i})
                raise Reject(
                    "race",
                    f"two runs on identical inputs differ beyond tolerance (max abs {res['maxAbs']}): a race or "
                    "uninitialised read",
                    res,
                )
            if not bitwise_equal(a, b):
                self.warnings.append(
                    f"{config.name}: output {i} differs bitwise between identical runs (within tolerance; atomics?)"
                )
        return again

    def refill(self, config: Config, case: Case, seed: int) -> None:
        """Same buffers, new values: a result cached by pointer (or by a stale copy) shows here.
        The passing outputs go to the dump as the refill's."""
        cand_case = case.clone()
        self.candidate(cand_case)
        with self.phases.part("inputs"):
            refill_case(self.task, config, cand_case, seed ^ REFILL_SEED, self.init_of(case))
        refs = self.reference(cand_case.clone())
        outs = self.candidate(cand_case)
        results = [compare(o, r, self.task.tolerance(dtype_name(r.dtype))) for o, r in zip(outs, refs)]
        del refs
        if not all(r["ok"] for r in results) and self.within_truth(outs, cand_case, config, "the same-buffer refill"):
            results = [{**r, "ok": True} for r in results]
        for i, res in enumerate(results):
            if not res["ok"]:
                # a stale output is not a cache when the candidate's work escaped the caller's
                # stream: its outputs were read before its side stream wrote them (hack 3). The
                # stream check on one more call says which, as for any failure (diagnose.py)
                escaped = probe_side_stream(self, case)
                if escaped is not None:
                    self.escaped_work = f"configuration {config.name}: {escaped}"
                    res.update({"config": config.name, "trial": 0, "outputIndex": i})
                    res["output"] = f"output {i} (new values in the same buffers)"
                    raise Reject(
                        "side-stream",
                        f"on configuration {config.name}, after new values were written into the same buffers, "
                        f"output {i} was wrong when read once the caller's stream had finished: its work ran on a "
                        f"stream the caller's stream never waits for (hack 3). The stream check on one more call: "
                        f"{escaped}",
                        res,
                    )
                refilled, ignored = self.stale_inputs(config, case, seed)
                res.update(
                    {
                        "config": config.name,
                        "trial": 0,
                        "output": f"output {i} (new values in the same buffers)",
                        "outputIndex": i,
                        "stale": {"refilled": refilled, "ignored": ignored},
                    }
                )
                constructed = getattr(self.cand, "entry", True) is None  # a ModelNew, built per case
                raise Reject("result-caching", stale_message(refilled, ignored, constructed), res)
        from .outputs import REFILL

        self.keep(config, REFILL, outs)

    def stale_inputs(self, config: Config, case: Case, seed: int) -> tuple[list[str], list[str]]:
        """After a stale refill: the kinds of input it wrote (input_kinds) and those the output
        ignored, each kind refilled alone into a fresh clone the candidate has run on once.
        Where one kind alone is written, or the candidate fails otherwise here, it is that one
        (or every one) ignored: the refill's own finding."""
        kinds = input_kinds(case)
        refilled = [k for k, test in kinds.items() if any(test(name) for name, _ in case.tensors())]
        if len(refilled) < 2:
            return refilled, refilled
        ignored = []
        try:
            for kind in refilled:
                probe = case.clone()
                self.candidate(probe)
                refill_case(self.task, config, probe, seed ^ REFILL_SEED, self.init_of(case), only=kinds[kind])
                refs = self.reference(probe.clone())
                outs = self.candidate(probe)
                tol = self.task.tolerance
                if not all(compare(o, r, tol(dtype_name(r.dtype)))["ok"] for o, r in zip(outs, refs)):
                    if not self.within_truth(outs, probe, config, f"the same-buffer refill of its {kind}"):
                        ignored.append(kind)
                del probe, refs, outs
        except Exception:  # the refill's finding stands without the detail
            return refilled, refilled
        return refilled, ignored

    def configs_to_run(self, include_heldout: bool, quick: bool = False) -> list[Config]:
        # the configurations --config named run whether held out or not
        configs = [c for c in self.task.configs if include_heldout or self.task.selected or not c.heldout]
        if quick:  # the cascade's cheap gate: the smallest visible configuration only
            configs = [min(self.task.visible_configs() or self.task.configs, key=config_size)]
        return configs

    def plan(self, configs: list[Config]) -> dict[str, list[str | None]]:
        """config name → the init of each trial, in order (None: the declared init)."""
        probe = [a for _, a in self.make_case(configs[0], 1).tensors() if a.is_floating_point()]
        has_float = bool(probe)
        # a common offset 40× the spread exposes a one-pass variance; in bf16/fp16 inputs it
        # would only quantise them, so float32 tasks alone get the trial
        all_fp32 = has_float and all(a.dtype == torch.float32 for a in probe)
        del probe
        plan = {}
        for config in configs:
            inits: list[str | None] = [None] * self.trials
            if has_float and config.init != "signed-mixed":
                inits.append("signed-mixed")
            if all_fp32 and config.init != "offset":
                inits.append("offset")
            plan[config.name] = inits
        return plan

    def run(self, include_heldout: bool, quick: bool = False) -> None:
        """Every configuration's trials in order (the task checked first); raises Reject with the
        verdict on the first failure once every configuration has run (a shape's failure is
        shape-specific only when another passed)."""
        configs = self.configs_to_run(include_heldout, quick)
        self.check_task(configs[0])
        plan = self.plan(configs)
        first_fail, passed_configs, by_config = None, [], {}
        try:
            for config in configs:
                entry, failure = self.run_config(config, plan[config.name], by_config, passed_configs)
                if first_fail is None:
                    first_fail = failure
                if entry["ok"]:
                    passed_configs.append(config.name)
                    if self.dump is not None:
                        self.dump.passed(config.name)
                by_config[config.name] = entry
                self.configs.append(entry)
                self.log(f"config {config.name}: {'ok' if entry['ok'] else entry['reason']}")
        finally:
            self.last_case = None
        self.raise_first_failure(first_fail, passed_configs)

    def run_config(
        self, config: Config, inits: list[str | None], by_config: dict[str, Record], passed_configs: list[str]
    ) -> tuple[Record, Failure | None]:
        """One configuration's trials (one per init, in order) until the first failure: its
        entry in the record and the failure, (reason, what failed, config, init), or None."""
        entry = {
            "name": config.name,
            "heldout": config.heldout,
            "derived": config.derived,
            "ok": True,
            "trials": 0,
            "maxAbs": 0.0,
            "normRel": 0.0,
            "reason": None,
        }
        for trial, init in enumerate(inits):
            try:
                results, failed, case, ref_first = self.run_trial(config, trial, init)
            except Reject as r:
                if r.reason not in FAILS_ON_A_SHAPE:
                    raise
                # it raised or its launch failed here: whether that is the shape's fault
                # shows once the other configurations have run (shape-specific)
                entry.update(ok=False, reason=r.reason)
                return entry, (r.reason, r, config, init)
            except Crash as c:
                if passed_configs:  # the context is gone, but other shapes passed before it
                    raise Reject(
                        "shape-specific",
                        f"right on {', '.join(passed_configs)}, but on configuration "
                        f"{config.name} it crashed ({c}): it only works for the shapes it was shown (hack 10)",
                    ) from None
                raise
            # the trial's inputs stay alive until the next trial's replace them (run()'s
            # variable before: the next trials run with the same memory taken)
            self.last_case = case
            entry["trials"] += 1
            for r in results:
                entry["maxAbs"] = (
                    max(entry["maxAbs"], r["maxAbs"] or 0.0) if r["maxAbs"] is not None else entry["maxAbs"]
                )
                entry["normRel"] = (
                    max(entry["normRel"], r["normRel"] or 0.0) if r["normRel"] is not None else entry["normRel"]
                )
            if failed is None:
                continue
            entry["ok"] = False
            reason = classify(self, config, failed, init, trial, by_config, passed_configs, case, ref_first)
            entry["reason"] = reason
            return entry, (reason, failed, config, init)
        return entry, None

    def raise_first_failure(self, first_fail: Failure | None, passed_configs: list[str]) -> None:
        """The verdict on the run's first failure, raised as a Reject (nothing when none failed)."""
        if first_fail is not None and isinstance(first_fail[1], Reject):
            reason, raised, config, _ = first_fail
            if passed_configs:
                raise Reject(
                    "shape-specific",
                    f"right on {', '.join(passed_configs)}, but on configuration {config.name} "
                    f"{raised.message}: it only works for the shapes it was shown (hack 10)",
                )
            raise raised
        if first_fail is not None:
            reason, failed, config, init = first_fail
            # shape-specific needs the whole picture: another configuration passed
            if reason == "mismatch" and passed_configs:
                reason = "shape-specific"
            message = explain(self.task, reason, failed, config, init, passed_configs)
            if reason == "side-stream" and self.escaped_work:
                message = f"{message}. The stream check on one more call: {self.escaped_work}"
            raise Reject(reason, message, failed)


def within_float64(
    task: Task, outs: Sequence[torch.Tensor], case: Case, run_reference: Callable[[Case], Outputs]
) -> bool:
    """Whether every output is within the task's tolerance of the reference computed in
    float64 on the same case (verification and bench's check after timing: one rule)."""
    truth = reference_float64(task, case, run_reference)
    if truth is None:
        return False
    return len(truth) == len(outs) and all(
        compare(o, t, task.tolerance(dtype_name(o.dtype)))["ok"] for o, t in zip(outs, truth)
    )


def reference_float64(task: Task, case: Case, run_reference: Callable[[Case], Outputs]) -> Outputs | None:
    """The reference's outputs on the case's inputs and parameters in float64, or None where
    the task is not float32 or its reference cannot run in float64 (or runs out of memory)."""
    tensors = [t for _, t in case.tensors() if t.is_floating_point()]
    if not tensors or any(t.dtype != torch.float32 for t in tensors):
        return None
    wide = case.clone()
    try:
        wide.args = [a.double() if isinstance(a, torch.Tensor) and a.dtype == torch.float32 else a for a in wide.args]
        if wide.module is not None:
            wide.module = wide.module.double()
        return run_reference(wide)
    except Exception:  # no float64 reference: the float32 verdict stands
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        return None
    finally:
        del wide


SCALAR_AS_ONE_ELEMENT = ("robust-kbench",)
# failures of one configuration that leave the process able to try the others
FAILS_ON_A_SHAPE = ("crash", "launch-error")


def shape_message(i: int, got: tuple[int, ...], expected: tuple[int, ...]) -> str:
    """What to return instead: the reference's exact shape, never a broadcast of it."""
    base = f"output {i} has shape {got}, expected {expected} (no broadcasting)"

    def numel(shape):
        return 1 if not shape else math.prod(shape)

    if expected == () and numel(got) == 1:
        return base + (
            ": the reference returns a 0-dim tensor (a scalar): return out.reshape(()) (C++: out.reshape({})), "
            "not a 1-element tensor"
        )
    if numel(got) == numel(expected):
        return base + (
            f": the values may be right but the shape is not: return out.reshape({expected}) (C++: "
            f"out.view({{{', '.join(map(str, expected))}}}))"
        )
    return base


def config_size(config: Config) -> int | float:
    return sum(v for v in config.dims.values() if isinstance(v, (int, float)) and not isinstance(v, bool))


def verify(
    task: Task,
    candidate: Candidate,
    device: str,
    seed: int,
    include_heldout: bool,
    trials: int = 2,
    log: Callable[[str], object] = print,
    quick: bool = False,
    dump: Dump | None = None,
) -> tuple[Record, Verifier]:
    """Returns the fields of a VerifyRecord (status, reason, message, mismatch, configs, …).
    dump: an outputs.Dump that keeps each passing trial's outputs for the judge."""
    v = Verifier(task, candidate, device, seed, trials=trials, log=log, dump=dump)
    start = time.perf_counter()
    out = {"ok": False, "status": "rejected", "reason": None, "hack": None, "message": "", "mismatch": None}
    try:
        v.run(include_heldout, quick=quick)
        out.update(
            ok=True,
            status="passed",
            message=f"passed {sum(c['trials'] for c in v.configs)} trials on {len(v.configs)} configurations",
        )
    except Reject as r:
        out.update(reason=r.reason, hack=HACKS.get(r.reason), message=r.message, mismatch=r.mismatch)
    except Crash as c:
        out.update(status="crash", reason="crash", message=str(c))
    note = module_mode(candidate)
    if note and not out["ok"]:
        out["message"] += f"; {note}"  # what changed, in the user's words (a module switched to eval)
    elif note:
        v.warnings.append(note)
    v.phases.lap("checks")
    out.update(
        configs=v.configs,
        checks=v.checks,
        warnings=v.warnings,
        phases=v.phases.seconds,
        seconds=time.perf_counter() - start,
    )
    return out, v


def module_mode(candidate: Candidate) -> str | None:
    """A KernelBench ModelNew whose layers run in another mode than the reference's Model."""
    models = getattr(candidate, "last_models", None)
    if not models:
        return None
    from .tasks.kernelbench import mode_note

    return mode_note(*models)
