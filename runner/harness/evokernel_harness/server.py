"""The fork server: import torch once, then a fresh child process for every request, except
the search's `evaluate` requests, which go to a long-lived worker (worker.py) for as long as
they stay clean. Requests run one at a time (the GPU's work).

The CPU fork server (`serve --cpu`, serve_cpu): static checks and builds, which need neither
torch nor the GPU, each in a child forked at once, many in flight. A search starts one sandbox
for all of them instead of one per check and per build (each a new set of namespaces and
mounts: tenths of a second a candidate, twice).

CUDA is initialised only in children (and the worker), so a candidate that ends its process
(an illegal memory access, a hang, a segfault) leaves the next request a healthy GPU.
Requests and answers are JSON lines (docs/DESIGN.md, "The fork server").
"""

import gc
import json
import os
import resource
import select
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Optional

from . import gpulock, limits, worker
from .command_request import BadRequest, CommandRequest, parse_command
from .commands import run
from .worker import Worker

# Resident memory per child: a backstop 4 GiB above each command's data limit (limits.py: an
# allocation past that fails in the process, named), for what RLIMIT_DATA does not count.
MEM_LIMIT = (limits.memory_limit_mb() + 4096) << 20


@dataclass(frozen=True)
class Request:
    """One request line (src/shared/contract/harness-request.ts; the generated
    contract/harness-request.schema.json): the harness command to run in a child, its typed
    request (command_request.py), and the seconds it may take."""

    id: Optional[str]
    command: CommandRequest
    timeout_s: float


class BadCommand(ValueError):
    """A request line whose envelope is whole but whose command is not one: answered for its
    id, exit 2, as a usage error on the command line."""

    def __init__(self, id: Optional[str], message: str) -> None:
        super().__init__(message)
        self.id = id


def parse_request(line: str) -> Request:
    """A request line, parsed once; ValueError or AttributeError: not a request (before, a
    timeoutS that is not a number ended the server once the child was due); BadCommand: the
    command it carries is not one."""
    req = json.loads(line)
    try:
        timeout_s = float(req.get("timeoutS", 300))
    except (TypeError, ValueError):
        raise ValueError("timeoutS must be a number") from None
    id = req.get("id")
    try:
        command = parse_command(req.get("request"))
    except BadRequest as err:
        raise BadCommand(id if isinstance(id, str) else None, str(err)) from None
    return Request(id, command, timeout_s)


@dataclass(frozen=True)
class _Proc:
    """A live process as /proc/PID/stat gives it: its group, session and resident bytes."""

    pid: int
    group: int  # field 5 of stat
    session: int  # field 6
    rss: int  # field 24, in pages, times the page size


def _processes() -> list[_Proc]:
    """Every live process /proc shows (a zombie, dead but not reaped, is left out)."""
    found = []
    page = resource.getpagesize()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if fields[0] in ("Z", "X"):
                continue
            found.append(_Proc(int(entry), int(fields[2]), int(fields[3]), int(fields[21]) * page))
        except (OSError, IndexError, ValueError):
            continue
    return found


def _rss_bytes(pid: int) -> int:
    """Resident memory of a child's whole process group (the child and what it started)."""
    return sum(p.rss for p in _processes() if p.group == pid)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _answer(
    id: Optional[str], status: int, start: float, timed_out: bool, mem_killed: bool, log_path: str
) -> dict[str, Any]:
    """A request's answer line, from its child's wait status."""
    return {
        "id": id,
        "exit": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "seconds": round(time.perf_counter() - start, 3),
        "timedOut": timed_out,
        "memKilled": mem_killed,
        "log": _log(log_path),
    }


def _child(command: CommandRequest, log_path: str) -> None:
    os.setsid()
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    code = 4
    try:
        code = run(command)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 2
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _run(req: Request, out: Any) -> dict[str, Any]:
    """One request; the GPU's machine-wide lock is taken before the child starts, so waiting
    for another process's GPU work never counts against the request's deadline. A line
    {"id", "started"} tells the client when the deadline starts. A verification may share the
    GPU with others (gpulock.py); one that does not pass there runs again alone, and that run's
    answer is the request's: a neighbour's memory or time never decides a verdict."""
    answer, shared, waited = _run_held(req, out, share=req.command.gpu_share)
    if shared and not _passed(req.command, answer):
        first = answer
        answer, _, again = _run_held(req, out, share=False)
        waited += again
        ended = f"exit {first['exit']}" if first["signal"] is None else f"signal {first['signal']}"
        said = (
            f"did not pass while it shared the GPU with other verifications ({ended}); verified "
            "again alone, and this verdict is that run's"
        )
        answer["log"] = f"evk-gpu-share: {said}\n{answer['log']}"
        _warn_in_record(req.command, said)
    answer["waitedS"] = round(waited, 3)
    return answer


def _run_held(req: Request, out: Any, share: bool) -> tuple[dict[str, Any], bool, float]:
    def say(message: dict[str, Any]) -> None:
        print(json.dumps({"id": req.id, **message}), file=out, flush=True)

    with gpulock.hold(req.command.gpu_work, on_wait=lambda: say({"waiting": True}), share=share) as held:
        say({"started": True, "waitedS": round(held.waited, 3)})
        os.environ[gpulock.HELD] = "1"
        try:
            answer = _run_child(req)
        finally:
            os.environ.pop(gpulock.HELD, None)
            _reap_strays()
    return answer, held.shared, held.waited


def _warn_in_record(command: CommandRequest, said: str) -> None:
    """Adds a warning to the record the request wrote, where it wrote one."""
    path = getattr(command, "out", None)
    try:
        with open(path) as f:  # type: ignore[arg-type]
            record = json.load(f)
        if not isinstance(record, dict) or not isinstance(record.get("warnings"), list):
            return
        record["warnings"].append(said)
        with open(path, "w") as f:  # type: ignore[arg-type]
            json.dump(record, f)
    except (OSError, TypeError, ValueError):
        return


def _passed(command: CommandRequest, answer: dict[str, Any]) -> bool:
    """A clean exit with a record that says ok (what a verify request writes to its --out)."""
    if answer["exit"] != 0 or answer["timedOut"] or answer["memKilled"]:
        return False
    path = getattr(command, "out", None)
    if path is None:
        return False
    try:
        with open(path) as f:
            return json.load(f).get("ok") is True
    except (OSError, ValueError, AttributeError):
        return False


WORKER = Worker(_rss_bytes, MEM_LIMIT)


def _run_child(req: Request) -> dict[str, Any]:
    command, timeout = req.command, req.timeout_s
    fd, log_path = tempfile.mkstemp(prefix="evk-child-", suffix=".log")
    os.close(fd)
    start = time.perf_counter()
    if worker.enabled(command):
        answer = WORKER.run(command, timeout, log_path)
        return {"id": req.id, **answer, "seconds": round(time.perf_counter() - start, 3), "log": _log(log_path)}
    pid = os.fork()
    if pid == 0:
        _child(command, log_path)
    timed_out = mem_killed = False
    status = None
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        elapsed = time.perf_counter() - start
        if elapsed > timeout:
            timed_out = True
        elif _rss_bytes(pid) > MEM_LIMIT:
            mem_killed = True
        if timed_out or mem_killed:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _, status = os.waitpid(pid, 0)
            break
        time.sleep(0.02 if elapsed < 2 else 0.1)
    try:  # whatever the child started and left behind goes too
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    return _answer(req.id, status, start, timed_out, mem_killed, log_path)


def _bad_command(err: BadCommand) -> dict[str, Any]:
    """The answer to a request whose command is not one: no child, exit 2, the reason in the log."""
    return {
        "id": err.id,
        "exit": 2,
        "signal": None,
        "seconds": 0.0,
        "timedOut": False,
        "memKilled": False,
        "log": f"bad request: {err}\n",
    }


def _log(log_path: str) -> str:
    """The end of a child's output; the file goes."""
    try:
        with open(log_path, errors="replace") as f:
            log = f.read()[-8000:]
        os.unlink(log_path)
    except OSError:
        log = ""
    return log


def _in_sandbox() -> bool:
    """The server is the first process of the sandbox's PID namespace (runner/sandbox/enter.sh
    execs it): every other process there was started by a request or the worker."""
    return os.getpid() == 1


def _reap_strays() -> None:
    """Nothing a request started outlives it: a process that left its group (setsid, a double
    fork) is killed here, and what it left reaped (orphans come to the namespace's first
    process). Only inside the sandbox, where /proc lists nothing but ours."""
    if not _in_sandbox():
        return
    keep = {1, WORKER.pid}
    for p in _processes():
        # the worker's own group is idle between requests
        if p.pid not in keep and (WORKER.pid is None or p.group != WORKER.pid):
            _kill(p.pid)
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break


def _not_dumpable() -> None:
    """No process of the sandbox (same user) may read this one's memory or trace it."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except (OSError, AttributeError):
        pass


def warm() -> None:
    """What every child and the worker inherit: torch and the harness imported once, and the
    objects of those imports frozen out of the garbage collector (gc.freeze). A collection in a
    child then walks only what that child made: the worker collects between the stages of
    every candidate and after it (worker._between_requests, evaluate._fresh), and a walk over
    torch's imported objects (torch._dynamo's included) cost each candidate's GPU turn tenths of
    a second. Frozen objects are still freed by their reference counts; only a reference cycle
    among them would never be collected, and imported modules live as long as the process."""
    import torch  # imported once here, inherited by every child

    import torch.profiler  # likewise (the profile of a search candidate)

    try:  # the first profile or flop count in a process imports it: 5-7 s on the H100, per child
        import torch._dynamo  # noqa: F401 # pyright: ignore[reportMissingImports] — once here, for every child
    except Exception:  # older torch, or a broken install: the children import what they need
        pass

    from . import bench, compare, guards, verify  # noqa: F401 — likewise
    from .candidates import build, load  # noqa: F401 — likewise

    gc.collect()  # the imports' own garbage is not kept for good
    gc.freeze()


def _ready() -> Any:
    """The protocol stream, once the server says it is ready: stdout for answers only (what
    the server prints goes to stderr), and the server's memory closed to the sandbox."""
    _not_dumpable()
    out = sys.stdout
    sys.stdout = sys.stderr  # nothing but answers on the protocol stream
    print(json.dumps({"ready": True, "pid": os.getpid()}), file=out, flush=True)
    return out


def serve() -> int:
    gpulock.check()  # a lock it could never take: said now, not as every candidate's crash
    warm()
    out = _ready()
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = parse_request(line)
        except BadCommand as err:  # for its id, as a usage error in a child was before
            print(json.dumps(_bad_command(err)), file=out, flush=True)
            continue
        except (ValueError, AttributeError) as err:
            print(json.dumps({"id": None, "error": f"bad request: {err}"}), file=out, flush=True)
            continue
        print(json.dumps(_run(req, out)), file=out, flush=True)
    WORKER.stop()
    return 0


# --- the CPU fork server ---------------------------------------------------------------
CPU_COMMANDS = ("static", "build")
POLL_S = 0.01  # how often children are looked at while one runs
MEM_EVERY_S = 0.25  # how often their memory is


@dataclass
class _Running:
    req: Request
    start: float
    log_path: str
    timed_out: bool = False
    mem_killed: bool = False


def _end_session(session: int) -> None:
    """Kills what a child left running in its session (its own group and nvcc's), pass after
    pass: a process seen alive may start another before it is killed (seen: an nvcc started
    between the look and the kill outlived its child). A killed process starts nothing."""
    for _ in range(20):
        members = [p.pid for p in _processes() if p.session == session and p.pid != os.getpid()]
        if not members:
            return
        for pid in members:
            _kill(pid)


class CpuServer:
    """The loop of serve_cpu, on one thread (a fork from a process with other threads may
    inherit a lock one of them held): request lines are read as they come, each starts a
    child at once, and each child's end is answered as it comes. Children past their
    deadline or their memory limit are killed, with whatever they started."""

    def __init__(self, out: Any, mem_limit: int = MEM_LIMIT) -> None:
        self.out, self.mem_limit = out, mem_limit
        self.running: dict[int, _Running] = {}
        self.mem_checked = 0.0

    def say(self, message: dict[str, Any]) -> None:
        print(json.dumps(message), file=self.out, flush=True)

    def take(self, line: str) -> None:
        line = line.strip()
        if not line:
            return
        try:
            req = parse_request(line)
        except BadCommand as err:
            self.say(_bad_command(err))
            return
        except (ValueError, AttributeError) as err:
            self.say({"id": None, "error": f"bad request: {err}"})
            return
        name = req.command.command
        if name not in CPU_COMMANDS:
            runs = " and ".join(CPU_COMMANDS)
            self.say(_bad_command(BadCommand(req.id, f"the CPU fork server runs {runs} only, not {name}")))
            return
        fd, log_path = tempfile.mkstemp(prefix="evk-child-", suffix=".log")
        os.close(fd)
        # said before the fork, as the GPU server does: a request the client never heard begin
        # never ran, and goes to a new server if this one dies (harness/fork-server.ts)
        self.say({"id": req.id, "started": True, "waitedS": 0.0})
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(req.command, log_path)
        self.running[pid] = _Running(req, time.perf_counter(), log_path)

    def poll(self) -> None:
        """Answers the children that ended; kills those past their deadline or memory, and
        strays (end_strays)."""
        ended = False
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            run = self.running.pop(pid, None)
            if run is None:
                continue  # an orphan of an earlier child (this is the namespace's first process)
            _end_session(pid)
            self.say(_answer(run.req.id, status, run.start, run.timed_out, run.mem_killed, run.log_path))
            ended = True
        now = time.perf_counter()
        processes = None
        if ended or now - self.mem_checked >= MEM_EVERY_S:
            self.mem_checked = now
            processes = _processes()
            self.end_strays(processes)
        for pid, run in self.running.items():
            if run.timed_out or run.mem_killed:
                continue
            if now - run.start > run.req.timeout_s:
                run.timed_out = True
            elif processes is not None and sum(p.rss for p in processes if p.session == pid) > self.mem_limit:
                run.mem_killed = True
            if run.timed_out or run.mem_killed:
                _end_session(pid)  # its end is answered when it is reaped

    def end_strays(self, processes: list[_Proc]) -> None:
        """Inside the sandbox, where /proc lists nothing but ours: a process in no running
        child's session and not in the server's own (a child before its setsid) left its
        child's session (setsid, a double fork: a Python candidate's build imports it) and is
        killed. As the GPU fork server's _reap_strays, but while other children run."""
        if not _in_sandbox():
            return
        keep = {os.getsid(0), *self.running}
        for p in processes:
            if p.session not in keep and p.pid != os.getpid():
                _kill(p.pid)

    def serve(self, fd: int) -> None:
        """Until stdin ends and every child has been answered."""
        pending = b""
        open_ = True
        while open_ or self.running:
            # after the input ends, the wait alone: the children still running are polled
            ready, _, _ = select.select([fd] if open_ else [], [], [], POLL_S if self.running else MEM_EVERY_S)
            if ready:
                chunk = os.read(fd, 1 << 16)
                if chunk:
                    pending += chunk
                    *lines, pending = pending.split(b"\n")
                else:
                    open_ = False
                    lines, pending = [pending], b""
                for line in lines:
                    self.take(line.decode(errors="replace"))
            self.poll()
        self.end_strays(_processes())


def serve_cpu() -> int:
    """`serve --cpu`: no torch, the build and static check modules imported once."""
    from . import static_check  # noqa: F401 — inherited by every child
    from .candidates import build  # noqa: F401 — likewise

    gc.collect()
    gc.freeze()
    CpuServer(_ready()).serve(sys.stdin.fileno())
    return 0
