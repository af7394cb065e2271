// The files `evokernel review --out` leaves behind: exactly what the app would post (the
// comment, the check run), the suggested change as a patch, and the full result.
import { join } from "node:path";
import { reviewThresholds, type ReviewResult } from "#shared/review.js";
import type { ThresholdInput } from "#shared/thresholds.js";
import { checkReviewResult } from "#shared/result-check.js";
import { HarnessError } from "../errors.js";
import { renderCheckRun, renderComment, renderPatch, type CheckRunOutput } from "#report/index.js";
import { makeFolder, writeData } from "../workspace/files.js";

export type RenderedReview = { comment: string; checkRun: CheckRunOutput; patch: string };

/**
 * What the job's result renders to. A result whose claims do not follow from its own records
 * (src/shared/result-check.ts: the same check the app makes) is a runner error, never a
 * report: a candidate that tampered with the records beside it gets no verdict out of them.
 */
export function renderReview(
  result: ReviewResult,
  threshold: ThresholdInput = reviewThresholds(result),
): RenderedReview {
  const checked = checkReviewResult(result, result.job.tasks);
  if (!checked.ok) {
    throw new HarnessError(
      `the job's result does not add up, so it is not reported (a runner error, not a verdict on the kernel):\n${checked.problems.map((problem) => `  - ${problem}`).join("\n")}`,
    );
  }
  const review = checked.review;
  const suggestions = review.tasks.flatMap((task) =>
    task.suggestion === null ? [] : [task.suggestion],
  );
  return {
    comment: renderComment(review),
    checkRun: renderCheckRun(review, threshold),
    patch: renderPatch(suggestions),
  };
}

/** Writes review.json, comment.md, check-run.json and (for a suggestion) suggestion.patch. */
export async function writeReview(
  dir: string,
  review: ReviewResult,
  rendered: RenderedReview,
): Promise<string[]> {
  await makeFolder(dir);
  const files: [string, string][] = [
    ["review.json", `${JSON.stringify(review, null, 2)}\n`],
    ["comment.md", rendered.comment],
    ["check-run.json", `${JSON.stringify(rendered.checkRun, null, 2)}\n`],
  ];
  if (rendered.patch !== "") files.push(["suggestion.patch", rendered.patch]);
  for (const [name, text] of files) await writeData(join(dir, name), text);
  return files.map(([name]) => join(dir, name));
}

/** Writes one JSON document (the job's result) where it was asked for. */
export async function writeJson(file: string, document: unknown): Promise<void> {
  await writeData(file, `${JSON.stringify(document, null, 2)}\n`);
}
