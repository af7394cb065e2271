// The one dispatch interface: how a job reaches a GPU, behind two backends (a workflow
// on the repository's GPU runners, or the app's own machine).
import type { JobSpec } from "../../shared/job.js";
import type { ReviewResult } from "../../shared/review.js";
import type { GitHub, RepoRef } from "../github.js";

export interface DispatchTarget {
  readonly spec: JobSpec;
  readonly github: GitHub;
  /** The workflow file (config `workflow`), for the actions backend. */
  readonly workflow: string;
  /** The ref the workflow is dispatched on: the default branch, so a PR cannot change the workflow. */
  readonly ref: string;
  /** The job's check run, when it exists before the dispatch (the local backend keeps it). */
  readonly checkRun?: { readonly installationId: number; readonly id: number };
}

/** A job a backend had when the app's process before this one ended: its check run is open. */
export interface LostJob {
  readonly jobId: string;
  readonly installationId: number;
  readonly repo: RepoRef;
  readonly checkRunId: number;
  /**
   * How far it got: queued (its runner never started), running (stopped now), or ended with
   * an outcome the process before could not report (a failure's message kept).
   */
  readonly stage: "queued" | "running" | "failed" | "finished";
  readonly message?: string;
}

export interface Dispatched {
  readonly runId?: number;
  readonly runUrl?: string;
}

/** How a job ended: a validated result, or a failure a person can act on. */
export type JobOutcome =
  | { readonly kind: "result"; readonly review: ReviewResult; readonly runUrl?: string }
  | { readonly kind: "failed"; readonly message: string; readonly runUrl?: string };

export interface Dispatcher {
  readonly name: "actions" | "local";
  start(target: DispatchTarget): Promise<Dispatched>;
  /** Stops a job (best effort): a running workflow is cancelled, a local process killed. */
  cancel(jobId: string, runId: number | undefined, github: GitHub): Promise<void>;
  /** Resolves when the backend has nothing queued or running (tests, shutdown). */
  idle?(): Promise<void>;
  /**
   * At start-up: the jobs an earlier process of the app left queued or running here, their
   * runners stopped and their files removed (the local backend; a workflow run outlives
   * the app and reports on its own).
   */
  recover?(): Promise<LostJob[]>;
  /** A lost job's check run is concluded: its record goes (until then, each start finds it). */
  forget?(jobId: string): Promise<void>;
  /**
   * Where a job it holds stands, in a sentence for the check run (the local backend: waiting
   * for a GPU, or running for so long with its last lines); undefined for a job it does not
   * hold or cannot see (a workflow run reports on its own page).
   */
  whereIs?(jobId: string): string | undefined;
}
