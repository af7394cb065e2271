// The local backend, for a single GPU box and development: the app runs the runner itself,
// in a git worktree of the job's commit, one job at a time per GPU, in a process group (and
// namespaces) of its own that is killed whole when the job ends, as a user of its own that
// sees none of the app's secrets (job-processes.ts, runner-access.ts): each job that runs at
// once (a slot: a GPU group) under a uid of its own, so no job reads, writes or signals
// another's (runnerUids); with no network but, for a job that runs the LLM, a socket to the
// LLM's API host (egress-proxy.ts). The runner's command is
// configurable (EVOKERNEL_RUNNER_CMD) so tests can put a recorded result in its place.
import { readdirSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve, sep } from "node:path";
import { jobUsesLlm, type JobSpec } from "../../shared/job.js";
import { parseReviewResult } from "../../shared/review.js";
import { createWorkQueue } from "../queue.js";
import { createLocalRecords, type LocalRecord } from "./local-records.js";
import type { Dispatcher, JobOutcome, LostJob } from "./types.js";
import { codeBlock, mdText } from "../../report/escape.js";
import { GIT_SAFE_ARGS, GIT_SAFE_ENV } from "../../shared/git-safety.js";
import { runnerEnv } from "../../shared/environment.js";
import { spawnProcess } from "../../process/spawn.js";
import {
  type Confined,
  confinedCommand,
  groupOf,
  type JobGroup,
  killGroup,
  processesOf,
  runnerUids,
  sandboxUidOf,
} from "./job-processes.js";
import {
  accessProblem,
  giveCacheFolder,
  prepareGpuLocks,
  runnerCannotReach,
  usersOf,
} from "./runner-access.js";
import { type EgressProxy, llmApiHost, startEgressProxy } from "./egress-proxy.js";

const JOB_DIR_PREFIX = "evokernel-job-";
/** Lines of a running job's output kept to say where it stands (whereIs). */
const TAIL_LINES = 12;

export interface LocalOptions {
  /** A clone of the repository the jobs are for; worktrees of job commits are made from it. */
  readonly repoDir: string;
  /** argv of the runner; `--spec FILE --out FILE` are appended. */
  readonly runnerCommand: readonly string[];
  /** GPUs on this machine: that many jobs at once, each with its own CUDA_VISIBLE_DEVICES. */
  readonly gpus: number;
  /**
   * GPUs a job is given (EVOKERNEL_GPUS_PER_JOB, default 1): one search spread over them
   * (CUDA_VISIBLE_DEVICES lists them all), and gpus / gpusPerJob jobs at once.
   */
  readonly gpusPerJob?: number;
  /**
   * Where a finished job's outcome goes (the app reports it to GitHub). False: its check run
   * could not be concluded yet, so its record stays for the next process to conclude.
   */
  readonly onDone: (spec: JobSpec, outcome: JobOutcome) => Promise<boolean | void>;
  readonly onError: (label: string, error: unknown) => void;
  /** Kill a runner after this long. */
  readonly timeoutMs: number;
  /** Where to keep a copy of each job's result and log (EVOKERNEL_RESULT_DIR), for a person. */
  readonly keepDir?: string;
  /**
   * Where each job's record lives from dispatch to end (local-records.ts), so that the next
   * process of the app stops a runner this one leaves behind and concludes its check run.
   */
  readonly stateDir?: string;
  /**
   * Said once, for the operator, where the runner runs as the app's own user (not root, no
   * util-linux, EVOKERNEL_RUNNER_UID=off): what it can then read.
   */
  readonly onNotice?: (message: string) => void;
  /** Said once, for the operator, before the first job: the uids the runners run as. */
  readonly onInfo?: (message: string) => void;
}

export function createLocalDispatcher(options: LocalOptions): Dispatcher {
  // A slot a job at a time: its GPUs and (where the runner has a uid of its own) its uid.
  const freeSlots = gpuGroups(options.gpus, options.gpusPerJob ?? 1).map((gpu, slot) => ({
    gpu,
    slot,
  }));
  const queue = createWorkQueue(freeSlots.length, options.onError);
  // A setting that is not a uid fails each job, saying so (confinedCommand): none here.
  const uids = () => {
    try {
      return runnerUids(freeSlots.length);
    } catch {
      return "off";
    }
  };
  const slots = freeSlots.length;
  // Each running job: its stop, and what it is doing (whereIs: a check run must say why it
  // never finished); the jobs queued behind them.
  const running = new Map<
    string,
    { abort: AbortController; gpu: string; sinceMs: number; lines: string[] }
  >();
  const waiting = new Set<string>();
  const cancelled = new Set<string>();
  const records = options.stateDir === undefined ? undefined : createLocalRecords(options.stateDir);
  let noticed = false;
  const notice = (message: string) => {
    if (noticed) return;
    noticed = true;
    options.onNotice?.(message);
  };
  // Jobs wait while the last process's are killed.
  let reaping: Promise<unknown> = Promise.resolve();
  let uidsChecked: Promise<string | undefined> | undefined;
  async function runJob(spec: JobSpec, record: LocalRecord | undefined): Promise<void> {
    let settled = true;
    try {
      if (cancelled.delete(spec.id)) return;
      await reaping;
      waiting.delete(spec.id);
      uidsChecked ??= checkUids(uids(), options);
      const taken = await uidsChecked;
      const { gpu, slot } = freeSlots.shift() ?? { gpu: "0", slot: 0 };
      const abort = new AbortController();
      const seen = { abort, gpu, sinceMs: Date.now(), lines: [] as string[] };
      running.set(spec.id, seen);
      const watch = (line: string) => {
        seen.lines.push(line.length > 300 ? `${line.slice(0, 300)}…` : line);
        if (seen.lines.length > TAIL_LINES) seen.lines.shift();
      };
      try {
        const onSpawn = async (
          pid: number,
          specFile: string,
          dir: string,
          group?: JobGroup,
          uid?: number,
        ) => {
          if (record)
            await records?.write({
              ...record,
              pid,
              specFile,
              dir,
              ...(group === undefined ? {} : { group }),
              ...(uid === undefined ? {} : { uid }),
            });
        };
        const outcome: JobOutcome =
          taken === undefined
            ? await runInWorktree(
                spec,
                { gpu, slot },
                abort.signal,
                options,
                onSpawn,
                notice,
                watch,
              )
            : { kind: "failed", message: taken };
        if (abort.signal.aborted) return;
        // What it came to, before it is reported: a restart in between concludes it with this.
        if (record)
          await records?.write({
            ...record,
            outcome:
              outcome.kind === "failed"
                ? { kind: "failed", message: outcome.message }
                : { kind: "result" },
          });
        // Until the app says the job's check run is concluded, the record stays.
        settled = false;
        settled = (await options.onDone(spec, outcome)) !== false;
      } finally {
        running.delete(spec.id);
        freeSlots.push({ gpu, slot });
      }
    } finally {
      waiting.delete(spec.id);
      if (record && settled) await records?.remove(spec.id);
    }
  }

  return {
    name: "local",
    async start({ spec, github, checkRun }) {
      const record =
        records && checkRun
          ? {
              jobId: spec.id,
              installationId: checkRun.installationId,
              owner: github.repo.owner,
              repo: github.repo.repo,
              checkRunId: checkRun.id,
            }
          : undefined;
      if (record) await records?.write(record);
      waiting.add(spec.id);
      queue.push(`local job ${spec.id}`, () => runJob(spec, record));
      return {};
    },
    async recover() {
      if (!records) return [];
      // Only a folder this backend makes (mkdtemp below) is removed, whatever a record says.
      const reaped = records.reap(async (dir) => {
        if (dirname(dir) === tmpdir() && basename(dir).startsWith(JOB_DIR_PREFIX))
          await removeJobDir(options.repoDir, dir);
      });
      reaping = reaped.catch(() => undefined);
      const left = await reaped;
      return left.map((record) => ({
        jobId: record.jobId,
        installationId: record.installationId,
        repo: { owner: record.owner, repo: record.repo },
        checkRunId: record.checkRunId,
        ...stageOf(record),
      }));
    },
    async forget(jobId) {
      await records?.remove(jobId);
    },
    idle() {
      return queue.idle();
    },
    whereIs(jobId) {
      const seen = running.get(jobId);
      if (seen !== undefined) {
        const minutes = (Date.now() - seen.sinceMs) / 60_000;
        const lines = seen.lines.join("\n").trim();
        return (
          `the runner on this machine (GPU ${seen.gpu}) was still working after ${minutes < 1 ? "less than a minute" : `${Math.round(minutes)} min`}` +
          (lines ? `; its last lines:\n\n${codeBlock(lines, "")}` : ", and had printed nothing")
        );
      }
      if (waiting.has(jobId))
        return `it never started: every GPU slot on this machine (${slots}) was busy with other jobs`;
      return undefined;
    },
    cancel(jobId) {
      const job = running.get(jobId);
      if (job) job.abort.abort();
      else cancelled.add(jobId);
      return Promise.resolve();
    },
  };
}

function stageOf(record: LocalRecord): Pick<LostJob, "stage" | "message"> {
  if (record.outcome?.kind === "failed")
    return { stage: "failed", message: record.outcome.message };
  if (record.outcome?.kind === "result") return { stage: "finished" };
  return { stage: record.pid === undefined ? "queued" : "running" };
}

/**
 * The machine's GPUs in groups of `perJob`, one group a job at a time, as CUDA_VISIBLE_DEVICES
 * names them ("0,1"); GPUs left over past the last whole group stay idle.
 */
export function gpuGroups(gpus: number, perJob: number): string[] {
  if (!Number.isInteger(perJob) || perJob < 1 || perJob > gpus) {
    throw new RangeError(
      `EVOKERNEL_GPUS_PER_JOB is a whole number from 1 to EVOKERNEL_GPUS (${gpus}), not ${perJob}`,
    );
  }
  return Array.from({ length: Math.floor(gpus / perJob) }, (_, group) =>
    Array.from({ length: perJob }, (_, index) => group * perJob + index).join(","),
  );
}

/**
 * Said once before the first job: the uids the runners run as. A uid a user of the machine
 * has fails every job (its runner could read that user's files): the message says which.
 * Processes already running as one (another app, a person) are logged.
 */
async function checkUids(
  uids: number[] | "off",
  options: LocalOptions,
): Promise<string | undefined> {
  if (uids === "off") return undefined;
  // Only where the runner does run as a uid of its own (the app root, util-linux found).
  if ((await confinedCommand("true", []).catch(() => undefined))?.uid === undefined)
    return undefined;
  const range = `${uids.join(", ")} (one for each job that runs at once, from EVOKERNEL_RUNNER_UID up)`;
  const users = await usersOf(uids);
  if (users.size > 0) {
    const named = [...users].map(([uid, name]) => `uid ${uid} is the user ${name}`).join(", ");
    return (
      `local jobs: the runners' uids are ${range}, but ${named} on the app's machine: ` +
      `a runner would reach that user's files. Set EVOKERNEL_RUNNER_UID to the first of ${uids.length} uids no user, service or other app has`
    );
  }
  options.onInfo?.(
    `local jobs: the runners run as uids ${range}; no other user, service or app on this machine may have them`,
  );
  for (const uid of uids) {
    const pids = await processesOf(uid);
    if (pids.length > 0)
      options.onNotice?.(
        `local jobs: processes ${pids.join(", ")} already run as uid ${uid}, one of the runners' uids: another app or a person uses it; give each its own range (EVOKERNEL_RUNNER_UID)`,
      );
  }
  return undefined;
}

async function runInWorktree(
  spec: JobSpec,
  { gpu, slot }: { gpu: string; slot: number },
  signal: AbortSignal,
  options: LocalOptions,
  onSpawn: (
    pid: number,
    specFile: string,
    dir: string,
    group?: JobGroup,
    uid?: number,
  ) => Promise<void>,
  notice: (message: string) => void,
  watch: (line: string) => void = () => undefined,
): Promise<JobOutcome> {
  const dir = await mkdtemp(join(tmpdir(), JOB_DIR_PREFIX));
  const worktree = join(dir, "checkout");
  const llm = jobUsesLlm(spec);
  let proxy: EgressProxy | undefined;
  // Every git command of the job: the safe arguments and environment, cancelled with the job.
  const git = (args: string[], reject = true) =>
    spawnProcess("git", [...GIT_SAFE_ARGS, "-C", options.repoDir, ...args], {
      cancelSignal: signal,
      env: GIT_SAFE_ENV,
      extendEnv: true,
      reject,
    });
  try {
    for (const sha of [spec.sha, spec.baseSha]) {
      if (sha !== undefined) await ensureCommit(git, sha, spec.pr);
    }
    await git(["worktree", "add", "--detach", "--force", worktree, spec.sha]);
    const specFile = join(dir, "spec.json");
    const outFile = join(dir, "result.json");
    await writeFile(specFile, JSON.stringify(spec));
    const [command, ...args] = options.runnerCommand;
    if (command === undefined)
      return {
        kind: "failed",
        message: "EVOKERNEL_RUNNER_CMD is empty; set it to the runner's command",
      };
    // Its own process group and namespaces, its own user, the app's secrets out of its sight
    // (job-processes.ts): whatever the job starts is killed with it, at every end.
    const cover = join(dir, "hidden");
    let confined: Confined;
    try {
      confined = await confinedCommand(command, [...args, "--spec", specFile, "--out", outFile], {
        hide: hiddenFromRunner(options, [dir, ...options.runnerCommand]),
        cover,
        slot,
      });
    } catch (error) {
      return { kind: "failed", message: error instanceof Error ? error.message : String(error) };
    }
    if (confined.unconfined !== undefined)
      notice(
        `local jobs: the runner runs as the app's own user (uid ${process.getuid?.() ?? "?"}) because ${confined.unconfined}; ` +
          "code running as the runner can read what that user can (the app's .env and key among them). " +
          (confined.unconfined === "EVOKERNEL_RUNNER_UID=off"
            ? "Unset EVOKERNEL_RUNNER_UID for a runner of its own uid (60998)"
            : "Run the app as root with util-linux `unshare` and `setpriv` for a runner of its own uid (EVOKERNEL_RUNNER_UID, by default 60998)") +
          (confined.network
            ? "; without namespaces the runner also shares the machine's network: a job reaches any host, an LLM job not only the LLM's API host"
            : ""),
      );
    // In a network namespace of its own, an LLM job's runner reaches the LLM's API host, and
    // nothing else, through this job's proxy; closed with the job (the finally below). Made
    // while the folder is still the app's alone (mkdtemp: 0700), so that no other job's
    // runner (the same uid) can swap the socket for a link before it is given to this one.
    if (llm && !confined.network) {
      try {
        proxy = await startEgressProxy({
          path: join(dir, "llm-proxy.sock"),
          allow: llmApiHost(process.env),
          ...(confined.uid === undefined ? {} : { uid: confined.uid }),
        });
      } catch (error) {
        return { kind: "failed", message: error instanceof Error ? error.message : String(error) };
      }
    }
    // A runner of its own uid owns the job's folder, a home and a build cache in it, and
    // nothing of the app's: what else it needs is checked before it starts.
    const own =
      confined.uid === undefined ? undefined : await prepareRunnerUser(confined.uid, dir, options);
    if (typeof own === "string") return { kind: "failed", message: own };
    // A root runner's sandboxes: a uid of the slot's too, and the GPU locks every uid's.
    const rootRunner = confined.uid === undefined && process.getuid?.() === 0;
    const locks = gpuLocksFolder();
    if (rootRunner && locks !== "off") await prepareGpuLocks(locks, options.gpus);
    // After the folder is the runner's: this file stays root's, empty, unreadable. Made new
    // ("wx": never through a link another job's runner put there).
    await writeFile(cover, "", { mode: 0o400, flag: "wx" });
    // The runner's own settings (an allowlist), and the proxy's socket only where it is this job's.
    const env = runnerEnv(process.env, { llm });
    delete env["EVOKERNEL_LLM_PROXY_SOCKET"];
    if (proxy !== undefined) env["EVOKERNEL_LLM_PROXY_SOCKET"] = proxy.path;
    const seeLines = function* (line: unknown): Generator<string, void, void> {
      const text = typeof line === "string" ? line : String(line);
      watch(text);
      yield text;
    };
    const runner = spawnProcess(confined.file, confined.args, {
      cwd: worktree,
      // The runner handles a PR's code: its environment is an allowlist (src/shared/environment.ts),
      // so none of the app's credentials, nor any other service's, reaches it.
      // The LLM's key only for a job that runs the LLM proposer.
      env: {
        ...env,
        CUDA_VISIBLE_DEVICES: gpu,
        ...(rootRunner ? { EVOKERNEL_SANDBOX_UID: String(sandboxUidOf(slot)) } : {}),
        ...(own === undefined ? {} : own.env),
        ...(own === undefined
          ? {}
          : {
              // git refuses a worktree of another owner's clone unless told it is safe
              GIT_CONFIG_COUNT: "1",
              GIT_CONFIG_KEY_0: "safe.directory",
              GIT_CONFIG_VALUE_0: worktree,
            }),
      },
      extendEnv: false,
      detached: true,
      reject: false,
      all: true,
      stdin: "ignore",
      // Each line seen as it comes (whereIs: what a job still running was doing), kept as is.
      stdout: seeLines,
      stderr: seeLines,
    });
    const group = runner.pid === undefined ? undefined : await groupOf(runner.pid);
    let timedOut = false;
    const stop = () => {
      if (group !== undefined) void killGroup(group);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      stop();
    }, options.timeoutMs);
    signal.addEventListener("abort", stop);
    let run: Awaited<typeof runner>;
    try {
      if (runner.pid !== undefined) await onSpawn(runner.pid, specFile, dir, group, confined.uid);
      if (signal.aborted) stop();
      run = await runner;
    } finally {
      clearTimeout(timer);
      signal.removeEventListener("abort", stop);
      // Success or not, nothing the job started outlives it; waited for, so the next job
      // on this GPU starts with none of this one's processes.
      if (group !== undefined) {
        const left = await killGroup(group);
        if (left.length > 0)
          options.onError(
            `local job ${spec.id}`,
            new Error(`processes ${left.join(", ")} of the job's group did not die`),
          );
      }
    }
    // Kept for a person whatever the end, a job stopped at its deadline included.
    if (options.keepDir !== undefined)
      await keepOutputs(options.keepDir, spec.id, outFile, run.all ?? "");
    if (signal.aborted) return { kind: "failed", message: "cancelled" };
    if (timedOut)
      return {
        kind: "failed",
        message: `the runner took over ${Math.round(options.timeoutMs / 60_000)} minutes and was stopped; give the job a smaller budget`,
      };
    return await readOutcome(outFile, run.exitCode, run.all ?? "");
  } finally {
    await proxy?.close();
    await removeJobDir(options.repoDir, dir);
  }
}

/**
 * The app's paths a runner must not see: its .env and key files (where Probot reads them),
 * its job records and the results it keeps. Never one that holds what the runner needs.
 */
function hiddenFromRunner(options: LocalOptions, needed: readonly string[]): string[] {
  const cwd = process.cwd();
  const keys = (() => {
    try {
      return readdirSync(cwd)
        .filter((name) => name.endsWith(".pem"))
        .map((name) => join(cwd, name));
    } catch {
      return [];
    }
  })();
  const paths = [
    join(cwd, ".env"),
    ...(process.env["PRIVATE_KEY_PATH"] ? [resolve(process.env["PRIVATE_KEY_PATH"])] : []),
    ...keys,
    ...(options.stateDir === undefined ? [] : [resolve(options.stateDir)]),
    ...(options.keepDir === undefined ? [] : [resolve(options.keepDir)]),
  ];
  const kept = [resolve(options.repoDir), ...needed.map((path) => resolve(path))];
  return paths.filter(
    (path) =>
      !kept.some(
        (need) => need === path || need.startsWith(path.endsWith(sep) ? path : path + sep),
      ),
  );
}

/**
 * Readies what a runner of `uid` needs: the job's folder, a home and a build cache in it (or,
 * where the operator names one, EVOKERNEL_CACHE/runner-UID: another uid's cache is not its to
 * write), the GPU locks' folder (every uid's: prepareGpuLocks); or says what it cannot reach.
 */
async function prepareRunnerUser(
  uid: number,
  dir: string,
  options: LocalOptions,
): Promise<string | { env: Record<string, string> }> {
  const problem = await runnerCannotReach(uid, options.runnerCommand, options.repoDir, process.env);
  if (problem !== undefined) return problem;
  const home = join(dir, "home");
  await mkdir(home);
  const shared = process.env["EVOKERNEL_CACHE"];
  const locks = gpuLocksFolder();
  let cache = join(dir, "cache");
  try {
    if (shared === undefined) await mkdir(cache);
    else cache = await giveCacheFolder(uid, shared);
    if (locks !== "off") await prepareGpuLocks(locks, options.gpus);
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  // The job's folder is given to it below; a cache of the operator's must be reachable.
  const unreachable = shared === undefined ? undefined : await accessProblem(uid, cache, "write");
  if (unreachable !== undefined) return unreachable;
  await spawnProcess("chown", ["-R", `${uid}:${uid}`, dir], {
    env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" },
    extendEnv: false,
  });
  return {
    env: {
      HOME: home,
      XDG_CACHE_HOME: join(home, ".cache"),
      EVOKERNEL_CACHE: cache,
      EVOKERNEL_GPU_LOCKS: locks,
    },
  };
}

/** The GPU locks' folder every job's runner and sandbox share (EVOKERNEL_GPU_LOCKS, or off). */
function gpuLocksFolder(): string {
  return process.env["EVOKERNEL_GPU_LOCKS"] ?? join(tmpdir(), "evokernel-gpu-locks");
}

/** A job's folder and the worktree in it, gone (git forgets the worktree too). */
async function removeJobDir(repoDir: string, dir: string): Promise<void> {
  await spawnProcess(
    "git",
    [...GIT_SAFE_ARGS, "-C", repoDir, "worktree", "remove", "--force", join(dir, "checkout")],
    {
      env: GIT_SAFE_ENV,
      extendEnv: true,
      reject: false,
    },
  );
  await rm(dir, { recursive: true, force: true });
}

async function keepOutputs(
  keepDir: string,
  jobId: string,
  outFile: string,
  log: string,
): Promise<void> {
  await mkdir(keepDir, { recursive: true });
  await writeFile(join(keepDir, `${jobId}.log`), log);
  await copyFile(outFile, join(keepDir, `${jobId}.json`)).catch(() => undefined);
}

async function ensureCommit(
  git: (args: string[], reject?: boolean) => Promise<{ exitCode?: number | undefined }>,
  sha: string,
  pr: number | undefined,
): Promise<void> {
  if ((await git(["cat-file", "-e", `${sha}^{commit}`], false)).exitCode === 0) return;
  // A fork's commits reach the base repository as refs/pull/N/head.
  const refs = pr === undefined ? [sha] : [sha, `refs/pull/${pr}/head`];
  for (const ref of refs) {
    if ((await git(["fetch", "--quiet", "origin", ref], false)).exitCode === 0) return;
  }
}

async function readOutcome(
  outFile: string,
  exitCode: number | undefined,
  log: string,
): Promise<JobOutcome> {
  const tail = log.slice(-1500);
  let text: string;
  try {
    text = await readFile(outFile, "utf8");
  } catch {
    return {
      kind: "failed",
      // The tail may hold a candidate's output: a fence longer than any backtick run in it.
      message: `the runner exited with ${exitCode ?? "a signal"} and wrote no result${explainExit(exitCode)}.\n\n${codeBlock(tail, "")}`,
    };
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return {
      kind: "failed",
      message:
        "the runner's result file is not JSON; run `evokernel job` by hand on this commit to see why",
    };
  }
  const parsed = parseReviewResult(data);
  if (!parsed.ok)
    return {
      kind: "failed",
      message: `the runner's result does not match the review schema (${mdText(parsed.errors.slice(0, 3).join("; "))}); update the runner`,
    };
  // Whether it names this job and commit is checked where every job ends (jobs/finish.ts).
  return { kind: "result", review: parsed.result };
}

function explainExit(code: number | undefined): string {
  if (code === 2) return " (a usage error: the job spec or the task)";
  if (code === 3) return " (no CUDA GPU or no Python with PyTorch on the app's machine)";
  if (code === 4) return " (an internal error in the runner)";
  return "";
}
