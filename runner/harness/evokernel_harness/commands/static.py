"""`static` (the static check of a candidate's source) and `static-context` (what that check
needs of a task, once per search). `static`'s record handed to `verify` and `evaluate` by the
runner, so that they do not check the source again, is read in stages.py (given_static)."""

from __future__ import annotations

import json

from ..command_request import StaticContextRequest, StaticRequest
from ..record import StaticContextRecord, StaticRecord
from .common import SCHEMA


def cmd_static(request: StaticRequest) -> StaticRecord:
    from ..candidates import detect_format, read_source
    from ..static_check import check

    source = read_source(request.candidate)
    ref_ops, libraries = frozenset(), "allow"
    if request.reference_ops is not None:
        # what `static-context` said of the task: no torch import here (~2 s a candidate)
        ref_ops, libraries = frozenset(_ops_list(request.reference_ops)), request.libraries
    elif request.task:
        from ..tasks import task_from

        task = task_from(request.task, request.task_spec)
        ref_ops, libraries = frozenset(task.reference_ops()), task.libraries
    return check(
        request.candidate,
        source,
        detect_format(request.candidate, source),
        ref_ops,
        strict=not request.relaxed,
        libraries=libraries,
    )


def _ops_list(text: str) -> list[str]:
    try:
        ops = json.loads(text)
    except ValueError:
        ops = None
    if not isinstance(ops, list) or not all(isinstance(o, str) for o in ops):
        raise SystemExit("--reference-ops must be a JSON list of op names, as `static-context` gives")
    return ops


def cmd_static_context(request: StaticContextRequest) -> StaticContextRecord:
    """What the static check needs of a task (the ops its reference calls, its library rule),
    once per search: `static --reference-ops … --libraries …` then needs no torch."""
    from ..tasks import task_from

    task = task_from(request.task, request.task_spec)
    return {
        "schema": SCHEMA,
        "kind": "static-context",
        "task": task.name,
        "referenceOps": sorted(task.reference_ops()),
        "libraries": task.libraries,
    }
