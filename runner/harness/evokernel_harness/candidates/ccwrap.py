"""Compiler wrapper for torch-extension builds: `python ccwrap.py cxx|nvcc REAL ARGS...`.

torch.utils.cpp_extension runs `$CXX` for host translation units and the link, and
`$PYTORCH_NVCC` for .cu units (both read from the environment when it writes build.ninja).
The harness points them here (`extension_env`). For every compile or link this wrapper:

- takes one of the machine's compile slots (`jobserver.slot`) while the compiler runs, so
  ninja's jobs of every evokernel process on the machine share one pool of cores;
- for a host unit that includes <torch/extension.h> (load_inline's main.cpp: the pybind11
  module and the declarations), looks its object up in a cache keyed by the unit's own
  content, the exact command line and the torch build (`EVOKERNEL_CCWRAP_SALT`), so
  candidates with the same bindings compile them once;
- compiles such a unit with a precompiled <torch/extension.h> (built once per compiler,
  torch and flag set, in `<cache>/pch`), which only saves parsing: the object code is the same.

Device code, nvcc's flags and the host flags are never changed. Whenever the fast path
cannot be used (a quoted #include, no cache, a PCH that fails to build or is refused, a
compile that fails with the PCH) it runs the command exactly as torch wrote it and says so
in an `evk-fastpath:` line of the build log, beside each compile's seconds.
Imports only the standard library and `jobserver`: it starts once per compiler process.
"""

import hashlib
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jobserver  # noqa: E402 — run as a script (the compiler wrapper): its folder is put on the path first

PCH_HEADER = "evk_torch_extension.h"
TORCH_EXT_INCLUDE = "#include <torch/extension.h>"
HOST_SOURCES = (".cpp", ".cc", ".cxx", ".c++")
MODE = ["plain"]  # how the last fast-path compile went, for the timing line


def note(message: str) -> None:
    """To EVOKERNEL_CCWRAP_LOG (the build appends it to its log: torch shows a quiet
    load_inline's compiler output only when the build fails), else to stderr."""
    line = f"evk-fastpath: {message}\n"
    path = os.environ.get("EVOKERNEL_CCWRAP_LOG")
    if path:
        with open(path, "a") as f:
            f.write(line)
    else:
        sys.stderr.write(line)
        sys.stderr.flush()


def parse(args: list[str]) -> tuple[str | None, str | None, str | None, list[str]]:
    """(output, depfile, source, rest): the per-unit parts of a compile line and the flags."""
    out = dep = src = None
    rest = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-o" and i + 1 < len(args):
            out = args[i + 1]
            i += 2
            continue
        if a == "-MF" and i + 1 < len(args):
            dep = args[i + 1]
            i += 2
            continue
        if not a.startswith("-") and a.endswith(HOST_SOURCES + (".cu",)) and src is None:
            src = a
        else:
            rest.append(a)
        i += 1
    return out, dep, src, rest


def pch_flags(rest: list[str]) -> list[str]:
    """The flags a precompiled header must share with the unit: all but the per-unit ones."""
    return [a for a in rest if a not in ("-c", "-MMD", "-MD") and not a.startswith("-DTORCH_EXTENSION_NAME=")]


def digest(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part if isinstance(part, bytes) else str(part).encode())
        h.update(b"\0")
    return h.hexdigest()


def compiler_id(real: str) -> str:
    path = shutil.which(real) or real
    try:
        st = os.stat(os.path.realpath(path))
        return f"{os.path.realpath(path)}:{st.st_size}:{st.st_mtime_ns}"
    except OSError:
        return path


def run(cmd: list[str]) -> int:
    return subprocess.call(cmd)


def fast_host_compile(real: str, args: list[str], cache: str) -> int | None:
    """Returns the exit status, or None to run the command as written."""
    out, dep, src, rest = parse(args)
    if out is None or src is None or "-c" not in rest or not src.endswith(HOST_SOURCES):
        return None
    try:
        with open(src, "rb") as f:
            source = f.read()
    except OSError:
        return None
    if TORCH_EXT_INCLUDE.encode() not in source:
        return None
    if b'#include "' in source:
        note(f"{os.path.basename(src)} includes a local header: compiled as torch wrote it")
        return None
    salt = os.environ.get("EVOKERNEL_CCWRAP_SALT", "")
    cid = compiler_id(real)
    key = digest("obj", cid, salt, "\0".join(rest), source)
    objdir = os.path.join(cache, "objcache")
    os.makedirs(objdir, exist_ok=True)
    cached = os.path.join(objdir, key[:32] + ".o")
    if os.path.exists(cached):
        shutil.copyfile(cached, out)
        if dep:
            with open(dep, "w") as f:
                f.write(f"{out}: {src}\n")
        note(f"binding unit {os.path.basename(src)} from the object cache ({key[:12]})")
        MODE[0] = "object cache"
        return 0
    include = ensure_pch(real, rest, cache, cid, salt)
    cmd = [real, *args]
    if include is not None:
        cmd = [real, "-Winvalid-pch", "-include", include, *args]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    text = proc.stdout.decode(errors="replace")
    if include is not None and (proc.returncode != 0 or "invalid-pch" in text or ".gch" in text):
        note("the precompiled header was refused or the compile failed with it: compiled as torch wrote it")
        sys.stdout.write(text)
        return None
    sys.stdout.write(text)
    MODE[0] = "precompiled header" if include else "no precompiled header"
    if proc.returncode == 0:
        tmp = f"{cached}.{os.getpid()}.tmp"
        shutil.copyfile(out, tmp)
        os.replace(tmp, cached)
        note(
            f"binding unit {os.path.basename(src)} compiled {'with' if include else 'without'} "
            f"the precompiled header, cached ({key[:12]})"
        )
    return proc.returncode


def pch_folder(real: str, rest: list[str], cache: str) -> tuple[str, list[str], str]:
    flags = pch_flags(rest)
    key = digest("pch", compiler_id(real), os.environ.get("EVOKERNEL_CCWRAP_SALT", ""), "\0".join(flags))
    return os.path.join(cache, "pch", key[:24]), flags, key


def wait_for_pch(real: str, args: list[str], cache: str) -> None:
    """Before taking a slot: if another process is precompiling the header this unit needs,
    wait for it here, holding no slot (a slot held while waiting is a core left idle)."""
    _, _, src, rest = parse(args)
    if src is None or not src.endswith(HOST_SOURCES) or "-c" not in rest:
        return
    folder, _, _ = pch_folder(real, rest, cache)
    if os.path.exists(os.path.join(folder, PCH_HEADER + ".gch")) or not os.path.isdir(folder):
        return
    with jobserver.exclusive(os.path.join(folder, "lock")):
        pass


def ensure_pch(real: str, rest: list[str], cache: str, cid: str, salt: str) -> str | None:
    """The header to -include (its .gch beside it), built once per flag set; None if it fails."""
    folder, flags, key = pch_folder(real, rest, cache)
    header = os.path.join(folder, PCH_HEADER)
    gch = header + ".gch"
    failed = os.path.join(folder, "failed")
    if os.path.exists(gch):
        return header
    if os.path.exists(failed):
        return None
    os.makedirs(folder, exist_ok=True)
    with jobserver.exclusive(os.path.join(folder, "lock")):
        if os.path.exists(gch):
            return header
        with open(header, "w") as f:
            f.write(TORCH_EXT_INCLUDE + "\n")
        tmp = f"{gch}.{os.getpid()}.tmp"
        proc = subprocess.run(
            [real, *flags, "-x", "c++-header", header, "-o", tmp], stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        if proc.returncode != 0:
            with open(failed, "w") as f:
                f.write(proc.stdout.decode(errors="replace"))
            note(f"could not precompile <torch/extension.h> (see {failed}): compiling without it")
            return None
        os.replace(tmp, gch)
        note(f"precompiled <torch/extension.h> for this flag set ({key[:12]})")
    return header


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        sys.stderr.write("usage: ccwrap.py cxx|nvcc REAL [ARGS...]\n")
        return 2
    kind, real, args = argv[0], argv[1], argv[2:]
    if "-o" not in args:  # -v, --version, -dumpversion: torch asking what the compiler is
        os.execvp(real, [real, *args])
    out, _, src, _ = parse(args)
    what = f"{'compiled' if '-c' in args else 'linked'} {os.path.basename(src or out or '?')}"
    asked = time.perf_counter()
    if kind == "cxx" and os.environ.get("EVOKERNEL_CCWRAP_CACHE") and os.environ.get("EVOKERNEL_FASTPATH", "1") != "0":
        wait_for_pch(real, args, os.environ["EVOKERNEL_CCWRAP_CACHE"])
    with jobserver.slot(1):
        started = time.perf_counter()
        waited = f", {started - asked:.1f} s waiting for a compile slot" if started - asked >= 0.5 else ""
        cache = os.environ.get("EVOKERNEL_CCWRAP_CACHE")
        # EVOKERNEL_FASTPATH=0: every command as torch wrote it, still through the slots
        if kind == "cxx" and cache and os.environ.get("EVOKERNEL_FASTPATH", "1") != "0":
            try:
                status = fast_host_compile(real, args, cache)
            except OSError as err:
                note(f"fast path failed ({err}): compiled as torch wrote it")
                status = None
            if status is not None:
                note(f"{what} in {time.perf_counter() - started:.1f} s (fast path: {MODE[0]}){waited}")
                return status
        status = run([real, *args])
        note(f"{what} in {time.perf_counter() - started:.1f} s ({kind}, as torch wrote it){waited}")
        return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
