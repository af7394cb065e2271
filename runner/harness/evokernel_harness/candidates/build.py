"""Compile a candidate into a cached artifact. Imports torch only for formats that need it."""

import contextlib
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from typing import Any, Iterable, Sequence

from .. import VERSION, workdir
from ..record import BuildRecord
from . import detect_format, jobserver, read_source

HERE = os.path.dirname(os.path.abspath(__file__))
INCLUDE = os.path.normpath(os.path.join(HERE, "..", "..", "include"))
SHIM = os.path.join(INCLUDE, "evk_shim.cu")


def nvcc_path() -> str | None:
    found = shutil.which("nvcc")
    if found:
        return found
    for cand in ("/usr/local/cuda/bin/nvcc",):
        if os.path.exists(cand):
            return cand
    return None


# nvcc flags a build may be given (the tuner's variants): each keeps every result bit for bit
# as written. Flags that trade accuracy for speed (fast math, flush-to-zero, approximate
# division or square root, contraction changes) are refused whoever asks. The same list is in
# runner/src/proposers/compile-flags.ts.
SAFE_FLAGS = (
    re.compile(r"-maxrregcount=\d{2,3}"),
    re.compile(r"--ptxas-options=-dlcm=(ca|cg)"),
    re.compile(r"--ptxas-options=-O[0-3]"),
    re.compile(r"-Xptxas=-O[0-3]"),
    re.compile(r"-extra-device-vectorization"),
)
PRECISION_LOWERING = re.compile(r"fast.?math|ftz|prec-?div|prec-?sqrt|fmad|approx", re.I)


class FlagError(ValueError):
    pass


def check_flags(flags: Iterable[str]) -> list[str]:
    """The flags, sorted, or FlagError naming the first that is not on the allow-list."""
    for flag in flags:
        if PRECISION_LOWERING.search(flag) or not any(p.fullmatch(flag) for p in SAFE_FLAGS):
            raise FlagError(
                f"nvcc flag {flag!r} is not allowed: only flags that keep results bit for bit "
                "(-maxrregcount=N, --ptxas-options=-dlcm=ca|cg, --ptxas-options=-O0..3, "
                "-extra-device-vectorization) may be passed"
            )
    return sorted(flags)


def content_hash(
    fmt: str, source: str, defines: Sequence[str], arch: str, extra: str = "", flags: Sequence[str] = ()
) -> str:
    h = hashlib.sha256()
    for part in (VERSION, fmt, arch, extra, "\0".join(defines), "\0".join(flags), source):
        h.update(part.encode())
        h.update(b"\0")
    if fmt == "evk":
        h.update(read_source(SHIM).encode())
    return h.hexdigest()


def build(
    path: str,
    cache: str,
    defines: Iterable[str] = (),
    arch: str = "sm_90",
    timeout: float | None = None,
    flags: Iterable[str] = (),
    task: Any = None,
) -> BuildRecord:
    """task (a loaded Task, or None): a Python candidate that builds an extension when its
    ModelNew is constructed is constructed here too (prepare_py), so that verification, under
    the GPU lock, finds the build done."""
    source = read_source(path)
    fmt = detect_format(path, source)
    defines = sorted(defines)
    flags = check_flags(flags)
    if flags and fmt == "py":
        raise FlagError("nvcc flags apply to .cu candidates only, not to a Python candidate")
    digest = content_hash(fmt, source, defines, arch, flags=flags)
    out_dir = os.path.join(os.path.abspath(cache), digest[:24])
    done = os.path.join(out_dir, "artifact")

    def record(ok: bool, artifact: str | None, seconds: float, cached: bool = False, log: str = "") -> BuildRecord:
        return {
            "schema": 1,
            "kind": "build",
            "format": fmt,
            "hash": digest,
            "cached": cached,
            "log": log,
            "ok": ok,
            "artifact": artifact,
            "seconds": seconds,
        }

    if os.path.exists(done) and not _needs_prepare(fmt, source, out_dir, task):
        with open(done) as f:
            artifact = f.read().strip()
        if os.path.exists(artifact):
            return record(True, artifact, 0.0, cached=True)
    os.makedirs(out_dir, exist_ok=True)
    # one build per content hash at a time, across processes: a second waits, then takes
    # the artifact the first left
    with jobserver.exclusive(out_dir + ".lock"):
        if os.path.exists(done):
            with open(done) as f:
                artifact = f.read().strip()
            if os.path.exists(artifact):
                if not _needs_prepare(fmt, source, out_dir, task):
                    return record(True, artifact, 0.0, cached=True)
                start = time.perf_counter()
                log = prepare_py(artifact, out_dir, task)
                return record(True, artifact, round(time.perf_counter() - start, 3), cached=True, log=log[-20000:])
        start = time.perf_counter()
        if timeout is None:  # torch headers make extension builds slow; a kernel alone is not
            timeout = 120 if fmt == "evk" else 900
        builder = {"evk": _build_evk, "torch-ext": _build_torch_ext, "py": _build_py}[fmt]
        ok, artifact, log = builder(path, source, out_dir, defines, arch, timeout, flags)
        if ok and artifact is not None and _needs_prepare(fmt, source, out_dir, task):
            log += prepare_py(artifact, out_dir, task)
        seconds = time.perf_counter() - start
        if ok and artifact is not None:  # ok: there is an artifact
            with open(done, "w") as f:
                f.write(artifact)
    return record(ok, artifact if ok else None, round(seconds, 3), log=log[-20000:])


# nvcc's options for every evk translation unit: host -O3 (the device side is -O3 whatever
# this says), one architecture's SASS plus its PTX (a newer GPU JIT-compiles the PTX)
EVK_FLAGS = ("-O3", "-std=c++17", "-Xcompiler", "-fPIC", "-lineinfo")


def _build_evk(path, source, out_dir, defines, arch, timeout, flags):
    nvcc = nvcc_path()
    if nvcc is None:
        return False, None, "nvcc not found: install the CUDA toolkit or put nvcc on PATH"
    src = os.path.join(out_dir, "candidate.cu")
    with open(src, "w") as f:
        f.write(source)
    lib = os.path.join(out_dir, "candidate.so")
    shim, shim_log = shim_object(nvcc, os.path.dirname(out_dir), arch, timeout)
    cmd = [
        nvcc,
        *EVK_FLAGS,
        f"-arch={arch}",
        "-shared",
        f"-I{INCLUDE}",
        *[f"-D{d}" for d in defines],
        *flags,
        "-o",
        lib,
        src,
        shim or SHIM,  # the shim's source where its object could not be built
    ]
    ok, output = _nvcc(cmd, timeout)
    return ok, lib, " ".join(cmd) + "\n" + shim_log + output


def _own_group() -> dict:
    """nvcc in a process group of its own (a timeout kills it and its children), in the
    caller's session: the CPU fork server (server.py) ends whatever a request's child left
    running by its session, so an nvcc outliving its child goes too."""
    # (never a session of its own: the CPU fork server would take it for a stray and end it)
    return {"process_group": 0} if sys.version_info >= (3, 11) else {"preexec_fn": os.setpgrp}


def _nvcc(cmd, timeout):
    """(ok, output) of one nvcc command, in one of the machine's compile slots (its steps run
    one after another); a timeout ends nvcc and its children (cudafe++, cicc, ptxas)."""
    with jobserver.slot(1):
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **_own_group())
        try:
            output, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return (
                False,
                f"nvcc did not finish within {timeout} s (build timeout): the candidate takes too long to compile",
            )
    return proc.returncode == 0, output


def shim_object(nvcc: str, cache: str, arch: str, timeout: float) -> tuple[str | None, str]:
    """The shim (evk_shim.cu) compiled once per nvcc, architecture and shim source, and linked
    into every evk candidate after that: it was half of each candidate's nvcc time (0.7 of
    1.6 s measured on one kernel). Neither the candidate's -D values nor its flags reach it:
    it includes cuda_runtime.h only and has no device code. Returns (object, log), or (None,
    log) when it cannot be built (the build then compiles the source, as before)."""
    real = os.path.realpath(nvcc)
    try:
        stat = os.stat(real)
    except OSError:
        return None, ""
    h = hashlib.sha256()
    for part in (VERSION, real, str(stat.st_size), str(stat.st_mtime_ns), arch, " ".join(EVK_FLAGS), read_source(SHIM)):
        h.update(part.encode())
        h.update(b"\0")
    folder = os.path.join(os.path.abspath(cache), "shim")
    obj = os.path.join(folder, f"evk_shim-{h.hexdigest()[:24]}.o")
    if os.path.exists(obj):
        return obj, ""
    os.makedirs(folder, exist_ok=True)
    with jobserver.exclusive(obj + ".lock"):
        if os.path.exists(obj):
            return obj, ""
        tmp = f"{obj}.{os.getpid()}.tmp.o"
        ok, output = _nvcc([nvcc, *EVK_FLAGS, f"-arch={arch}", "-c", "-o", tmp, SHIM], timeout)
        if not ok:
            return None, f"evk shim: its object could not be built, compiled with the candidate instead:\n{output}\n"
        os.replace(tmp, obj)
    return obj, ""


def _capture_fds(fn):
    """Run fn with this process's stdout/stderr (ninja, nvcc write there) sent to a log."""
    import tempfile

    sys.stdout.flush()
    sys.stderr.flush()
    with tempfile.TemporaryFile(mode="w+") as tmp:
        saved = os.dup(1), os.dup(2)
        os.dup2(tmp.fileno(), 1)
        os.dup2(tmp.fileno(), 2)
        try:
            result, error = fn(), None
        except BaseException as err:  # compile errors arrive as exceptions
            result, error = None, err
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
        tmp.seek(0)
        log = tmp.read()
    if error is not None:
        log += f"\n{type(error).__name__}: {error}"
    return result, log


ENV_FILE = "extension-env.json"


def _wrapper(cache, kind, real):
    """A shell script that runs `ccwrap.py kind real`: torch writes its path into build.ninja."""
    import json

    wrap = os.path.join(HERE, "ccwrap.py")
    text = f'#!/bin/sh\nexec {json.dumps(sys.executable)} {json.dumps(wrap)} {kind} {json.dumps(real)} "$@"\n'
    folder = os.path.join(cache, "bin", hashlib.sha256(text.encode()).hexdigest()[:16])
    script = os.path.join(folder, "c++" if kind == "cxx" else "nvcc")  # torch wants "c++" in the name
    if not os.path.exists(script):
        os.makedirs(folder, exist_ok=True)
        tmp = f"{script}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o755)
        os.replace(tmp, script)
    return script


def extension_env(out_dir: str, cache: str) -> str:
    """Environment for a torch-extension build in out_dir (and for loading it again later):
    a torch_extensions folder of its own (load_inline names collide across candidates), the
    compiler wrappers of ccwrap (machine-wide slots, cached binding units, a precompiled
    torch/extension.h), MAX_JOBS matched to the pool. Saved beside the artifact for load.py.
    EVOKERNEL_FASTPATH=0: the wrappers take slots but run torch's commands unchanged;
    EVOKERNEL_FASTPATH=none: no wrappers, only the folder (torch's own build)."""
    import json

    import torch
    import torch.version
    from torch.utils import cpp_extension

    env = {"TORCH_EXTENSIONS_DIR": os.path.join(out_dir, "torch_extensions")}
    # torch turns the arch list into -gencode flags in build.ninja: a load without it (it
    # would take the device's, "+PTX") writes a different build.ninja, and ninja rebuilds
    # the whole extension inside verification (seen on the H100: 77 s verifies)
    if os.environ.get("TORCH_CUDA_ARCH_LIST"):
        env["TORCH_CUDA_ARCH_LIST"] = os.environ["TORCH_CUDA_ARCH_LIST"]
    notes = []
    if os.environ.get("EVOKERNEL_FASTPATH", "1") == "none":
        notes.append("no compiler wrappers (EVOKERNEL_FASTPATH=none): torch's own build, outside the slots")
    else:
        try:
            cxx = shutil.which(os.environ.get("CXX", "c++"))
            nvcc = os.environ.get("PYTORCH_NVCC") or (
                os.path.join(cpp_extension.CUDA_HOME, "bin", "nvcc") if cpp_extension.CUDA_HOME else nvcc_path()
            )
            bin_dir = os.path.join(os.path.abspath(cache), "bin")
            if cxx and not os.path.realpath(cxx).startswith(bin_dir):
                env["CXX"] = _wrapper(cache, "cxx", cxx)
            if nvcc and os.path.exists(nvcc) and not os.path.realpath(nvcc).startswith(bin_dir):
                env["PYTORCH_NVCC"] = _wrapper(cache, "nvcc", nvcc)
            env["EVOKERNEL_CCWRAP_CACHE"] = os.path.abspath(cache)
            env["EVOKERNEL_CCWRAP_LOG"] = os.path.join(out_dir, "fastpath.log")
            env["EVOKERNEL_CCWRAP_SALT"] = f"{torch.__version__}|{torch.version.cuda}|{torch.__file__}"
            env["MAX_JOBS"] = str(jobserver.total_slots())
        except Exception as err:  # the fast path is an optimisation only
            notes.append(f"fast path unavailable ({type(err).__name__}: {err}): torch's own build")
    with open(os.path.join(out_dir, ENV_FILE), "w") as f:
        json.dump(env, f)
    os.environ.update(env)
    return "".join(f"evk-fastpath: {n}\n" for n in notes)


def _fastpath_log(out_dir):
    path = os.path.join(out_dir, "fastpath.log")
    if not os.path.exists(path):
        return ""
    with open(path) as f:
        return "\n" + f.read()


def apply_extension_env(artifact: str | None) -> None:
    """In a process that loads a candidate built here: the environment its build had, so that
    a load_inline at import finds its build up to date (same folder, same compiler lines)."""
    import json

    if not artifact:
        return
    path = os.path.join(os.path.dirname(os.path.abspath(artifact)), ENV_FILE)
    if os.path.exists(path):
        with open(path) as f:
            os.environ.update(json.load(f))


def _build_torch_ext(path, source, out_dir, defines, arch, timeout, flags):
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", f"{arch[3]}.{arch[4:]}")
    from torch.utils.cpp_extension import load

    setup_log = extension_env(out_dir, os.path.dirname(out_dir))

    name = "evk_" + os.path.basename(out_dir)
    src = os.path.join(out_dir, "candidate.cu")
    with open(src, "w") as f:
        f.write(source)

    def compile_it():
        load(
            name=name,
            sources=[src],
            build_directory=out_dir,
            verbose=True,
            extra_cuda_cflags=["-O3", *[f"-D{d}" for d in defines], *flags],
            extra_cflags=["-O3", *[f"-D{d}" for d in defines]],
        )
        return os.path.join(out_dir, f"{name}.so")

    lib, log = _capture_fds(compile_it)
    return lib is not None and os.path.exists(lib), lib, setup_log + log + _fastpath_log(out_dir)


# What in a Python candidate's source builds an extension when it runs (at import, at
# construction or at its first call)
BUILDS_AT_RUN_TIME = ("load_inline", "cpp_extension")
PREPARED = "prepared"  # beside the artifact: its ModelNew was constructed here once


def _needs_prepare(fmt: str, source: str, out_dir: str, task: Any) -> bool:
    return (
        fmt == "py"
        and task is not None
        and getattr(task, "format", None) == "kernelbench"
        and any(word in source for word in BUILDS_AT_RUN_TIME)
        and not os.path.exists(os.path.join(out_dir, PREPARED))
    )


def prepare_py(artifact: str, out_dir: str, task: Any) -> str:
    """Issue 33.7: a KernelBench ModelNew that builds its extension in __init__ builds it here,
    in the parallel build stage, not in verification under the GPU lock. The module is imported
    and ModelNew constructed with the problem's init inputs, its parameters on the meta device
    (no memory, no GPU), in the environment verification loads it with (extension_env's
    folder): verification's load_inline then finds its build up to date. Best effort: whatever
    the construction raises is said in the log, and verification does it again and judges it.
    A build at the first call (it needs the GPU and the inputs) stays in verification."""
    import torch

    from ..pyload import load_module

    start = time.perf_counter()
    apply_extension_env(artifact)

    def construct():
        module = load_module(artifact, "evk_prepare_" + os.path.basename(out_dir))
        cls = getattr(module, "ModelNew", None)
        if cls is None:
            return "no ModelNew"
        init_inputs = list(task.module.get_init_inputs())
        # torch 2's device context; torch 1 (the CPU tests' Debian torch) builds on the CPU
        meta: Any = torch.device("meta") if hasattr(torch.device, "__enter__") else contextlib.nullcontext()
        with meta:
            cls(*init_inputs)
        return "ModelNew constructed"

    # in the build's kept folder (workdir.kept): what the construction builds into a relative
    # folder is there, at the same path, in every command after it
    with workdir.kept(out_dir) as kept_said:
        what, log = _capture_fds(construct)  # the candidate's own errors end its log
    if what is None:
        last = log.strip().splitlines()[-1] if log.strip() else "an error"
        said = f"constructing ModelNew failed ({last[:300]}); verification constructs it again and judges it"
    else:
        said = f"{what} in {time.perf_counter() - start:.1f} s"
    with open(os.path.join(out_dir, PREPARED), "w") as f:
        f.write(said)
    return f"\nevk-prepare: {said}\n{log}" + "".join(kept_said)


def _build_py(path, source, out_dir, defines, arch, timeout, flags):
    dst = os.path.join(out_dir, "candidate.py")
    with open(dst, "w") as f:
        f.write(source)
    try:
        compile(source, path, "exec")
    except SyntaxError as err:
        return False, None, f"{os.path.basename(path)}:{err.lineno}: {err.msg}"
    if "load_inline" not in source and "cpp_extension" not in source:
        return True, dst, ""
    # inline extensions compile at import: do it here, in the parallel build pool
    from ..pyload import load_module

    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", f"{arch[3]}.{arch[4:]}")
    setup_log = extension_env(out_dir, os.path.dirname(out_dir))
    # in the build's kept folder (workdir.kept): an extension built into a relative folder is
    # found up to date, at the same path, by every command after the build
    with workdir.kept(out_dir) as kept_said:
        _, log = _capture_fds(lambda: load_module(dst, "evk_build_" + os.path.basename(out_dir)))
    failed = "Error" in log.splitlines()[-1] if log.strip() else False
    return not failed, dst, setup_log + log + _fastpath_log(out_dir) + "".join(kept_said)
