// How every job ends, in one place: a result reported, a failure, a timeout. A job is claimed
// before it is ended (a run's result and the deadline racing, two deliveries of one run: one
// of them ends it) and leaves the books only once its check run is concluded. A report that
// fails half-way still concludes the check run, as a failure that says why; if even that
// cannot be written (GitHub down), the job goes back on the books and is tried again, so no
// check run the app opened stays in progress for ever.
import type { AppState } from "../app-state.js";
import type { JobOutcome } from "../dispatch/types.js";
import type { GitHub } from "../github.js";
import type { ActiveJob } from "../job-registry.js";
import { CHECK_OUTPUT_LIMIT, trimTo } from "../limits.js";
import { reportResult } from "./report.js";
import { createRedactor } from "../redact.js";

/** Where the app was given no secrets to look for: secrets by their shape only. */
const PATTERNS_ONLY = createRedactor([]);

/** After a failed attempt to end a job, the next one comes this much later. */
export const RETRY_END_MS = 60_000;

/**
 * Ends `job` with `report`, which must conclude its check run. True when this call ended it;
 * false when another caller had claimed it. A failing report concludes the check run as a
 * failure naming `what` failed and the error; the report's error is logged, not thrown.
 */
export async function finishJob(
  state: AppState,
  github: GitHub,
  job: ActiveJob,
  what: string,
  report: () => Promise<void>,
): Promise<boolean> {
  if (!state.jobs.claim(job.spec.id)) return false;
  try {
    await report();
    state.jobs.done(job.spec.id);
    return true;
  } catch (error) {
    state.log.warn({ err: error, job: job.spec.id }, `${what} failed; concluding the check run`);
    await concludeOrRetry(
      state,
      github,
      job,
      `evokernel could not finish ${what}: ${reasonOf(error)}. ` +
        "Comment `/bench` (or `/optimize`) to run the job again.",
    );
    return true;
  }
}

/**
 * Ends `job` with what its backend handed back, the one way both backends end a job: a
 * failure concludes the check run with its message; a result (already read against the
 * review schema by the backend) counts only if it names the job and commit that were
 * dispatched (code from the PR ran beside it), and is then reported.
 */
export async function endJob(
  state: AppState,
  github: GitHub,
  job: ActiveJob,
  outcome: JobOutcome,
  backend: "actions" | "local",
): Promise<void> {
  const where = backend === "local" ? "The job failed on the app's machine: " : "";
  // What the job wrote is redacted of every secret the app holds before any of it is posted
  // (src/app/redact.ts): the one point where both backends' output enters a report.
  const redact = state.redact ?? PATTERNS_ONLY;
  if (outcome.kind === "failed") {
    await failJob(state, github, job, `${where}${redact.text(outcome.message)}`);
    return;
  }
  const review = redact.deep(outcome.review);
  if (review.job.id !== job.spec.id || review.job.sha !== job.spec.sha) {
    await failJob(
      state,
      github,
      job,
      backend === "local"
        ? `${where}the runner's result is for another job; re-run this one`
        : "The run's result names another job or commit than the one dispatched; re-run with `/bench`.",
    );
    return;
  }
  await finishJob(state, github, job, "reporting the result", () =>
    reportResult(state, github, job, review),
  );
}

/** The check run becomes a failure with `message`; the job is done. */
export async function failJob(
  state: AppState,
  github: GitHub,
  job: ActiveJob,
  message: string,
): Promise<boolean> {
  if (!state.jobs.claim(job.spec.id)) return false;
  await concludeOrRetry(state, github, job, message);
  return true;
}

/** Concludes a claimed job's check run as a failure; on failure puts it back for a retry. */
async function concludeOrRetry(
  state: AppState,
  github: GitHub,
  job: ActiveJob,
  message: string,
): Promise<void> {
  try {
    await github.updateCheckRun(job.checkRunId, {
      status: "completed",
      conclusion: "failure",
      ...(job.runUrl === undefined ? {} : { detailsUrl: job.runUrl }),
      output: {
        title: "The job did not finish",
        summary: trimTo(message + (job.runUrl ? `\n\nRun: ${job.runUrl}` : ""), CHECK_OUTPUT_LIMIT),
      },
    });
    state.jobs.done(job.spec.id);
  } catch (error) {
    state.log.error(
      { err: error, job: job.spec.id },
      `concluding the check run failed; trying again in ${(state.retryEndMs ?? RETRY_END_MS) / 1000} s`,
    );
    state.jobs.release(job.spec.id);
    armTimer(state, job, state.retryEndMs ?? RETRY_END_MS, message);
  }
}

/** Fails the job at its deadline (jobs/start.ts registers it; a failed conclusion re-arms it). */
export function armDeadline(state: AppState, job: ActiveJob): void {
  armTimer(state, job, Math.max(0, job.deadline - Date.now()));
}

function armTimer(state: AppState, job: ActiveJob, ms: number, message?: string): void {
  if (job.timer) clearTimeout(job.timer);
  job.timer = setTimeout(() => void timeOut(state, job, message), ms);
  job.timer.unref();
}

async function timeOut(state: AppState, job: ActiveJob, message?: string): Promise<void> {
  if (state.jobs.get(job.spec.id) !== job) return;
  const limit =
    state.jobTimeoutMs >= 60_000
      ? `${Math.round(state.jobTimeoutMs / 60_000)} minutes`
      : `${Math.round(state.jobTimeoutMs / 1000)} seconds`;
  let github: GitHub;
  try {
    github = await state.githubFor(job.installationId, job.repo);
  } catch (error) {
    state.log.error({ err: error, job: job.spec.id }, "no GitHub client for a timed-out job");
    armTimer(state, job, state.retryEndMs ?? RETRY_END_MS, message);
    return;
  }
  // Where the job stood, from a backend that can see it (the local one), before it is stopped;
  // it may quote the runner's output: redacted as every other report of it (endJob).
  const where = state.dispatchers
    .map((dispatcher) => dispatcher.whereIs?.(job.spec.id))
    .find(Boolean);
  const told =
    message === undefined && where ? (state.redact ?? PATTERNS_ONLY).text(where) : undefined;
  if (message === undefined) {
    for (const dispatcher of state.dispatchers)
      await dispatcher.cancel(job.spec.id, job.runId, github).catch(() => undefined);
  }
  await failJob(
    state,
    github,
    job,
    message ??
      (told !== undefined
        ? `No result came back within ${limit}: ${told}\n\nThe job was stopped. Give jobs more time (\`EVOKERNEL_JOB_TIMEOUT_MIN\`) or this one a smaller budget, then comment \`/bench\` to try again.`
        : `No result came back within ${limit}${job.runUrl ? ` from ${job.runUrl}` : ""}. Check that a GPU runner with the configured labels is online, then comment \`/bench\` to try again.`),
  );
}

function reasonOf(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return (text.split("\n")[0] ?? "").slice(0, 500);
}
