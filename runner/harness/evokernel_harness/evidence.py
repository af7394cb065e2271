"""What candidate code did when it ran, that reading it cannot tell: the exceptions raised and
handled inside it (an `except` branch that ran), while it loaded, was verified and was timed.

A `try`/`except` around a build or a launch is evidence, not a verdict: it matters only when
its `except` branch ran. On Python >= 3.12 the EXCEPTION_HANDLED event of sys.monitoring
reports every handled exception with the code object that handled it, at no cost while none
is raised; before 3.12, sys.settrace (switched on around the candidate's load and calls only)
sees an "exception" event in a candidate frame followed by a "line" event in the same frame.
Only code compiled from the candidate's own file counts.
"""

import os
import re
import sys
from typing import Any, ContextManager, Iterable

NAME = "evokernel-evidence"
MAX_KINDS = 20  # distinct (phase, line, type) kept per candidate; further ones are counted
# the lines of a compiler's log that say what went wrong (nvcc, gcc, ninja, ptxas)
COMPILER_ERROR = re.compile(r"(?:\berror\b|\bError\b|undefined reference|undefined symbol|was not declared|FAILED:)")


class Recorder:
    """The handled exceptions of one candidate file, by phase (load, verify, bench)."""

    def __init__(self, path: str) -> None:
        self.path = os.path.realpath(path)
        self.phase = "load"
        self.kinds = {}  # (phase, line, type) -> {phase, line, type, message, count}
        self.dropped = 0

    def saw(self, line: int, exc: BaseException) -> None:
        key = (self.phase, line, type(exc).__name__)
        entry = self.kinds.get(key)
        if entry is None:
            if len(self.kinds) >= MAX_KINDS:
                self.dropped += 1
                return
            entry = self.kinds[key] = {
                "phase": self.phase,
                "line": line,
                "type": type(exc).__name__,
                "message": describe(exc),
                "count": 0,
            }
        entry["count"] += 1

    def handled(self, phases: Iterable[str] | None = None) -> list[dict[str, Any]]:
        return [dict(e) for e in self.kinds.values() if phases is None or e["phase"] in phases]

    def active(self) -> bool:
        return _BACKEND.active()


def describe(exc: BaseException) -> str:
    """An exception in the user's terms: a failed extension build is the compiler's words."""
    text = str(exc)
    if "Error building extension" in text or "ninja" in text and "error" in text.lower():
        lines = [ln.strip() for ln in text.splitlines() if COMPILER_ERROR.search(ln)]
        words = [ln for ln in lines if not ln.startswith(("ninja: build stopped", "FAILED:"))] or lines
        head = text.splitlines()[0].split(":")[0] if text else "Error building extension"
        return (head + ": " + " | ".join(w[:240] for w in words[:3]))[:800]
    return f"{text.strip()[:400]}"


def summary(entries: list[dict[str, Any]]) -> list[str]:
    """One sentence per handled exception, for a record's message or warnings."""
    out = []
    for e in entries:
        times = "" if e["count"] == 1 else f" ({e['count']} times)"
        what = f"{e['type']}: {e['message']}" if e["message"] else e["type"]
        if "Error building extension" in e["message"]:
            out.append(f"the extension build failed, handled at line {e['line']}{times}: {e['message']}")
        else:
            out.append(
                f"{what} was raised and handled by the except branch at line {e['line']} during {e['phase']}{times}"
            )
    return out


# --- one watcher per process, dispatching to the recorders by file ------------------------

_RECORDERS = {}


def watch(path: str) -> Recorder:
    """The recorder of a candidate file (one per file), watching from now on."""
    real = os.path.realpath(path)
    rec = _RECORDERS.get(real)
    if rec is None:
        rec = _RECORDERS[real] = Recorder(real)
        _BY_NAME.clear()
    _BACKEND.install()
    return rec


_BY_NAME = {}  # a code object's file name -> its recorder or None (realpath once per name)


def _recorder(code):
    name = code.co_filename
    try:
        return _BY_NAME[name]
    except KeyError:
        rec = _RECORDERS.get(name) or (_RECORDERS.get(os.path.realpath(name)) if name.startswith(os.sep) else None)
        _BY_NAME[name] = rec
        return rec


def _line_of(code, offset):
    """The line of the handler at `offset`: its first instruction (PUSH_EXC_INFO) has no line
    of its own, so the first line at or after it, the `except` clause."""
    for start, end, line in code.co_lines():
        if end > offset and line is not None:
            return line
    return code.co_firstlineno


class _Monitoring:
    """sys.monitoring (3.12+): on for the whole process once installed; cheap (exceptions only)."""

    def __init__(self):
        self.tool = None
        self.unavailable = False  # every tool id was in use: no record, nothing to take away

    def install(self):
        if self.tool is not None or self.unavailable:
            return
        mon = sys.monitoring  # pyright: ignore[reportAttributeAccessIssue] — Python >= 3.12 (_BACKEND chose it)
        for tool in (4, 3, 1, 5, 2, 0):
            if mon.get_tool(tool) is None:
                mon.use_tool_id(tool, NAME)
                self.tool = tool
                break
        else:
            self.unavailable = True
            return
        mon.register_callback(self.tool, mon.events.EXCEPTION_HANDLED, self._handled)
        mon.set_events(self.tool, mon.events.EXCEPTION_HANDLED)

    @staticmethod
    def _handled(code, offset, exc):
        rec = _recorder(code)
        if rec is not None:
            rec.saw(_line_of(code, offset), exc)

    def active(self):
        """False only when the record the harness had was taken away (a tool id freed, its
        events switched off): with no tool id to be had there is no record to lose."""
        mon = sys.monitoring  # pyright: ignore[reportAttributeAccessIssue] — likewise
        if self.unavailable:
            return True
        return (
            self.tool is not None
            and mon.get_tool(self.tool) == NAME
            and bool(mon.get_events(self.tool) & mon.events.EXCEPTION_HANDLED)
        )

    def scope(self):
        return _Nothing()


class _Trace:
    """sys.settrace (before 3.12): on only inside scope(), for frames of candidate files."""

    def __init__(self):
        self.pending = {}

    def install(self):
        pass

    def _global(self, frame, event, arg):
        if event == "call" and _recorder(frame.f_code) is not None:
            return self._local
        return None

    def _local(self, frame, event, arg):
        if event == "exception":
            self.pending[id(frame)] = arg[1]
        elif id(frame) in self.pending:
            exc = self.pending.pop(id(frame))
            if event == "line":  # the frame goes on after the exception: a handler ran
                rec = _recorder(frame.f_code)
                if rec is not None:
                    rec.saw(frame.f_lineno, exc)
        return self._local

    def active(self):
        return sys.gettrace() == self._global or not _SCOPES

    def scope(self):
        return _TraceScope(self)


_SCOPES = []


class _TraceScope:
    def __init__(self, trace):
        self.trace = trace

    def __enter__(self):
        _SCOPES.append(sys.gettrace())
        sys.settrace(self.trace._global)
        return self

    def __exit__(self, *exc):
        sys.settrace(_SCOPES.pop())
        self.trace.pending.clear()
        return False


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_BACKEND = _Monitoring() if hasattr(sys, "monitoring") else _Trace()


def scope() -> ContextManager[Any]:
    """Around a load or a call of candidate code: what sys.settrace needs switched on."""
    return _BACKEND.scope()


def backend() -> str:
    if isinstance(_BACKEND, _Monitoring):
        return "none (every sys.monitoring tool id in use)" if _BACKEND.unavailable else "sys.monitoring"
    return "sys.settrace"
