// What a local runner of its own uid (job-processes.ts) needs of the machine, prepared and
// checked before it starts. A folder of root's with mode 0700 above a file the runner must read
// (a temporary folder holding the clone, the runner's bundle, a Python under /root) failed
// every job from inside with a permission error (issue 32's root cause, there for the
// sandbox's user): here the job fails first, naming the folder and what to change.
import { chmod, lchown, lstat, mkdir, readFile, realpath, stat } from "node:fs/promises";
import { dirname, isAbsolute, join } from "node:path";
import { rootLockFolder } from "../../process/gpu-locks.js";
import { spawnProcess } from "../../process/spawn.js";

/** What the runner does with a path: read a file or list a folder, run it, write in it. */
export type Need = "read" | "run" | "write";

const BITS: Record<Need, number> = { read: 4, run: 1, write: 2 };

/**
 * Why `uid` (with `gid` its only group) cannot `need` `path`, or undefined where it can (or
 * where the path does not exist: what the runner then says is its own). Every folder above
 * it must be searchable; a folder read is also searched.
 */
export async function accessProblem(
  uid: number,
  path: string,
  need: Need,
): Promise<string | undefined> {
  const target = await realpath(path).catch(() => undefined);
  if (target === undefined) return undefined;
  const chain: string[] = [];
  for (let dir = dirname(target); ; dir = dirname(dir)) {
    chain.unshift(dir);
    if (dirname(dir) === dir) break;
  }
  for (const dir of chain) {
    const problem = await lacks(uid, dir, 1, path, need);
    if (problem !== undefined) return problem;
  }
  const info = await stat(target);
  const bits = BITS[need] | (info.isDirectory() ? 1 : 0);
  return lacks(uid, target, bits, path, need);
}

async function lacks(
  uid: number,
  at: string,
  need: number,
  path: string,
  what: Need,
): Promise<string | undefined> {
  const info = await stat(at);
  const bits = info.uid === uid ? info.mode >> 6 : info.gid === uid ? info.mode >> 3 : info.mode;
  if ((bits & need) === need) return undefined;
  const mode = (info.mode & 0o777).toString(8).padStart(4, "0");
  const fix =
    what === "write"
      ? `make ${at} the runner's (chown ${uid} ${at})`
      : `make it ${info.isDirectory() ? "searchable" : "readable"} by others (chmod o+${need & 4 ? "r" : ""}${need & 1 ? "x" : ""} ${at})`;
  return (
    `the runner's user (uid ${uid}) cannot ${what} ${path}: ${at} is mode ${mode}, owner uid ${info.uid}. ` +
    `Either ${fix}, move it to a folder that is, or set EVOKERNEL_RUNNER_UID=off to run the runner as the app's own user (it can then read the app's files)`
  );
}

/**
 * The first thing a runner of `uid` could not reach of what it needs: its command (and any
 * absolute path among its arguments: a script), the clone its checkout's git reads, the
 * settings that name folders (EVOKERNEL_PYTHON, EVOKERNEL_ROOT, EVOKERNEL_SHARED_DATA).
 */
export async function runnerCannotReach(
  uid: number,
  command: readonly string[],
  repoDir: string,
  env: Readonly<Record<string, string | undefined>>,
): Promise<string | undefined> {
  const [file, ...args] = command;
  const checks: [string, Need][] = [
    ...(file !== undefined && isAbsolute(file) ? [[file, "run"] as [string, Need]] : []),
    ...args.filter((arg) => isAbsolute(arg)).map((arg) => [arg, "read"] as [string, Need]),
    [join(repoDir, ".git"), "read"],
    ...(["EVOKERNEL_PYTHON", "EVOKERNEL_ROOT", "EVOKERNEL_SHARED_DATA"] as const)
      .map((name) => env[name])
      .filter((value): value is string => value !== undefined && isAbsolute(value))
      .map(
        (value) => [value, value === env["EVOKERNEL_PYTHON"] ? "run" : "read"] as [string, Need],
      ),
  ];
  for (const [path, need] of checks) {
    const problem = await accessProblem(uid, path, need);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/**
 * A folder of one runner uid's (its build cache, EVOKERNEL_CACHE/runner-UID), made where
 * missing and given to `uid` with what is in it. Never through a link: a folder planted as
 * a link to another place would hand that place to the runner.
 */
export async function giveFolder(uid: number, path: string): Promise<void> {
  await mkdir(path, { recursive: true, mode: 0o700 });
  const info = await lstat(path);
  if (!info.isDirectory())
    throw new Error(
      `${path} is not a folder (a link or a file): the runner's shared folder cannot be made there; remove it or point the setting elsewhere`,
    );
  // Its own uid's alone: another job's runner reads no build of this one's.
  if ((info.mode & 0o7777) !== 0o700) await chmod(path, 0o700);
  if (info.uid === uid) return;
  // chown -R does not follow links below the top (-P is its default with -R).
  await spawnProcess("chown", ["-R", `${uid}:${uid}`, path], {
    env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" },
    extendEnv: false,
  });
}

/**
 * The build cache of a runner of `uid` where the operator names one (EVOKERNEL_CACHE):
 * `runner-UID` in it, the uid's; the folder itself root's, so no runner can plant a link or
 * a folder of its own where another uid's cache goes (a cache shared by uids would let one
 * job's runner put its objects in another's build). Resolves to the folder, or says why not.
 */
export async function giveCacheFolder(uid: number, shared: string): Promise<string> {
  await mkdir(shared, { recursive: true, mode: 0o755 });
  const info = await lstat(shared);
  if (!info.isDirectory())
    throw new Error(
      `EVOKERNEL_CACHE=${shared} is not a folder (a link or a file): remove it or point EVOKERNEL_CACHE elsewhere`,
    );
  if (info.uid !== 0 || info.gid !== 0) await lchown(shared, 0, 0);
  // Searchable, not listable: each uid reaches its own folder in it, and sees no other's name
  // (a folder made 0700, as mktemp -d makes one, would keep every runner out of its own).
  if ((info.mode & 0o7777) !== 0o711) await chmod(shared, 0o711);
  const cache = join(shared, `runner-${uid}`);
  await giveFolder(uid, cache);
  return cache;
}

/**
 * The GPU locks' folder (EVOKERNEL_GPU_LOCKS), shared by the runners of every uid (and a root
 * CLI's sandbox): root's, mode 0755, with a lock file for each of the machine's `gpus`, root's,
 * mode 0644. The harness opens a lock file read-only (flock needs no more), so every uid locks
 * the same files, and none can remove, replace or close one to another (a folder given to one
 * runner's uid let it, and a second uid could not make its lock file there). A lock file is
 * never followed through a link, and one that is not a plain file is replaced.
 */
export async function prepareGpuLocks(path: string, gpus: number): Promise<void> {
  await rootLockFolder(
    path,
    Array.from({ length: gpus }, (_, gpu) => String(gpu)),
  );
}

/** The users /etc/passwd names for any of `uids` (uid → name): a runner's uid must have none. */
export async function usersOf(
  uids: readonly number[],
  passwd = "/etc/passwd",
): Promise<Map<number, string>> {
  const found = new Map<number, string>();
  const text = await readFile(passwd, "utf8").catch(() => "");
  for (const line of text.split("\n")) {
    const [name, , uid] = line.split(":");
    if (name !== undefined && uid !== undefined && uids.includes(Number(uid)) && uid !== "")
      found.set(Number(uid), name);
  }
  return found;
}
