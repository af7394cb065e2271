// The sandbox every harness process runs in: code from a pull request or an LLM (kernel,
// reference, task Python, its build) runs there, never beside the runner's secrets.
//
// util-linux `unshare` gives the process its own mount, PID, network, IPC and UTS namespaces;
// runner/sandbox/enter.sh builds its file system from an allowlist (system and Python
// installation, the CUDA toolkit and the GPU's device nodes, the harness, the tasks: all
// read-only; one scratch folder writable), switches the root, drops every capability and, where
// the runner is root, becomes a dedicated user. The process sees only the sandbox's processes,
// has no network but a loopback that is down, no home, no sockets, none of the runner's or the
// app's files. Its environment is the allowlist of exec.ts. EVOKERNEL_SANDBOX=off runs without
// it: only an operator says so, and every report then says that it ran unsandboxed.
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  statfsSync,
  statSync,
} from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import { dirname, join, resolve, sep } from "node:path";
import { rootLockFolder } from "#process/gpu-locks.js";
import { EnvironmentError } from "../errors.js";
import { repoRoot } from "../paths.js";

export type SandboxMode = "namespaces" | "off";

/** The user a root runner becomes inside (no files of its own anywhere on the machine). */
const DEFAULT_UID = 60999;

/** EVOKERNEL_SANDBOX: unset or "on" → the sandbox (refusing to run without one); "off". */
export function sandboxMode(env: NodeJS.ProcessEnv = process.env): SandboxMode {
  const value = (env["EVOKERNEL_SANDBOX"] ?? "on").trim().toLowerCase();
  if (value === "" || value === "on" || value === "1" || value === "true") return "namespaces";
  if (value === "off" || value === "0" || value === "false") return "off";
  throw new EnvironmentError(
    `EVOKERNEL_SANDBOX=${value} is not a setting: leave it unset (candidate code runs in the ` +
      "sandbox) or set it to off (no sandbox: only on a machine that runs nothing untrusted)",
  );
}

/** What the sandbox shows besides the system: folders added by the command that runs. */
const view = { readOnly: new Set<string>(), writable: new Set<string>() };
/** Paths named through a symlink (path → its real path), recreated inside. */
const links = new Map<string, string>();

/** Sandboxes up now that stay up (fork servers): each sees the folders allowed when it started. */
let lasting = 0;

/**
 * Marks a lasting sandbox up until the returned function is called. While one is, allowing a
 * folder it cannot see throws: the server would answer "no such task" for a path that exists,
 * so a command allows its tasks and candidates before its session opens.
 */
export function holdView(): () => void {
  lasting += 1;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    lasting -= 1;
  };
}

/** Lets the sandbox read `path` (a task folder, a job's checkout); read-only inside. */
export function allowRead(path: string): void {
  // a path that is not there shows nothing: a caller's slip (a backward task's `folder#backward`
  // names no file; its folder is what the sandbox must see), said here rather than as "no such
  // task" from inside
  if (!existsSync(path)) throw new Error(`${path} does not exist: nothing to show the sandbox`);
  const target = real(path);
  if (lasting > 0 && sandboxMode() === "namespaces" && !visible(target)) {
    throw new Error(
      `${path} was allowed into the sandbox after its fork server started, which cannot see it: ` +
        "allow a command's tasks and candidates before its session opens",
    );
  }
  if (sandboxMode() === "namespaces") requireSandboxCanRead(path, target);
  view.readOnly.add(target);
  if (resolve(path) !== target) links.set(resolve(path), target);
}

/**
 * Inside, a folder the sandbox is shown keeps its owner and mode, and its parents are not
 * there: the sandbox's user needs read (and, for a folder, search) permission on the path
 * itself. A temporary folder is 0700 and root's: shown as it was, every harness child failed
 * to read the job's checkout ("the harness failed (exit 4)", H200, 2026-11-28). Said here, with
 * what to change, rather than as a PermissionError from inside.
 */
function requireSandboxCanRead(path: string, target: string): void {
  const user = sandboxUser();
  if (user === null) return; // unprivileged: inside, the runner's own user (mapped to root)
  const info = statSync(target);
  const need = info.isDirectory() ? 5 : 4; // r-x for a folder, r-- for a file
  const bits =
    info.uid === user.uid ? info.mode >> 6 : info.gid === user.gid ? info.mode >> 3 : info.mode;
  if ((bits & need) === need) return;
  const mode = (info.mode & 0o777).toString(8).padStart(4, "0");
  throw new EnvironmentError(
    `the sandbox's user (uid ${user.uid}) cannot read ${path} (mode ${mode}, owner uid ${info.uid}, ` +
      `group ${info.gid}), which a command showed it: make it readable by others ` +
      `(chmod o+r${info.isDirectory() ? "x" : ""}), or move the task or candidate to a folder that is`,
  );
}

/**
 * A folder the runner made for the sandbox to read (a job's checkout): its group becomes the
 * sandbox user's, with read and search for the group and nothing for others (mode 0750). Inside
 * it is read-only whatever its mode (allowRead binds it so).
 */
export function shareWithSandbox(path: string): void {
  const user = sandboxUser();
  if (user === null) return;
  chownSync(path, process.getuid?.() ?? 0, user.gid);
  chmodSync(path, 0o750);
}

/** Whether `target` (a real path) is inside what every sandbox shows. */
function visible(target: string): boolean {
  const shown = [...baseReadOnly(), ...view.readOnly, ...view.writable];
  if (scratch !== undefined) shown.push(scratch);
  return shown.some((path) => target === path || within(target, path));
}

/** Whether `path` lies inside `folder` (not a name that merely begins like it). */
function within(path: string, folder: string): boolean {
  return path.startsWith(folder.endsWith(sep) ? folder : folder + sep);
}

/** Lets the sandbox write `path` (the build cache); everything else it can write is scratch. */
export function allowWrite(path: string): void {
  mkdirSync(path, { recursive: true });
  view.writable.add(real(path));
  own(path);
}

/**
 * Lets the sandbox open the GPU locks' folder (the harness opens its GPU's lock file read-only
 * and flocks it). A root runner keeps the folder root's, with that GPU's lock file of root's,
 * exactly as the app's local backend prepares it for the runners of every uid
 * (`rootLockFolder`, src/process/gpu-locks.ts): given to one sandbox's user, that user could
 * remove and replace the lock files the sandboxes of other jobs lock, and a root CLI that gave
 * the folder to its sandbox while the app prepared it lost its GPU's lock file (on two H200s:
 * exit 4 before the search). Any other runner's folder is its own sandbox's, as its scratch is.
 *
 * `visible` is the sandbox's CUDA_VISIBLE_DEVICES: the harness locks the first GPU it names
 * (gpulock.py), so that is the lock file a root runner makes (the app made only its own
 * EVOKERNEL_GPUS of them: a root CLI with CUDA_VISIBLE_DEVICES=1, a search's second lane).
 */
export async function allowLocks(path: string, visible?: string): Promise<void> {
  if (process.getuid?.() === 0) {
    await rootLockFolder(path, [visible ?? ""]);
    view.writable.add(real(path));
  } else allowWrite(path);
}

let scratch: string | undefined;

/**
 * This run's scratch folder: harness records, candidates' sources and the sandbox's mount point
 * live here. Made on first use, writable by the sandbox's user, removed when the process exits.
 */
export function scratchDir(): string {
  if (scratch !== undefined) return scratch;
  scratch = runFolder("evokernel-run-");
  own(scratch);
  return scratch;
}

/** A new folder in the machine's temporary folder, this process's: removed when it exits. */
function runFolder(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
  return real(dir);
}

let sealed: string | undefined;

/**
 * Where built libraries are kept out of every candidate's reach (harness/sealed.ts): a folder
 * beside scratch, the runner's, shown read-only to every sandbox (a read-only bind holds for
 * the sandbox's user whoever owns the files). Made on first use, which is before the first
 * sandbox starts (exec.ts), removed when the process exits.
 */
export function sealedDir(): string {
  if (sealed !== undefined) return sealed;
  sealed = runFolder("evokernel-sealed-");
  chmodSync(sealed, 0o755);
  view.readOnly.add(sealed);
  return sealed;
}

/** A new folder in scratch that the sandbox may write (a harness request's records). */
export async function scratchFolder(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(scratchDir(), prefix));
  own(dir);
  return dir;
}

/** The folder the sandbox's root is mounted on inside its namespace (empty on the host). */
function mountPoint(): string {
  const dir = join(scratchDir(), ".root");
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Where a root runner's sandbox user is (the user itself otherwise). */
function sandboxUser(env: NodeJS.ProcessEnv = process.env): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  const uid = Number(env["EVOKERNEL_SANDBOX_UID"] ?? DEFAULT_UID);
  if (!Number.isInteger(uid) || uid <= 0) {
    throw new EnvironmentError(
      `EVOKERNEL_SANDBOX_UID must be a user id above 0, not ${String(env["EVOKERNEL_SANDBOX_UID"])}`,
    );
  }
  return { uid, gid: uid };
}

function own(path: string): void {
  const user = sandboxUser();
  if (user !== null) chownSync(path, user.uid, user.gid);
}

function real(path: string): string {
  return realpathSync(resolve(path));
}

/** Where the harness's Python and its packages live (asked of it by exec.ts). */
export type PythonInstall = {
  /** sys.executable as it is (a venv's bin/python, which finds the venv's packages). */
  executable: string;
  /** Its folders: the executable's (resolved too), prefixes and sys.path, resolved. */
  paths: string[];
};

// The Python's own folders (prefix, base prefix, sys.path), asked without site customisation
// from the user's folders or the environment.
export const DESCRIBE_PYTHON =
  "import json, os, sys; exe = os.path.abspath(sys.executable); " +
  "dirs = {os.path.dirname(exe), os.path.dirname(os.path.realpath(exe)), sys.prefix, sys.base_prefix, " +
  "sys.exec_prefix, *sys.path}; " +
  "print(json.dumps({'executable': exe, 'paths': sorted({os.path.realpath(p) for p in dirs if p})}))";

// The system's programs and libraries, read-only; /etc only as far as the loader, the
// compilers and Python need it (no passwords, keys or service settings).
const SYSTEM = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/sys"];
const ETC = [
  "/etc/ld.so.cache",
  "/etc/ld.so.conf",
  "/etc/ld.so.conf.d",
  "/etc/alternatives",
  "/etc/localtime",
];
const DEVICES = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"];

/** What every sandbox reads besides the Python and the folders a command allows. */
function baseReadOnly(): string[] {
  const root = repoRoot();
  return [
    ...SYSTEM,
    ...ETC,
    join(root, "runner", "harness"),
    join(root, "kernels"),
    join(root, "runner", "corpus"),
  ];
}

/** The GPU's device nodes: /dev/nvidia*, /dev/nvidia-caps. */
function gpuDevices(): string[] {
  let names: string[] = [];
  try {
    names = readdirSync("/dev").filter((name) => name.startsWith("nvidia"));
  } catch {
    // no /dev listing: no GPU nodes to add
  }
  return names.map((name) => `/dev/${name}`);
}

export type SandboxSpec = {
  /** The command to run inside, and its arguments. */
  file: string;
  args: readonly string[];
  /** The Python whose installation is shown (read-only) inside. */
  python: PythonInstall;
  env: Record<string, string>;
};

export type Invocation = { file: string; args: string[]; env: Record<string, string> };

/** What the sandbox's caps are sized from: the machine's CPUs, the free space of its scratch. */
export type Machine = { cpus: number; freeBytes: number | undefined };

const MIB = 2 ** 20;
const GIB = 2 ** 30;

/**
 * The sandbox's caps on processes and on a file's size (prlimit in enter.sh), sized from the
 * machine unless set (EVOKERNEL_SANDBOX_NPROC, EVOKERNEL_SANDBOX_FSIZE, bytes).
 *
 * Processes: 256 a CPU, at least 1024, at most 8192. RLIMIT_NPROC counts every process and
 * thread of the sandbox's user, and a runner of its own uid (the local backend) is that user:
 * torch starts a pool of about one thread a CPU in each process, a build one compiler a job
 * (EVOKERNEL_BUILD_JOBS, about one a CPU), and a command a few processes (fork server, its
 * worker, a candidate's process), and torch.compile's and Triton's compile workers come on
 * top; 256 a CPU leaves room for all of them many times over (a correct kernel refused for a
 * thread it could not start is worse than a fork bomb stopped at a few thousand), while a fork
 * bomb still stops far below what takes a machine down. 1024 keeps a small machine's torch and
 * builds working; 8192 was the fixed cap (it held on the H200 in every acceptance run) and
 * stays the most.
 *
 * File size: half the free space of the filesystem that holds the scratch folder (the
 * writable folder on disk: records, candidates' sources, the build cache beside it), at
 * least 256 MiB, at most 16 GiB: one file can never fill that disk, and a build's objects and
 * a task's saved tensors (hundreds of MiB at most) fit. Where the free space cannot be read,
 * 16 GiB. (The sandbox's /tmp is a tmpfs of half the memory: its own size caps it.)
 */
export function sandboxLimits(
  machine: Machine,
  env: Readonly<Record<string, string | undefined>> = process.env,
): { nproc: number; fsize: number } {
  const clamp = (value: number, low: number, high: number) =>
    Math.min(high, Math.max(low, Math.floor(value)));
  const nproc = setting(env, "EVOKERNEL_SANDBOX_NPROC") ?? clamp(256 * machine.cpus, 1024, 8192);
  const fsize =
    setting(env, "EVOKERNEL_SANDBOX_FSIZE") ??
    (machine.freeBytes === undefined
      ? 16 * GIB
      : clamp(machine.freeBytes / 2, 256 * MIB, 16 * GIB));
  return { nproc, fsize };
}

function setting(
  env: Readonly<Record<string, string | undefined>>,
  name: string,
): number | undefined {
  const text = env[name]?.trim();
  if (text === undefined || text === "") return undefined;
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value <= 0)
    throw new EnvironmentError(
      `${name}=${text} is not a whole number above 0: unset it (sized from the machine: docs/SECURITY.md) or set a number`,
    );
  return value;
}

/** This machine as sandboxLimits reads it: its CPUs, the free space where scratch lives. */
function thisMachine(): Machine {
  let freeBytes: number | undefined;
  try {
    const fs = statfsSync(scratchDir());
    freeBytes = fs.bavail * fs.bsize;
  } catch {
    freeBytes = undefined;
  }
  return { cpus: availableParallelism(), freeBytes };
}

/** `spec` wrapped in the sandbox (or as it is where EVOKERNEL_SANDBOX=off). */
export function sandboxed(spec: SandboxSpec): Invocation {
  const { python } = spec;
  const readOnly = new Set<string>([...baseReadOnly(), ...python.paths, ...view.readOnly]);
  const cuda = spec.env["CUDA_HOME"] ?? spec.env["CUDA_PATH"] ?? "/usr/local/cuda";
  if (existsSync(cuda)) readOnly.add(real(cuda));
  const writable = new Set<string>([scratchDir(), ...view.writable]);
  const user = sandboxUser();
  const args = [
    ...(user === null ? ["--user", "--map-root-user"] : []),
    "--mount",
    "--pid",
    "--net",
    "--ipc",
    "--uts",
    "--fork",
    "--kill-child",
    "--propagation",
    "private",
    "--",
    "/bin/sh",
    join(repoRoot(), "runner", "sandbox", "enter.sh"),
    mountPoint(),
    user === null ? "-" : String(user.uid),
    user === null ? "-" : String(user.gid),
    ...mounts([
      ...boundOnce([...readOnly], writable).map((path) => ["--ro", path] as const),
      ...[...writable].map((path) => ["--rw", path] as const),
    ]),
    ...mounts([...DEVICES, ...gpuDevices()].map((path) => ["--dev", path] as const)),
    ...[...links].flatMap(([path, target]) => ["--link", path, target]),
    "--",
    spec.file,
    ...spec.args,
  ];
  // enter.sh applies them; the harness inside names them when one is hit (limits.py).
  const limits = sandboxLimits(thisMachine(), spec.env);
  const env = {
    ...spec.env,
    EVOKERNEL_SANDBOX_NPROC: String(limits.nproc),
    EVOKERNEL_SANDBOX_FSIZE: String(limits.fsize),
    HOME: "/tmp",
    TMPDIR: "/tmp",
    USER: "evokernel",
    LOGNAME: "evokernel",
    PATH: [dirname(python.executable), spec.env["PATH"] ?? "/usr/bin:/bin"].join(":"),
  };
  return { file: "unshare", args, env };
}

/**
 * The read-only paths that need a bind of their own: not one already shown read-only through a
 * recursive bind of a folder above it (/usr/bin, the Python's folders and the CUDA toolkit under
 * /usr), unless a writable folder lies between (a read-only folder inside scratch must still be
 * bound read-only). Each bind costs enter.sh a recursive mount and a remount of every mount
 * under it: the same tree bound again made each sandbox start slower, and changed nothing.
 * /sys is bound alone (not recursively), so nothing under it is covered by it.
 */
export function boundOnce(readOnly: readonly string[], writable: ReadonlySet<string>): string[] {
  const kept = readOnly.filter((path) => !writable.has(path));
  const parents = kept.filter((path) => path !== "/sys");
  return kept.filter(
    (path) =>
      !parents.some(
        (parent) =>
          within(path, parent) &&
          ![...writable].some((folder) => within(folder, parent) && within(path, folder)),
      ),
  );
}

/**
 * Parents before children, read-only and writable together: a folder bound inside another is
 * bound after it, whatever its mode (a read-only folder inside a writable one, bound first,
 * would be covered by the writable bind, and writable).
 */
export function mounts(binds: readonly (readonly [string, string])[]): string[] {
  return binds
    .filter(([, path]) => existsSync(path))
    .sort(([, a], [, b]) => a.split(sep).length - b.split(sep).length || a.localeCompare(b))
    .flatMap(([flag, path]) => [flag, path]);
}
