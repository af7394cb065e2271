// A local job's processes, from the runner's start to the end of the last thing it started:
// the runner is started in a process group of its own (and, where the app is root, as the
// first process of PID, mount, IPC, UTS and network namespaces of its own (no link: a job
// that runs the LLM reaches its API host through egress-proxy.ts only) with its own /proc,
// util-linux `unshare --pid --fork --kill-child --mount-proc`, the app's secrets covered, as a
// user of its own: one uid for each job that runs at once, from EVOKERNEL_RUNNER_UID up, by
// default 60998, 61000, …: runnerUids),
// and at every end of the job (success, failure, timeout, cancel, the PR closed) the whole
// group is killed and waited for. In the namespace nothing escapes: when
// its first process dies the kernel kills every process in it, those that left the group
// too (`setsid`, a double fork, the harness's fork servers and their workers, which make
// sessions of their own). Without it (the app not root) a process that leaves the group
// survives the job: docs/SECURITY.md says so.
//
// What identifies the group is written into the job's record (local-records.ts) the moment
// it starts, so that the next process of the app kills it by group, not by walking from a
// parent that may be gone: the group id, when its leader started (a pid the system gave
// to another process since is not ours) and the boot (after a reboot nothing is left).
import { readdir, readFile } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { spawnProcess } from "../../process/spawn.js";

/** A job's process group as its record keeps it. */
export interface JobGroup {
  /** The group's id: the pid of the first process started for the job. */
  readonly pgid: number;
  /** That process's start time (clock ticks since boot, /proc/PID/stat field 22). */
  readonly leaderStart: string;
  /** /proc/sys/kernel/random/boot_id when it started. */
  readonly bootId: string;
}

/** How long the end of a job waits for its processes to be gone before it says so. */
const GONE_WITHIN_MS = 30_000;

let unshareWorks: boolean | undefined;

/**
 * The first uid of local runners by default (EVOKERNEL_RUNNER_UID): each job that runs at once
 * has a uid of its own (runnerUids), so one job's runner cannot read, write or signal
 * another's.
 */
export const DEFAULT_RUNNER_UID = 60998;

/** The uid a root runner's harness sandbox becomes by default (EVOKERNEL_SANDBOX_UID). */
export const DEFAULT_SANDBOX_UID = 60999;

/** How a job's runner is confined: what confinedCommand made of it. */
export interface Confined {
  readonly file: string;
  readonly args: string[];
  /** The runner is the first process of PID, mount, IPC and UTS namespaces of its own. */
  readonly pidNamespace: boolean;
  /** The uid (and gid) the runner runs as, where not the app's. */
  readonly uid?: number;
  /**
   * Whether the runner shares the machine's network: only where it has no namespaces (the
   * app not root, no util-linux `unshare`, EVOKERNEL_JOB_PIDNS=off). Otherwise it is in a
   * network namespace of its own with no link, and an LLM job reaches its API host through
   * the job's egress proxy (egress-proxy.ts) alone.
   */
  readonly network: boolean;
  /** Why the runner runs as the app's own user, for the operator's log (unset: it does not). */
  readonly unconfined?: string;
}

/** What a job's runner may reach besides its own folder. */
export interface ConfineOptions {
  /**
   * The app's paths covered in the runner's mount namespace (its .env, key files, state and
   * result folders): a folder by an empty read-only tmpfs, a file by `cover`. The runner's
   * user cannot lift them (no capability in the namespace's owner), nor can a user namespace
   * it makes (mounts it inherits are locked).
   */
  readonly hide: readonly string[];
  /** An empty file of root's, mode 0400, bound read-only over each file hidden. */
  readonly cover?: string;
  /** Which of the jobs that run at once this is (0 up): its runner's uid is the slot's. */
  readonly slot?: number;
}

/**
 * The runner's command as started. Where the app may (root, util-linux `unshare` found;
 * EVOKERNEL_JOB_PIDNS=off turns it off): the first process of PID, mount, IPC and UTS
 * namespaces of its own, with a /proc of its own (`--mount-proc`: the app's processes, their
 * environment among them, are not in it), a network namespace of its own with no link (an
 * LLM job's runner reaches its API host through a Unix socket: egress-proxy.ts), the app's secrets covered (`options.hide`), and as a user of its own
 * (EVOKERNEL_RUNNER_UID, by default 60998; util-linux `setpriv`, no capabilities, no
 * groups). `--kill-child`: the runner dies with `unshare`, so killing the group kills the
 * namespace. EVOKERNEL_RUNNER_UID=off keeps the namespaces and runs the runner as the app's
 * own user. The uid is the slot's (`options.slot`, runnerUids). Throws where
 * EVOKERNEL_RUNNER_UID names a uid that cannot be honoured.
 */
export async function confinedCommand(
  file: string,
  args: readonly string[],
  options: ConfineOptions = { hide: [] },
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<Confined> {
  const setting = runnerUid(env);
  const noNamespace =
    env["EVOKERNEL_JOB_PIDNS"] === "off"
      ? "EVOKERNEL_JOB_PIDNS=off"
      : process.getuid?.() !== 0
        ? "the app does not run as root"
        : !(await canUnsharePid())
          ? "util-linux `unshare` cannot make namespaces here"
          : undefined;
  const noUid =
    setting === "off"
      ? "EVOKERNEL_RUNNER_UID=off"
      : (noNamespace ??
        (!(await hasSetpriv()) ? "util-linux `setpriv` is not installed" : undefined));
  if (setting !== "off" && setting.explicit && noUid !== undefined)
    throw new Error(
      `EVOKERNEL_RUNNER_UID is set but cannot be honoured (${noUid}): run the app as root with util-linux \`unshare\` and \`setpriv\` (and EVOKERNEL_JOB_PIDNS not off), or set EVOKERNEL_RUNNER_UID=off`,
    );
  const unconfined = noUid === undefined ? {} : { unconfined: noUid };
  if (noNamespace !== undefined)
    return { file, args: [...args], pidNamespace: false, network: true, ...unconfined };
  const uid =
    setting === "off" || noUid !== undefined
      ? undefined
      : slotUids(setting.uid, (options.slot ?? 0) + 1, env)[options.slot ?? 0];
  const as =
    uid === undefined
      ? []
      : ["setpriv", `--reuid=${uid}`, `--regid=${uid}`, "--clear-groups", "--inh-caps=-all", "--"];
  return {
    file: "unshare",
    args: [
      "--pid",
      "--fork",
      "--kill-child",
      "--mount-proc",
      "--ipc",
      "--uts",
      "--net",
      "--propagation",
      "private",
      "--",
      "sh",
      "-c",
      HIDE,
      "evokernel-runner",
      options.cover ?? "-",
      ...options.hide,
      "--",
      ...as,
      file,
      ...args,
    ],
    pidNamespace: true,
    network: false,
    ...(uid === undefined ? {} : { uid }),
    ...unconfined,
  };
}

// Run as root in the runner's fresh mount namespace: covers each path before `--`, then
// starts the rest. A path it cannot cover stops the job (the runner never starts beside it).
// (Not /dev/null over a file: where /dev/null is not the device, that would show what others
// wrote to it.)
const HIDE = `set -eu
cover=$1
shift
hide_failed() { echo "evokernel: cannot hide $1 from the runner" >&2; exit 97; }
while [ "$1" != -- ]; do
  if [ -d "$1" ]; then
    mount -t tmpfs -o ro,nosuid,nodev,noexec,size=4k,mode=0555 evokernel-hidden "$1" || hide_failed "$1"
  elif [ -e "$1" ]; then
    [ -f "$cover" ] || hide_failed "$1"
    { mount --bind "$cover" "$1" && mount -o remount,bind,ro "$1"; } || hide_failed "$1"
  fi
  shift
done
shift
exec "$@"`;

/** EVOKERNEL_RUNNER_UID: a uid other than root's (by default 60998), or off. */
function runnerUid(
  env: Readonly<Record<string, string | undefined>>,
): "off" | { uid: number; explicit: boolean } {
  const text = env["EVOKERNEL_RUNNER_UID"]?.trim();
  if (text === undefined || text === "") return { uid: DEFAULT_RUNNER_UID, explicit: false };
  if (text.toLowerCase() === "off") return "off";
  const uid = Number(text);
  if (!Number.isInteger(uid) || uid <= 0 || uid >= 2 ** 31)
    throw new Error(
      `EVOKERNEL_RUNNER_UID=${text} is not a uid: set it to a number above 0 that no other user or service has (by default ${DEFAULT_RUNNER_UID}), or to off (the runner as the app's own user)`,
    );
  return { uid, explicit: true };
}

/**
 * The uids of local runners, one for each of `slots` jobs that run at once: from
 * EVOKERNEL_RUNNER_UID (60998) up, passing over the uid a root runner's sandbox becomes
 * (EVOKERNEL_SANDBOX_UID, 60999: a CLI run as root on the same machine uses it). "off": the
 * runners run as the app's own user. None of them may belong to another user, service or app
 * on the machine (docs/INSTALL.md).
 */
export function runnerUids(
  slots: number,
  env: Readonly<Record<string, string | undefined>> = process.env,
): number[] | "off" {
  const setting = runnerUid(env);
  return setting === "off" ? "off" : slotUids(setting.uid, slots, env);
}

function slotUids(
  base: number,
  slots: number,
  env: Readonly<Record<string, string | undefined>>,
): number[] {
  const sandbox = Number(env["EVOKERNEL_SANDBOX_UID"] ?? DEFAULT_SANDBOX_UID);
  const uids: number[] = [];
  for (let uid = base; uids.length < slots; uid += 1) if (uid !== sandbox) uids.push(uid);
  return uids;
}

/**
 * The uid the harness sandbox of slot `slot` becomes where its runner is root (the runner as
 * the app's own user, EVOKERNEL_RUNNER_UID=off): EVOKERNEL_SANDBOX_UID (60999) plus the slot,
 * so two jobs' sandboxes never share one. A runner of its own uid makes its sandbox in a user
 * namespace of that uid instead (runner/src/sandbox/sandbox.ts).
 */
export function sandboxUidOf(
  slot: number,
  env: Readonly<Record<string, string | undefined>> = process.env,
): number {
  return Number(env["EVOKERNEL_SANDBOX_UID"] ?? DEFAULT_SANDBOX_UID) + slot;
}

let setprivFound: boolean | undefined;

async function hasSetpriv(): Promise<boolean> {
  if (setprivFound !== undefined) return setprivFound;
  const probe = await spawnProcess("setpriv", ["--version"], {
    env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" },
    extendEnv: false,
    reject: false,
    stdin: "ignore",
  }).catch(() => ({ exitCode: 1 }));
  return (setprivFound = probe.exitCode === 0);
}

async function canUnsharePid(): Promise<boolean> {
  if (unshareWorks !== undefined) return unshareWorks;
  if (process.getuid?.() !== 0) return (unshareWorks = false);
  const probe = await spawnProcess(
    "unshare",
    ["--pid", "--fork", "--kill-child", "--mount-proc", "true"],
    {
      env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" },
      extendEnv: false,
      reject: false,
      stdin: "ignore",
    },
  );
  return (unshareWorks = probe.exitCode === 0);
}

/**
 * The group `pid` leads (it was started with `detached: true`), as a record keeps it. A
 * leader gone already (a runner that exits at once) is recorded as such: the rest of its
 * group is still killed, never a later process that got its pid.
 */
export async function groupOf(pid: number): Promise<JobGroup> {
  const stat = await statOf(pid);
  // "gone": a live process of that pid later is never this leader.
  return { pgid: pid, leaderStart: stat?.start ?? "gone", bootId: await bootId() };
}

/**
 * Kills every process of the group (and, in its PID namespace, every process of the
 * namespace), and waits until none is left. Resolves to the pids still alive after the wait
 * (empty: all gone). A group whose leader is alive but started at another time, or one
 * recorded before the last boot, is another's: left alone.
 */
export async function killGroup(group: JobGroup): Promise<number[]> {
  if (group.bootId !== (await bootId())) return [];
  const leader = await statOf(group.pgid);
  if (leader !== undefined && leader.start !== group.leaderStart) return [];
  const signal = () => {
    try {
      process.kill(-group.pgid, "SIGKILL");
    } catch {
      // ESRCH: nothing left in the group.
    }
  };
  signal();
  const until = Date.now() + GONE_WITHIN_MS;
  for (;;) {
    const left = await membersOf(group.pgid);
    if (left.length === 0 || Date.now() > until) return left;
    // One that was being forked as the signal went out joins the group after it.
    signal();
    await sleep(20);
  }
}

/** Live (not zombie) processes whose real, effective or saved uid is `uid`. */
export async function processesOf(uid: number): Promise<number[]> {
  const found: number[] = [];
  for (const name of await readdir("/proc").catch(() => [] as string[])) {
    if (!/^\d+$/.test(name)) continue;
    const status = await readFile(`/proc/${name}/status`, "utf8").catch(() => "");
    const uids = /^Uid:\s+(\d+)\s+(\d+)\s+(\d+)/m.exec(status)?.slice(1).map(Number) ?? [];
    const state = /^State:\s+(\S)/m.exec(status)?.[1];
    if (uids.includes(uid) && state !== "Z") found.push(Number(name));
  }
  return found;
}

/** Live (not zombie) processes whose process group is `pgid`. */
async function membersOf(pgid: number): Promise<number[]> {
  const found: number[] = [];
  for (const name of await readdir("/proc").catch(() => [] as string[])) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await statOf(Number(name));
    if (stat !== undefined && stat.pgrp === pgid && stat.state !== "Z") found.push(Number(name));
  }
  return found;
}

interface Stat {
  readonly state: string;
  readonly pgrp: number;
  readonly start: string;
}

async function statOf(pid: number): Promise<Stat | undefined> {
  const text = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => undefined);
  if (text === undefined) return undefined;
  // "pid (comm) state ppid pgrp session … starttime(22)": comm may hold spaces and ")".
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const [state, , pgrp] = fields;
  const start = fields[19];
  if (state === undefined || pgrp === undefined || start === undefined) return undefined;
  return { state, pgrp: Number(pgrp), start };
}

async function bootId(): Promise<string> {
  return (await readFile("/proc/sys/kernel/random/boot_id", "utf8").catch(() => "")).trim();
}
