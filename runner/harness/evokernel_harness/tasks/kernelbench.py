"""KernelBench problems (Model, get_inputs, get_init_inputs), run unchanged.

Such a problem declares one shape and one input distribution. We derive more: other values
of its module-level size constants (odd ones included) and signed, mixed-scale inputs of the
same shapes and dtypes, so a candidate that is only right on what it was shown is caught.
"""

import ast
import os
import types
from typing import Any

import torch

from ..inputs import generator, on_device, perturbed_like
from ..pyload import load_module
from .base import Case, Config, Device, Entry, Outputs, Task, TaskError, as_tuple
from .native import called_names

# constants below this are axes, kernel sizes, strides, groups: never varied
MIN_VARIED = 16


def odd_near(value: int, factor: float) -> int:
    v = max(MIN_VARIED + 1, int(round(value * factor)))
    if v % 2 == 0:
        v += 1
    while v % 8 == 0 or v % 32 == 0:
        v += 2
    return v


class KernelBenchTask(Task):
    format = "kernelbench"
    own_kernels = "require"  # the public format's leaderboard rule

    def own_kernels_rule(self) -> str:
        return "KernelBench's rule: a solution is a ModelNew that runs CUDA of its own"

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = os.path.abspath(path)
        self.name = os.path.splitext(os.path.basename(path))[0]
        self.module = load_module(self.path, f"evk_kb_{abs(hash(self.path))}")
        for attr in ("Model", "get_inputs", "get_init_inputs"):
            if not hasattr(self.module, attr):
                raise TaskError(f"{self.path}: a KernelBench problem must define {attr}")
        self.constants = {
            k: v
            for k, v in vars(self.module).items()
            if not k.startswith("_") and isinstance(v, int) and not isinstance(v, bool)
        }
        self._variants = {}
        varied = {k: v for k, v in self.constants.items() if v >= MIN_VARIED}
        self.configs.append(Config(name="declared", dims=dict(self.constants)))
        self.configs.append(
            Config(name="declared-signed-mixed", dims=dict(self.constants), init="signed-mixed", derived=True)
        )
        if varied:
            for name, factor, heldout in (
                ("odd-sizes", 0.75, False),
                ("small-odd-sizes", 0.3, False),
                ("heldout-odd-sizes", 0.55, True),
            ):
                dims = {**self.constants, **{k: odd_near(v, factor) for k, v in varied.items()}}
                self.configs.append(Config(name=name, dims=dims, heldout=heldout, derived=True))
        else:
            self.notes.append("no size constants of 16 or more to vary: only the declared shape is tested")

    def _module_for(self, config):
        """The problem re-run with this configuration's constants, so that values computed
        from them at import (bias_shape = (out_features,)) follow."""
        if config.dims == self.constants:
            return self.module
        if config.name not in self._variants:
            with open(self.path) as f:
                tree = ast.parse(f.read(), filename=self.path)
            for node in tree.body:
                if (
                    isinstance(node, ast.Assign)
                    and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name)
                    and node.targets[0].id in config.dims
                    and isinstance(node.value, ast.Constant)
                ):
                    node.value = ast.Constant(config.dims[node.targets[0].id])
            module = types.ModuleType(f"evk_kb_{config.name.replace('-', '_')}_{abs(hash(self.path))}")
            module.__file__ = self.path
            exec(compile(ast.fix_missing_locations(tree), self.path, "exec"), module.__dict__)  # the task's own code
            self._variants[config.name] = module
        return self._variants[config.name]

    def prune(self, device: Device) -> None:
        """Drop derived configurations the reference itself cannot run (and say so)."""
        kept = []
        for config in self.configs:
            if not config.derived:
                kept.append(config)
                continue
            try:
                case = self.make_case(config, 1, device)
                with torch.no_grad():
                    outs = self.invoke(None, case)
                if not all(bool(torch.isfinite(o).all()) for o in outs if o.is_floating_point()):
                    raise ValueError("non-finite reference output")
                kept.append(config)
            except Exception as err:  # the reference's own failure: drop, with the reason
                self.notes.append(
                    f"derived configuration {config.name} dropped: the reference fails on it ({type(err).__name__}: "
                    f"{str(err)[:160]})"
                )
        self.configs = kept

    def make_case(self, config: Config, seed: int, device: Device, init: str | None = None) -> Case:
        module = self._module_for(config)
        torch.manual_seed(seed)
        with on_device(device):
            inputs = list(module.get_inputs())
            init_inputs = list(module.get_init_inputs())
            torch.manual_seed(seed + 1)
            model = module.Model(*init_inputs)
        gen = generator(seed + 2, device)
        args = []
        mode = init or config.init
        for x in inputs:
            if isinstance(x, torch.Tensor):
                x = x.to(device)
                x = perturbed_like(x, mode, gen)
            args.append(x)
        model = self.run_mode(model.to(device))
        return Case(args=args, module=model, meta={"init_inputs": init_inputs, "seed": seed})

    def run_mode(self, model: torch.nn.Module) -> torch.nn.Module:
        """The Model as KernelBench runs it: as constructed, in training mode (BatchNorm
        normalises with the batch's statistics, not running ones). Dropout layers are the one
        exception, on both sides: a random mask cannot be compared, so they run as the identity."""
        model.train()
        if identity_dropout(model):
            note = (
                "dropout layers run as the identity (eval mode) in the reference and the candidate: "
                "a random mask cannot be compared"
            )
            if note not in self.notes:
                self.notes.append(note)
        return model

    def reference_entry(self) -> None:
        return None  # the reference is the case's own Model

    def meta_entry(self, case: Case) -> Entry:
        module, args = case.module, case.clone().args
        return lambda *_: module(*args)

    def invoke(self, entry: Any, case: Case) -> Outputs:
        if entry is None:
            return as_tuple(case.module(*case.args))
        params = [p for _, p in case.module.named_parameters()]
        tensors = [a for a in case.args if isinstance(a, torch.Tensor)]
        scalars = [a for a in case.args if not isinstance(a, torch.Tensor)]
        return as_tuple(entry(*tensors, *params, *scalars))

    def instantiate(self, module_cls: type, case: Case) -> torch.nn.Module:
        """A ModelNew built like the Model (same init inputs, seed) with the case's weights."""
        torch.manual_seed(case.meta["seed"] + 1)
        device = next((a.device for a in case.args if isinstance(a, torch.Tensor)), torch.device("cpu"))
        with on_device(device):
            model = module_cls(*case.meta["init_inputs"])
        model = model.to(device)
        identity_dropout(model)  # as the reference's (run_mode); every other mode is the candidate's own
        ours = list(model.named_parameters())
        theirs = list(case.module.parameters())
        if len(ours) == len(theirs) and all(a.shape == b.shape for (_, a), b in zip(ours, theirs)):
            # share the case's parameter tensors: new values written into them reach the
            # candidate too (the same-buffers check), at no copy per call
            for (name, _), param in zip(ours, theirs):
                owner = model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else model
                setattr(owner, name.rsplit(".", 1)[-1], param)
        return model

    def reference_ops(self) -> set[str]:
        return called_names(self.path)


def identity_dropout(model: torch.nn.Module) -> bool:
    """Dropout layers (with p > 0) switched to eval: whether there were any."""
    found = False
    for m in model.modules():
        if isinstance(m, torch.nn.modules.dropout._DropoutNd):
            m.eval()
            found = found or m.p > 0
    return found


def mode_note(candidate_model: torch.nn.Module | None, reference_model: torch.nn.Module | None) -> str | None:
    """'its BatchNorm2d is in eval mode (running statistics) where the reference's Model is in
    training mode (batch statistics)', or None when the modes agree (dropout aside)."""
    if candidate_model is None or reference_model is None:
        return None
    want = {
        type(m).__name__: m.training
        for m in reference_model.modules()
        if not isinstance(m, torch.nn.modules.dropout._DropoutNd)
    }
    off = sorted(
        {
            type(m).__name__
            for m in candidate_model.modules()
            if not isinstance(m, torch.nn.modules.dropout._DropoutNd)
            and type(m).__name__ in want
            and m.training != want[type(m).__name__]
        }
    )
    if not off:
        return None
    train = want[off[0]]
    stats = " (running statistics instead of the batch's)" if train and any("Norm" in n for n in off) else ""
    return (
        f"its {', '.join(off)} {'is' if len(off) == 1 else 'are'} in {'eval' if train else 'training'} mode{stats} "
        f"where the reference's Model is in {'training' if train else 'eval'} mode"
    )
