// Starting a job: its check run first (so a person sees it at once), the head SHA checked
// again (a push between the event or command and now supersedes it), then the dispatch,
// and the run linked from the check run.
import type { EvokernelConfig } from "../shared/config.js";
import type { JobSpec } from "../shared/job.js";
import type { AppState } from "./app-state.js";
import type { GitHub } from "./github.js";
import { type ActiveJob, checkName, externalIdOf } from "./jobs.js";
import { failJob } from "./report-job.js";

export interface StartRequest {
  readonly github: GitHub;
  readonly spec: JobSpec;
  readonly config: EvokernelConfig;
  readonly installationId: number;
  /** The default branch: the workflow is dispatched there, never on the PR's own ref. */
  readonly defaultBranch: string;
  /**
   * Ask GitHub for the PR's head again before dispatch: a command (a person approved that
   * commit, maybe minutes ago). A pull_request event carries its head fresh.
   */
  readonly recheckHead: boolean;
}

export async function startJob(state: AppState, request: StartRequest): Promise<void> {
  const { github, spec, config } = request;
  const dispatcher = state.dispatcherFor(config);
  const checkRunId = await github.createCheckRun(checkName(spec.kind), spec.sha, {
    status: "queued",
    externalId: externalIdOf(spec.id),
    output: { title: "Queued", summary: queuedSummary(spec) },
  });
  const job: ActiveJob = {
    spec,
    installationId: request.installationId,
    repo: github.repo,
    checkRunId,
    threshold: config.regressionThreshold,
  };
  state.jobs.add(job);
  if (typeof dispatcher === "string") {
    await failJob(state, github, job, dispatcher);
    return;
  }
  if (request.recheckHead && spec.pr !== undefined) {
    const pull = await github.getPull(spec.pr);
    if (pull.headSha !== spec.sha) {
      await supersedeJob(state, github, job, pull.headSha);
      return;
    }
  }
  let dispatched;
  try {
    dispatched = await dispatcher.start({
      spec,
      github,
      workflow: config.workflow,
      ref: request.defaultBranch,
    });
  } catch (error) {
    state.log.warn({ err: error, job: spec.id }, "dispatch failed");
    const why = error instanceof Error ? error.message : String(error);
    await failJob(
      state,
      github,
      job,
      dispatcher.name === "actions"
        ? `The workflow \`.github/workflows/${config.workflow}\` could not be started (${why}). Check that it exists on the default branch and has a \`workflow_dispatch\` trigger with a \`spec\` input, then push again or comment \`/bench\`.`
        : `The job could not be started on the app's machine (${why}); ask the app's operator.`,
    );
    return;
  }
  state.jobs.setRun(spec.id, dispatched.runId, dispatched.runUrl);
  job.timer = setTimeout(() => void timeOut(state, job), state.jobTimeoutMs);
  job.timer.unref();
  await github.updateCheckRun(checkRunId, {
    status: "in_progress",
    externalId: externalIdOf(spec.id, dispatched.runId),
    ...(dispatched.runUrl === undefined ? {} : { detailsUrl: dispatched.runUrl }),
    output: {
      title: dispatcher.name === "actions" ? "Running on a GPU runner" : "Running on the app's GPU",
      summary: queuedSummary(spec) + (dispatched.runUrl ? `\n\nRun: ${dispatched.runUrl}` : ""),
    },
  });
}

/** A newer commit replaced this job's: stop it and say so (neutral, not a failure). */
export async function supersedeJob(
  state: AppState,
  github: GitHub,
  job: ActiveJob,
  newSha: string,
): Promise<void> {
  if (!state.jobs.take(job.spec.id)) return;
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
}

export function supersededOutput(newSha: string): { title: string; summary: string } {
  return {
    title: "Superseded",
    summary: `A newer commit (${newSha.slice(0, 7)}) replaced this one; its own check run has the result. To run a command on it, comment again.`,
  };
}

async function timeOut(state: AppState, job: ActiveJob): Promise<void> {
  if (state.jobs.get(job.spec.id) !== job) return;
  const minutes = Math.round(state.jobTimeoutMs / 60_000);
  try {
    const github = await state.githubFor(job.installationId, job.repo);
    for (const dispatcher of state.dispatchers)
      await dispatcher.cancel(job.spec.id, job.runId, github).catch(() => undefined);
    await failJob(
      state,
      github,
      job,
      `No result came back within ${minutes} minutes${job.runUrl ? ` from ${job.runUrl}` : ""}. Check that a GPU runner with the configured labels is online, then comment \`/bench\` to try again.`,
    );
  } catch (error) {
    state.log.error({ err: error, job: job.spec.id }, "reporting a timed-out job failed");
  }
}

function queuedSummary(spec: JobSpec): string {
  const tasks =
    spec.tasks.length === 0
      ? "every changed task"
      : spec.tasks.map((task) => `\`${task}\``).join(", ");
  const by = spec.requestedBy ? `, asked by @${spec.requestedBy}` : "";
  return `Job \`${spec.id}\` (${spec.kind}) on ${spec.sha.slice(0, 7)}${by}: ${tasks}.`;
}
