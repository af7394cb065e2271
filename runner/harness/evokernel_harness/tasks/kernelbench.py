"""KernelBench problems (Model, get_inputs, get_init_inputs), run unchanged.

Such a problem declares one shape and one input distribution. We derive more: other values
of its module-level size constants (odd ones included) and signed, mixed-scale inputs of the
same shapes and dtypes, so a candidate that is only right on what it was shown is caught.
"""

import inspect
import os

import torch

from ..inputs import generator, signed_mixed_like
from ..pyload import load_module
from .base import Case, Config, Task, TaskError, as_tuple
from .native import called_names

# constants below this are axes, kernel sizes, strides, groups: never varied
MIN_VARIED = 16


def odd_near(value, factor):
    v = max(MIN_VARIED + 1, int(round(value * factor)))
    if v % 2 == 0:
        v += 1
    while v % 8 == 0 or v % 32 == 0:
        v += 2
    return v


class KernelBenchTask(Task):
    format = "kernelbench"

    def __init__(self, path):
        super().__init__()
        self.path = os.path.abspath(path)
        self.name = os.path.splitext(os.path.basename(path))[0]
        self.module = load_module(self.path, f"evk_kb_{abs(hash(self.path))}")
        for attr in ("Model", "get_inputs", "get_init_inputs"):
            if not hasattr(self.module, attr):
                raise TaskError(f"{self.path}: a KernelBench problem must define {attr}")
        self.constants = {
            k: v for k, v in vars(self.module).items()
            if not k.startswith("_") and isinstance(v, int) and not isinstance(v, bool)
        }
        varied = {k: v for k, v in self.constants.items() if v >= MIN_VARIED}
        self.configs.append(Config(name="declared", dims=dict(self.constants)))
        self.configs.append(Config(name="declared-signed-mixed", dims=dict(self.constants), init="signed-mixed", derived=True))
        if varied:
            for name, factor, heldout in (("odd-sizes", 0.75, False), ("small-odd-sizes", 0.3, False), ("heldout-odd-sizes", 0.55, True)):
                dims = {**self.constants, **{k: odd_near(v, factor) for k, v in varied.items()}}
                self.configs.append(Config(name=name, dims=dims, heldout=heldout, derived=True))
        else:
            self.notes.append("no size constants of 16 or more to vary: only the declared shape is tested")

    def _with_constants(self, config, fn):
        saved = {k: getattr(self.module, k) for k in config.dims}
        try:
            for k, v in config.dims.items():
                setattr(self.module, k, v)
            return fn()
        finally:
            for k, v in saved.items():
                setattr(self.module, k, v)

    def make_case(self, config, seed, device, init=None):
        def build():
            torch.manual_seed(seed)
            inputs = list(self.module.get_inputs())
            init_inputs = list(self.module.get_init_inputs())
            torch.manual_seed(seed + 1)
            model = self.module.Model(*init_inputs)
            return inputs, init_inputs, model

        inputs, init_inputs, model = self._with_constants(config, build)
        gen = generator(seed + 2, device)
        args = []
        mode = init or config.init
        for x in inputs:
            if isinstance(x, torch.Tensor):
                x = x.to(device)
                if mode == "signed-mixed" and x.is_floating_point():
                    x = signed_mixed_like(x, gen)
            args.append(x)
        model = model.to(device).eval()
        return Case(args=args, module=model, meta={"init_inputs": init_inputs, "seed": seed})

    def reference_entry(self):
        return None  # the reference is the case's own Model

    def meta_entry(self, case):
        module, args = case.module, case.clone().args
        return lambda *_: module(*args)

    def invoke(self, entry, case):
        if entry is None:
            return as_tuple(case.module(*case.args))
        params = [p for _, p in case.module.named_parameters()]
        tensors = [a for a in case.args if isinstance(a, torch.Tensor)]
        scalars = [a for a in case.args if not isinstance(a, torch.Tensor)]
        return as_tuple(entry(*tensors, *params, *scalars))

    def instantiate(self, module_cls, case):
        """A ModelNew built like the Model (same init inputs, seed) with the case's weights."""
        torch.manual_seed(case.meta["seed"] + 1)
        model = module_cls(*case.meta["init_inputs"])
        device = next((a.device for a in case.args if isinstance(a, torch.Tensor)), torch.device("cpu"))
        model = model.to(device)
        ours = list(model.parameters())
        theirs = list(case.module.parameters())
        if len(ours) == len(theirs) and all(a.shape == b.shape for a, b in zip(ours, theirs)):
            with torch.no_grad():
                for a, b in zip(ours, theirs):
                    a.copy_(b)
        return model

    def reference_ops(self):
        return called_names(self.path)

    def source(self):
        return inspect.getsource(self.module)
