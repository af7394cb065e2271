"""The kernels a candidate built, by identity: the exact names of the functions in its own
compiled objects (issue 33), for own_kernel.py to tell its kernels from PyTorch's.

A launched kernel is the candidate's own only where its name, as the profiler reports it
(demangled: return type, template arguments, parameter list), is exactly the name of a
function in what the candidate built: the shared objects it loaded from outside the Python
installation, the CUDA toolkit and the system (its torch extension, its `load_inline`
build, a library it compiled and loaded with ctypes), read from their ELF symbol tables
(host stubs carry the kernels' mangled names) and from the cubins and PTX of their fatbins;
or the kernels of the Triton and CuPy objects its own module holds. Names are kept mangled
and demangled (the demangler is the C++ runtime's, as the profiler's is). No substring, no
source text: a kernel the candidate calls `k` is `k(float*, int)`, never
`at::native::vectorized_elementwise_kernel<…>`.

No third-party ELF reader: the parser here reads 64-bit little-endian ELF section headers
and symbol tables, and fatbin entries that are not compressed (a compressed one is read with
cuobjdump where the toolkit has it; the host symbol table names the kernels anyway).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import re
import shutil
import struct
import subprocess
import sys
import sysconfig
from typing import Any, Iterable

ELF_MAGIC = b"\x7fELF"
FATBIN_MAGIC = 0xBA55ED50
SHT_SYMTAB, SHT_DYNSYM = 2, 11
STT_FUNC = 2
FATBIN_PTX, FATBIN_ELF = 1, 2
FATBIN_COMPRESSED = 0x2000 | 0x8000  # LZ4, zstd (fatbinary's flags)
MAX_OBJECT_BYTES = 1 << 30
_PTX_ENTRY = re.compile(rb"\.entry\s+([A-Za-z_$][\w$]*)")


def _sections(data: bytes) -> list[tuple[str, int, int, int, int, int]]:
    """[(name, type, offset, size, link, entsize)] of a 64-bit little-endian ELF image."""
    if data[:4] != ELF_MAGIC or data[4] != 2 or data[5] != 1:
        return []
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if not shoff or shentsize < 64 or shoff + shnum * shentsize > len(data):
        return []
    raw = []
    for i in range(shnum):
        name, typ, _flags, _addr, off, size, link, _info, _align, entsize = struct.unpack_from(
            "<IIQQQQIIQQ", data, shoff + i * shentsize
        )
        raw.append((name, typ, off, size, link, entsize))
    names_off = raw[shstrndx][2] if shstrndx < len(raw) else 0
    return [(_cstr(data, names_off + n), t, o, s, link, e) for n, t, o, s, link, e in raw]


def _cstr(data: bytes, at: int) -> str:
    end = data.find(b"\0", at)
    return data[at : end if end >= 0 else len(data)].decode("utf-8", "replace")


def elf_functions(data: bytes) -> set[str]:
    """Names of the functions an ELF image defines (.symtab and .dynsym, STT_FUNC)."""
    sections = _sections(data)
    names = set()
    for _name, typ, off, size, link, entsize in sections:
        if typ not in (SHT_SYMTAB, SHT_DYNSYM) or entsize < 24 or link >= len(sections):
            continue
        strtab = sections[link][2]
        for at in range(off, min(off + size, len(data)) - entsize + 1, entsize):
            st_name, st_info, _other, st_shndx = struct.unpack_from("<IBBH", data, at)
            if st_name and st_shndx != 0 and st_info & 0xF == STT_FUNC:
                names.add(_cstr(data, strtab + st_name))
    return names


def fatbin_kernels(data: bytes) -> tuple[set[str], int]:
    """(kernel names, compressed entries left unread) of the fatbins an ELF image embeds."""
    names, compressed = set(), 0
    for name, _typ, off, size, _link, _entsize in _sections(data):
        if name not in (".nv_fatbin", "__nv_relfatbin"):
            continue
        blob = data[off : off + size]
        at = 0
        while at + 16 <= len(blob):
            magic, _ver, header, total = struct.unpack_from("<IHHQ", blob, at)
            if magic != FATBIN_MAGIC:
                at += 8  # fatbins are 8-aligned in the section
                continue
            entry, end = at + header, min(at + header + total, len(blob))
            while entry + 48 <= end:
                kind, _v, entry_header, payload = struct.unpack_from("<HHIQ", blob, entry)
                flags = struct.unpack_from("<Q", blob, entry + 40)[0]
                body = blob[entry + entry_header : entry + entry_header + payload]
                if flags & FATBIN_COMPRESSED:
                    compressed += 1
                elif kind == FATBIN_ELF:
                    names |= elf_functions(body)
                elif kind == FATBIN_PTX:
                    names |= {m.decode() for m in _PTX_ENTRY.findall(body)}
                if entry_header <= 0:
                    break
                entry += entry_header + payload
            at = max(end, at + 16)
    return names, compressed


def _cuobjdump_kernels(path: str) -> set[str]:
    """The functions cuobjdump lists in an object's cubins (it reads compressed fatbins)."""
    tool = shutil.which("cuobjdump")
    if tool is None:
        home = os.environ.get("CUDA_HOME") or "/usr/local/cuda"
        tool = os.path.join(home, "bin", "cuobjdump")
        if not os.path.exists(tool):
            return set()
    try:
        out = subprocess.run([tool, "-symbols", path], capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.SubprocessError):
        return set()
    return {line.split()[-1] for line in out.splitlines() if line.strip().startswith("STT_FUNC")}


def object_kernels(path: str) -> set[str]:
    """Mangled names of the functions one shared object defines, host and device side: a
    kernel's host stub has the kernel's mangled name, its cubin and PTX name it again."""
    try:
        if os.path.getsize(path) > MAX_OBJECT_BYTES:
            return set()
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return set()
    names = elf_functions(data)
    device, compressed = fatbin_kernels(data)
    names |= device
    if compressed:
        names |= _cuobjdump_kernels(path)
    return names


_DEMANGLE: Any = None


def _cxa_demangle():
    """The C++ runtime's demangler (the profiler's own), or None."""
    global _DEMANGLE
    if _DEMANGLE is None:
        _DEMANGLE = False
        for lib in (ctypes.util.find_library("stdc++"), "libstdc++.so.6", None):
            try:
                dll = ctypes.CDLL(lib)
                fn, free = dll.__cxa_demangle, ctypes.CDLL(None).free
            except (OSError, AttributeError):
                continue
            fn.restype = ctypes.c_void_p
            fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
            free.argtypes = [ctypes.c_void_p]
            _DEMANGLE = (fn, free)
            break
    return _DEMANGLE or None


def demangle(names: Iterable[str]) -> dict[str, str]:
    """{mangled: demangled} for the names that are mangled C++ (the rest are left out)."""
    mangled = [n for n in names if n.startswith("_Z")]
    out: dict[str, str] = {}
    runtime = _cxa_demangle()
    if runtime is not None:
        fn, free = runtime
        for name in mangled:
            status = ctypes.c_int(-1)
            ptr = fn(name.encode(), None, None, ctypes.byref(status))
            if ptr and status.value == 0:
                out[name] = ctypes.string_at(ptr).decode("utf-8", "replace")
            if ptr:
                free(ptr)
        return out
    tool = shutil.which("c++filt")
    if tool and mangled:
        try:
            text = subprocess.run([tool], input="\n".join(mangled), capture_output=True, text=True, timeout=60).stdout
        except (OSError, subprocess.SubprocessError):
            return out
        for name, plain in zip(mangled, text.splitlines()):
            if plain != name:
                out[name] = plain
    return out


def _system_prefixes() -> tuple[str, ...]:
    """Where no candidate's build lives: the Python installation (torch, triton, the NVIDIA
    wheels), the CUDA toolkit and the system's libraries."""
    found = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            found.add(path)
    found |= {p for p in sys.path if p.rstrip("/").endswith(("site-packages", "dist-packages"))}
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home:
        found.add(home)
    found |= {
        "/usr/lib",
        "/usr/lib64",
        "/lib",
        "/lib64",
        "/usr/local/cuda",
        "/usr/local/lib",
        "/usr/local/nvidia",
        "/opt/nvidia",
    }
    return tuple(sorted(os.path.realpath(p).rstrip("/") + "/" for p in found if p))


def is_system_object(path: str, prefixes: tuple[str, ...] | None = None) -> bool:
    real = os.path.realpath(path)
    if re.match(r"/usr/local/cuda[^/]*/", real):
        return True
    return any(real.startswith(p) for p in prefixes or _system_prefixes())


def mapped_objects(maps: str = "/proc/self/maps") -> list[str]:
    """The ELF files mapped into this process (shared objects loaded by any means)."""
    try:
        with open(maps) as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    paths = []
    for line in lines:
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5].startswith("/"):
            path = parts[5].removesuffix(" (deleted)")
            if path not in paths:
                paths.append(path)
    out = []
    for path in paths:
        try:
            with open(path, "rb") as f:
                if f.read(4) == ELF_MAGIC:
                    out.append(path)
        except OSError:
            continue
    return out


def candidate_objects(extra: Iterable[str] = ()) -> list[str]:
    """The objects a candidate built and loaded: `extra` (its torch extension) and every
    mapped ELF file outside the Python installation, the CUDA toolkit and the system."""
    prefixes = _system_prefixes()
    exe = os.path.realpath(sys.executable)
    found = [os.path.realpath(p) for p in extra if p and os.path.exists(p)]
    for path in mapped_objects():
        real = os.path.realpath(path)
        if real != exe and real not in found and not is_system_object(real, prefixes):
            found.append(real)
    return found


def _is_triton(value: Any) -> bool:
    return (getattr(type(value), "__module__", "") or "").startswith("triton")


def _jit_functions(value: Any, depth: int = 0) -> list[Any]:
    """The Triton JITFunction inside a value: itself, or what an Autotuner or Heuristics
    wraps (.fn, as many levels as there are)."""
    if depth > 4 or not _is_triton(value):
        return []
    inner = getattr(value, "fn", None)
    if inner is not None and _is_triton(inner):
        return _jit_functions(inner, depth + 1)
    return [value]


def _compiled_names(jit: Any) -> set[str]:
    """Names of the kernels Triton compiled for one JITFunction (its caches, any version)."""
    names = {getattr(jit, "__name__", None) or getattr(getattr(jit, "fn", None), "__name__", None)}
    caches: list[Any] = []
    cache = getattr(jit, "cache", None)
    if isinstance(cache, dict):
        caches += [c for c in cache.values() if isinstance(c, dict)]
    device_caches = getattr(jit, "device_caches", None)
    if isinstance(device_caches, dict):
        caches += [c[0] for c in device_caches.values() if isinstance(c, tuple) and c and isinstance(c[0], dict)]
    for per_device in caches:
        for kernel in per_device.values():
            meta = getattr(kernel, "metadata", None)
            names.add(getattr(kernel, "name", None) if isinstance(getattr(kernel, "name", None), str) else None)
            names.add(meta.get("name") if isinstance(meta, dict) else getattr(meta, "name", None))
    return {n for n in names if isinstance(n, str) and n}


def module_kernels(module: Any) -> set[str]:
    """Kernel names of the Triton and CuPy objects a candidate's module holds at top level."""
    names: set[str] = set()
    for value in list(vars(module).values()) if module is not None else []:
        for jit in _jit_functions(value):
            names |= _compiled_names(jit)
        if (getattr(type(value), "__module__", "") or "").startswith("cupy"):
            name = getattr(value, "name", None)
            if isinstance(name, str) and name:
                names.add(name)
    return names


def exact_names(symbols: Iterable[str]) -> set[str]:
    """Each symbol mangled and demangled: the forms a profiler may report a kernel by."""
    symbols = set(symbols)
    return symbols | set(demangle(symbols).values())
