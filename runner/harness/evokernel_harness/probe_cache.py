"""A cache of bench's reference probe: the GPU time of the kernels one call of the reference
launches on a configuration (is it launch-bound?), and the configuration's roofline cost (bytes
moved, flops counted on the reference: torch's FlopCounterMode costs seconds on its first use in
a process). Both are properties of the task, the configuration and the machine, never of the
candidate, so a search measures them once per configuration instead of once per candidate.

One small JSON file per key under <cache>/probe/ (the cost's key is the probe's, suffixed).
The key hashes the task's files (every regular file of its folder, or the KernelBench file,
plus the reference it names), the configuration (name and dims), the GPU, the driver, CUDA and
torch versions. An entry that cannot be read, does not parse or does not hold a positive finite
time is a miss; a miss is measured and written. At most MAX_ENTRIES files: the oldest go first.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from typing import TYPE_CHECKING, Any, Callable, TypeGuard

if TYPE_CHECKING:
    from .tasks.base import Config, Task

MAX_ENTRIES = 512
MAX_TASK_FILE_BYTES = 16 * 2**20  # a larger file (data) is hashed by name and size only
VERSION = 1


def task_files(task: Task) -> list[str]:
    """The files whose content defines the task: its folder's regular files (or its file)
    and the reference files it names."""
    paths = set()
    path = getattr(task, "path", "") or ""
    if os.path.isdir(path):
        for name in os.listdir(path):
            full = os.path.join(path, name)
            if os.path.isfile(full):
                paths.add(full)
    elif os.path.isfile(path):
        paths.add(path)
    for attr in ("reference_path", "func_path"):
        extra = getattr(task, attr, None)
        if extra and os.path.isfile(extra):
            paths.add(os.path.abspath(extra))
    return sorted(paths)


def task_digest(task: Task) -> str:
    h = hashlib.sha256()
    for path in task_files(task):
        h.update(os.path.basename(path).encode() + b"\0")
        size = os.path.getsize(path)
        if size > MAX_TASK_FILE_BYTES:
            h.update(f"size:{size}".encode())
        else:
            with open(path, "rb") as f:
                h.update(hashlib.sha256(f.read()).digest())
        h.update(b"\0")
    return h.hexdigest()


def probe_key(task_hash: str, task: Task, config: Config, device: dict[str, Any]) -> str:
    """The key of one configuration's probe: task content, configuration, machine."""
    what = {
        "v": VERSION,
        "task": task_hash,
        "name": getattr(task, "name", ""),
        "format": getattr(task, "format", ""),
        "backward": bool(getattr(task, "backward", False)),
        "config": config.name,
        "dims": {str(k): v for k, v in sorted(config.dims.items())},
        "init": getattr(config, "init", None),
        "derived": bool(getattr(config, "derived", False)),
        "gpu": device.get("name"),
        "driver": device.get("driver"),
        "cuda": device.get("cuda"),
        "torch": device.get("torch"),
    }
    text = json.dumps(what, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _valid_ms(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def cost_key(key: str) -> str:
    """The key of a configuration's cost entry, from its probe key."""
    return hashlib.sha256(f"{key}:cost".encode()).hexdigest()


def _valid_cost(nbytes, flops):
    ints = all(isinstance(v, int) and not isinstance(v, bool) for v in (nbytes, flops))
    return ints and nbytes > 0 and flops >= 0


class ProbeCache:
    def __init__(self, folder: str, max_entries: int = MAX_ENTRIES) -> None:
        self.folder = folder
        self.max_entries = max_entries
        self.hits = 0
        self.misses = 0
        self.cost_hits = 0
        self.cost_misses = 0

    def _file(self, key):
        return os.path.join(self.folder, key[:40] + ".json")

    def _read(self, key):
        try:
            with open(self._file(key)) as f:
                entry = json.load(f)
        except (OSError, ValueError):
            return None
        return entry if isinstance(entry, dict) and entry.get("key") == key else None

    def _write(self, key, fields, about=None):
        """Writes an entry; a cache that cannot be written is no failure (measured again next time)."""
        entry = {"key": key, **fields, "at": time.time(), **(about or {})}
        try:
            os.makedirs(self.folder, exist_ok=True)
            tmp = f"{self._file(key)}.{os.getpid()}.tmp"
            with open(tmp, "w") as f:
                json.dump(entry, f, default=str)
            os.replace(tmp, self._file(key))  # a reader never sees half an entry
            self._prune()
        except OSError:
            return False
        return True

    def _touch(self, key):
        try:  # used: the last to be pruned
            os.utime(self._file(key))
        except OSError:
            pass

    def get(self, key: str) -> float | None:
        """The cached time in ms, or None (absent, unreadable, corrupt: a miss)."""
        entry = self._read(key)
        if entry is None or not _valid_ms(entry.get("deviceMs")):
            return None
        return float(entry["deviceMs"])

    def put(self, key: str, device_ms: float | None, about: dict[str, Any] | None = None) -> bool:
        """Writes an entry (never a None or non-positive time)."""
        if not _valid_ms(device_ms):
            return False
        return self._write(key, {"deviceMs": float(device_ms)}, about)

    def get_cost(self, key: str) -> tuple[int, int] | None:
        """The cached (bytes, flops), or None (a miss)."""
        entry = self._read(cost_key(key))
        if entry is None or not _valid_cost(entry.get("bytes"), entry.get("flops")):
            return None
        return int(entry["bytes"]), int(entry["flops"])

    def put_cost(self, key: str, nbytes: int, flops: int, about: dict[str, Any] | None = None) -> bool:
        if not _valid_cost(nbytes, flops):
            return False
        return self._write(cost_key(key), {"bytes": int(nbytes), "flops": int(flops)}, about)

    def _prune(self):
        try:
            names = [n for n in os.listdir(self.folder) if n.endswith(".json")]
        except OSError:
            return
        if len(names) <= self.max_entries:
            return
        dated = []
        for name in names:
            try:
                dated.append((os.path.getmtime(os.path.join(self.folder, name)), name))
            except OSError:
                continue
        dated.sort()
        for _, name in dated[: len(dated) - self.max_entries]:
            try:
                os.remove(os.path.join(self.folder, name))
            except OSError:
                pass

    def probe(
        self, key: str, measure: Callable[[], float | None], about: dict[str, Any] | None = None
    ) -> tuple[float | None, bool]:
        """(device ms, hit): the cached time, or measure() run and its result stored."""
        cached = self.get(key)
        if cached is not None:
            self.hits += 1
            self._touch(key)
            return cached, True
        self.misses += 1
        value = measure()
        self.put(key, value, about)
        return value, False

    def cost(
        self, key: str, compute: Callable[[], tuple[int, int]], about: dict[str, Any] | None = None
    ) -> tuple[tuple[int, int], bool]:
        """((bytes, flops), hit): the cached cost of the probe key's configuration, or
        compute() run and its result stored."""
        cached = self.get_cost(key)
        if cached is not None:
            self.cost_hits += 1
            self._touch(cost_key(key))
            return cached, True
        self.cost_misses += 1
        nbytes, flops = compute()
        self.put_cost(key, nbytes, flops, about)
        return (nbytes, flops), False


class CostMeasured(ProbeCache):
    """The cache as a judged bench's judge uses it (bench_judge.py): the probe read from it, the
    cost always computed (and written). The cache is a folder the candidate's process can write,
    and the cost is the roofline floor the judge holds its times to."""

    def cost(
        self, key: str, compute: Callable[[], tuple[int, int]], about: dict[str, Any] | None = None
    ) -> tuple[tuple[int, int], bool]:
        self.cost_misses += 1
        nbytes, flops = compute()
        self.put_cost(key, nbytes, flops, about)
        return (nbytes, flops), False
