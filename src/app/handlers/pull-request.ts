// pull_request closed (or merged): its jobs are cancelled.
// pull_request opened, synchronize, reopened, ready_for_review: plan the tasks the PR's
// changed files touch and start a review job on the head SHA; stay quiet when none changed.
// Drafts wait until they are ready for review (GPU time is scarce; a command still runs on
// a draft). A fork's code runs only on a maintainer's command: the check run says so.
import type { AppState } from "../app-state.js";
import { approvalCommand } from "../approvals.js";
import type { GitHub } from "../github.js";
import { buildJobSpec } from "../job-spec.js";
import { CHECK_NAME_PREFIX, checkName, parseExternalId } from "../jobs/registry.js";
import { invalidConfigOutput, type loadConfig } from "../load-config.js";
import { planTasks } from "../planner.js";
import { startJob, supersedeJob, supersededOutput } from "../jobs/start.js";
import { cancelPull } from "./issue-comment.js";
import type { PullRequestEvent } from "./payloads.js";

export const PULL_REQUEST_ACTIONS = [
  "opened",
  "synchronize",
  "reopened",
  "ready_for_review",
  "closed",
] as const;

export async function handlePullRequest(
  state: AppState,
  github: GitHub,
  event: PullRequestEvent,
  config: Awaited<ReturnType<typeof loadConfig>>,
): Promise<void> {
  const pr = event.pull_request;
  if (event.action === "synchronize" && event.before)
    await supersedeOldJobs(state, github, event, pr.head.sha);
  if (pr.state !== "open" || pr.draft === true) return;
  if (!config.ok) {
    await github.createCheckRun(checkName("review"), pr.head.sha, {
      status: "completed",
      conclusion: "failure",
      output: invalidConfigOutput(config.errors),
    });
    return;
  }
  if (config.config.pullRequests === "off") return;
  const plan = planTasks(config.config, await github.listPullFiles(pr.number));
  if (plan.kind === "none") return;
  const fork = pr.head.repo?.full_name !== pr.base.repo.full_name;
  if (fork) {
    await github.createCheckRun(checkName("review"), pr.head.sha, {
      status: "completed",
      conclusion: "neutral",
      output: {
        title: "Waiting for a maintainer",
        summary:
          "This pull request comes from a fork, and evokernel runs no fork's code on its own. " +
          `A maintainer who has read the change can comment ${approvalCommand("bench", pr.head.sha)} (or \`/verify\`, \`/optimize\` with the same \`@\` commit) ` +
          "to run it on this commit; each later push needs a new command naming its commit.",
      },
    });
    return;
  }
  await startJob(state, {
    github,
    spec: buildJobSpec({
      kind: "review",
      repo: github.repo,
      pull: { number: pr.number, headSha: pr.head.sha, baseSha: pr.base.sha },
      config: config.config,
      tasks: plan.kind === "tasks" ? plan.tasks : [],
      requestedBy: event.sender.login,
    }),
    config: config.config,
    installationId: event.installation.id,
    defaultBranch: event.repository.default_branch,
    recheckHead: false,
  });
}

/** Closed or merged: its jobs would only spend GPU time on results nobody reads. */
export async function handlePullClosed(
  state: AppState,
  github: GitHub,
  event: PullRequestEvent,
): Promise<void> {
  const pr = event.pull_request;
  await cancelPull(
    state,
    github,
    { number: pr.number, headSha: pr.head.sha },
    "The pull request was closed.",
  );
}

/** The jobs of the commit a push replaced: cancelled, their check runs neutral "superseded". */
async function supersedeOldJobs(
  state: AppState,
  github: GitHub,
  event: PullRequestEvent,
  newSha: string,
): Promise<void> {
  const handled = new Set<number>();
  for (const job of state.jobs.forPull(github.repo, event.pull_request.number)) {
    if (job.spec.sha === newSha) continue;
    handled.add(job.checkRunId);
    await supersedeJob(state, github, job, newSha);
  }
  // After a restart the registry is empty: the check runs on the old commit still say which
  // jobs were in flight (external_id holds the job and run ids).
  const before = event.before;
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
