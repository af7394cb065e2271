"""Candidate formats: detect, build (cached by content hash), load, and bind to a task."""

import os
import re

_GLOBAL_RE = re.compile(r"__global__\s+(?:[\w:<>]+\s+)*?(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(")
_TRITON_RE = re.compile(r"@triton\.(?:jit|autotune)[^\n]*\n(?:\s*@[^\n]*\n)*\s*def\s+(\w+)")


class CandidateError(Exception):
    """A candidate that cannot be loaded: a record, not a harness failure. kind is the record's
    reason: "load-error", or "compile-error" when its build failed (the message is the log)."""

    def __init__(self, message: str, kind: str = "load-error") -> None:
        super().__init__(message)
        self.kind = kind


def read_source(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def detect_format(path: str, source: str | None = None) -> str:
    source = read_source(path) if source is None else source
    if path.endswith(".py"):
        return "py"
    if re.search(r"\bevk_(forward|backward)\s*\(", source):
        return "evk"
    if "PYBIND11_MODULE" in source or "TORCH_LIBRARY" in source:
        return "torch-ext"
    raise CandidateError(
        f"{os.path.basename(path)}: unknown candidate format: a .cu file must define "
        'extern "C" int evk_forward(const EvkCall*) (evk format) or a PYBIND11_MODULE '
        "exporting forward (torch extension); Python candidates end in .py"
    )


def own_kernel_names(source: str) -> set[str]:
    """Names of the GPU kernels a candidate defines (CUDA __global__ or Triton jit)."""
    names = {m for m in _GLOBAL_RE.findall(source) if m not in ("void",)}
    names |= set(_TRITON_RE.findall(source))
    return names
