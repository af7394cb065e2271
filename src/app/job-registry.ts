// A job's identity and the record the app keeps while it runs. The record lives in memory
// for speed; what must survive a restart is written into GitHub itself: the check run's
// external_id holds the job id, the workflow run id and the job's deadline, so a restarted
// app can find its open check runs and conclude those past their deadline (jobs/recover.ts).
import { createHash, randomBytes } from "node:crypto";
import type { JobKind, JobSpec } from "../shared/job.js";
import type { RepoRef } from "./github.js";

export interface ActiveJob {
  readonly spec: JobSpec;
  readonly installationId: number;
  readonly repo: RepoRef;
  readonly checkRunId: number;
  readonly threshold: number;
  /** When the job fails for want of a result (epoch ms); also written into external_id. */
  readonly deadline: number;
  runId?: number;
  runUrl?: string;
  /** Cleared when the job finishes: the timeout that fails a job whose run never reports. */
  timer?: NodeJS.Timeout;
}

/**
 * Unique per dispatch, readable in a run list: `review-12-1a2b3c4-9f8e7d`. With `seed` (the
 * webhook delivery that started it) the last part is derived from it: a redelivery, to this
 * instance after a restart or to another, names the same job, which jobs/start.ts finds on
 * GitHub before starting it again.
 */
export function newJobId(
  kind: JobKind,
  pr: number | undefined,
  sha: string,
  seed?: string,
): string {
  const tail =
    seed === undefined
      ? randomBytes(3).toString("hex")
      : createHash("sha256").update(`${kind}\n${seed}`).digest("hex").slice(0, 6);
  return `${kind}-${pr ?? "x"}-${sha.slice(0, 7)}-${tail}`;
}

/** The check run's name: one per job kind, so a bench and an optimize on one commit coexist. */
export function checkName(kind: JobKind): string {
  return kind === "review" ? "evokernel" : `evokernel ${kind}`;
}

export const CHECK_NAME_PREFIX = "evokernel";

/**
 * external_id: `<job id>` (a check run concluded at once), `<job id>~<deadline>` before the
 * run is known, `<job id>@<run id>~<deadline>` after; the deadline in epoch seconds. A job
 * that claims its work (jobs/claim.ts) ends in `+<claim key>`: which command on which
 * commit it runs, so another instance (or a second comment) finds it running.
 */
export function externalIdOf(
  jobId: string,
  runId?: number,
  deadline?: number,
  claim?: string,
): string {
  const run = runId === undefined ? "" : `@${runId}`;
  const until = deadline === undefined ? "" : `~${Math.ceil(deadline / 1000)}`;
  const key = claim === undefined ? "" : `+${claim}`;
  return `${jobId}${run}${until}${key}`;
}

export interface ExternalIds {
  readonly jobId: string;
  readonly runId?: number;
  /** Epoch ms. */
  readonly deadline?: number;
  readonly claim?: string;
}

export function parseExternalId(externalId: string | null): ExternalIds | undefined {
  if (!externalId) return undefined;
  const match =
    /^([a-z]+-[\w]+-[0-9a-f]{7}-[0-9a-f]{6})(?:@(\d{1,16}))?(?:~(\d{1,12}))?(?:\+([0-9a-f]{8}))?$/.exec(
      externalId,
    );
  if (!match?.[1]) return undefined;
  const runId = match[2] === undefined ? undefined : Number(match[2]);
  const deadline = match[3] === undefined ? undefined : Number(match[3]) * 1000;
  return {
    jobId: match[1],
    ...(runId !== undefined && Number.isSafeInteger(runId) ? { runId } : {}),
    ...(deadline === undefined ? {} : { deadline }),
    ...(match[4] === undefined ? {} : { claim: match[4] }),
  };
}

/** The branch that holds an evolved kernel the PR's diff cannot carry as a suggestion. */
export function suggestionBranch(pr: number, sha: string): string {
  return `evokernel/${pr}-${sha.slice(0, 7)}`;
}

/** The check-run button that applies that branch (identifier ≤ 20 characters). */
export const APPLY_ACTION = {
  label: "Apply",
  description: "Apply the evolved kernel to this PR",
  identifier: "evk-apply",
} as const;

/** Jobs a pull request may have running at once; more wait for one to end (or /cancel). */
export const MAX_JOBS_PER_PULL = 4;
/**
 * Jobs an installation may have running at once, all its repositories together, unless the
 * operator sets EVOKERNEL_MAX_JOBS_PER_INSTALLATION.
 */
export const MAX_JOBS_PER_INSTALLATION = 100;

/** Live jobs by id and by workflow run id. */
export interface JobRegistry {
  add(job: ActiveJob): void;
  get(jobId: string): ActiveJob | undefined;
  byRun(runId: number): ActiveJob | undefined;
  setRun(jobId: string, runId: number | undefined, runUrl: string | undefined): void;
  /**
   * Claims the job for ending it (a report, a failure, supersede, cancel): the first caller
   * gets it, every other undefined while it is claimed. The job stays on the books until
   * `done`, so a report that fails half-way leaves it to be ended again.
   */
  claim(jobId: string): ActiveJob | undefined;
  /** Whether someone is ending the job now (it is claimed). */
  ending(jobId: string): boolean;
  /** Ending it failed before its check run was concluded: it may be claimed again. */
  release(jobId: string): void;
  /** Its check run is concluded: the job leaves the books. */
  done(jobId: string): void;
  /** Live jobs of an installation (the cap on queued jobs). */
  countFor(installationId: number): number;
  /** Jobs of a pull request that nobody is ending. */
  forPull(repo: RepoRef, pr: number): ActiveJob[];
  readonly size: number;
}

export function createJobRegistry(): JobRegistry {
  const jobs = new Map<string, ActiveJob>();
  const runs = new Map<number, string>();
  const claimed = new Set<string>();
  return {
    add(job) {
      jobs.set(job.spec.id, job);
    },
    get(jobId) {
      return jobs.get(jobId);
    },
    byRun(runId) {
      const id = runs.get(runId);
      return id === undefined ? undefined : jobs.get(id);
    },
    setRun(jobId, runId, runUrl) {
      const job = jobs.get(jobId);
      if (!job) return;
      if (runId !== undefined) {
        job.runId = runId;
        runs.set(runId, jobId);
      }
      if (runUrl !== undefined) job.runUrl = runUrl;
    },
    claim(jobId) {
      const job = jobs.get(jobId);
      if (!job || claimed.has(jobId)) return undefined;
      claimed.add(jobId);
      return job;
    },
    ending(jobId) {
      return claimed.has(jobId);
    },
    release(jobId) {
      claimed.delete(jobId);
    },
    done(jobId) {
      const job = jobs.get(jobId);
      claimed.delete(jobId);
      if (!job) return;
      jobs.delete(jobId);
      if (job.runId !== undefined) runs.delete(job.runId);
      if (job.timer) clearTimeout(job.timer);
    },
    forPull(repo, pr) {
      return [...jobs.values()].filter(
        (job) =>
          !claimed.has(job.spec.id) &&
          job.repo.owner === repo.owner &&
          job.repo.repo === repo.repo &&
          job.spec.pr === pr,
      );
    },
    countFor(installationId) {
      let count = 0;
      for (const job of jobs.values()) if (job.installationId === installationId) count++;
      return count;
    },
    get size() {
      return jobs.size;
    },
  };
}
