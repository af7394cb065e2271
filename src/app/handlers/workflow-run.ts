// workflow_run completed: a GPU run of the evokernel workflow has ended. Its result artifact
// is downloaded, validated (never executed) and reported; a run that failed without one
// turns its check run into a failure with a link. After a restart the job is found again
// from GitHub: the check run's external_id holds its ids, and the spec is rebuilt from them
// and the config (jobs/recovered-spec.ts), not read from the artifact.
import type { ReviewResult } from "../../shared/review.js";
import type { AppState } from "../app-state.js";
import { readResultArtifact } from "../dispatch/actions.js";
import type { GitHub } from "../github.js";
import { type ActiveJob, CHECK_NAME_PREFIX, parseExternalId } from "../jobs/registry.js";
import type { loadConfig } from "../load-config.js";
import { recoveredSpec } from "../jobs/recovered-spec.js";
import type { ConfigParse } from "../../shared/config.js";
import { failJob, finishJob } from "../jobs/finish.js";
import { reportResult } from "../jobs/report.js";
import type { WorkflowRunEvent } from "./payloads.js";

export async function handleWorkflowRun(
  state: AppState,
  github: GitHub,
  event: WorkflowRunEvent,
  getConfig: () => ReturnType<typeof loadConfig>,
): Promise<void> {
  const run = event.workflow_run;
  if (event.action !== "completed" || run.event !== "workflow_dispatch") return;
  let job = state.jobs.byRun(run.id);
  let config: ConfigParse | undefined;
  if (!job) {
    // Not a run we know: only the configured workflow's runs are read at all.
    config = await getConfig();
    const workflow = config.ok ? config.config.workflow : "evokernel.yml";
    if (run.path.split("/").pop() !== workflow) return;
  }
  const read = await readResultArtifact(github, run.id);
  if (!read.ok) {
    if (!job) return;
    job.runUrl ??= run.html_url;
    const how =
      run.conclusion === "success" ? "finished" : `ended (${run.conclusion ?? "unknown"})`;
    await failJob(
      state,
      github,
      job,
      `The GPU run ${how} without a usable result: ${read.message}.`,
    );
    return;
  }
  job ??= await recoverJob(state, github, read.review, run.id, event.installation.id, config);
  if (!job) {
    state.log.info(
      { run: run.id, job: read.review.job.id },
      "a workflow run's result matches no open evokernel check run",
    );
    return;
  }
  // The result is untrusted: it must name the job and commit this run was started for.
  if (read.review.job.id !== job.spec.id || read.review.job.sha !== job.spec.sha) {
    job.runUrl ??= run.html_url;
    await failJob(
      state,
      github,
      job,
      "The run's result names another job or commit than the one dispatched; re-run with `/bench`.",
    );
    return;
  }
  job.runUrl ??= run.html_url;
  const review = read.review;
  await finishJob(state, github, job, "reporting the result", () =>
    reportResult(state, github, job, review),
  );
}

/** The job of a run the app does not remember: the open check run on the result's commit. */
async function recoverJob(
  state: AppState,
  github: GitHub,
  review: ReviewResult,
  runId: number,
  installationId: number,
  config: ConfigParse | undefined,
): Promise<ActiveJob | undefined> {
  const live = state.jobs.get(review.job.id);
  if (live) {
    // Dispatched without run details (an older GitHub): this run is the job's.
    if (live.runId !== undefined && live.runId !== runId) return undefined;
    state.jobs.setRun(live.spec.id, runId, undefined);
    return live;
  }
  const runs = await github.listCheckRuns(review.job.sha);
  const match = runs.find((checkRun) => {
    if (!checkRun.name.startsWith(CHECK_NAME_PREFIX) || checkRun.status === "completed")
      return false;
    const ids = parseExternalId(checkRun.externalId);
    return ids?.jobId === review.job.id && (ids.runId === undefined || ids.runId === runId);
  });
  if (!match) return undefined;
  // The artifact's spec is untrusted: what the report relies on comes from the app's own.
  const { spec, threshold } = recoveredSpec(review.job, match, config);
  const job: ActiveJob = {
    spec,
    installationId,
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
