// The local backend, for a single GPU box and development: the app runs the runner itself,
// in a git worktree of the job's commit, one job at a time per GPU, in a process group (and
// PID namespace) of its own that is killed whole when the job ends (job-processes.ts). The runner's command is
// configurable (EVOKERNEL_RUNNER_CMD) so tests can put a recorded result in its place.
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
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
} from "./job-processes.js";

const JOB_DIR_PREFIX = "evokernel-job-";

export interface LocalOptions {
  /** A clone of the repository the jobs are for; worktrees of job commits are made from it. */
  readonly repoDir: string;
  /** argv of the runner; `--spec FILE --out FILE` are appended. */
  readonly runnerCommand: readonly string[];
  /** GPUs on this machine: that many jobs at once, each with its own CUDA_VISIBLE_DEVICES. */
  readonly gpus: number;
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
}

export function createLocalDispatcher(options: LocalOptions): Dispatcher {
  const queue = createWorkQueue(options.gpus, options.onError);
  const freeGpus = Array.from({ length: options.gpus }, (_, index) => index);
  const running = new Map<string, AbortController>();
  const cancelled = new Set<string>();
  const records = options.stateDir === undefined ? undefined : createLocalRecords(options.stateDir);

  async function runJob(spec: JobSpec, record: LocalRecord | undefined): Promise<void> {
    let settled = true;
    try {
      if (cancelled.delete(spec.id)) return;
      const gpu = freeGpus.shift() ?? 0;
      const abort = new AbortController();
      running.set(spec.id, abort);
      try {
        const onSpawn = async (pid: number, specFile: string, dir: string, group?: JobGroup) => {
          if (record)
            await records?.write({
              ...record,
              pid,
              specFile,
              dir,
              ...(group === undefined ? {} : { group }),
            });
        };
        const outcome = await runInWorktree(spec, gpu, abort.signal, options, onSpawn);
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
        freeGpus.push(gpu);
      }
    } finally {
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
      queue.push(`local job ${spec.id}`, () => runJob(spec, record));
      return {};
    },
    async recover() {
      if (!records) return [];
      // Only a folder this backend makes (mkdtemp below) is removed, whatever a record says.
      const left = await records.reap(async (dir) => {
        if (dirname(dir) === tmpdir() && basename(dir).startsWith(JOB_DIR_PREFIX))
          await removeJobDir(options.repoDir, dir);
      });
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
    cancel(jobId) {
      const abort = running.get(jobId);
      if (abort) abort.abort();
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

async function runInWorktree(
  spec: JobSpec,
  gpu: number,
  signal: AbortSignal,
  options: LocalOptions,
  onSpawn: (pid: number, specFile: string, dir: string, group?: JobGroup) => Promise<void>,
): Promise<JobOutcome> {
  const dir = await mkdtemp(join(tmpdir(), JOB_DIR_PREFIX));
  const worktree = join(dir, "checkout");
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
    // Its own process group (and PID namespace where the app may make one): whatever the job
    // starts is killed with it, at every end (job-processes.ts).
    let confined: Confined;
    try {
      confined = await confinedCommand(command, [...args, "--spec", specFile, "--out", outFile]);
    } catch (error) {
      return { kind: "failed", message: error instanceof Error ? error.message : String(error) };
    }
    // A runner of its own uid (EVOKERNEL_RUNNER_UID) owns the job's folder and a home in it,
    // and nothing of the app's: not its .env, its key or its home.
    const home = confined.uid === undefined ? undefined : join(dir, "home");
    if (confined.uid !== undefined && home !== undefined) {
      await mkdir(home);
      await spawnProcess("chown", ["-R", `${confined.uid}:${confined.uid}`, dir], {
        env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" },
        extendEnv: false,
      });
    }
    const runner = spawnProcess(confined.file, confined.args, {
      cwd: worktree,
      // The runner handles a PR's code: its environment is an allowlist (src/shared/environment.ts),
      // so none of the app's credentials, nor any other service's, reaches it.
      // The LLM's key only for a job that runs the LLM proposer.
      env: {
        ...runnerEnv(process.env, { llm: jobUsesLlm(spec) }),
        CUDA_VISIBLE_DEVICES: String(gpu),
        ...(home === undefined ? {} : { HOME: home, XDG_CACHE_HOME: join(home, ".cache") }),
      },
      extendEnv: false,
      detached: true,
      reject: false,
      all: true,
      stdin: "ignore",
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
      if (runner.pid !== undefined) await onSpawn(runner.pid, specFile, dir, group);
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
    if (signal.aborted) return { kind: "failed", message: "cancelled" };
    if (options.keepDir !== undefined)
      await keepOutputs(options.keepDir, spec.id, outFile, run.all ?? "");
    if (timedOut)
      return {
        kind: "failed",
        message: `the runner took over ${Math.round(options.timeoutMs / 60_000)} minutes and was stopped; give the job a smaller budget`,
      };
    return await readOutcome(outFile, run.exitCode, run.all ?? "");
  } finally {
    await removeJobDir(options.repoDir, dir);
  }
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
