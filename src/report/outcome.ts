// What a reviewed task comes to, in one word and one sentence: the comment's first line,
// the check run's title and conclusion all start here, with the threshold the caller gives.
import { isImprovement, isRegression, summarizeSpeedup } from "../shared/speedup.js";
import type { TaskReview } from "../shared/review.js";
import { MARKDOWN, type Style } from "./escape.js";
import { firstLine, formatError, formatRatio, percentSlower, significant } from "./format.js";

/** wrong and error and slower fail a check; faster and same pass; quiet says nothing. */
export type Outcome = "wrong" | "error" | "slower" | "faster" | "same" | "quiet";

export function outcomeOf(task: TaskReview, thresholdPercent: number): Outcome {
  if (task.status === "wrong") return "wrong";
  if (task.status === "error") return "error";
  if (task.status !== "passed") return "quiet";
  if (isRegression(task.timings, thresholdPercent)) return "slower";
  if (isImprovement(task.timings, thresholdPercent)) return "faster";
  return "same";
}

/** Worst first: what a reader must see before anything else. */
export const OUTCOME_ORDER: readonly Outcome[] = [
  "wrong",
  "error",
  "slower",
  "faster",
  "same",
  "quiet",
];

export function byOutcome(
  tasks: readonly TaskReview[],
  thresholdPercent: number,
): { task: TaskReview; outcome: Outcome }[] {
  return tasks
    .map((task) => ({ task, outcome: outcomeOf(task, thresholdPercent) }))
    .sort((a, b) => OUTCOME_ORDER.indexOf(a.outcome) - OUTCOME_ORDER.indexOf(b.outcome));
}

/** One sentence, e.g. "`softmax` 1.8× faster, verified on 6 shapes". */
export function headline(task: TaskReview, outcome: Outcome, style: Style = MARKDOWN): string {
  const name = style.code(task.task.name);
  const shapes = task.verification?.configs.length ?? 0;
  const verified = `verified on ${shapes} shape${shapes === 1 ? "" : "s"}`;
  const speedup = summarizeSpeedup(task.timings);
  switch (outcome) {
    case "wrong":
      return `${name} is wrong${wrongDetail(task, style)}`;
    case "error":
      return `${name} could not be checked: ${errorDetail(task, style)}`;
    case "slower":
      return speedup === null
        ? `${name} is slower than base on a configuration`
        : `${name} ${significant(percentSlower(speedup.median), 2)}% slower than base`;
    case "faster":
      return speedup === null
        ? `${name} faster, ${verified}`
        : `${name} ${formatRatio(speedup.median, 2)} faster, ${verified}`;
    case "same":
      if (!task.inBase) return `${name} ${verified} (new: no base to compare with)`;
      if (speedup === null) return `${name} ${verified}`;
      return `${name} ${verified}, as fast as base within the noise`;
    case "quiet":
      return `${name} ${quietDetail(task, style)}`;
  }
}

function wrongDetail(task: TaskReview, { text: mdText }: Style): string {
  const verification = task.verification;
  if (verification === null) return `: ${mdText(firstLine(task.summary))}`;
  const failed = verification.failed;
  // The worst element's error says it all, where the harness found one (a mismatch).
  if (failed !== null && failed.output !== null && failed.maxAbs !== null) {
    const against = failed.atol === null ? "" : ` > atol ${formatError(failed.atol)}`;
    return ` on ${mdText(failed.config)}: max abs error ${formatError(failed.maxAbs)}${against}`;
  }
  const config = failed?.config ?? verification.configs.find((entry) => !entry.ok)?.name;
  const where = config === undefined ? "" : ` on ${mdText(config)}`;
  const reason = verification.reason ?? verification.status;
  const message = firstLine(verification.message, 160);
  const detail = message === "" || message === reason ? "" : ` (${mdText(message)})`;
  return `${where}: ${mdText(reason)}${detail}`;
}

function errorDetail(task: TaskReview, { text: mdText }: Style): string {
  const verification = task.verification;
  if (verification === null) return mdText(firstLine(task.summary));
  const reason = verification.reason ?? verification.status;
  const message = firstLine(verification.message, 160);
  return message === "" || message === reason
    ? mdText(reason)
    : `${mdText(reason)} (${mdText(message)})`;
}

function quietDetail(task: TaskReview, { text: mdText }: Style): string {
  if (task.status === "unchanged") return "is unchanged";
  if (task.status === "removed") return "was removed";
  return `was not checked: ${mdText(firstLine(task.summary))}`;
}
