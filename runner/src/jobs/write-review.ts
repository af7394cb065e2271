// The files `evokernel review --out` leaves behind: exactly what the app would post (the
// comment, the check run), the suggested change as a patch, and the full result.
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ReviewResult } from "../../../src/shared/review.js";
import {
  renderCheckRun,
  renderComment,
  renderPatch,
  type CheckRunOutput,
} from "../../../src/report/index.js";

export type RenderedReview = { comment: string; checkRun: CheckRunOutput; patch: string };

export function renderReview(review: ReviewResult, threshold = review.threshold): RenderedReview {
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
  await mkdir(dir, { recursive: true });
  const files: [string, string][] = [
    ["review.json", `${JSON.stringify(review, null, 2)}\n`],
    ["comment.md", rendered.comment],
    ["check-run.json", `${JSON.stringify(rendered.checkRun, null, 2)}\n`],
  ];
  if (rendered.patch !== "") files.push(["suggestion.patch", rendered.patch]);
  for (const [name, text] of files) await writeFile(join(dir, name), text, "utf8");
  return files.map(([name]) => join(dir, name));
}

/** Writes one JSON document (the job's result) where it was asked for. */
export async function writeJson(file: string, document: unknown): Promise<void> {
  await writeFile(file, `${JSON.stringify(document, null, 2)}\n`, "utf8");
}
