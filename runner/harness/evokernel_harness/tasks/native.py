"""Native tasks: a folder with task.json, a reference.py defining forward(), and a kernel."""

import ast
import json
import os
from typing import Any, Optional

import torch

from .. import exprs, schemas
from ..env import DTYPES, FLOAT_DTYPES
from ..inputs import generator, make_tensor
from ..pyload import load_module
from .base import Case, Config, Device, Entry, Outputs, Task, TaskError, as_tuple


# task.json's rules are the zod schema's (runner/src/tasks), generated into the contract folder
# (npm run schema): its required fields, top-level defaults and the libraries rule's values are
# read from there, never written again here.
TASK_SCHEMA = schemas.schema("task.schema.json")
DEFAULTS = {key: prop["default"] for key, prop in TASK_SCHEMA["properties"].items() if "default" in prop}
LIBRARIES = list(TASK_SCHEMA["properties"]["libraries"]["enum"])
INPUT_REQUIRED = list(TASK_SCHEMA["properties"]["inputs"]["items"]["required"])
INPUT_DTYPES = list(TASK_SCHEMA["properties"]["inputs"]["items"]["properties"]["dtype"]["enum"])


class NativeTask(Task):
    format = "native"

    def __init__(self, folder: str, spec: Optional[dict[str, Any]] = None) -> None:
        """`spec`: the folder's task.json as the runner read and validated it (a request's
        taskSpec), so a run reads the file once; None reads it here (a command line)."""
        super().__init__()
        self.path = os.path.abspath(folder)
        spec_path = os.path.join(self.path, "task.json")
        given: Any = spec
        if given is None:
            try:
                with open(spec_path) as f:
                    given = json.load(f)
            except json.JSONDecodeError as err:
                raise TaskError(f"{spec_path}: not valid JSON ({err})") from None
        self.spec: dict[str, Any] = given
        if not isinstance(self.spec, dict):
            raise TaskError(f"{spec_path}: not a JSON object")
        for key in TASK_SCHEMA["required"]:
            if key not in self.spec:
                raise TaskError(f"{spec_path}: missing required field {key!r}")
        # the schema's defaults for what the file leaves out (reference.py, backward false, …)
        spec = self.spec = {**DEFAULTS, **self.spec}
        self.name = spec["name"]
        self.backward = bool(spec["backward"])
        self.libraries = spec["libraries"]
        if self.libraries not in LIBRARIES:
            raise TaskError(f'{spec_path}: "libraries" is one of {", ".join(LIBRARIES)}, not {self.libraries!r}')
        # the strict benchmark rule ("libraries": "deny") is also own kernels only
        self.own_kernels = "require" if self.libraries == "deny" else "allow"
        self.entry = "backward" if self.backward else "forward"
        kernel = spec.get("kernel")
        self.baseline = os.path.join(self.path, kernel) if kernel else None
        ref_path = os.path.join(self.path, spec["reference"])
        if not os.path.isfile(ref_path):
            raise TaskError(f"{spec_path}: reference file {spec['reference']!r} does not exist")
        self.reference_path = ref_path
        module = load_module(ref_path, f"evk_ref_{self.name}")
        if not callable(getattr(module, "forward", None)):
            raise TaskError(f"{ref_path}: must define forward(*inputs)")
        self._forward = module.forward
        for dtype, tol in spec.get("tolerance", {}).items():
            self.tolerances[dtype] = {**self.tolerances.get(dtype, {}), **tol}
        self.inputs = spec["inputs"]
        for inp in self.inputs:
            for key in INPUT_REQUIRED:
                if key not in inp:
                    raise TaskError(f"{spec_path}: input {inp.get('name')!r}: missing required field {key!r}")
            if inp["dtype"] not in INPUT_DTYPES:
                raise TaskError(f"{spec_path}: input {inp.get('name')!r} has unknown dtype {inp.get('dtype')!r}")
        if self.backward and not any(i.get("requiresGrad") for i in self.inputs):
            raise TaskError(f"{spec_path}: a backward task needs at least one input with requiresGrad")
        for c in spec["configs"]:
            self.configs.append(self._config(c, heldout=False))
        for c in spec.get("heldout", []):
            self.configs.append(self._config(c, heldout=True))
        names = [c.name for c in self.configs]
        if len(set(names)) != len(names):
            raise TaskError(f"{spec_path}: configuration names must be unique")
        for c in self.configs:  # shapes must evaluate in every configuration
            for inp in self.inputs:
                self._shape(inp, c)

    def _config(self, c, heldout):
        if "name" not in c or "dims" not in c:
            raise TaskError(f"{self.name}: every configuration needs a name and dims")
        for k, v in c["dims"].items():
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise TaskError(
                    f"{self.name}: configuration {c['name']!r}: dim {k} must be a positive integer, got {v!r}"
                )
        return Config(name=c["name"], dims=dict(c["dims"]), init=c.get("init"), dtype=c.get("dtype"), heldout=heldout)

    def _shape(self, inp, config):
        try:
            return [exprs.evaluate_int(s, config.dims) for s in inp["shape"]]
        except exprs.ExprError as err:
            raise TaskError(f"{self.name}: input {inp.get('name')!r} in configuration {config.name!r}: {err}") from None

    def _dtype(self, inp, config):
        dtype = DTYPES[inp["dtype"]]
        if config.dtype and dtype in FLOAT_DTYPES:
            return DTYPES[config.dtype]
        return dtype

    def _init(self, inp, config, override):
        init = inp.get("init")
        if isinstance(init, dict) and "randint" in init:
            lo, hi = init["randint"]
            return {"randint": [exprs.evaluate_int(lo, config.dims), exprs.evaluate_int(hi, config.dims)]}
        if override:
            return override
        return init or config.init or "normal"

    def make_case(self, config: Config, seed: int, device: Device, init: str | None = None) -> Case:
        gen = generator(seed, device)
        args = []
        for inp in self.inputs:
            dtype = self._dtype(inp, config)
            args.append(make_tensor(self._shape(inp, config), dtype, self._init(inp, config, init), gen, device))
        if not self.backward:
            return Case(args=args)
        # backward: the function under test is backward(*grad_outputs, *inputs)
        with torch.no_grad():
            outs = as_tuple(self._forward(*[a.clone() for a in args]))
        grads = [make_tensor(o.shape, o.dtype, "normal", gen, device) for o in outs]
        return Case(args=grads + args, meta={"n_grad_outputs": len(grads)})

    def reference_entry(self) -> Entry:
        if not self.backward:
            return self._forward
        forward = self._forward
        wants_grad = [bool(i.get("requiresGrad")) for i in self.inputs]

        def backward(*args: torch.Tensor) -> Outputs:
            n_out = len(args) - len(wants_grad)
            grad_outs, inputs = args[:n_out], args[n_out:]
            leaves = [x.detach().clone().requires_grad_(w) for x, w in zip(inputs, wants_grad)]
            with torch.enable_grad():
                outs = as_tuple(forward(*leaves))
                targets = [x for x, w in zip(leaves, wants_grad) if w]
                grads = torch.autograd.grad(outs, targets, grad_outputs=list(grad_outs), allow_unused=True)
            return tuple(torch.zeros_like(t) if g is None else g.detach() for g, t in zip(grads, targets))

        return backward

    def reference_ops(self) -> set[str]:
        return called_names(self.reference_path)

    def cost(self, config: Config, case: Case, outputs: Outputs) -> tuple[int, int]:
        """The task's own expressions where it gives them (then nothing is counted)."""
        if "bytes" in self.spec:
            nbytes = exprs.evaluate(self.spec["bytes"], config.dims)
        else:
            nbytes = self.cost_bytes(case, outputs)
        flops = exprs.evaluate(self.spec["flops"], config.dims) if "flops" in self.spec else self.cost_flops(case)
        return int(nbytes), int(flops)


SETUP_FUNCTIONS = ("get_inputs", "get_init_inputs", "__init__")


def called_names(path: str) -> set[str]:
    """Attribute names the reference calls to compute (torch.softmax → softmax, x.sum() →
    sum): not in input or parameter set-up (get_inputs, __init__), not constructors."""
    with open(path) as f:
        tree = ast.parse(f.read(), filename=path)
    setup = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in SETUP_FUNCTIONS:
            setup |= {id(n) for n in ast.walk(node)}
    names = set()
    for node in ast.walk(tree):
        if id(node) in setup or not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        attr = node.func.attr
        if not attr.startswith("__") and not attr[:1].isupper():  # constructors make parameters, not results
            names.add(attr)
    return names
