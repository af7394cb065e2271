"""Load any task shape from a path: a native folder, a KernelBench file, a robust-kbench folder.

`folder#backward` names the backward task of a robust-kbench folder.
"""

import json
import os
from typing import Any, Optional

from .base import Case, Config, Task, TaskError
from .kernelbench import KernelBenchTask
from .native import NativeTask
from .robust_kbench import RobustKBenchTask, has_backward, is_robust_kbench


def load_task(path: str, spec: Optional[dict[str, Any]] = None) -> Task:
    """The task at `path`. `spec`: a native task's task.json as the runner already read it
    (a request's taskSpec): the file is not read again."""
    backward = False
    if path.endswith("#backward"):
        path, backward = path[: -len("#backward")], True
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, "task.json")):
            return NativeTask(path, spec)
        if is_robust_kbench(path):
            if backward and not has_backward(path):
                raise TaskError(f"{path}: no func_backward.py, so no backward task")
            return RobustKBenchTask(path, backward=backward)
        raise TaskError(f"{path}: not a task (no task.json, no func_forward.py)")
    if os.path.isfile(path) and path.endswith(".py"):
        return KernelBenchTask(path)
    raise TaskError(f"{path}: no such task (a folder with task.json or func_forward.py, or a KernelBench .py file)")


def task_spec(text: Optional[str]) -> Optional[dict[str, Any]]:
    """A command's --task-spec (the runner's parsed task.json, JSON text), or None."""
    if text is None:
        return None
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as err:
        raise TaskError(f"--task-spec is not valid JSON ({err})") from None
    if not isinstance(spec, dict):
        raise TaskError("--task-spec is a JSON object (a task.json)")
    return spec


def task_from(path: str, spec: Optional[str] = None, names: Optional[list[str]] = None) -> Task:
    """A command's task: its request's task, with the runner's taskSpec (JSON text, as
    --task-spec gives it) when it gave one, restricted to the configurations `names` (its
    request's config) when there are any."""
    task = load_task(path, task_spec(spec))
    if names:
        select_configs(task, names)
    return task


def select_configs(task: Task, names: list[str]) -> None:
    """Keeps only the named configurations, in the task's order, each keeping the seed slot it
    has in a run of every configuration (bench seeds a configuration's inputs by its place among
    the visible ones; verify by its name), so that the same seed gives the same inputs."""
    known = [c.name for c in task.configs]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise TaskError(
            f"task {task.name} has no configuration {', '.join(unknown)} (its configurations: {', '.join(known)})"
        )
    for slot, config in enumerate(task.visible_configs()):
        config.seed_slot = slot
    task.configs = [c for c in task.configs if c.name in names]
    task.selected = True


__all__ = ["Case", "Config", "Task", "TaskError", "load_task", "task_from", "task_spec"]
