// The check run that gates a pull request: failure when a kernel is wrong or slower beyond
// the noise and the threshold, success when every changed kernel verifies and is not
// slower, neutral when there is nothing to say. Pure: the app posts it, `review` writes it.
import {
  reproductionOf,
  reviewThresholds,
  type ReviewResult,
  type TaskReview,
} from "../shared/review.js";
import { thresholdsOf, type ThresholdInput } from "../shared/thresholds.js";
import { summaryLine } from "./comment.js";
import { codeBlock, mdText } from "./escape.js";
import { byOutcome, headline, type Outcome } from "./outcome.js";
import { renderTaskTable } from "./table.js";

export type CheckRunOutput = {
  conclusion: "success" | "failure" | "neutral";
  title: string;
  summary: string;
  text?: string;
};

/** GitHub's limit on a check run's summary and on its text. */
export const CHECK_RUN_LIMIT = 65_535;

const FAILING: ReadonlySet<Outcome> = new Set(["wrong", "error", "slower"]);

export function renderCheckRun(
  review: ReviewResult,
  threshold: ThresholdInput = reviewThresholds(review),
): CheckRunOutput {
  const { regression, rules } = thresholdsOf(threshold);
  const ranked = byOutcome(review.tasks, threshold);
  const speaking = ranked.filter(({ outcome }) => outcome !== "quiet");
  const failing = ranked.filter(({ outcome }) => FAILING.has(outcome));
  if (speaking.length === 0) {
    const count = review.tasks.length;
    return {
      conclusion: "neutral",
      title: count === 0 ? "No kernel task changed" : "No changed kernel to check",
      summary:
        count === 0
          ? "No file of a kernel task changed between base and head: nothing to verify or time."
          : ranked.map(({ task, outcome }) => `- ${headline(task, outcome)}`).join("\n"),
    };
  }
  const conclusion = failing.length > 0 ? "failure" : "success";
  const title = summaryLine(ranked, "plain");
  const lines = ranked.map(({ task, outcome }) => `- ${headline(task, outcome)}`);
  const perTask =
    rules.length > 0
      ? " (or the threshold `.github/evokernel.yml`'s `thresholds` set for the task and configuration)"
      : "";
  const rule = `Slower means the PR's p20 is over base's p80 by more than ${regression}%${perTask} on a configuration that is not launch-bound.`;
  const unsandboxed =
    review.device.sandbox === "off"
      ? [
          "",
          "The pull request's code ran without evokernel's sandbox (EVOKERNEL_SANDBOX=off on the runner).",
        ]
      : [];
  const summary = clip([...lines, "", rule, ...unsandboxed].join("\n"));
  const tables = ranked
    .map(({ task }) => {
      // the timings, or where it stopped before any (the static check, the build, the harness)
      const body = task.timings.length > 0 ? renderTaskTable(task, threshold) : whatFailed(task);
      const reproduce = reproduceBlock(task, review);
      if (body === "" && reproduce === "") return "";
      return [`### ${mdText(task.task.name)}`, body, reproduce]
        .filter((part) => part !== "")
        .join("\n\n");
    })
    .filter((section) => section !== "");
  const text = tables.length === 0 ? undefined : clip(tables.join("\n\n"));
  return text === undefined
    ? { conclusion, title: clipTitle(title), summary }
    : { conclusion, title: clipTitle(title), summary, text };
}

/**
 * Where a task stopped before any timing (the static check, the build, the harness itself):
 * the failure's message and its output's tail, collapsed ("" when nothing failed).
 */
function whatFailed(task: TaskReview): string {
  const verification = task.verification;
  if (verification === null || verification.ok) return "";
  const message = verification.message.trim();
  if (message === "") return "";
  return `<details><summary>What failed (the run's output)</summary>\n\n${codeBlock(message, "")}\n\n</details>`;
}

/** The lines that reproduce a task's verdicts (src/shared/reproduce.ts), from its seeds. */
function reproduceBlock(task: TaskReview, review: ReviewResult): string {
  const { verify, bench } = reproductionOf(task, review.device.evokernel, review.job);
  const lines = [verify, bench].filter((line) => line !== null);
  if (lines.length === 0) return "";
  return `To reproduce on a GPU machine, in a checkout of the pull request:\n\n${codeBlock(lines.join("\n"), "sh")}`;
}

function clipTitle(title: string): string {
  return title.length > 200 ? `${title.slice(0, 199)}…` : title;
}

function clip(text: string): string {
  if (text.length <= CHECK_RUN_LIMIT) return text;
  const note = "\n\n… cut at GitHub's limit: the full result is in the run's artifact.";
  return text.slice(0, CHECK_RUN_LIMIT - note.length) + note;
}
