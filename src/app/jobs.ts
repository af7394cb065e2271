// A job's identity and the record the app keeps while it runs. The record lives in memory
// for speed; what must survive a restart is written into GitHub itself: the check run's
// external_id holds the job id and the workflow run id, and the result artifact carries the
// whole spec (ReviewResult.job), so a completed run can find its check run again.
import { randomBytes } from "node:crypto";
import type { JobKind, JobSpec } from "../shared/job.js";
import type { RepoRef } from "./github.js";

export interface ActiveJob {
  readonly spec: JobSpec;
  readonly installationId: number;
  readonly repo: RepoRef;
  readonly checkRunId: number;
  readonly threshold: number;
  runId?: number;
  runUrl?: string;
  /** Cleared when the job finishes: the timeout that fails a job whose run never reports. */
  timer?: NodeJS.Timeout;
}

/** Unique per dispatch, readable in a run list: `review-12-1a2b3c4-9f8e7d`. */
export function newJobId(kind: JobKind, pr: number | undefined, sha: string): string {
  return `${kind}-${pr ?? "x"}-${sha.slice(0, 7)}-${randomBytes(3).toString("hex")}`;
}

/** The check run's name: one per job kind, so a bench and an optimize on one commit coexist. */
export function checkName(kind: JobKind): string {
  return kind === "review" ? "evokernel" : `evokernel ${kind}`;
}

export const CHECK_NAME_PREFIX = "evokernel";

/** external_id: `<job id>` before dispatch, `<job id>@<run id>` once the run is known. */
export function externalIdOf(jobId: string, runId?: number): string {
  return runId === undefined ? jobId : `${jobId}@${runId}`;
}

export function parseExternalId(
  externalId: string | null,
): { jobId: string; runId?: number } | undefined {
  if (!externalId) return undefined;
  const [jobId, run] = externalId.split("@");
  if (!jobId || !/^[a-z]+-[\w]+-[0-9a-f]{7}-[0-9a-f]{6}$/.test(jobId)) return undefined;
  const runId = run === undefined ? undefined : Number(run);
  return runId !== undefined && Number.isSafeInteger(runId) ? { jobId, runId } : { jobId };
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

/** Live jobs by id and by workflow run id. */
export interface JobRegistry {
  add(job: ActiveJob): void;
  get(jobId: string): ActiveJob | undefined;
  byRun(runId: number): ActiveJob | undefined;
  setRun(jobId: string, runId: number | undefined, runUrl: string | undefined): void;
  /** Removes and returns the job: whoever takes it reports it, exactly once. */
  take(jobId: string): ActiveJob | undefined;
  forPull(repo: RepoRef, pr: number): ActiveJob[];
}

export function createJobRegistry(): JobRegistry {
  const jobs = new Map<string, ActiveJob>();
  const runs = new Map<number, string>();
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
    take(jobId) {
      const job = jobs.get(jobId);
      if (!job) return undefined;
      jobs.delete(jobId);
      if (job.runId !== undefined) runs.delete(job.runId);
      if (job.timer) clearTimeout(job.timer);
      return job;
    },
    forPull(repo, pr) {
      return [...jobs.values()].filter(
        (job) => job.repo.owner === repo.owner && job.repo.repo === repo.repo && job.spec.pr === pr,
      );
    },
  };
}
