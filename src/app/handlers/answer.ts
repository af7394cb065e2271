// A maintainer's answer to a verdict, by command (`/evokernel accept|wrong <task> <reason>`,
// from handlers/issue-comment.ts) or by the check run's buttons (check_run
// requested_action). Only people with write or admin permission (asked of GitHub) answer.
// An answer is bound to one commit: the PR's head at the command (a fork's PR names it,
// `@SHA`, as a job command does), or the check run's own commit for a button. It is stored
// on the state branch before the check run is concluded again (answers/), so it survives a
// restart, and the same answer twice is one record and one update. No GPU job runs again.
import {
  type Accept,
  addAccept,
  addWrong,
  type Answers,
  FAILING_OUTCOMES,
  type Verdict,
  type WrongMark,
} from "../../shared/answers.js";
import {
  ACCEPT_ACTION,
  BUTTON_ACCEPT_REASON,
  BUTTON_WRONG_REASON,
  WRONG_ACTION,
} from "../../report/answers.js";
import { codeSpan, mdText } from "../../report/escape.js";
import type { AppState } from "../app-state.js";
import {
  type Answerable,
  answerable,
  answerableRuns,
  concludeAnswered,
} from "../answers/check-runs.js";
import { blobAt, changeAnswers } from "../answers/store.js";
import type { AnswerCommand } from "../comment-commands.js";
import type { GitHub, Pull } from "../github.js";
import { parseExternalId } from "../job-registry.js";
import type { CheckRunEvent, IssueCommentEvent } from "./payloads.js";

const WRITERS = new Set(["admin", "write", "maintain"]);
const FULL_SHA = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/** The reply to someone without write access who tried to answer. */
export function answerRefused(login: string): string {
  return `@${login} answering evokernel's verdicts (accept a regression, mark a verdict wrong) needs write access to this repository; ask a maintainer.`;
}

/** `/evokernel accept|wrong`: the commenter's permission is checked already. */
export async function handleAnswerCommand(
  state: AppState,
  github: GitHub,
  event: IssueCommentEvent,
  command: AnswerCommand,
  login: string,
): Promise<void> {
  const pr = event.issue.number;
  const reply = (text: string) => github.createComment(pr, `@${login} ${text}`);
  const pull = await github.getPull(pr);
  if (pull.state !== "open" && command.name === "accept") {
    await reply("this pull request is closed: there is no check to let pass.");
    return;
  }
  const unbound = await commitProblem(github, command, pull);
  if (unbound !== undefined) {
    await reply(unbound);
    return;
  }
  const sha = pull.headSha;
  const runs = await answerableRuns(github, sha, state.appId);
  const judging = runs.flatMap((found) => {
    const verdict = found.data.tasks.find(
      (entry) => entry.task === command.task || entry.name === command.task,
    );
    return verdict === undefined ? [] : [{ found, verdict }];
  });
  const first = judging[0];
  if (first === undefined) {
    const judged = [...new Set(runs.flatMap((found) => found.data.tasks.map((v) => v.name)))];
    await reply(
      `no evokernel check run on ${codeSpan(sha.slice(0, 7))} (this pull request's head) judged ${codeSpan(command.task)}, so there is no verdict to answer` +
        (judged.length > 0
          ? ` (it judged ${judged.map((name) => codeSpan(name)).join(", ")}).`
          : ": comment `/bench` to have it judged, then answer its verdict."),
    );
    return;
  }
  const at = new Date().toISOString();
  if (command.name === "accept") {
    const slower = judging.filter(({ verdict }) => verdict.outcome === "slower");
    if (slower.length === 0) {
      await reply(
        `${codeSpan(first.verdict.name)} is not a regression on ${codeSpan(sha.slice(0, 7))} (evokernel said: ${mdText(first.verdict.headline)}): only a regression can be accepted. If the verdict is a mistake, \`/evokernel wrong ${first.verdict.task} <reason>\` records it.`,
      );
      return;
    }
    const accept: Accept = { pr, sha, task: first.verdict.task, login, reason: command.reason, at };
    const stored = await changeAnswers(
      github,
      (answers) => addAccept(answers, accept),
      `evokernel: ${accept.task} accepted on #${pr} at ${sha.slice(0, 7)} by @${login}`,
    );
    for (const { found } of slower) await concludeAnswered(github, found, pr, stored.answers);
    await github.addReaction(event.comment.id, "+1");
    return;
  }
  const recorded = await recordWrong(
    github,
    first.found,
    first.verdict,
    pr,
    login,
    command.reason,
    at,
  );
  if (typeof recorded === "string") {
    await reply(recorded);
    return;
  }
  await concludeAnswered(github, first.found, pr, recorded);
  await github.addReaction(event.comment.id, "+1");
}

/**
 * The check run's buttons. Accept lets every regression of that check run pass on its
 * commit; Wrong marks its failing verdict wrong when there is one, and otherwise asks for
 * the command naming the task. A button carries no reason: a fixed one is stored.
 */
export async function handleAnswerButton(
  state: AppState,
  github: GitHub,
  event: CheckRunEvent,
): Promise<void> {
  const identifier = event.requested_action?.identifier;
  if (identifier !== ACCEPT_ACTION.identifier && identifier !== WRONG_ACTION.identifier) return;
  const ids = parseExternalId(event.check_run.external_id);
  const pr = ids ? Number(ids.jobId.split("-")[1]) : NaN;
  if (!Number.isInteger(pr)) return;
  const login = event.sender.login;
  if (!WRITERS.has(await github.permissionOf(login))) {
    await github.createComment(pr, answerRefused(login));
    return;
  }
  // The check run as it is now (its payload may be older than an answer given meanwhile).
  const found = answerable(await github.getCheckRun(event.check_run.id), state.appId);
  if (found === undefined) {
    await github.createComment(
      pr,
      `@${login} this check run holds no verdict evokernel can answer (it ended without a result, or was reported before answers existed): nothing was recorded.`,
    );
    return;
  }
  const sha = found.run.headSha;
  const at = new Date().toISOString();
  if (identifier === ACCEPT_ACTION.identifier) {
    const slower = found.data.tasks.filter((verdict) => verdict.outcome === "slower");
    if (slower.length === 0) {
      await github.createComment(
        pr,
        `@${login} this check run has no regression to accept: only a regression can be accepted.`,
      );
      return;
    }
    const stored = await changeAnswers(
      github,
      (answers) =>
        slower.reduce<{ answers: Answers; added: boolean }>(
          (sum, verdict) => {
            const next = addAccept(sum.answers, {
              pr,
              sha,
              task: verdict.task,
              login,
              reason: BUTTON_ACCEPT_REASON,
              at,
            });
            return { answers: next.answers, added: sum.added || next.added };
          },
          { answers, added: false },
        ),
      `evokernel: ${slower.map((verdict) => verdict.task).join(", ")} accepted on #${pr} at ${sha.slice(0, 7)} by @${login}`,
    );
    await concludeAnswered(github, found, pr, stored.answers);
    return;
  }
  const failing = found.data.tasks.filter((verdict) => FAILING_OUTCOMES.has(verdict.outcome));
  const only = failing.length === 1 ? failing[0] : undefined;
  if (only === undefined) {
    const lines = (failing.length === 0 ? found.data.tasks : failing).map(
      (verdict) => `- \`/evokernel wrong ${verdict.task} <reason>\` (${mdText(verdict.headline)})`,
    );
    await github.createComment(
      pr,
      `@${login} ${failing.length === 0 ? "no verdict of this check run failed" : "this check run has several failing verdicts"}: say which is wrong, and why, with a comment:\n\n${lines.join("\n")}`,
    );
    return;
  }
  const recorded = await recordWrong(github, found, only, pr, login, BUTTON_WRONG_REASON, at);
  if (typeof recorded === "string") {
    await github.createComment(pr, `@${login} ${recorded}`);
    return;
  }
  await concludeAnswered(github, found, pr, recorded);
}

/** Stores a wrong mark with the run's evidence; the answers after, or why it cannot be. */
async function recordWrong(
  github: GitHub,
  found: Answerable,
  verdict: Verdict,
  pr: number,
  login: string,
  reason: string,
  at: string,
): Promise<Answers | string> {
  const sha = found.run.headSha;
  // The kernel is known again by its content: the git blob of its file in the judged commit.
  const blob = verdict.kernel === null ? undefined : await blobAt(github, sha, verdict.kernel);
  if (blob === undefined)
    return `the kernel file of ${codeSpan(verdict.name)} is not in ${codeSpan(sha.slice(0, 7))}, so its verdict cannot be known again: nothing was recorded.`;
  const mark: WrongMark = {
    task: verdict.task,
    blob,
    login,
    reason,
    at,
    evidence: {
      pr,
      sha,
      checkRunId: found.run.id,
      checkUrl: found.run.htmlUrl ?? null,
      runUrl: found.run.detailsUrl,
      gpu: found.data.gpu,
      evokernel: found.data.evokernel,
      verdict,
    },
  };
  const stored = await changeAnswers(
    github,
    (answers) => addWrong(answers, mark),
    `evokernel: verdict on ${verdict.task} (${verdict.outcome}) marked wrong on #${pr} at ${sha.slice(0, 7)} by @${login}`,
  );
  return stored.answers;
}

/**
 * Why an answer may not be given on the PR's head, or undefined: a fork's PR names the commit
 * whose verdict it answers (the one the maintainer reviewed), and a named commit must be the
 * head. A short name that is not the head is never answered with the head's SHA to copy.
 */
async function commitProblem(
  github: Pick<GitHub, "resolveCommit">,
  command: AnswerCommand,
  pull: Pick<Pull, "headSha" | "fork">,
): Promise<string | undefined> {
  const head = pull.headSha.toLowerCase();
  const usage = (sha: string) => `\`/evokernel ${command.name} ${command.task} @${sha} <reason>\``;
  if (command.sha === undefined) {
    if (!pull.fork) return undefined;
    return `this pull request comes from a fork, so an answer names the commit whose verdict it answers, the one you reviewed: the head is \`${head}\` now; to answer its verdict, comment ${usage(head)}.`;
  }
  const named = command.sha.toLowerCase();
  const full = FULL_SHA.test(named) ? named : await github.resolveCommit(named);
  if (full === head) return undefined;
  return FULL_SHA.test(named)
    ? `the head of this pull request is \`${head}\` now, not \`${named}\`: nothing was answered. An answer is for the head's verdicts; review the new commits, then comment ${usage(head)}.`
    : `\`${named}\` does not name this pull request's head: nothing was answered. Name in full the commit you reviewed (copy its SHA from the commit you read): ${usage("<full SHA>")}.`;
}
