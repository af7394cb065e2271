// workflow_run completed: a GPU run of the evokernel workflow has ended. Its result artifact
// is downloaded, validated (never executed) and reported; a run that failed without one
// turns its check run into a failure with a link. After a restart the job is found again
// from GitHub: the check run's external_id holds its ids, and the spec is rebuilt from them
// and the config (jobs/recover.ts), not read from the artifact.
import type { ConfigParse } from "../../shared/config.js";
import type { AppState } from "../app-state.js";
import { readResultArtifact } from "../dispatch/actions.js";
import type { GitHub } from "../github.js";
import { endJob } from "../jobs/finish.js";
import { recoverJob } from "../jobs/recover.js";
import { loadConfig } from "../load-config.js";
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
    if (workflowFileOf(run.path) !== workflow) return;
  }
  // No job claims the run yet: its job may be between dispatch and check run (early-runs.ts).
  const park = () =>
    state.earlyRuns.park(
      { runId: run.id, ...(run.display_title === undefined ? {} : { title: run.display_title }) },
      async () => {
        const again = await state.githubFor(event.installation.id, github.repo);
        await handleWorkflowRun(state, again, event, () => loadConfig(again));
      },
    );
  const read = await readResultArtifact(github, run.id);
  if (!read.ok) {
    if (!job) {
      park();
      return;
    }
    job.runUrl ??= run.html_url;
    const how =
      run.conclusion === "success" ? "finished" : `ended (${run.conclusion ?? "unknown"})`;
    const message = `The GPU run ${how} without a usable result: ${read.message}.`;
    await endJob(state, github, job, { kind: "failed", message }, "actions");
    return;
  }
  job ??= await recoverJob(state, github, read.review, {
    runId: run.id,
    ...(run.display_title === undefined ? {} : { title: run.display_title }),
    installationId: event.installation.id,
    config,
  });
  if (!job) {
    state.log.info(
      { run: run.id, job: read.review.job.id },
      "a workflow run's result matches no open evokernel check run (yet): parked",
    );
    park();
    return;
  }
  job.runUrl ??= run.html_url;
  // The result is untrusted: endJob reports it only if it names this job and commit.
  await endJob(state, github, job, { kind: "result", review: read.review }, "actions");
}

/**
 * The workflow file a run's `path` names: `.github/workflows/evokernel.yml`, or with the ref
 * GitHub's REST description shows after it (`.github/workflows/evokernel.yml@main`, a ref
 * that may hold slashes: `@refs/heads/feature/x`).
 */
export function workflowFileOf(path: string): string {
  const file = /^(.*?\.ya?ml)(?:@.*)?$/.exec(path)?.[1] ?? path.replace(/@.*$/, "");
  return file.split("/").pop() ?? file;
}
