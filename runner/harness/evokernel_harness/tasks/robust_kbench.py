"""robust-kbench task folders (func_forward.py + config_forward.json, and backward files).

Forward: the candidate's `forward` is passed as `fn` to the task's Model, exactly as
robust-kbench does. Backward: the candidate's `backward` becomes
`AutogradFunction.backward_fn`, and every parameter and input gradient is compared.
"""

import json
import os
from typing import Any, Callable

import torch

from ..inputs import generator, on_device, perturbed_like
from ..pyload import load_module
from .base import Case, Config, Device, Outputs, Task, TaskError, as_tuple
from .native import called_names

GROUPS = (
    ("single_input_configs", "single_init_configs", "single_shared_configs"),
    ("multi_input_configs", "multi_init_configs", "multi_shared_configs"),
)


def config_name(settings: dict[str, Any]) -> str:
    return "_".join(f"{k}_{v}" for k, v in settings.items()).replace(" ", "").replace(".", "_") or "default"


class RobustKBenchTask(Task):
    format = "robust-kbench"
    own_kernels = "require"  # the public format's leaderboard rule

    def own_kernels_rule(self) -> str:
        return "robust-kbench's rule: a solution is a CUDA kernel of its own"

    def __init__(self, folder: str, backward: bool = False) -> None:
        super().__init__()
        self.path = os.path.abspath(folder)
        self.backward = backward
        self._grad_names = None  # backward: the gradients the reference produces (by name)
        self.entry = "backward" if backward else "forward"
        direction = "backward" if backward else "forward"
        self.name = os.path.basename(self.path) + ("-backward" if backward else "")
        func_path = os.path.join(self.path, f"func_{direction}.py")
        config_path = os.path.join(self.path, f"config_{direction}.json")
        if not os.path.isfile(func_path):
            raise TaskError(f"{self.path}: missing func_{direction}.py")
        self.func_path = func_path
        self.module = load_module(func_path, f"evk_rkb_{direction}_{abs(hash(self.path))}")
        for attr in ("forward_fn", "Model", "get_inputs"):
            if not hasattr(self.module, attr):
                raise TaskError(f"{func_path}: must define {attr}")
        if backward:
            if not hasattr(self.module, "AutogradFunction"):
                raise TaskError(f"{func_path}: a backward task must define AutogradFunction")
            self.autograd = self.module.AutogradFunction
            self.default_backward = getattr(self.autograd, "backward_fn", None)
        settings = self._read_configs(config_path)
        for i, (inp, init) in enumerate(settings):
            name = config_name({**init, **inp})
            self.configs.append(Config(name=name, dims={**init, **inp}, extra={"input": inp, "init": init}))
        if not self.configs:
            raise TaskError(f"{config_path}: no configurations")
        first = self.configs[0]
        self.configs.append(
            Config(
                name=first.name + "-signed-mixed",
                dims=dict(first.dims),
                init="signed-mixed",
                derived=True,
                extra=first.extra,
            )
        )

    def _read_configs(self, path):
        if not os.path.isfile(path):
            return [({}, {})]
        with open(path) as f:
            raw = json.load(f)
        seen, out = set(), []
        for inputs_key, inits_key, shared_key in GROUPS:
            inputs, inits, shared = raw.get(inputs_key), raw.get(inits_key), raw.get(shared_key) or [{}]
            if not inputs and not inits:
                continue
            for init in inits or [{}]:
                for inp in inputs or [{}]:
                    for sh in shared:
                        pair = ({**inp, **sh}, {**init, **sh})
                        key = json.dumps(pair, sort_keys=True)
                        if key not in seen:
                            seen.add(key)
                            out.append(pair)
        return out

    def make_case(self, config: Config, seed: int, device: Device, init: str | None = None) -> Case:
        torch.manual_seed(seed)
        with on_device(device):
            inputs = list(self.module.get_inputs(**config.extra.get("input", {})))
            torch.manual_seed(seed + 1)
            model = self.module.Model(**config.extra.get("init", {})).to(device)
        gen = generator(seed + 2, device)
        args, wants = [], []
        for x in inputs:
            if isinstance(x, torch.Tensor):
                wants.append(bool(x.requires_grad))
                x = x.detach().to(device)
                x = perturbed_like(x, init or config.init, gen)
            else:
                wants.append(False)
            args.append(x)
        meta = {"wants_grad": wants}
        if self.backward:
            with torch.no_grad():
                out = model(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args], fn=self.module.forward_fn)
            args.append(torch.randn(out.shape, generator=gen, device=device, dtype=torch.float32).to(out.dtype))
        return Case(args=args, module=model, meta=meta)

    def reference_entry(self) -> Any:
        return self.default_backward if self.backward else self.module.forward_fn

    def invoke(self, entry: Any, case: Case) -> Outputs:
        if not self.backward:
            return as_tuple(case.module(*case.args, fn=entry))
        return self.staged(entry, case)()

    def staged(self, entry: Any, case: Case) -> Callable[[], Any]:
        """Backward: run the forward pass now (the task's own forward_fn, which saves the
        tensors for backward) and return the call that runs only the backward pass, so a
        profiler around it sees the backward kernels alone."""
        if not self.backward:
            return super().staged(entry, case)
        if entry is not self.default_backward and self._grad_names is None:
            self.staged(self.default_backward, case.clone())()  # which gradients exist
        *inputs, grad_out = case.args
        leaves = [
            x.detach().requires_grad_(w) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
            for x, w in zip(inputs, case.meta["wants_grad"])
        ]
        case.module.zero_grad(set_to_none=True)
        fn = self.module.forward_fn if entry is self.default_backward else self.autograd.apply
        with torch.enable_grad():
            out = case.module(*leaves, fn=fn)

        def backward() -> Outputs:
            if entry is not self.default_backward:
                self.autograd.backward_fn = entry
            try:
                out.backward(grad_out)
            finally:
                self.autograd.backward_fn = self.default_backward
            return self._gradients(case, leaves, entry is self.default_backward)

        return backward

    def _gradients(self, case, leaves, reference):
        """The gradients the reference produces, by name: parameters the forward never uses
        (a Model may keep an nn.Linear beside its own weights) have none and are not compared."""
        grads = {f"param:{n}": p.grad for n, p in case.module.named_parameters()}
        grads.update({f"input:{i}": x.grad for i, (x, w) in enumerate(zip(leaves, case.meta["wants_grad"])) if w})
        if reference and self._grad_names is None:
            self._grad_names = [name for name, g in grads.items() if g is not None]
            if not self._grad_names:
                raise TaskError(f"{self.func_path}: the reference backward produces no gradient at all")
        names = self._grad_names if self._grad_names is not None else list(grads)
        missing = [name for name in names if grads.get(name) is None]
        if missing:
            raise RuntimeError(
                f"no gradient produced for {', '.join(missing)}: backward must return a gradient for "
                "every input the reference's backward_fn returns one for, in the same order"
            )
        return tuple(grads[name].detach() for name in names)

    def reference_ops(self) -> set[str]:
        return called_names(self.func_path)


def is_robust_kbench(folder: str) -> bool:
    return os.path.isfile(os.path.join(folder, "func_forward.py"))


def has_backward(folder: str) -> bool:
    return os.path.isfile(os.path.join(folder, "func_backward.py"))


__all__ = ["RobustKBenchTask", "TaskError", "is_robust_kbench", "has_backward"]
