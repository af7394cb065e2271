"""Load any task shape from a path: a native folder, a KernelBench file, a robust-kbench folder.

`folder#backward` names the backward task of a robust-kbench folder.
"""

import os

from .base import Case, Config, Task, TaskError
from .kernelbench import KernelBenchTask
from .native import NativeTask
from .robust_kbench import RobustKBenchTask, has_backward, is_robust_kbench


def load_task(path: str) -> Task:
    backward = False
    if path.endswith("#backward"):
        path, backward = path[: -len("#backward")], True
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, "task.json")):
            return NativeTask(path)
        if is_robust_kbench(path):
            if backward and not has_backward(path):
                raise TaskError(f"{path}: no func_backward.py, so no backward task")
            return RobustKBenchTask(path, backward=backward)
        raise TaskError(f"{path}: not a task (no task.json, no func_forward.py)")
    if os.path.isfile(path) and path.endswith(".py"):
        return KernelBenchTask(path)
    raise TaskError(f"{path}: no such task (a folder with task.json or func_forward.py, or a KernelBench .py file)")


__all__ = ["Case", "Config", "Task", "TaskError", "load_task"]
