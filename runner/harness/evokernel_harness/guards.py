"""Functions the harness relies on, bound before any candidate code is imported.

A candidate runs in our process (py candidates are imported; evk and torch-ext ones are
native code), so it could replace timers or comparison functions. The harness uses only
the references bound here, and after every candidate call checks the public names still
point at them: a change is hack 6 (timer or stats patching), whatever the source looked like.
"""

import os
import threading
import time
from typing import Any

import torch

perf_counter = time.perf_counter
synchronize = torch.cuda.synchronize
abs_ = torch.abs
sub = torch.sub
isfinite = torch.isfinite
isnan = torch.isnan
amax = torch.amax
argmax = torch.argmax
sqrt = torch.sqrt
sum_ = torch.sum
equal = torch.equal
add = torch.add
div = torch.div
max_ = torch.max
clamp_min = torch.clamp_min
stack = torch.stack
vector_norm = torch.linalg.vector_norm
# torch's own, None where this torch has none (Any: the type checker knows neither)
EventBase: Any = getattr(torch._C, "_CudaEventBase", None)  # pyright: ignore[reportPrivateImportUsage] — as said
sleep: Any = getattr(torch.cuda, "_sleep", None)  # the timer's head start and streams.py's markers

WATCHED = {
    "time.perf_counter": (time, "perf_counter"),
    "time.time": (time, "time"),
    "time.monotonic": (time, "monotonic"),
    "torch.cuda.synchronize": (torch.cuda, "synchronize"),
    "torch.cuda.Event": (torch.cuda, "Event"),
    "torch.cuda.Event.elapsed_time": (torch.cuda.Event, "elapsed_time"),
    "torch.cuda.Event.record": (torch.cuda.Event, "record"),
    "torch.cuda.Event.synchronize": (torch.cuda.Event, "synchronize"),
    "torch.allclose": (torch, "allclose"),
    "torch.isclose": (torch, "isclose"),
    "torch.equal": (torch, "equal"),
    "torch.isfinite": (torch, "isfinite"),
    "torch.abs": (torch, "abs"),
    "torch.sub": (torch, "sub"),
    "torch.Tensor.__sub__": (torch.Tensor, "__sub__"),
    "torch.Tensor.abs": (torch.Tensor, "abs"),
    "torch.Tensor.max": (torch.Tensor, "max"),
    "torch.Tensor.__eq__": (torch.Tensor, "__eq__"),
    "torch.Tensor.clone": (torch.Tensor, "clone"),
    "torch.Tensor.copy_": (torch.Tensor, "copy_"),
}


# the harness's own references (this module's names): replacing one of them is replacing the
# timer or a check through the back door
OWN = (
    "perf_counter",
    "synchronize",
    "abs_",
    "sub",
    "isfinite",
    "isnan",
    "amax",
    "argmax",
    "sqrt",
    "sum_",
    "equal",
    "add",
    "div",
    "max_",
    "clamp_min",
    "stack",
    "vector_norm",
    "EventBase",
    "sleep",
)


def snapshot() -> dict[str, Any]:
    own = {f"evokernel_harness.guards.{name}": globals().get(name) for name in OWN}
    return {**{name: getattr(obj, attr, None) for name, (obj, attr) in WATCHED.items()}, **own}


BASELINE = snapshot()


def tampered() -> list[str]:
    """Names whose objects changed since the harness bound them."""
    now = snapshot()
    return [name for name, value in now.items() if value is not BASELINE[name]]


def thread_count() -> tuple[int, int]:
    """Python threads plus native ones (a C++ std::thread shows only in /proc)."""
    try:
        native = len(os.listdir("/proc/self/task"))
    except OSError:
        native = 0
    return threading.active_count(), native
