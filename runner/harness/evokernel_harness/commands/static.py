"""`static` (the static check of a candidate's source), `static-context` (what that check
needs of a task, once per search) and given_static (`static`'s record handed to `verify` and
`evaluate` by the runner, so that they do not check the source again)."""

from __future__ import annotations

import argparse
import json
from typing import TypeGuard

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
        from ..tasks import task_from

        task = task_from(args)
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


def given_static(text: str, fmt: str) -> Record:
    """--static's record (verify's and evaluate's): the static check `static` gave for this
    candidate, held to the shape `static` writes so that anything else stops here."""
    try:
        record = json.loads(text)
    except ValueError:
        record = None
    if not _is_static_record(record, fmt):
        raise SystemExit(f"--static must be this {fmt} candidate's record from `static`")
    return record


FINDING_FIELDS = ("code", "hack", "line", "text", "message")


def _is_static_record(record: object, fmt: str) -> TypeGuard[Record]:
    if not isinstance(record, dict) or record.get("kind") != "static" or record.get("format") != fmt:
        return False
    findings = record.get("findings")
    if not isinstance(findings, list) or not all(
        isinstance(f, dict) and f.get("severity") in ("reject", "warn") and all(k in f for k in FINDING_FIELDS)
        for f in findings
    ):
        return False
    ok = record.get("ok")
    return isinstance(ok, bool) and ok == all(f["severity"] != "reject" for f in findings)


def cmd_static_context(args: argparse.Namespace) -> Record:
    """What the static check needs of a task (the ops its reference calls, its library rule),
    once per search: `static --reference-ops … --libraries …` then needs no torch."""
    from ..tasks import task_from

    task = task_from(args)
    return {
        "schema": SCHEMA,
        "kind": "static-context",
        "task": task.name,
        "referenceOps": sorted(task.reference_ops()),
        "libraries": task.libraries,
    }
