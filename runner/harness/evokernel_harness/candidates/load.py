"""Load a built candidate and bind it to a task: `run(case) -> tuple of output tensors`."""

import ctypes
import importlib
import importlib.machinery
import importlib.util
import os
from typing import Any, Callable, Sequence, TypeVar

import torch

from .. import backend_flags, evidence
from ..env import FLOAT_DTYPES
from ..pyload import load_module
from ..tasks.base import Case, Task, as_tuple
from . import CandidateError, detect_format, own_kernel_names, read_source
from .build import apply_extension_env

T = TypeVar("T")

EVK_DTYPES = {
    torch.float32: 0,
    torch.float16: 1,
    torch.bfloat16: 2,
    torch.float64: 3,
    torch.int32: 4,
    torch.int64: 5,
    torch.bool: 6,
    torch.uint8: 7,
    torch.int8: 8,
}
MAX_DIMS = 8

# What a public format's own harness has imported when it runs a candidate, so that a
# candidate written for it finds it there too (docs/DESIGN.md, "What each format's harness
# provides"): KernelBench's evaluation and robust-kbench's both import torch.utils.cpp_extension
# before they load a candidate, so `import torch` then `torch.utils.cpp_extension.load_inline`
# works there. A native task's candidate imports what it uses.
FORMAT_IMPORTS = {
    "kernelbench": ("torch.utils.cpp_extension",),
    "robust-kbench": ("torch.utils.cpp_extension",),
}


class EvkTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("shape", ctypes.c_int64 * MAX_DIMS),
        ("stride", ctypes.c_int64 * MAX_DIMS),
        ("ndim", ctypes.c_int32),
        ("dtype", ctypes.c_int32),
    ]


class EvkCall(ctypes.Structure):
    _fields_ = [
        ("inputs", ctypes.POINTER(EvkTensor)),
        ("n_inputs", ctypes.c_int32),
        ("outputs", ctypes.POINTER(EvkTensor)),
        ("n_outputs", ctypes.c_int32),
        ("scalars", ctypes.POINTER(ctypes.c_double)),
        ("n_scalars", ctypes.c_int32),
        ("stream", ctypes.c_void_p),
    ]


class LaunchError(RuntimeError):
    """The candidate's own CUDA runtime reported an error (hack 13 if it was ignored)."""


def poisoned(shape: Sequence[int], dtype: torch.dtype, device: torch.device | str) -> torch.Tensor:
    """Fresh output memory that no correct kernel leaves as it is."""
    if dtype in FLOAT_DTYPES:
        return torch.full(shape, float("nan"), dtype=dtype, device=device)
    if dtype == torch.bool:
        return torch.ones(shape, dtype=dtype, device=device)
    return torch.full(shape, torch.iinfo(dtype).min, dtype=dtype, device=device)


def _evk_tensor(t):
    if t.dim() > MAX_DIMS:
        raise CandidateError(f"evk format supports at most {MAX_DIMS} dimensions")
    if t.dtype not in EVK_DTYPES:
        raise CandidateError(f"evk format has no code for dtype {t.dtype}")
    e = EvkTensor()
    e.data = t.data_ptr()
    for i, (s, st) in enumerate(zip(t.shape, t.stride())):
        e.shape[i] = s
        e.stride[i] = st
    e.ndim = t.dim()
    e.dtype = EVK_DTYPES[t.dtype]
    return e


class EvkFunction:
    """Calls evk_forward/evk_backward with harness-allocated, NaN-poisoned outputs."""

    def __init__(self, lib_path: str, entry: str) -> None:
        self.lib = ctypes.CDLL(lib_path, mode=ctypes.RTLD_LOCAL)
        symbol = f"evk_{entry}"
        if not hasattr(self.lib, symbol):
            raise CandidateError(
                f'the library exports no {symbol}: define extern "C" int {symbol}(const EvkCall* call)'
            )
        self.fn = getattr(self.lib, symbol)
        self.fn.argtypes = [ctypes.POINTER(EvkCall)]
        self.fn.restype = ctypes.c_int
        self.last_error = self.lib.evk_shim_last_error
        self.last_error.restype = ctypes.c_int
        self.error_string = self.lib.evk_shim_error_string
        self.error_string.restype = ctypes.c_char_p
        self.meta_source: Any = None  # the task's meta_entry for the case, set before each call
        self.meta = {}
        # while timing, outputs are allocated (and poisoned) once per input set, so the
        # fill is not timed; verification always allocates fresh poisoned outputs
        self.reuse_outputs = False
        self.reused = {}

    def _output_meta(self, args):
        key = tuple((tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor) else type(a) for a in args)
        if key not in self.meta:
            clones = [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args]
            with torch.no_grad():
                outs = as_tuple(self.meta_source(*clones))
            self.meta[key] = [(tuple(o.shape), o.dtype) for o in outs]
        return self.meta[key]

    def __call__(self, *args: Any) -> Any:
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        scalars = [float(a) for a in args if isinstance(a, (int, float, bool))]
        device = tensors[0].device if tensors else torch.device("cuda")
        meta = self._output_meta(args)
        if self.reuse_outputs:
            key = (tuple(t.data_ptr() for t in tensors), tuple(meta))
            outs = self.reused.get(key)
            if outs is None:
                outs = self.reused[key] = [poisoned(s, d, device) for s, d in meta]
        else:
            self.reused = {}
            outs = [poisoned(s, d, device) for s, d in meta]
        ins = (EvkTensor * max(1, len(tensors)))(*[_evk_tensor(t) for t in tensors])
        outv = (EvkTensor * max(1, len(outs)))(*[_evk_tensor(t) for t in outs])
        sc = (ctypes.c_double * max(1, len(scalars)))(*scalars)
        stream = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0
        call = EvkCall(ins, len(tensors), outv, len(outs), sc, len(scalars), ctypes.c_void_p(stream))
        code = self.fn(ctypes.byref(call))
        err = self.last_error()
        if err != 0:
            raise LaunchError(f"CUDA error after the call: {self.error_string(err).decode()} ({err})")
        if code != 0:
            raise LaunchError(f"evk entry returned error code {code}")
        return outs[0] if len(outs) == 1 else tuple(outs)


class Candidate:
    """A loaded candidate: its format, the kernels it defines, and how to run it on a case."""

    def __init__(self, path: str, artifact: str | None, task: Task) -> None:
        self.path = os.path.abspath(path)
        self.source = read_source(path)
        self.format = detect_format(path, self.source)
        self.kernels = own_kernel_names(self.source)
        self.task = task
        self.intact = True  # the run-time record still on after its last call (evidence.py)
        self._depth = 0
        artifact = artifact or (path if self.format == "py" else None)
        if artifact is None:
            raise CandidateError("no build artifact: build the candidate first")
        # what it built, for whose kernels ran (own_kernel.own_kernels): its extension's
        # object, and its module's Triton/CuPy kernels
        self.artifact: str = artifact
        self.module: Any = None
        # what it does at run time (handled exceptions) and the backend flags it sets are its
        # own: recorded from the moment its code first runs, scoped to its calls
        self.evidence = evidence.watch(artifact if self.format == "py" else path)
        self.flags = backend_flags.Scoped()
        self.flags.enter()
        try:
            with evidence.scope():
                self._load(artifact, task)
        finally:
            self.flags.leave()
        self.evidence.phase = "verify"

    def _load(self, artifact, task):
        """Load the built artifact; whatever the candidate's own code raises on import is its
        verdict (load-error, its words), never a harness failure."""
        try:
            self._import(artifact, task)
        except CandidateError:
            raise
        except Exception as err:
            raise CandidateError(f"loading the candidate raised {type(err).__name__}: {str(err)[:2000]}") from None

    def _import(self, artifact, task):
        if self.format == "evk":
            self.entry = EvkFunction(artifact, task.entry)
        elif self.format == "torch-ext":
            self.entry = _entry(_import_extension(artifact), task.entry, artifact)
        else:
            apply_extension_env(artifact)  # a load_inline at import finds its build as left
            for name in FORMAT_IMPORTS.get(task.format, ()):
                importlib.import_module(name)
            module = self.module = load_module(artifact, f"evk_candidate_{abs(hash(artifact))}")
            if hasattr(module, "ModelNew") and task.format == "kernelbench":
                self.entry = None
                self.model_cls = module.ModelNew
            else:
                self.entry = _entry(module, task.entry, artifact)

    def run(self, case: Case) -> Any:
        return self.scoped(self._run, case)

    def scoped(self, fn: Callable[..., T], *args: Any) -> T:
        """fn(*args) with the candidate's backend flags applied and its handled exceptions
        recorded; the harness's flags restored afterwards, whatever happens. Re-entrant: a call
        inside a scoped one (a ModelNew built on its first call) keeps the outer scope."""
        if self._depth:
            return fn(*args)
        self._depth += 1
        self.flags.enter()
        try:
            with evidence.scope():
                out = fn(*args)
                self.intact = self.evidence.active()
            return out
        finally:
            self._depth -= 1
            self.flags.leave()

    def _run(self, case):
        if self.entry is None:  # KernelBench ModelNew: one instance per case, built like the Model
            # kept on the case itself (clones do not carry it): an id() could be reused
            model = getattr(case, "_candidate_model", None)
            if model is None:
                model = self.task.instantiate(self.model_cls, case)
                case._candidate_model = model
            out = as_tuple(model(*case.args))
            self.last_models = (model, case.module)  # modes compared if it is refused (verify.py)
            return out
        if isinstance(self.entry, EvkFunction):
            self.entry.meta_source = self.task.meta_entry(case)
        return self.task.invoke(self.entry, case)


def _import_extension(lib_path):
    name = os.path.splitext(os.path.basename(lib_path))[0]
    loader = importlib.machinery.ExtensionFileLoader(name, lib_path)
    spec = importlib.util.spec_from_file_location(name, lib_path, loader=loader)
    module = importlib.util.module_from_spec(spec)  # pyright: ignore[reportArgumentType] — a loader given: a spec
    loader.exec_module(module)
    return module


def _entry(module, name, where):
    fn = getattr(module, name, None)
    if not callable(fn):
        kind = "ModelNew class (KernelBench tasks only)" if hasattr(module, "ModelNew") else f"{name} function"
        raise CandidateError(f"{os.path.basename(where)}: expected a {name}() entry; found no {kind}")
    return fn
