// What a reviewed task comes to, in one word and one sentence: the comment's first line,
// the check run's title and conclusion all start here, with the threshold the caller gives.
import { isImprovement, isRegression, summarizeSpeedup } from "../shared/speedup.js";
import { thresholdFor, type ThresholdInput } from "../shared/thresholds.js";
import type { TaskReview } from "../shared/review.js";
import { MARKDOWN, type Style } from "./escape.js";
import { firstLine, formatSpeedup } from "./format.js";
import { reasonWords } from "./reasons.js";

/** wrong and error and slower fail a check; faster and same pass; quiet says nothing. */
export type Outcome = "wrong" | "error" | "slower" | "faster" | "same" | "quiet";

export function outcomeOf(task: TaskReview, threshold: ThresholdInput): Outcome {
  if (task.status === "wrong") return "wrong";
  if (task.status === "error") return "error";
  if (task.status !== "passed") return "quiet";
  // the rules per task and configuration (src/shared/thresholds.ts), as the runner used them
  const regression = (config: string) => thresholdFor(threshold, task.task.path, config).regression;
  if (isRegression(task.timings, regression)) return "slower";
  const win = thresholdFor(threshold, task.task.path, null).win;
  if (isImprovement(task.timings, regression, win)) return "faster";
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
  threshold: ThresholdInput,
): { task: TaskReview; outcome: Outcome }[] {
  return tasks
    .map((task) => ({ task, outcome: outcomeOf(task, threshold) }))
    .sort((a, b) => OUTCOME_ORDER.indexOf(a.outcome) - OUTCOME_ORDER.indexOf(b.outcome));
}

/** One sentence, e.g. "`softmax` 1.35× faster than base, verified on 6 shapes". */
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
      return speedup === null || speedup.median >= 1
        ? `${name} is slower than base on a configuration`
        : `${name} ${formatSpeedup(speedup.median)} than base`;
    case "faster":
      return speedup === null
        ? `${name} faster, ${verified}`
        : `${name} ${formatSpeedup(speedup.median)} than base, ${verified}`;
    case "same":
      if (!task.inBase) return `${name} ${verified} (new: no base to compare with)`;
      if (speedup === null) return `${name} ${verified}`;
      return `${name} ${verified}, as fast as base within the noise`;
    case "quiet":
      return `${name} ${quietDetail(task, style)}`;
  }
}

/** A reason code in words with the code beside: "its output differs … (`mismatch`)". */
export function describeReason(code: string, style: Style = MARKDOWN): string {
  const words = reasonWords(code);
  return words === null ? `rejected (${style.code(code)})` : `${words} (${style.code(code)})`;
}

function wrongDetail(task: TaskReview, style: Style): string {
  const { text } = style;
  const verification = task.verification;
  if (verification === null) return `: ${text(firstLine(task.summary))}`;
  const failed = verification.failed;
  const reason = describeReason(verification.reason ?? verification.status, style);
  const config = failed?.config ?? verification.configs.find((entry) => !entry.ok)?.name;
  const where = config === undefined ? "" : ` on ${text(config)}`;
  return `${where}: ${reason}`;
}

/** The statuses whose message's first line says what failed (stage, exception or signal). */
const HARNESS_FAILURES: ReadonlySet<string> = new Set(["error", "crash", "timeout"]);

function errorDetail(task: TaskReview, style: Style): string {
  const { text } = style;
  const verification = task.verification;
  if (verification === null) return text(firstLine(task.summary));
  const reason = describeReason(verification.reason ?? verification.status, style);
  const why = HARNESS_FAILURES.has(verification.status) ? firstLine(verification.message) : "";
  return why === "" ? reason : `${reason}: ${text(why)}`;
}

function quietDetail(task: TaskReview, { text }: Style): string {
  if (task.status === "unchanged") return "is unchanged";
  if (task.status === "removed") return "was removed";
  return `was not checked: ${text(firstLine(task.summary))}`;
}

/** Counts as CodSpeed writes them: "1 wrong, 1 regression, 2 improvements, 1 unchanged". */
export function countsSentence(outcomes: readonly Outcome[], newTasks: number): string {
  const count = (outcome: Outcome) => outcomes.filter((entry) => entry === outcome).length;
  const parts: [number, string, string][] = [
    [count("wrong"), "wrong", "wrong"],
    [count("error"), "broken", "broken"],
    [count("slower"), "regression", "regressions"],
    [count("faster"), "improvement", "improvements"],
    [count("same") - newTasks, "unchanged", "unchanged"],
    [newTasks, "new", "new"],
  ];
  return parts
    .filter(([n]) => n > 0)
    .map(([n, one, many]) => `${n} ${n === 1 ? one : many}`)
    .join(", ");
}
