// How a job is stopped before its result: a newer commit supersedes it, a person cancels it
// (`/cancel`) or its pull request is closed. Jobs in the registry end through finishJob
// (claimed once, off the books once concluded); after a restart the registry is empty, so
// the app's own open check runs on the commit (their external_id) say which jobs were in
// flight. A job that times out ends in finish.ts, at its deadline.
import type { JobSpec } from "../../shared/job.js";
import type { AppState } from "../app-state.js";
import type { GitHub, Pull } from "../github.js";
import { finishJob } from "./finish.js";
import { type ActiveJob, CHECK_NAME_PREFIX, parseExternalId } from "../job-registry.js";

/** A newer commit replaced this job's: stop it and say so (neutral, not a failure). */
export async function supersedeJob(
  state: AppState,
  github: GitHub,
  job: ActiveJob,
  newSha: string,
): Promise<void> {
  await finishJob(state, github, job, "superseding the job", async () => {
    for (const dispatcher of state.dispatchers) {
      await dispatcher.cancel(job.spec.id, job.runId, github).catch((error: unknown) => {
        state.log.warn({ err: error, job: job.spec.id }, "cancel failed");
      });
    }
    await github.updateCheckRun(job.checkRunId, {
      status: "completed",
      conclusion: "neutral",
      output: supersededOutput(newSha),
    });
  });
}

/**
 * A newer job of the same group (jobs/concurrency.ts: kind, pull request, tasks) replaces
 * this one: stopped before the new one is dispatched, its check run neutral and naming it.
 */
export async function replaceJob(
  state: AppState,
  github: GitHub,
  job: ActiveJob,
  newer: JobSpec,
): Promise<void> {
  await finishJob(state, github, job, "superseding the job", async () => {
    for (const dispatcher of state.dispatchers) {
      await dispatcher.cancel(job.spec.id, job.runId, github).catch((error: unknown) => {
        state.log.warn({ err: error, job: job.spec.id }, "cancel failed");
      });
    }
    await github.updateCheckRun(job.checkRunId, {
      status: "completed",
      conclusion: "neutral",
      output: {
        title: "Superseded",
        summary: `A newer \`${newer.kind}\` job on the same tasks (\`${newer.id}\`${newer.requestedBy === undefined ? "" : `, asked by @${newer.requestedBy}`}) replaced this one; its check run will have the result.`,
      },
    });
  });
}

export function supersededOutput(newSha: string): { title: string; summary: string } {
  return {
    title: "Superseded",
    summary: `A newer commit (${newSha.slice(0, 7)}) replaced this one; its own check run has the result. To run a command on it, comment again.`,
  };
}

/**
 * Every running job of the PR stops; its check run says why (`/cancel`, or the PR closed).
 * Jobs in memory first, then the head's open check runs of the app (after a restart).
 */
export async function cancelPull(
  state: AppState,
  github: GitHub,
  pull: Pick<Pull, "number" | "headSha">,
  why = "Cancelled by `/cancel`.",
): Promise<void> {
  const handled = new Set<number>();
  for (const job of state.jobs.forPull(github.repo, pull.number)) {
    handled.add(job.checkRunId);
    await finishJob(state, github, job, "cancelling the job", async () => {
      for (const dispatcher of state.dispatchers)
        await dispatcher.cancel(job.spec.id, job.runId, github).catch(() => undefined);
      await github.updateCheckRun(job.checkRunId, cancelledUpdate(why));
    });
  }
  for (const run of await github.listCheckRuns(pull.headSha)) {
    if (
      !run.name.startsWith(CHECK_NAME_PREFIX) ||
      run.status === "completed" ||
      handled.has(run.id)
    )
      continue;
    const ids = parseExternalId(run.externalId);
    if (!ids) continue;
    for (const dispatcher of state.dispatchers)
      await dispatcher.cancel(ids.jobId, ids.runId, github).catch(() => undefined);
    await github.updateCheckRun(run.id, cancelledUpdate(why));
  }
}

function cancelledUpdate(why: string) {
  return {
    status: "completed" as const,
    conclusion: "cancelled" as const,
    output: {
      title: "Cancelled",
      summary: `${why} Comment \`/bench\` (or \`/optimize\`) to run it again.`,
    },
  };
}

/** The jobs of the commit a push replaced: cancelled, their check runs neutral "superseded". */
export async function supersedeOldJobs(
  state: AppState,
  github: GitHub,
  pull: { readonly number: number; readonly before: string | undefined },
  newSha: string,
): Promise<void> {
  const handled = new Set<number>();
  for (const job of state.jobs.forPull(github.repo, pull.number)) {
    if (job.spec.sha === newSha) continue;
    handled.add(job.checkRunId);
    await supersedeJob(state, github, job, newSha);
  }
  // After a restart the registry is empty: the check runs on the old commit still say which
  // jobs were in flight (external_id holds the job and run ids).
  const before = pull.before;
  if (!before || /^0+$/.test(before)) return;
  const runs = await github.listCheckRuns(before);
  for (const run of runs) {
    if (
      !run.name.startsWith(CHECK_NAME_PREFIX) ||
      run.status === "completed" ||
      handled.has(run.id)
    )
      continue;
    const ids = parseExternalId(run.externalId);
    if (!ids) continue;
    for (const dispatcher of state.dispatchers) {
      await dispatcher.cancel(ids.jobId, ids.runId, github).catch((error: unknown) => {
        state.log.warn({ err: error, job: ids.jobId }, "cancel failed");
      });
    }
    await github.updateCheckRun(run.id, {
      status: "completed",
      conclusion: "neutral",
      output: supersededOutput(newSha),
    });
  }
}
