"""`inspect`: load and validate a task; with --probe, run its reference on the CPU and refuse a
degenerate task."""

from __future__ import annotations

import argparse
import os

from ..record import Record
from .common import SCHEMA, log


def cmd_inspect(args: argparse.Namespace) -> Record:
    from ..tasks import TaskError, task_from
    from ..tasks.native import NativeTask

    base = {
        "schema": SCHEMA,
        "kind": "task",
        "path": os.path.abspath(args.task.split("#")[0]),
        "ok": False,
        "error": None,
        "name": os.path.basename(args.task.rstrip("/")),
        "format": "native",
        "backward": False,
        "baseline": None,
        "configs": [],
        "notes": [],
        "probe": None,
    }
    try:
        task = task_from(args)
    except TaskError as err:
        return {**base, "error": str(err)}
    except Exception as err:  # a task whose Python fails to import is invalid, with its error
        return {**base, "error": f"cannot load the task: {type(err).__name__}: {err}"}
    configs = []
    if args.probe:
        task.prune("cpu")
    for c in task.configs:
        entry = {
            "name": c.name,
            "heldout": c.heldout,
            "derived": c.derived,
            "dims": {k: v for k, v in c.dims.items() if isinstance(v, int) and not isinstance(v, bool)},
            "init": c.init or "declared",
            "inputs": [],
        }
        if isinstance(task, NativeTask):  # shapes without building tensors
            entry["inputs"] = [
                {"name": i["name"], "shape": task._shape(i, c), "dtype": i.get("dtype", "float32")} for i in task.inputs
            ]
        configs.append(entry)
    record = {
        **base,
        "ok": True,
        "name": task.name,
        "format": task.format,
        "path": task.path,
        "backward": task.backward,
        "baseline": task.baseline,
        "configs": configs,
        "notes": task.notes,
    }
    if args.probe:
        from ..verify import Reject, Verifier

        smallest = min(task.configs, key=lambda c: sum(v for v in c.dims.values() if isinstance(v, int)))
        v = Verifier(task, None, "cpu", 1234, log=log)
        try:
            v.check_task(smallest)
            record["probe"] = {
                "ok": True,
                "reason": None,
                "message": f"reference runs on {smallest.name}; output is not degenerate",
            }
        except Reject as r:
            record["probe"] = {"ok": False, "reason": r.reason, "message": r.message}
            record["ok"] = False
            record["error"] = r.message
        except Exception as err:
            record["probe"] = {"ok": False, "reason": "reference-error", "message": f"{type(err).__name__}: {err}"}
            record["ok"] = False
            record["error"] = f"the reference fails on {smallest.name}: {err}"
    return record
