// Starting a job: its check run first (so a person sees it at once, and as the job's claim
// on GitHub: jobs/claim.ts), the head SHA checked again (a push between the event or command
// and now supersedes it), then the dispatch, and the run linked from the check run.
import type { EvokernelConfig } from "../../shared/config.js";
import type { JobSpec } from "../../shared/job.js";
import type { AppState } from "../app-state.js";
import type { Dispatched, Dispatcher } from "../dispatch/types.js";
import type { CheckRun, GitHub } from "../github.js";
import { claimKey, readClaim, standDown } from "./claim.js";
import { armDeadline, failJob, finishJob } from "./finish.js";
import {
  type ActiveJob,
  checkName,
  externalIdOf,
  MAX_JOBS_PER_INSTALLATION,
  MAX_JOBS_PER_PULL,
} from "../job-registry.js";
import { codeSpan } from "../../report/escape.js";
import { replaceJob, supersededOutput } from "./stop.js";
import { supersededBy } from "./concurrency.js";

export interface StartRequest {
  readonly github: GitHub;
  readonly spec: JobSpec;
  readonly config: EvokernelConfig;
  readonly installationId: number;
  /** The default branch: the workflow is dispatched there, never on the PR's own ref. */
  readonly defaultBranch: string;
  /**
   * Ask GitHub for the PR's head again before dispatch: a command (a person approved that
   * commit, maybe minutes ago), or a pull_request event (events arrive out of order).
   */
  readonly recheckHead: boolean;
  /**
   * The spec's id was derived from the webhook delivery or comment (job-spec.ts `seed`): a
   * job of that id on GitHub already means it was handled, by another instance or before a
   * restart, and nothing starts.
   */
  readonly seeded?: boolean;
}

/** What became of a request to start a job. */
export type StartOutcome =
  | { readonly kind: "started" }
  /** This delivery's (or comment's) job was started already, here or elsewhere. */
  | { readonly kind: "handled" }
  /** The same work is running on this commit (another comment, another event): its run. */
  | { readonly kind: "running"; readonly rival: CheckRun }
  /** Not started; its check run says why (no backend, a cap, a newer head, no dispatch). */
  | { readonly kind: "refused" };

const HANDLED: StartOutcome = { kind: "handled" };
const REFUSED: StartOutcome = { kind: "refused" };

export async function startJob(state: AppState, request: StartRequest): Promise<StartOutcome> {
  const { github, spec, config } = request;
  // A pull request's jobs are claimed on GitHub (jobs/claim.ts): one per request, and one
  // per work on a commit while it runs, across instances. Looked for first, so the usual
  // repeat (a redelivery, a second comment while the job runs) creates nothing.
  const claims = spec.pr !== undefined || request.seeded === true;
  if (claims) {
    const claim = await readClaim(state, github, spec);
    if (claim.holder === "rival") {
      state.log.info({ job: spec.id, holder: claim.rival.id }, "the job runs already; not again");
      return claim.sameJob ? HANDLED : { kind: "running", rival: claim.rival };
    }
  }
  const dispatcher = state.dispatcherFor(config);
  if (typeof dispatcher === "string") {
    await completedCheck(github, spec, "failure", {
      title: "The job did not start",
      summary: dispatcher,
    });
    return REFUSED;
  }
  const busy = capReached(state, request);
  if (busy !== undefined) {
    await completedCheck(github, spec, "neutral", {
      title: "Not started: too many jobs",
      summary: busy,
    });
    return REFUSED;
  }
  // The check run first, whichever the backend: it is the claim, and a person sees it at once.
  const deadline = Date.now() + state.jobTimeoutMs;
  const key = claims ? claimKey(spec) : undefined;
  const checkRunId = await github.createCheckRun(checkName(spec.kind), spec.sha, {
    status: "queued",
    externalId: externalIdOf(spec.id, undefined, deadline, key),
    output: {
      title: dispatcher.name === "local" ? "Queued for the app's GPU" : "Starting",
      summary: queuedSummary(spec),
    },
  });
  const started: Started = { checkRunId, deadline, ...(key === undefined ? {} : { key }) };
  try {
    if (claims) {
      const claim = await readClaim(state, github, spec, checkRunId);
      if (claim.holder === "rival") {
        await standDown(github, spec, checkRunId, claim.rival, claim.sameJob);
        return claim.sameJob ? HANDLED : { kind: "running", rival: claim.rival };
      }
    }
    // Asked of GitHub, not taken from the event: events arrive out of order, and a push may
    // have replaced the commit since (seen by another instance, or by this one before a
    // restart).
    if (request.recheckHead && spec.pr !== undefined) {
      const pull = await github.getPull(spec.pr);
      if (pull.headSha !== spec.sha) {
        await github.updateCheckRun(checkRunId, {
          status: "completed",
          conclusion: "neutral",
          output: supersededOutput(pull.headSha),
        });
        return REFUSED;
      }
    }
  } catch (error) {
    // Every check run the app opens ends: this one says why its job did not start.
    state.log.warn({ err: error, job: spec.id }, "starting the job failed");
    await github.updateCheckRun(checkRunId, {
      status: "completed",
      conclusion: "failure",
      output: {
        title: "The job did not start",
        summary: `evokernel could not start job \`${spec.id}\` (${reasonOf(error)}). Comment \`/bench\` (or \`/optimize\`) to try again.`,
      },
    });
    return REFUSED;
  }
  // The same group's older job (another command on the same tasks) stops before this one
  // starts: on Actions the workflow's concurrency group would cancel its run anyway.
  if (spec.pr !== undefined)
    for (const older of supersededBy(state.jobs.forPull(github.repo, spec.pr), spec))
      await replaceJob(state, github, older, spec);
  if (dispatcher.name === "actions") await startRemote(state, request, dispatcher, started);
  else await startLocal(state, request, dispatcher, started);
  return { kind: "started" };
}

/** The job's check run, created and claimed. */
interface Started {
  readonly checkRunId: number;
  readonly deadline: number;
  readonly key?: string;
}

/**
 * Actions: the job on the books, the workflow dispatched, then its check run linked to the
 * run (external_id gains the run id). On the books before the dispatch, so a run that ends
 * at once finds its job (by its run-name, until the run id is known).
 */
async function startRemote(
  state: AppState,
  request: StartRequest,
  dispatcher: Dispatcher,
  started: Started,
): Promise<void> {
  const { github, spec, config } = request;
  const job = register(state, request, started);
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
    await finishJob(state, github, job, "reporting the failed dispatch", () =>
      github.updateCheckRun(started.checkRunId, {
        status: "completed",
        conclusion: "failure",
        output: {
          title: "The job did not start",
          summary: `The workflow \`.github/workflows/${config.workflow}\` could not be started (${reasonOf(error)}). Check that it exists on the default branch and has a \`workflow_dispatch\` trigger with a \`spec\` input, then push again or comment \`/bench\`.`,
        },
      }),
    );
    return;
  }
  state.jobs.setRun(spec.id, dispatched.runId, dispatched.runUrl);
  // A result that came back meanwhile is ending the job: its check run is left to it.
  if (state.jobs.get(spec.id) === job && !state.jobs.ending(spec.id)) {
    try {
      await github.updateCheckRun(started.checkRunId, {
        status: "in_progress",
        externalId: externalIdOf(spec.id, dispatched.runId, started.deadline, started.key),
        ...(dispatched.runUrl === undefined ? {} : { detailsUrl: dispatched.runUrl }),
        output: {
          title: "Running on a GPU runner",
          summary: queuedSummary(spec) + (dispatched.runUrl ? `\n\nRun: ${dispatched.runUrl}` : ""),
        },
      });
    } catch (error) {
      // The run reports all the same (the job is on the books; after a restart its run-name
      // names the job): only the link is missing.
      state.log.warn({ err: error, job: spec.id }, "linking the check run to its run failed");
    }
  }
  replayEarlyRun(state, job);
}

/** Local: the job on the books, then queued for the app's GPU. */
async function startLocal(
  state: AppState,
  request: StartRequest,
  dispatcher: Dispatcher,
  started: Started,
): Promise<void> {
  const { github, spec } = request;
  const job = register(state, request, started);
  replayEarlyRun(state, job);
  try {
    await dispatcher.start({
      spec,
      github,
      workflow: request.config.workflow,
      ref: request.defaultBranch,
      checkRun: { installationId: request.installationId, id: started.checkRunId },
    });
  } catch (error) {
    await failJob(
      state,
      github,
      job,
      `The job could not be started on the app's machine (${reasonOf(error)}); ask the app's operator.`,
    );
  }
}

function register(state: AppState, request: StartRequest, started: Started): ActiveJob {
  const job: ActiveJob = {
    spec: request.spec,
    installationId: request.installationId,
    repo: request.github.repo,
    checkRunId: started.checkRunId,
    threshold: request.config.regressionThreshold,
    deadline: started.deadline,
  };
  state.jobs.add(job);
  armDeadline(state, job);
  return job;
}

/** Its run may have ended already, before the job was on the books: handle it now. */
function replayEarlyRun(state: AppState, job: ActiveJob): void {
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
}

function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Why the job may not start now (a cap on queued jobs), or undefined. */
function capReached(state: AppState, request: StartRequest): string | undefined {
  const { spec } = request;
  // A job this one supersedes (jobs/concurrency.ts) is about to stop: it does not count.
  if (
    spec.pr !== undefined &&
    state.jobs.forPull(request.github.repo, spec.pr).length -
      supersededBy(state.jobs.forPull(request.github.repo, spec.pr), spec).length >=
      MAX_JOBS_PER_PULL
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
