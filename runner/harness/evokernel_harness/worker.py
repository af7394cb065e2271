"""The fork server's long-lived worker: one process that runs `evaluate` requests one after
another, so CUDA, the profiler (CUPTI: seconds on its first use in a process) and the caches a
process builds are set up once per search instead of once per candidate.

A fresh child is still where isolation needs one. The worker is retired (killed; the next
request forks a new one) after any request that was not clean: a record that is not ok (a
wrong, hacking or crashing candidate may have left the process or the GPU context in any
state), an exit that is not 0, a crash, a timeout, the memory limit, or MAX_REQUESTS served.
Only `evaluate` (the search's screen) runs here: `verify` and `bench` (a job's verdicts and
the search's final checks on the winner) always get a fresh child, so nothing a candidate
left in a worker can reach a verdict that is reported. EVOKERNEL_WORKER=0 turns it off.

Protocol: the server writes {"request", "log"} lines to the worker's request pipe (request:
the EvaluateRequest's fields, command_request.py, as a dict); the worker runs the command with
its output in `log` and answers {"exit", "reusable"} on its reply pipe.
"""

import dataclasses
import gc
import json
import os
import resource
import select
import signal
import sys
import time
import traceback
from typing import Any, Callable, NoReturn, TypeGuard

from .command_request import CommandRequest, EvaluateRequest
from .commands import run

MAX_REQUESTS = 100  # then a new worker: bounded growth of loaded candidate libraries


def enabled(request: CommandRequest) -> TypeGuard[EvaluateRequest]:
    """The request goes to the worker: an `evaluate`, unless EVOKERNEL_WORKER=0."""
    return isinstance(request, EvaluateRequest) and os.environ.get("EVOKERNEL_WORKER", "1") != "0"


def records_ok(request: EvaluateRequest) -> bool:
    """Every record an evaluate run wrote is ok (a bench record that only says there is no GPU
    counts as ok: that is the machine, not the candidate)."""
    outs = list(request.outs().values())
    if not all(outs):
        return False
    for path in outs:
        if not os.path.exists(path):
            return False  # a stage that never ran: an earlier one was not ok
        try:
            with open(path) as f:
                record = json.load(f)
        except (OSError, ValueError):
            return False
        if not record.get("ok") and record.get("reason") != "no-gpu":
            return False
    return True


def _between_requests() -> None:
    """What the next request would have had in a fresh child: garbage collected, the CUDA
    allocator's cache emptied, the whole GPU's memory (verify sets a fraction)."""
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.set_per_process_memory_fraction(1.0)


def _serve(req_fd: int, reply_fd: int) -> NoReturn:
    """The worker's loop (in the forked process; never returns)."""
    os.setsid()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    requests = os.fdopen(req_fd, "r")
    served = 0
    for line in requests:
        req = json.loads(line)
        request = EvaluateRequest(**req["request"])
        fd = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        code = 4
        try:
            code = run(request)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 2
        except BaseException:
            traceback.print_exc()
        reusable = False
        try:
            reusable = code == 0 and records_ok(request)
            if reusable:
                _between_requests()
        except BaseException:  # a context that cannot be cleaned is not reused
            traceback.print_exc()
            reusable = False
        served += 1
        sys.stdout.flush()
        sys.stderr.flush()
        os.write(reply_fd, (json.dumps({"exit": code, "reusable": reusable and served < MAX_REQUESTS}) + "\n").encode())
        if not reusable:
            break
    os._exit(0)


def _close_inherited(keep: set[int]) -> None:
    """Closes every descriptor the worker inherited from the server but what it needs. Above
    all the GPU lock: the server holds an flock while a request runs, and a lock stays held
    while any process keeps a descriptor of it open, so a worker that kept the server's would
    hold the GPU for good and the server's next request would wait for it forever."""
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        fds = range(3, 1024)
    for fd in fds:
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


class Worker:
    """The server's handle on its worker (None until the first request that can use one)."""

    def __init__(self, rss_bytes: Callable[[int], int], mem_limit: int) -> None:
        self._rss_bytes = rss_bytes
        self._mem_limit = mem_limit
        self.pid: int | None = None
        self.served = 0
        self.started = 0  # workers forked, for the answer and the tests

    def _start(self) -> int:
        """A new worker: its pid."""
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            _close_inherited(keep={0, 1, 2, req_r, rep_w})
            try:
                _serve(req_r, rep_w)
            finally:
                os._exit(4)
        os.close(req_r)
        os.close(rep_w)
        self.pid, self._req, self._rep, self._buf, self.served = pid, req_w, rep_r, b"", 0
        self.started += 1
        return pid

    def stop(self) -> None:
        if self.pid is None:
            return
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        for fd in (self._req, self._rep):
            try:
                os.close(fd)
            except OSError:
                pass
        self.pid: int | None = None

    def run(self, request: EvaluateRequest, timeout: float, log_path: str) -> dict[str, Any]:
        """One request: the answer fields of server._run_child (exit, signal, timedOut,
        memKilled) plus reused (a worker that served before)."""
        wpid = self.pid if self.pid is not None else self._start()
        reused = self.served > 0
        pid_at_start = wpid
        line = (json.dumps({"request": dataclasses.asdict(request), "log": log_path}) + "\n").encode()
        try:
            os.write(self._req, line)
        except OSError:  # the worker is gone: a new one takes the request
            self.stop()
            wpid = self._start()
            reused, pid_at_start = False, wpid
            os.write(self._req, line)
        start = time.perf_counter()
        reply = status = None
        timed_out = mem_killed = False
        while reply is None and status is None:
            elapsed = time.perf_counter() - start
            ready, _, _ = select.select([self._rep], [], [], 0.02 if elapsed < 2 else 0.1)
            if ready:
                data = os.read(self._rep, 65536)
                if data:
                    self._buf += data
                    if b"\n" in self._buf:
                        line, self._buf = self._buf.split(b"\n", 1)
                        reply = json.loads(line)
                    continue
                _, status = os.waitpid(wpid, 0)  # the pipe closed: the worker ended
                break
            done, st = os.waitpid(wpid, os.WNOHANG)
            if done:
                status = st
                break
            if elapsed > timeout:
                timed_out = True
            elif self._rss_bytes(wpid) > self._mem_limit:
                mem_killed = True
            if timed_out or mem_killed:
                os.killpg(wpid, signal.SIGKILL)
                _, status = os.waitpid(wpid, 0)
                break
        if reply is not None:
            self.served += 1
            answer = {"exit": reply["exit"], "signal": None}
            if not reply.get("reusable"):
                self.stop()
        elif status is not None:
            pid, self.pid = wpid, None  # it ended (or was killed) mid-request: reaped above
            for fd in (self._req, self._rep):
                try:
                    os.close(fd)
                except OSError:
                    pass
            try:  # whatever it started and left behind goes too
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            answer = {
                "exit": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
                "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            }
        else:
            raise AssertionError("the worker's loop ends with its reply or its status")
        return {**answer, "timedOut": timed_out, "memKilled": mem_killed, "reused": reused, "worker": pid_at_start}
