// The reviews behind docs/examples/*.md: the times and errors of a real run on the H100
// (softmax slower, cross_entropy faster, a row_sum that drops a column), put through the
// renderers. `npm run examples` writes the files; examples.test.ts fails when they are stale.
import { renderCheckRun, renderComment, type CheckRunOutput } from "../../src/report/index.js";
import {
  answerCheckRun,
  renderWrongIssue,
  verdictDataOf,
  wrongBeforeNote,
} from "../../src/report/answers.js";
import type { Accept, WrongMark } from "../../src/shared/answers.js";
import type { ReviewResult, TimingConfig } from "../../src/shared/review.js";
import { summarizeSpeedup, isImprovement, isRegression } from "../../src/shared/speedup.js";
import { optimizeResult, passedTask, review, wrongTask } from "./review-fixtures.js";

const RUN_URL = "https://github.com/acme/kernels/actions/runs/19706483011";

/** median with its p20 and p80, in ms */
const t = (medianMs: number, p20Ms: number, p80Ms: number) => ({ medianMs, p20Ms, p80Ms });

function row(
  name: string,
  times: {
    base: ReturnType<typeof t>;
    head: ReturnType<typeof t>;
    eager: ReturnType<typeof t>;
    compile: ReturnType<typeof t>;
    evolved?: ReturnType<typeof t>;
    floorMs: number;
  },
): TimingConfig {
  return {
    name,
    floorMs: times.floorMs,
    base: times.base,
    head: times.head,
    eager: times.eager,
    compile: times.compile,
    evolved: times.evolved ?? null,
    percentOfFloor: {
      base: (times.floorMs / times.base.medianMs) * 100,
      head: (times.floorMs / times.head.medianMs) * 100,
    },
    launchBound: false,
    speedup: times.base.medianMs / times.head.medianMs,
    change: null,
  };
}

const FIVE_SHAPES = [
  { name: "8192x8192", heldout: false },
  { name: "32768x1024", heldout: false },
  { name: "odd-4097x5003", heldout: false },
  { name: "tall-12289x999", heldout: true },
  { name: "wide-777x65537", heldout: true },
];

function verified(name: string, timings: TimingConfig[], maxAbs: number[]) {
  const task = passedTask(name, timings);
  return {
    ...task,
    verification: {
      ...task.verification!,
      message: "passed 10 trials on 5 configurations",
      configs: FIVE_SHAPES.map((shape, index) => ({
        ...shape,
        ok: true,
        reason: null,
        maxAbs: maxAbs[index] ?? 0,
      })),
    },
    speedup: summarizeSpeedup(timings),
    regression: isRegression(timings, 3),
    improvement: isImprovement(timings, 3),
  };
}

const softmaxTimes = (evolved: boolean) => [
  row("8192x8192", {
    base: t(0.303, 0.299, 0.307),
    head: t(0.421, 0.419, 0.423),
    eager: t(0.29, 0.288, 0.292),
    compile: t(0.182, 0.181, 0.183),
    ...(evolved ? { evolved: t(0.317, 0.315, 0.319) } : {}),
    floorMs: 0.181,
  }),
  row("32768x1024", {
    base: t(0.18, 0.1797, 0.1803),
    head: t(0.134, 0.1338, 0.1342),
    eager: t(0.0948, 0.0944, 0.0952),
    compile: t(0.0924, 0.092, 0.0928),
    ...(evolved ? { evolved: t(0.129, 0.1288, 0.1292) } : {}),
    floorMs: 0.0911,
  }),
  row("odd-4097x5003", {
    base: t(0.101, 0.1, 0.102),
    head: t(0.162, 0.16, 0.164),
    eager: t(0.0972, 0.0969, 0.0975),
    compile: t(0.0849, 0.0837, 0.0861),
    ...(evolved ? { evolved: t(0.127, 0.124, 0.13) } : {}),
    floorMs: 0.0551,
  }),
];

const crossEntropy = verified(
  "cross_entropy",
  [
    row("8192x8192", {
      base: t(0.116, 0.115, 0.117),
      head: t(0.112, 0.111, 0.113),
      eager: t(0.286, 0.285, 0.287),
      compile: t(0.126, 0.125, 0.127),
      floorMs: 0.0918,
    }),
    row("32768x1024", {
      base: t(0.135, 0.134, 0.136),
      head: t(0.0955, 0.0949, 0.0961),
      eager: t(0.13, 0.129, 0.131),
      compile: t(0.0737, 0.0731, 0.0743),
      floorMs: 0.0458,
    }),
    row("odd-4097x5003", {
      base: t(0.0513, 0.0506, 0.052),
      head: t(0.0509, 0.0504, 0.0514),
      eager: t(0.0873, 0.0866, 0.088),
      compile: t(0.0643, 0.0637, 0.0649),
      floorMs: 0.028,
    }),
  ],
  [9.5e-7, 0, 0, 0, 0],
);

/** A row_sum that skips the last column of each row: a mismatch, not a precision loss. */
function droppedColumn() {
  const task = wrongTask("row_sum");
  return {
    ...task,
    verification: {
      ok: false,
      seed: 1714636915,
      status: "rejected",
      reason: "mismatch",
      message:
        "wrong result. configuration 8192x8192, trial 0, output 0; worst element [4518]: got 1.2015, expected 3.9079; max abs error 2.706, relative norm error 0.41",
      failed: {
        config: "8192x8192",
        output: "output 0",
        index: [4518],
        got: 1.2015,
        expected: 3.9079,
        maxAbs: 2.706,
        maxRel: 0.69,
        normRel: 0.41,
        atol: 1e-4,
        rtol: 1e-4,
      },
      configs: FIVE_SHAPES.map((shape, index) => ({
        ...shape,
        ok: false,
        reason: "mismatch",
        maxAbs: [2.706, 3.1, 240, 3.4, 250][index] ?? null,
      })),
    },
  };
}

export function benchReview(): ReviewResult {
  const head = "85241d1c1c6c0b1ea3f1a7de0b4b9d2f1b2a8e41";
  const base = "288038d6e7f0c1d2b3a4958677a8b9c0d1e2f3a4";
  const result = review(
    [
      droppedColumn(),
      verified("softmax", softmaxTimes(false), [2.4e-7, 1.2e-7, 1.2e-7, 1.2e-7, 2.4e-7]),
      crossEntropy,
    ],
    { device: { ...review([]).device, torch: "2.11.0+cu130" } },
  );
  return { ...result, job: { ...result.job, sha: head, baseSha: base } };
}

export function optimizeReview(): ReviewResult {
  const head = "506a7b69088c97dd015f4c6b8999889d3c228e63";
  const base = "9c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d";
  const before = [
    "#include <math.h>",
    "",
    "#ifndef BLOCK_SIZE",
    "#define BLOCK_SIZE 32",
    "#endif",
    "",
  ].join("\n");
  const softmax = verified("softmax", softmaxTimes(true), [2.4e-7, 1.2e-7, 1.2e-7, 1.2e-7, 1.2e-7]);
  const optimized = {
    ...softmax,
    optimize: optimizeResult({
      verdict: "1.21× faster than the baseline beyond the noise on every configuration",
      speedup: { baseline: 1.21, lowerBound: 1.18, eager: 1.05, compile: 0.8 },
      history: [
        { candidate: 0, id: "c0", seconds: 9, fitness: 0.999 },
        { candidate: 1, id: "c1", seconds: 21, fitness: 1.12 },
        { candidate: 4, id: "c4", seconds: 58, fitness: 1.21 },
      ],
      search: {
        candidates: 6,
        evaluated: 6,
        passed: 6,
        duplicates: 0,
        proposalFailures: 0,
        failedAt: {},
        seconds: 78,
        stoppedBy: "candidates",
        budget: { candidates: 6, seconds: 900, usd: 5 },
      },
    }),
    suggestion: {
      path: "kernels/softmax/kernel.cu",
      before,
      after: before.replace("#define BLOCK_SIZE 32", "#define BLOCK_SIZE 128"),
    },
  };
  const result = review([optimized], {
    device: { ...review([]).device, torch: "2.11.0+cu130" },
  });
  return { ...result, job: { ...result.job, sha: head, baseSha: base } };
}

function checkRunMarkdown(output: CheckRunOutput): string {
  const parts = [`# evokernel: ${output.conclusion}`, `## ${output.title}`, output.summary];
  if (output.text !== undefined) parts.push(output.text);
  return `${parts.join("\n\n")}\n`;
}

/** docs/examples/<name> → its content, as the renderers write it today. */
export function examples(): Record<string, string> {
  const bench = benchReview();
  const optimize = optimizeReview();
  return {
    "pr-comment-bench.md": renderComment(bench, { runUrl: RUN_URL }),
    "pr-check-run-bench.md": checkRunMarkdown(renderCheckRun(bench, bench.threshold)),
    "pr-comment-optimize.md": renderComment(optimize, { runUrl: RUN_URL }),
    "pr-check-run-optimize.md": checkRunMarkdown(renderCheckRun(optimize, optimize.threshold)),
    ...answerExamples(bench),
  };
}

const SHA = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d";

/**
 * The answers to the bench run's verdicts: `/evokernel accept softmax …` on a run whose only
 * failing verdict is softmax's regression (the check run concludes success), `/evokernel
 * wrong row_sum …` (recorded; the check run says so), the note on the next verdict of that
 * same kernel, and the night's issue listing the marks.
 */
function answerExamples(bench: ReviewResult): Record<string, string> {
  const judged = (review: ReviewResult) => {
    const output = renderCheckRun(review, review.threshold);
    return { output, data: verdictDataOf(review, review.threshold, output) };
  };
  const regressionOnly = {
    ...bench,
    tasks: bench.tasks.filter((task) => task.task.name !== "row_sum"),
  };
  const accept: Accept = {
    pr: 42,
    sha: SHA,
    task: "kernels/softmax",
    login: "kernel-lead",
    reason: "the fused version trades 8% for half the memory; tracked in #51",
    at: "2026-11-29T09:12:00.000Z",
  };
  const accepted = judged(regressionOnly);
  const all = judged(bench);
  const rowSum = all.data.tasks.find((verdict) => verdict.name === "row_sum");
  if (rowSum === undefined) throw new Error("the bench example lost row_sum");
  const mark: WrongMark = {
    task: rowSum.task,
    blob: "3f786850e387550fdab836ed7e6dc881de23001b",
    login: "kernel-lead",
    reason: "the skipped column is padding the reference also ignores",
    at: "2026-11-29T09:15:00.000Z",
    evidence: {
      pr: 42,
      sha: SHA,
      checkRunId: 31337,
      checkUrl: "https://github.com/octo/kernels/runs/31337",
      runUrl: RUN_URL,
      gpu: all.data.gpu,
      evokernel: all.data.evokernel,
      verdict: rowSum,
    },
  };
  const withAnswers = (
    { output, data }: ReturnType<typeof judged>,
    answers: { accepts: Accept[]; wrong: WrongMark[] },
  ): CheckRunOutput => {
    const answered = answerCheckRun(data, output.summary, answers);
    return { ...output, ...answered };
  };
  return {
    "pr-check-run-accepted.md": checkRunMarkdown(
      withAnswers(accepted, { accepts: [accept], wrong: [] }),
    ),
    "pr-check-run-marked-wrong.md": checkRunMarkdown(
      withAnswers(all, { accepts: [], wrong: [mark] }),
    ),
    "pr-comment-marked-wrong-before.md": `${renderComment(bench, { runUrl: RUN_URL })}\n\n${wrongBeforeNote([{ name: rowSum.name, mark }])}`,
    "issue-verdicts-marked-wrong.md": `${renderWrongIssue([mark])}\n`,
  };
}
