"""`static` (the static check of a candidate's source) and `static-context` (what that check
needs of a task, once per search)."""

from __future__ import annotations

import argparse
import json

from ..record import Record
from .common import SCHEMA


def cmd_static(args: argparse.Namespace) -> Record:
    from ..candidates import detect_format, read_source
    from ..static_check import check

    source = read_source(args.candidate)
    ref_ops, libraries = frozenset(), "allow"
    if args.reference_ops is not None:
        # what `static-context` said of the task: no torch import here (~2 s a candidate)
        ref_ops, libraries = frozenset(_ops_list(args.reference_ops)), args.libraries
    elif args.task:
        from ..tasks import load_task

        task = load_task(args.task)
        ref_ops, libraries = frozenset(task.reference_ops()), task.libraries
    return check(
        args.candidate,
        source,
        detect_format(args.candidate, source),
        ref_ops,
        strict=not args.relaxed,
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


def cmd_static_context(args: argparse.Namespace) -> Record:
    """What the static check needs of a task (the ops its reference calls, its library rule),
    once per search: `static --reference-ops … --libraries …` then needs no torch."""
    from ..tasks import load_task

    task = load_task(args.task)
    return {
        "schema": SCHEMA,
        "kind": "static-context",
        "task": task.name,
        "referenceOps": sorted(task.reference_ops()),
        "libraries": task.libraries,
    }
