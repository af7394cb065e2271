// One fork server per command run (torch imported once), and what it says about the machine.
import { constants } from "node:fs";
import { access, mkdir, stat } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { EnvironmentError } from "../errors.js";
import { cacheDir } from "../paths.js";
import { ForkServer, device } from "../harness/client.js";
import type { DeviceRecord } from "#shared/contract/records.js";
import { gpuPossible } from "../gpu/presence.js";
import { makeTempFolder, removeAll } from "../workspace/files.js";

export const NO_GPU =
  "no CUDA GPU on this machine: verification and timing need one " +
  "(run on a GPU runner; `evokernel tasks` and static checks work here)";

export type Session = { server: ForkServer; device: DeviceRecord };

export type SessionOptions = {
  /** Refuse at once, before torch is imported, where no NVIDIA driver is visible. */
  needGpu?: boolean;
  /** Where the line that says the harness is starting goes (stderr). */
  say?: (line: string) => void;
  /**
   * Started as the harness starts (the fork server imports torch first: 10-30 s), never
   * waited for: work that needs no fork server, such as a build.
   */
  beside?: () => void;
};

/** Runs `work` with a fork server open, and closes it however the work ends. */
export async function withSession<T>(
  work: (session: Session) => Promise<T>,
  options: SessionOptions = {},
): Promise<T> {
  if (options.needGpu === true && !gpuPossible()) throw new EnvironmentError(NO_GPU);
  await requireWritableCache();
  options.say?.("starting the harness: Python imports torch (10–30 s) …");
  const server = new ForkServer();
  options.beside?.();
  try {
    const record = await whileWaiting(
      device({ runner: server.run }),
      options.say,
      (seconds) => `still starting the harness (${seconds.toFixed(0)} s): Python imports torch …`,
    );
    return await work({ server, device: record });
  } finally {
    await server.close();
  }
}

/** How often a wait is reported (the command's progress says the same of its steps). */
export const WAIT_REPORT_MS = 10_000;

/** `promise`, with a line every WAIT_REPORT_MS while it is pending (none without `say`). */
export async function whileWaiting<T>(
  promise: Promise<T>,
  say: ((line: string) => void) | undefined,
  line: (seconds: number) => string,
  everyMs = WAIT_REPORT_MS,
): Promise<T> {
  if (say === undefined) return promise;
  const started = Date.now();
  const timer = setInterval(() => say(line((Date.now() - started) / 1000)), everyMs);
  timer.unref();
  try {
    return await promise;
  } finally {
    clearInterval(timer);
  }
}

/**
 * The build cache ($EVOKERNEL_CACHE, else .cache/evokernel) can be written: a setting that
 * points elsewhere is exit 3 with what to change, not a traceback from every build.
 */
export async function requireWritableCache(cache = cacheDir()): Promise<void> {
  try {
    await makeFolders(resolve(cache));
    await access(cache, constants.W_OK);
  } catch (error) {
    const why = error instanceof Error && "code" in error ? String(error.code) : String(error);
    const setting = process.env["EVOKERNEL_CACHE"] === undefined ? "" : "EVOKERNEL_CACHE=";
    throw new EnvironmentError(
      `the build cache ${setting}${cache} cannot be written (${why}): point EVOKERNEL_CACHE at a folder you can write`,
      { cause: error },
    );
  }
}

/**
 * Runs a job with a build cache of its own (issue 16.3: nothing a job's candidates write
 * survives into the next job): a fresh folder under the configured cache, as
 * $EVOKERNEL_CACHE for everything the job starts, removed when the job ends however it ends.
 * The sandbox lets candidates write the cache (builds, load_inline), so a shared one would let
 * one pull request's candidate plant an artifact, a probe entry or ceilings for another's.
 */
export async function withJobCache<T>(work: (cache: string) => Promise<T>): Promise<T> {
  const base = cacheDir();
  await requireWritableCache(base);
  const cache = await makeTempFolder("job-", resolve(base));
  const before = process.env["EVOKERNEL_CACHE"];
  process.env["EVOKERNEL_CACHE"] = cache;
  try {
    return await work(cache);
  } finally {
    if (before === undefined) delete process.env["EVOKERNEL_CACHE"];
    else process.env["EVOKERNEL_CACHE"] = before;
    await removeAll(cache);
  }
}

/**
 * `mkdir -p` one folder at a time. Node 20's `mkdir(…, { recursive: true })` never returns
 * when a parent exists but refuses children with ENOENT (/proc, /sys): a setting such as
 * EVOKERNEL_CACHE=/proc/x hung the CLI instead of failing.
 */
async function makeFolders(path: string): Promise<void> {
  const missing: string[] = [];
  let dir = path;
  while (!(await exists(dir))) {
    missing.unshift(dir);
    if (dirname(dir) === dir) break;
    dir = dirname(dir);
  }
  for (const folder of missing) await mkdir(folder);
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

export function requireGpu(session: Session): void {
  if (!session.device.cuda) throw new EnvironmentError(NO_GPU);
}
