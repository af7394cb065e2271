// Starting a job: its check run first (so a person sees it at once), the head SHA checked
// again (a push between the event or command and now supersedes it), then the dispatch,
// and the run linked from the check run.
import type { EvokernelConfig } from "../../shared/config.js";
import type { JobSpec } from "../../shared/job.js";
import type { AppState } from "../app-state.js";
import type { Dispatched, Dispatcher } from "../dispatch/types.js";
import type { GitHub } from "../github.js";
import { armDeadline, failJob } from "./finish.js";
import {
  type ActiveJob,
  CHECK_NAME_PREFIX,
  checkName,
  externalIdOf,
  MAX_JOBS_PER_INSTALLATION,
  MAX_JOBS_PER_PULL,
  parseExternalId,
} from "./registry.js";
import { codeSpan } from "../../report/escape.js";
import { supersededOutput } from "./stop.js";

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
  /**
   * The spec's id was derived from the webhook delivery (job-spec.ts `seed`): a job of that
   * id on GitHub already means this delivery was handled, by another instance or before a
   * restart, and nothing starts.
   */
  readonly seeded?: boolean;
}

export async function startJob(state: AppState, request: StartRequest): Promise<void> {
  const { github, spec, config } = request;
  if (request.seeded === true && (await startedBefore(state, github, spec))) {
    state.log.info({ job: spec.id }, "this delivery's job was started already; not again");
    return;
  }
  const dispatcher = state.dispatcherFor(config);
  if (typeof dispatcher === "string") {
    await completedCheck(github, spec, "failure", {
      title: "The job did not start",
      summary: dispatcher,
    });
    return;
  }
  const busy = capReached(state, request);
  if (busy !== undefined) {
    await completedCheck(github, spec, "neutral", {
      title: "Not started: too many jobs",
      summary: busy,
    });
    return;
  }
  if (request.recheckHead && spec.pr !== undefined) {
    const pull = await github.getPull(spec.pr);
    if (pull.headSha !== spec.sha) {
      await completedCheck(github, spec, "neutral", supersededOutput(pull.headSha));
      return;
    }
  }
  if (dispatcher.name === "actions") await startRemote(state, request, dispatcher);
  else await startLocal(state, request, dispatcher);
}

/**
 * Actions: dispatch first (the GPU queue is what a person waits for), then one check run,
 * already linked to the run and holding its id in external_id.
 */
async function startRemote(
  state: AppState,
  request: StartRequest,
  dispatcher: Dispatcher,
): Promise<void> {
  const { github, spec, config } = request;
  let dispatched: Dispatched;
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
    await completedCheck(github, spec, "failure", {
      title: "The job did not start",
      summary: `The workflow \`.github/workflows/${config.workflow}\` could not be started (${why}). Check that it exists on the default branch and has a \`workflow_dispatch\` trigger with a \`spec\` input, then push again or comment \`/bench\`.`,
    });
    return;
  }
  const deadline = Date.now() + state.jobTimeoutMs;
  let checkRunId: number;
  try {
    checkRunId = await github.createCheckRun(checkName(spec.kind), spec.sha, {
      status: "in_progress",
      externalId: externalIdOf(spec.id, dispatched.runId, deadline),
      ...(dispatched.runUrl === undefined ? {} : { detailsUrl: dispatched.runUrl }),
      output: {
        title: "Running on a GPU runner",
        summary: queuedSummary(spec) + (dispatched.runUrl ? `\n\nRun: ${dispatched.runUrl}` : ""),
      },
    });
  } catch (error) {
    // A run nobody can see the result of is GPU time wasted: stop it.
    await dispatcher.cancel(spec.id, dispatched.runId, github).catch(() => undefined);
    throw error;
  }
  register(state, request, checkRunId, dispatched, deadline);
}

/** Local: the check run first (the job may wait for the GPU), then the job is queued. */
async function startLocal(
  state: AppState,
  request: StartRequest,
  dispatcher: Dispatcher,
): Promise<void> {
  const { github, spec } = request;
  const deadline = Date.now() + state.jobTimeoutMs;
  const checkRunId = await github.createCheckRun(checkName(spec.kind), spec.sha, {
    status: "queued",
    externalId: externalIdOf(spec.id, undefined, deadline),
    output: { title: "Queued for the app's GPU", summary: queuedSummary(spec) },
  });
  const job = register(state, request, checkRunId, {}, deadline);
  try {
    await dispatcher.start({
      spec,
      github,
      workflow: request.config.workflow,
      ref: request.defaultBranch,
      checkRun: { installationId: request.installationId, id: checkRunId },
    });
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    await failJob(
      state,
      github,
      job,
      `The job could not be started on the app's machine (${why}); ask the app's operator.`,
    );
  }
}

function register(
  state: AppState,
  request: StartRequest,
  checkRunId: number,
  dispatched: Dispatched,
  deadline: number,
): ActiveJob {
  const job: ActiveJob = {
    spec: request.spec,
    installationId: request.installationId,
    repo: request.github.repo,
    checkRunId,
    threshold: request.config.regressionThreshold,
    deadline,
  };
  state.jobs.add(job);
  state.jobs.setRun(job.spec.id, dispatched.runId, dispatched.runUrl);
  armDeadline(state, job);
  // Its run may have ended already, before this check run existed: handle it now.
  const replay = state.earlyRuns.take({
    jobId: job.spec.id,
    ...(job.runId === undefined ? {} : { runId: job.runId }),
  });
  if (replay)
    state.queue.push(
      `the early run of ${job.spec.id}`,
      replay,
      `installation:${job.installationId}`,
    );
  return job;
}

/** A check run of the App's own for exactly this job id, on the job's commit. */
async function startedBefore(state: AppState, github: GitHub, spec: JobSpec): Promise<boolean> {
  const runs = await github.listCheckRuns(spec.sha);
  return runs.some(
    (run) =>
      run.name.startsWith(CHECK_NAME_PREFIX) &&
      (state.appId === undefined || run.appId === state.appId) &&
      parseExternalId(run.externalId)?.jobId === spec.id,
  );
}

/** Why the job may not start now (a cap on queued jobs), or undefined. */
function capReached(state: AppState, request: StartRequest): string | undefined {
  const { spec } = request;
  if (
    spec.pr !== undefined &&
    state.jobs.forPull(request.github.repo, spec.pr).length >= MAX_JOBS_PER_PULL
  )
    return `This pull request already has ${MAX_JOBS_PER_PULL} evokernel jobs running; each waits for a GPU. Wait for one to finish (or comment \`/cancel\`), then comment again.`;
  const perInstallation = state.maxJobsPerInstallation ?? MAX_JOBS_PER_INSTALLATION;
  if (state.jobs.countFor(request.installationId) >= perInstallation)
    return `This installation already has ${perInstallation} evokernel jobs running; wait for some to finish, then comment again.`;
  return undefined;
}

function completedCheck(
  github: GitHub,
  spec: JobSpec,
  conclusion: "failure" | "neutral",
  output: { title: string; summary: string },
): Promise<number> {
  return github.createCheckRun(checkName(spec.kind), spec.sha, {
    status: "completed",
    conclusion,
    externalId: externalIdOf(spec.id),
    output,
  });
}

function queuedSummary(spec: JobSpec): string {
  const tasks =
    spec.tasks.length === 0
      ? "every changed task"
      : spec.tasks.map((task) => codeSpan(task)).join(", ");
  const by = spec.requestedBy ? `, asked by @${spec.requestedBy}` : "";
  return `Job \`${spec.id}\` (${spec.kind}) on ${spec.sha.slice(0, 7)}${by}: ${tasks}.`;
}
