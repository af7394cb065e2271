"""What the harness's commands share: the record's schema version, writing a record, the log
line, the build cache's folder, parsing --define and --nvcc-flag."""

from __future__ import annotations

import json
import os
import stat
import sys

from typing import Any, Mapping


SCHEMA = 1


def write_record(record: Mapping[str, Any], out: str | None) -> None:
    text = json.dumps(record, allow_nan=False, default=str)
    if out and _is_stream(out):
        # `--out /dev/null`, a FIFO, a socket: written into, never renamed over (as root, a
        # rename replaced the machine's /dev/null with a regular file, and every process that
        # then wrote to it as another user failed)
        with open(out, "w") as f:
            f.write(text)
    elif out:
        tmp = out + ".tmp"
        try:  # whatever is there (a symlink a candidate left) goes; the record is a new file
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, out)  # a reader never sees half a record
    else:
        print(text)


def _is_stream(path: str) -> bool:
    """A device, FIFO or socket itself (not a link to one: a link a candidate left is replaced)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISBLK(mode)


def log(msg: str) -> None:
    print(f"[harness] {msg}", file=sys.stderr, flush=True)


def default_cache() -> str:
    return os.environ.get("EVOKERNEL_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "evokernel")


def parse_defines(values: list[str] | None) -> list[str]:
    out = []
    for v in values or []:
        if "=" not in v or not v.split("=", 1)[0].isidentifier():
            raise SystemExit(f"--define takes NAME=VALUE, got {v!r}")
        out.append(v)
    return out


def parse_flags(values: list[str] | None) -> list[str]:
    from ..candidates.build import FlagError, check_flags

    try:
        return check_flags(values or [])
    except FlagError as e:
        raise SystemExit(str(e))
