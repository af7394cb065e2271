// pull_request closed (or merged): its jobs are cancelled, and its timings join the tasks'
// histories (merged) or are forgotten (closed).
// pull_request opened, synchronize, reopened, ready_for_review: plan the tasks the PR's
// changed files touch and start a review job on the head SHA; stay quiet when none changed.
// Drafts wait until they are ready for review (GPU time is scarce; a command still runs on
// a draft). A fork's code runs only on a maintainer's command: the check run says so.
import { createHash } from "node:crypto";
import type { AppState } from "../app-state.js";
import { approvalCommand } from "../approvals.js";
import type { CheckRunUpdate, GitHub } from "../github.js";
import { recordPullClosed } from "../history.js";
import { buildJobSpec } from "../job-spec.js";
import { ownCheckRuns } from "../jobs/claim.js";
import { checkName } from "../job-registry.js";
import { invalidConfigOutput, type loadConfig } from "../load-config.js";
import { planTasks } from "../planner.js";
import { startJob } from "../jobs/start.js";
import { cancelPull, supersedeOldJobs } from "../jobs/stop.js";
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
  /** X-GitHub-Delivery: the job's id is derived from it, so a redelivery starts nothing. */
  delivery?: string,
): Promise<void> {
  const pr = event.pull_request;
  if (event.action === "synchronize" && event.before)
    await supersedeOldJobs(state, github, { number: pr.number, before: event.before }, pr.head.sha);
  if (pr.state !== "open" || pr.draft === true) return;
  if (!config.ok) {
    const errors = createHash("sha256").update(config.errors.join("\n")).digest("hex").slice(0, 8);
    await postNotice(state, github, pr.head.sha, `config-invalid-${errors}`, {
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
    await postNotice(state, github, pr.head.sha, "fork-waits", {
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
      ...(delivery === undefined ? {} : { seed: `delivery:${delivery}` }),
    }),
    config: config.config,
    installationId: event.installation.id,
    defaultBranch: event.repository.default_branch,
    // A push may have replaced this head before its event arrived (`opened` after
    // `synchronize`): the PR's head as GitHub has it now decides, the same for every
    // instance and after a restart, and the check run says "Superseded".
    recheckHead: true,
    seeded: delivery !== undefined,
  });
}

/**
 * A concluded check run that starts no job (an invalid config, a fork waiting for a
 * maintainer), once per head and notice: a redelivery, another instance or the app after a
 * restart finds the app's own by its external_id and posts nothing (issue 17.4). Two
 * instances at the very same moment can still each post one, identical.
 */
async function postNotice(
  state: AppState,
  github: GitHub,
  sha: string,
  notice: string,
  update: CheckRunUpdate,
): Promise<void> {
  const name = checkName("review");
  const externalId = `notice:${notice}`;
  const runs = await ownCheckRuns(state, github, sha, name);
  if (runs.some((run) => run.externalId === externalId)) return;
  await github.createCheckRun(name, sha, { ...update, externalId });
}

/**
 * Closed or merged: its jobs would only spend GPU time on results nobody reads. Merged, its
 * last review's timings join each task's history; closed, they are forgotten.
 */
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
  const merged =
    pr.merged === true
      ? { at: pr.merged_at ?? new Date().toISOString(), headSha: pr.head.sha }
      : null;
  // The history is a view: its failure is logged, and the next merge or night records again.
  await recordPullClosed(github, pr.number, merged).catch((error: unknown) => {
    state.log.warn({ err: error, pr: pr.number }, "recording the closed PR in the history failed");
  });
}
