// PR comments: `/optimize`, `/verify`, `/bench`, `/cancel`, `/help`, and the answers to a
// verdict (`/evokernel accept|wrong`, handlers/answer.ts). Only people with write or admin
// permission (asked of GitHub, not read from author_association) start jobs or answer; the
// job is bound to the PR's head SHA at the time of the command, which is also how a fork's
// code gets approved to run: that commit only.
import type { EvokernelConfig } from "../../shared/config.js";
import type { AppState } from "../app-state.js";
import { namedCommitProblem } from "../approvals.js";
import { type Command, HELP_TEXT, parseComment } from "../comment-commands.js";
import type { CheckRun, GitHub, Pull } from "../github.js";
import { buildJobSpec } from "../job-spec.js";
import type { loadConfig } from "../load-config.js";
import { planTasks, resolveTaskNames } from "../planner.js";
import { startJob } from "../jobs/start.js";
import { cancelPull } from "../jobs/stop.js";
import { answerRefused, handleAnswerCommand } from "./answer.js";
import type { IssueCommentEvent } from "./payloads.js";
import { codeSpan, mdText } from "../../report/escape.js";

const WRITERS = new Set(["admin", "write", "maintain"]);

/** Whether the comment is one this handler acts on (cheap, before any queueing). */
export function isCommandComment(event: IssueCommentEvent): boolean {
  return (
    event.action === "created" &&
    event.issue.pull_request !== undefined &&
    event.comment.user !== null &&
    event.comment.user.type !== "Bot" &&
    parseComment(event.comment.body).kind !== "none"
  );
}

export async function handleIssueComment(
  state: AppState,
  github: GitHub,
  event: IssueCommentEvent,
  getConfig: () => ReturnType<typeof loadConfig>,
): Promise<void> {
  const parsed = parseComment(event.comment.body);
  if (parsed.kind === "none") return;
  if (!state.seen.first(`comment:${github.repo.owner}/${github.repo.repo}:${event.comment.id}`))
    return;
  const pr = event.issue.number;
  // No author (a deleted account): nobody whose permission a command could run with.
  if (event.comment.user === null) return;
  const login = event.comment.user.login;
  const permission = await github.permissionOf(login);
  const answering =
    parsed.kind === "command" &&
    (parsed.command.name === "accept" || parsed.command.name === "wrong");
  if (!WRITERS.has(permission) && answering) {
    await github.createComment(pr, answerRefused(login));
    return;
  }
  if (!WRITERS.has(permission)) {
    await github.createComment(
      pr,
      `@${login} evokernel commands run code on GPU machines, so they need write access to this repository. Ask a maintainer to comment ${codeSpan(parsed.line.split(/\s/)[0] ?? "/bench")} for you.`,
    );
    return;
  }
  if (parsed.kind === "invalid") {
    await github.createComment(pr, `@${login} ${parsed.error}\n\n${HELP_TEXT}`);
    return;
  }
  const command = parsed.command;
  if (command.name === "help") {
    await github.addReaction(event.comment.id, "+1");
    await github.createComment(pr, HELP_TEXT);
    return;
  }
  if (command.name === "accept" || command.name === "wrong") {
    await handleAnswerCommand(state, github, event, command, login);
    return;
  }
  const pull = await github.getPull(pr);
  if (pull.state !== "open") {
    await github.createComment(
      pr,
      `@${login} this pull request is closed; reopen it to run \`/${command.name}\`.`,
    );
    return;
  }
  if (command.name === "cancel") {
    await cancelPull(state, github, pull);
    await github.addReaction(event.comment.id, "+1");
    return;
  }
  const unbound = await namedCommitProblem(github, command, pull);
  if (unbound !== undefined) {
    await github.createComment(pr, `@${login} ${unbound}`);
    return;
  }
  const config = await getConfig();
  if (!config.ok) {
    await github.createComment(
      pr,
      `@${login} \`.github/evokernel.yml\` on the default branch is invalid, so no job can start:\n\n${config.errors.map((error) => `- ${mdText(error)}`).join("\n")}\n\nFix it on the default branch and comment again.`,
    );
    return;
  }
  const tasks = await tasksFor(github, config.config, pull, command);
  if (tasks === undefined) {
    await github.createComment(
      pr,
      `@${login} no kernel task changed in this pull request, so \`/${command.name}\` has nothing to run on. Name one, e.g. \`/${command.name} softmax\`.`,
    );
    return;
  }
  const outcome = await startJob(state, {
    github,
    spec: buildJobSpec({
      kind:
        command.name === "optimize" ? "optimize" : command.name === "verify" ? "verify" : "bench",
      repo: github.repo,
      pull,
      config: config.config,
      tasks,
      requestedBy: login,
      // The comment names the job: its redelivery, to another instance or after a restart,
      // finds the job's check run on GitHub and starts nothing (jobs/start.ts).
      seed: `comment:${event.comment.id}`,
      ...(command.name === "optimize" && command.budget !== undefined
        ? { candidates: command.budget }
        : {}),
      ...(command.name === "optimize" && command.proposer !== undefined
        ? { proposer: command.proposer }
        : {}),
    }),
    config: config.config,
    installationId: event.installation.id,
    defaultBranch: event.repository.default_branch,
    recheckHead: true,
    seeded: true,
  });
  // Started, or refused with its check run saying why: the command was heard.
  if (outcome.kind === "started" || outcome.kind === "refused") {
    await github.addReaction(event.comment.id, "rocket");
    return;
  }
  // The same command on the same commit runs once at a time, whoever repeats it and
  // whichever instance hears it (GitHub holds the running job: jobs/claim.ts). A comment
  // handled already (here or by a twin instance) gets nothing more.
  if (outcome.kind === "running") {
    await github.addReaction(event.comment.id, "eyes");
    await github.createComment(pr, alreadyRunning(login, command, pull, outcome.rival));
  }
}

function alreadyRunning(login: string, command: Command, pull: Pull, rival: CheckRun): string {
  const where = rival.detailsUrl ? ` ([its run](${rival.detailsUrl}))` : "";
  return `@${login} \`/${command.name}\` with these options is already running on ${pull.headSha.slice(0, 7)}${where}: its check run will have the result, so this comment starts nothing. Comment again once it has finished to run it again.`;
}

async function tasksFor(
  github: GitHub,
  config: EvokernelConfig,
  pull: Pull,
  command: Command,
): Promise<readonly string[] | undefined> {
  if (command.name !== "optimize" && command.name !== "verify" && command.name !== "bench")
    return undefined;
  if (command.tasks.length > 0) return resolveTaskNames(config.tasks, command.tasks);
  const plan = planTasks(config, await github.listPullFiles(pull.number));
  if (plan.kind === "none") return undefined;
  // Empty: the runner reviews every task whose files changed (a shared file changed).
  return plan.kind === "tasks" ? plan.tasks : [];
}
