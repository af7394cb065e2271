"""Each command's private working folder (issue 33.4): a fresh, empty, writable directory under
the temporary folder (the sandbox's own tmpfs /tmp), the process's cwd while the command runs,
removed when it ends.

Candidates build into relative folders (`build_directory="cuda_extensions"`,
`os.makedirs("build")`) and write scratch files (`cuda_code/kernel.cu`). In the sandbox the
working folder was its read-only root: those writes failed with EROFS, the candidate's
`except` branch ran its fallback and the verdict named the sandbox, not the candidate's code.
Without the sandbox they landed wherever the harness was started (a checkout). Now whatever a
candidate writes relative to its cwd lands in a folder of its own: the build works, or fails
with the compiler's words; nothing reaches the repository, the build cache or the next
candidate (the fork server's worker runs each request in a new folder and goes back to its
own afterwards).

Every process that runs candidate code gets here through commands.run (the command's own
process; verify's and bench's candidate processes are forked from it and inherit the folder,
which the judge removes once they and everything they started have been stopped). Paths the
command was given relative to where it started are made absolute first.

A candidate's build stage (candidates/build.py: the import of a Python candidate whose
load_inline runs then, and a KernelBench ModelNew's construction) runs in the candidate's own
kept folder (`kept`): a path of its own derived from its build folder in the cache, the same
in every sandbox (each has its /tmp). What the build left there is kept beside the build as
one snapshot (WORKDIR_SNAPSHOT: regular files and folders only, at most SNAPSHOT_MAX_BYTES),
and every later command given that build (--artifact) starts in the same path, made afresh
from the snapshot. A candidate that builds into a relative folder (`build_directory=
"cuda_extensions"`) then finds its build up to date in verification: torch's build.ninja names
its sources and objects by absolute path, so the path has to be the same, and a copy elsewhere
would be rebuilt, under the GPU lock. Nothing a later command writes is kept: each starts from
the build stage's snapshot, and its folder is removed when it ends. Where the path is taken
(another command of the same build in this sandbox at the same time), the command gets a
fresh folder as before and the candidate builds again.
"""

import contextlib
import dataclasses
import hashlib
import os
import shutil
import stat
import tarfile
import tempfile
from typing import Iterator, TypeVar

from .command_request import CommandRequest

R = TypeVar("R", bound=CommandRequest)

PREFIX = "evk-work-"
KEPT_PREFIX = PREFIX + "k"  # a build's kept folder: KEPT_PREFIX + 16 hex digits
WORKDIR_SNAPSHOT = "workdir.tar"  # beside a build's artifact: what its build stage left in its folder
SNAPSHOT_MAX_BYTES = 256 << 20
MTIME_NS = "EVK.mtime_ns"  # a snapshot member's time in nanoseconds (a pax header of its own)
# the requests' fields (command_request.py) that name files or folders (a relative one is relative to where the
# command started, not to the private folder)
PATH_OPTIONS = (
    "task",
    "candidate",
    "artifact",
    "cache",
    "baseline",
    "baseline_artifact",
    "ceilings",
    "out",
    "quick_out",
    "verify_out",
    "bench_out",
)
# environment variables that name folders the harness reads or writes later in the command
PATH_VARIABLES = ("EVOKERNEL_CACHE", "EVOKERNEL_GPU_LOCKS")
BACKWARD = "#backward"  # a task path's suffix (tasks/__init__.py)


def absolute(request: R) -> R:
    """A copy of request whose paths are absolute (a task keeps its #backward)."""
    changes: dict[str, str] = {}
    for f in dataclasses.fields(request):
        value = getattr(request, f.name)
        if f.name not in PATH_OPTIONS or not isinstance(value, str) or not value or os.path.isabs(value):
            continue
        suffix = BACKWARD if f.name == "task" and value.endswith(BACKWARD) else ""
        changes[f.name] = os.path.abspath(value[: len(value) - len(suffix)]) + suffix
    return dataclasses.replace(request, **changes)


def _absolute_environment() -> None:
    for name in PATH_VARIABLES:
        value = os.environ.get(name)
        if value and value != "off" and not os.path.isabs(value):
            os.environ[name] = os.path.abspath(value)


def kept_folder(build_dir: str) -> str:
    """The kept folder of the build in build_dir (the artifact's folder in the cache)."""
    digest = hashlib.sha256(os.path.realpath(build_dir).encode()).hexdigest()[:16]
    return os.path.join(tempfile.gettempdir(), KEPT_PREFIX + digest)


def _take_kept(build_dir: str) -> str | None:
    """The build's kept folder, made for this command from the build's snapshot (empty where
    there is none); None where it exists (another command of the build holds it)."""
    folder = kept_folder(build_dir)
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        return None
    restore_snapshot(build_dir, folder)
    return folder


def save_snapshot(folder: str, build_dir: str) -> str:
    """Keeps what folder holds as build_dir's snapshot (replacing any); says what it did, for
    the build's log. Only regular files and folders are kept, links and the rest are left out;
    an empty folder keeps nothing; over SNAPSHOT_MAX_BYTES nothing is kept."""
    target = os.path.join(build_dir, WORKDIR_SNAPSHOT)
    members: list[tuple[str, os.stat_result]] = []
    total = 0
    for top, dirs, files in os.walk(folder):  # links to folders are listed, never entered
        for name in sorted(dirs) + sorted(files):
            path = os.path.join(top, name)
            info = os.lstat(path)
            if stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode):
                members.append((path, info))
                total += info.st_size if stat.S_ISREG(info.st_mode) else 0
    if not members:
        with contextlib.suppress(FileNotFoundError):
            os.remove(target)
        return ""
    if total > SNAPSHOT_MAX_BYTES:
        with contextlib.suppress(FileNotFoundError):
            os.remove(target)
        return (
            f"its working folder holds {total >> 20} MiB after the build, over {SNAPSHOT_MAX_BYTES >> 20} MiB: "
            "not kept, so what it built there is built again in each command\n"
        )
    tmp = f"{target}.{os.getpid()}.tmp"
    with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as tar:
        for path, found in members:
            info = tar.gettarinfo(path, arcname=os.path.relpath(path, folder))
            # the exact time, to the nanosecond: ninja compares an object's time with the one its
            # deps log recorded, and a float's rounding (tar's own) made it rebuild 12 builds in 20
            info.pax_headers = {MTIME_NS: str(found.st_mtime_ns)}
            if info.isfile():
                with open(path, "rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)
    os.replace(tmp, target)
    return f"its working folder ({len(members)} entries, {total >> 10} KiB) kept for the commands after the build\n"


def restore_snapshot(build_dir: str, folder: str) -> bool:
    """Fills the empty folder from build_dir's snapshot; False where there is none or it is not
    one this module wrote (then the folder is left empty)."""
    path = os.path.join(build_dir, WORKDIR_SNAPSHOT)
    try:
        if os.stat(path).st_size > SNAPSHOT_MAX_BYTES + (64 << 20):
            return False
        with tarfile.open(path, "r:") as tar:
            members = tar.getmembers()
            total = 0
            for member in members:
                name = os.path.normpath(member.name)
                if (
                    not (member.isfile() or member.isdir())
                    or os.path.isabs(member.name)
                    or name == ".."
                    or name.startswith("../")
                ):
                    raise ValueError(f"snapshot member {member.name!r}")
                total += member.size
            if total > SNAPSHOT_MAX_BYTES:
                raise ValueError("snapshot too large")
            for member in members:  # folders first (they were added first), then their files
                dest = os.path.join(folder, os.path.normpath(member.name))
                if member.isdir():
                    os.makedirs(dest, exist_ok=True)
                else:
                    source = tar.extractfile(member)
                    if source is None:
                        raise ValueError(f"snapshot member {member.name!r}")
                    with source, open(dest, "wb") as f:
                        shutil.copyfileobj(source, f)
                    os.chmod(dest, member.mode & 0o755)
            # times last, deepest first (writing a file changes its folder's): ninja compares them
            for member in sorted(members, key=lambda m: -m.name.count("/")):
                ns = int(member.pax_headers.get(MTIME_NS, "") or round(member.mtime * 1e9))
                os.utime(os.path.join(folder, os.path.normpath(member.name)), ns=(ns, ns))
        return True
    except (OSError, ValueError, tarfile.TarError):
        for name in os.listdir(folder):
            target = os.path.join(folder, name)
            if os.path.isdir(target) and not os.path.islink(target):
                shutil.rmtree(target, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.remove(target)
        return False


@contextlib.contextmanager
def kept(build_dir: str) -> Iterator[list[str]]:
    """The build stage's side: runs the block in the build's kept folder (made from its snapshot
    where one is kept), then keeps the folder as the snapshot. Yields a list the block's log
    lines about it (each "evk-workdir: …\n") are appended to. Where the path is taken, the
    block runs where it is."""
    said: list[str] = []
    folder = _take_kept(build_dir)
    if folder is None:
        said.append(
            f"evk-workdir: its working folder {kept_folder(build_dir)} is in use by another command: "
            "built in the command's own\n"
        )
        yield said
        return
    home = os.open(".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.chdir(folder)
        yield said
        note = save_snapshot(folder, build_dir)
        if note:
            said.append(f"evk-workdir: {note}")
    finally:
        with contextlib.suppress(OSError):
            os.fchdir(home)
        os.close(home)
        shutil.rmtree(folder, ignore_errors=True)


def _folder_for(request: CommandRequest) -> str:
    """The command's folder: its build's kept folder, made from the snapshot, when it is given
    a build with one and the path is free; else a fresh one."""
    artifact = getattr(request, "artifact", None)
    if isinstance(artifact, str) and artifact:
        build_dir = os.path.dirname(artifact)
        if os.path.exists(os.path.join(build_dir, WORKDIR_SNAPSHOT)):
            folder = _take_kept(build_dir)
            if folder is not None:
                return folder
    return tempfile.mkdtemp(prefix=PREFIX)


@contextlib.contextmanager
def private(request: R) -> Iterator[R]:
    """With a fresh folder as the cwd: yields request with absolute paths; afterwards the cwd is
    the one before and the folder is gone, whatever the command left in it."""
    request = absolute(request)
    _absolute_environment()
    folder = _folder_for(request)
    try:
        home = os.open(".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:  # a cwd that cannot be opened: the root is where we go back to
        home = None
    os.chdir(folder)
    try:
        yield request
    finally:
        try:
            if home is not None:
                os.fchdir(home)
            else:
                os.chdir("/")
        except OSError:
            os.chdir("/")
        finally:
            if home is not None:
                os.close(home)
        shutil.rmtree(folder, ignore_errors=True)
