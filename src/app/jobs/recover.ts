// At start-up, the app's own check runs left open by the process before it: found on the
// heads of each installed repository's open pull requests and default branch, read only
// from what the app wrote itself (its app id, its check names, the external_id holding the
// job id, run id and deadline). Those past their deadline are concluded as timed out (their
// workflow run cancelled); the others are watched, and concluded at their deadline unless a
// result ends them first. Nothing from a run's artifact is trusted here.
// And a run whose result arrives for a job the registry does not hold (a restart between
// dispatch and result): the job is rebuilt from its check run and the config (recoverJob).
import { createRedactor } from "../redact.js";
import type { ConfigParse } from "../../shared/config.js";
import type { ReviewResult } from "../../shared/review.js";
import type { AppState } from "../app-state.js";
import type { LostJob } from "../dispatch/types.js";
import type { GitHub, InstalledRepo } from "../github.js";
import { CHECK_OUTPUT_LIMIT, trimTo } from "../limits.js";
import { recoveredSpec } from "./recovered-spec.js";
import { type ActiveJob, CHECK_NAME_PREFIX, parseExternalId } from "../job-registry.js";

export interface RecoverDeps {
  listRepos(): Promise<InstalledRepo[]>;
  now(): number;
  /** The app's id: a check run of another app is never touched. */
  readonly appId?: number;
  /** Bounds on the walk, so a start-up with many repositories stays cheap. */
  readonly maxRepos?: number;
  readonly maxPulls?: number;
}

export interface RecoverSummary {
  concluded: number;
  watched: number;
}

export async function recoverOpenChecks(
  state: AppState,
  deps: RecoverDeps,
): Promise<RecoverSummary> {
  const summary: RecoverSummary = { concluded: 0, watched: 0 };
  const repos = (await deps.listRepos()).slice(0, deps.maxRepos ?? 200);
  for (const installed of repos) {
    try {
      const github = await state.githubFor(installed.installationId, installed.repo);
      await recoverRepo(state, github, installed, deps, summary);
    } catch (error) {
      // One repository's failure (GitHub down for it, the app removed) does not stop the rest.
      state.log.warn(
        { err: error, repo: installed.repo },
        "start-up recovery skipped a repository",
      );
    }
  }
  return summary;
}

async function recoverRepo(
  state: AppState,
  github: GitHub,
  installed: InstalledRepo,
  deps: RecoverDeps,
  summary: RecoverSummary,
): Promise<void> {
  const heads = new Set<string>();
  for (const pull of await github.listOpenPullHeads(deps.maxPulls ?? 50)) heads.add(pull.headSha);
  const branch = await github.branchHead(installed.defaultBranch);
  if (branch !== undefined) heads.add(branch);
  for (const sha of heads) {
    for (const run of await github.listCheckRuns(sha)) {
      if (!run.name.startsWith(CHECK_NAME_PREFIX) || run.status === "completed") continue;
      if (deps.appId !== undefined && run.appId !== deps.appId) continue;
      const ids = parseExternalId(run.externalId);
      if (ids?.deadline === undefined || state.jobs.get(ids.jobId)) continue;
      const conclude = async () => {
        for (const dispatcher of state.dispatchers)
          await dispatcher.cancel(ids.jobId, ids.runId, github).catch(() => undefined);
        await github.updateCheckRun(run.id, timedOutUpdate(ids.runId, run.detailsUrl));
      };
      if (ids.deadline <= deps.now()) {
        await conclude();
        summary.concluded++;
        continue;
      }
      summary.watched++;
      const timer = setTimeout(() => {
        void (async () => {
          // A result that arrived meanwhile concluded it already.
          if ((await github.getCheckRun(run.id)).status !== "completed") await conclude();
        })().catch((error: unknown) =>
          state.log.error({ err: error, checkRun: run.id }, "concluding a recovered check failed"),
        );
      }, ids.deadline - deps.now());
      timer.unref();
    }
  }
}

/**
 * At start-up, the jobs the app's own machine had queued or running when the process before
 * this one ended (the local backend's records; their runners stopped already): nothing will
 * report them, so their check runs fail now, saying how far each got, rather than at their
 * deadline. A job's record goes (`forget`) once its check run is concluded; those GitHub
 * could not take are returned, to be tried again (and the next start-up finds them too).
 */
export async function concludeLostJobs(
  state: AppState,
  lost: readonly LostJob[],
  forget: (jobId: string) => Promise<void>,
): Promise<{ concluded: number; left: LostJob[] }> {
  let concluded = 0;
  const left: LostJob[] = [];
  for (const job of lost) {
    try {
      const github = await state.githubFor(job.installationId, job.repo);
      if ((await github.getCheckRun(job.checkRunId)).status !== "completed") {
        await github.updateCheckRun(job.checkRunId, {
          status: "completed",
          conclusion: "failure",
          output: {
            title: "The job did not finish",
            summary: trimTo(lostSummary(state, job), CHECK_OUTPUT_LIMIT),
          },
        });
        concluded++;
      }
      await forget(job.jobId);
    } catch (error) {
      state.log.warn({ err: error, job: job.jobId }, "concluding a job lost in a restart failed");
      left.push(job);
    }
  }
  return { concluded, left };
}

function lostSummary(state: AppState, job: LostJob): string {
  const again = "Comment `/bench` (or `/optimize`) to run it again.";
  switch (job.stage) {
    case "queued":
      return `evokernel restarted while this job was queued on its machine; it never ran. ${again}`;
    case "running":
      return `evokernel restarted while this job was running on its machine; the runner was stopped and nothing came back. ${again}`;
    case "failed":
      // What the process before would have posted, had it lived to.
      return `The job failed on the app's machine: ${job.message === undefined ? "no reason was kept" : (state.redact ?? createRedactor([])).text(job.message)}`;
    case "finished":
      return `The runner finished, but evokernel restarted before its result was reported, and the result is gone with that process. ${again}`;
  }
}

function timedOutUpdate(runId: number | undefined, detailsUrl: string | null) {
  return {
    status: "completed" as const,
    conclusion: "timed_out" as const,
    output: {
      title: "No result before the deadline",
      summary:
        "evokernel restarted while this job ran, and no result came back before its deadline" +
        `${runId === undefined ? "" : ` (workflow run ${runId}${detailsUrl ? `: ${detailsUrl}` : ""})`}. ` +
        "Comment `/bench` (or `/optimize`) to run it again.",
    },
  };
}

/** The run a result came from, as GitHub's workflow_run event says (not the artifact). */
export interface FinishedRun {
  readonly runId: number;
  /** Its run-name, which names the job it was dispatched for. */
  readonly title?: string;
  readonly installationId: number;
  readonly config: ConfigParse | undefined;
}

/**
 * The job of a run the app does not remember by its run id: the open check run on the
 * result's commit whose external_id names this run, or (dispatched without run details, so
 * no run id was written) whose job the run's own run-name names. The result's job id only
 * points the way: a run dispatched for another job cannot claim this one.
 */
export async function recoverJob(
  state: AppState,
  github: GitHub,
  review: ReviewResult,
  run: FinishedRun,
): Promise<ActiveJob | undefined> {
  const { runId } = run;
  const live = state.jobs.get(review.job.id);
  if (live) {
    if (live.runId !== undefined) return live.runId === runId ? live : undefined;
    // Dispatched without run details (an older GitHub): this run must be the job's.
    if (!runNames(run, live.spec.id)) return undefined;
    state.jobs.setRun(live.spec.id, runId, undefined);
    return live;
  }
  const runs = await github.listCheckRuns(review.job.sha);
  const match = runs.find((checkRun) => {
    if (!checkRun.name.startsWith(CHECK_NAME_PREFIX) || checkRun.status === "completed")
      return false;
    // Another app's check run with our name and a job id like ours is not ours to end.
    if (state.appId !== undefined && checkRun.appId !== state.appId) return false;
    const ids = parseExternalId(checkRun.externalId);
    if (ids?.jobId !== review.job.id) return false;
    return ids.runId === undefined ? runNames(run, ids.jobId) : ids.runId === runId;
  });
  if (!match) return undefined;
  // The artifact's spec is untrusted: what the report relies on comes from the app's own.
  const { spec, threshold } = recoveredSpec(review.job, match, run.config);
  const job: ActiveJob = {
    spec,
    installationId: run.installationId,
    repo: github.repo,
    checkRunId: match.id,
    threshold,
    runId,
    deadline: parseExternalId(match.externalId)?.deadline ?? Date.now() + state.jobTimeoutMs,
    ...(match.detailsUrl ? { runUrl: match.detailsUrl } : {}),
  };
  state.jobs.add(job);
  return job;
}

/** The run's run-name holds the job id as a word (action/example-workflow.yml). */
function runNames(run: FinishedRun, jobId: string): boolean {
  return run.title?.split(/\s+/).includes(jobId) === true;
}
