"""What this machine is: device, versions, dtypes. Read once; no side effects beyond CUDA init."""

import functools
import platform
import subprocess
from typing import Any

import torch
import torch.backends.cuda  # imported by torch itself; named for the type checker
import torch.backends.cudnn
import torch.version

from .schemas import enum

# The dtypes a task or record may name, from the contract (src/shared/contract/dtypes.ts).
DTYPES = {name: getattr(torch, name) for name in enum("dtype.schema.json")}
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}
FLOAT_DTYPES = tuple(DTYPES[name] for name in enum("float-dtype.schema.json"))


def dtype_name(dtype: torch.dtype) -> str:
    return DTYPE_NAMES.get(dtype, str(dtype).replace("torch.", ""))


@functools.lru_cache(maxsize=1)
def _driver_version() -> tuple[str | None, int | None]:
    """The driver and the SM clock, read once per process (nvidia-smi takes ~0.1 s, and an
    `evaluate` child describes the device in each of its three records)."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version,clocks.sm", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        first = out.stdout.strip().splitlines()[0]
        driver, clock = [p.strip() for p in first.split(",")]
        return driver, (int(clock) if clock.isdigit() else None)
    except Exception:  # nvidia-smi absent or unreadable: report unknown, not fail
        return None, None


def device_info(backend: str) -> dict[str, Any]:
    info = {
        "name": platform.processor() or platform.machine(),
        "backend": backend,
        "driver": None,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "sms": None,
        "l2Bytes": None,
        "smClockMHz": None,
        "python": platform.python_version(),
    }
    if backend != "cuda":
        return info
    props = torch.cuda.get_device_properties(0)
    info["name"] = props.name
    info["sms"] = props.multi_processor_count
    info["l2Bytes"] = getattr(props, "L2_cache_size", None)
    info["driver"], info["smClockMHz"] = _driver_version()
    return info


def cuda_arch() -> str:
    """The nvcc -arch for the visible GPU, or sm_90 (Hopper) where none is visible."""
    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability(0)
        return f"sm_{major}{minor}"
    return "sm_90"


def device_backend(requested: str) -> str | None:
    """The backend a verification runs on: cpu when asked for, else cuda, None without a GPU."""
    if requested == "cpu":
        return "cpu"
    if not torch.cuda.is_available():
        return None
    return "cuda"


def precise_math() -> None:
    """Full float32 in matmuls and convolutions (no TF32): the reference's precision."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if hasattr(torch, "set_float32_matmul_precision"):
        torch.set_float32_matmul_precision("highest")
