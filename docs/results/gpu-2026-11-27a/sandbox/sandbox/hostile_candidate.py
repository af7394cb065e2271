"""What a hostile pull request's code tries from inside the harness: read secrets from the
environment, other processes and the file system, reach the network, write outside its
scratch, leave a process behind. Prints one JSON line: {"leaks": [...], "seen": {...}}.

Used by test/security/sandbox.test.ts (through the sandbox on the CPU) and by
scripts/gpu-sandbox.sh (inside a job on the GPU machine). Standard library only.
"""

import json
import os
import socket
import stat
import sys

# never literally in this file, nor in its bytecode (Python folds "A" + "B" into "AB" in the .pyc:
# on the H100, 2026-11-26, the probe found its own cached bytecode), so a copy of it is no find
CANARY = "-".join(["EVK", "CANARY"])
SKIP_TREES = ("/proc", "/sys", "/dev", "/usr", "/lib", "/lib64", "/bin", "/sbin", "/run/udev")
MAX_FILES = 40000


def _read(path, limit=1 << 16):
    """A file's first bytes; None for what cannot be read or is not a plain file. A FIFO
    (a busy machine's /tmp has them) would block open() until a writer came: O_NONBLOCK."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = b""
        while len(data) < limit:
            chunk = os.read(fd, limit - len(data))
            if not chunk:
                break
            data += chunk
        return data.decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def probe(task_dir=None):
    leaks, seen = [], {}
    me = os.getpid()

    # 1. the environment we were given
    for name, value in os.environ.items():
        if CANARY in value or CANARY in name:
            leaks.append(f"env:{name}")
    seen["env"] = sorted(os.environ)

    # 2. other processes: their environments, command lines, signals
    pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    seen["pids"] = len(pids)
    others = []
    for pid in pids:
        if pid == me:
            continue
        cmd = (_read(f"/proc/{pid}/cmdline") or "").replace("\0", " ").strip()
        others.append(cmd[:80])
        env = _read(f"/proc/{pid}/environ")
        if env and CANARY in env:
            leaks.append(f"proc-environ:{pid}:{cmd[:40]}")
        if cmd and CANARY in cmd:
            leaks.append(f"proc-cmdline:{pid}")
    seen["processes"] = others[:20]
    host_like = [c for c in others if "node" in c or "vitest" in c or "sshd" in c or "init" in c]
    if host_like:
        leaks.append(f"processes-outside-visible:{len(host_like)}")

    # 3. files anywhere we can read
    checked = 0
    found = []
    visited = set()
    for top in ["/tmp", os.path.expanduser("~"), "/"]:
        for root, dirs, files in os.walk(top):
            if root.startswith(SKIP_TREES) or root in visited:
                dirs[:] = []
                continue
            visited.add(root)
            for name in files:
                checked += 1
                if checked > MAX_FILES:
                    break
                path = os.path.join(root, name)
                text = _read(path, 4096)
                if text and CANARY in text:
                    found.append(path)
            if checked > MAX_FILES:
                break
    seen["files_checked"] = checked
    leaks += [f"file:{p}" for p in found[:10]]

    # 4. the network: the machine's loopback services, and the world
    listening = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in (_read(table) or "").splitlines()[1:]:
            parts = line.split()
            if len(parts) > 3 and parts[3] == "0A":  # LISTEN
                listening.append(int(parts[1].rsplit(":", 1)[1], 16))
    seen["listening"] = sorted(set(listening))[:20]
    for port in sorted(set(listening))[:20]:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                leaks.append(f"net:127.0.0.1:{port}")
        except OSError:
            pass
    for host, port in (("1.1.1.1", 53), ("140.82.112.3", 443)):
        try:
            with socket.create_connection((host, port), timeout=1):
                leaks.append(f"net:{host}:{port}")
        except OSError:
            pass

    # 5. writes outside scratch: our own task folder, the harness, the home folder
    targets = [os.path.dirname(os.path.abspath(__file__)), os.path.expanduser("~"), "/etc", "/"]
    if task_dir:
        targets.insert(0, task_dir)
    for target in targets:
        path = os.path.join(target, ".evk-hostile-write")
        try:
            with open(path, "w") as f:
                f.write("x")
            os.unlink(path)
            if target not in ("/tmp",) and not target.startswith("/tmp/"):
                leaks.append(f"write:{target}")
        except OSError:
            pass

    # 6. privileges
    seen["uid"] = os.getuid()
    status = _read("/proc/self/status") or ""
    caps = [line.split()[1] for line in status.splitlines() if line.startswith("CapEff:")]
    seen["cap_eff"] = caps[0] if caps else None
    if caps and int(caps[0], 16) != 0:
        leaks.append(f"capabilities:{caps[0]}")
    return {"leaks": leaks, "seen": seen}


# The end of a hostile candidate for kernels/softmax (py format). The harness loads a
# candidate from a copy in its build cache, so a probe beside it is not found:
# scripts/gpu-sandbox.sh writes the candidate as hostile_probe.py followed by this text.
# When the harness loads it, it runs the probe and fails with a short summary of what the
# probe found, so the job's record carries the evidence.
_found = probe(os.path.dirname(os.path.abspath(__file__)))  # noqa: F821 — defined above it
_seen = _found["seen"]
raise RuntimeError(
    "EVK-PROBE "
    + json.dumps({"leaks": _found["leaks"], "pids": _seen["pids"], "uid": _seen["uid"], "cap_eff": _seen["cap_eff"]})
)


def forward(x):  # never reached
    return x.softmax(-1)
