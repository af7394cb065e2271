// What a job returns (`evokernel job`, `evokernel review --json`) and what the app reads back
// from the run's artifact: per task, whether the head kernel is right, how fast it is beside
// the base kernel, and an evolved kernel with the change to suggest. Times in
// milliseconds; a speedup is base time over head time, so above 1 is faster.
import { z } from "zod";
import { taskFormatSchema } from "./contract/formats.js";
import { jobSpecSchema } from "./job.js";
import { benchLine, verifyLine } from "./reproduce.js";
import type { Thresholds } from "./thresholds.js";
import { resultSchema, spreadSchema } from "./result.js";

const ms = z.number().nonnegative();
const ratio = z.number().positive();

/**
 * passed: head verified (and timed); wrong: head rejected by verification or timing (a
 * mismatch, a hack, a time under the floor); error: head could not be checked (compile
 * error, crash, timeout, a harness failure); unchanged: the task's files are the same at
 * base and head (nothing ran); removed: head deletes the task; skipped: no kernel to check
 * (a task without one of its own). A task new in head is passed (or not) with `inBase` false.
 */
export const taskStatusSchema = z.enum([
  "passed",
  "wrong",
  "error",
  "unchanged",
  "removed",
  "skipped",
]);
export type TaskStatus = z.infer<typeof taskStatusSchema>;

export const verificationSchema = z.object({
  ok: z.boolean(),
  /** The inputs' seed the harness verified with (null: results before it was kept, or none). */
  seed: z.number().int().nullable().default(null),
  /** The harness's status: passed, rejected, compile-error, timeout, crash, error. */
  status: z.string(),
  reason: z.string().nullable(),
  message: z.string(),
  /** The configuration that failed first, with its worst element. */
  failed: z
    .object({
      config: z.string(),
      output: z.string().nullable(),
      index: z.array(z.number().int()),
      got: z.number().nullable(),
      expected: z.number().nullable(),
      maxAbs: z.number().nullable(),
      maxRel: z.number().nullable(),
      normRel: z.number().nullable(),
      /** The tolerance it was held to, where the task declares it. */
      atol: z.number().nullable(),
      rtol: z.number().nullable(),
    })
    .nullable(),
  configs: z.array(
    z.object({
      name: z.string(),
      heldout: z.boolean(),
      ok: z.boolean(),
      reason: z.string().nullable(),
      maxAbs: z.number().nullable(),
    }),
  ),
});
export type Verification = z.infer<typeof verificationSchema>;

export const timingConfigSchema = z.object({
  name: z.string(),
  floorMs: ms,
  base: spreadSchema.nullable(),
  head: spreadSchema.nullable(),
  eager: spreadSchema.nullable(),
  compile: spreadSchema.nullable(),
  /** The evolved kernel, when an optimize run found one and timed it here. */
  evolved: spreadSchema.nullable().default(null),
  /** floor / median × 100 (null: not timed). */
  percentOfFloor: z.object({ base: z.number().nullable(), head: z.number().nullable() }),
  /**
   * Launch overhead dominates the time here (the harness says so): shown, marked, and kept
   * out of the headline and the gate, because such a time measures the launch, not the kernel.
   */
  launchBound: z.boolean().default(false),
  /** base median / head median; null without both. */
  speedup: ratio.nullable(),
  /** faster / slower: beyond the noise (and, for slower, beyond the threshold). */
  change: z.enum(["faster", "slower", "same"]).nullable(),
});
export type TimingConfig = z.infer<typeof timingConfigSchema>;

export const speedupSummarySchema = z.object({
  /** Geometric mean over the configurations that count of base median / head median. */
  median: ratio,
  /** The same from base p20 / head p80: the speedup the noise cannot explain away. */
  lowerBound: ratio,
  /** The same from base p80 / head p20: the slowdown the noise cannot explain away is 1 / this. */
  upperBound: ratio,
  /** How many configurations counted (not launch-bound, both timed). */
  configs: z.number().int().nonnegative(),
});
export type SpeedupSummary = z.infer<typeof speedupSummarySchema>;

export const taskReviewSchema = z.object({
  task: z.object({
    name: z.string(),
    /** Relative to the repository root, forward slashes. */
    path: z.string(),
    format: taskFormatSchema,
  }),
  status: taskStatusSchema,
  /** One line on what happened, for a reader (the comment's headline draws on it). */
  summary: z.string(),
  /** The kernel file, relative to the repository root; null where the task has none. */
  kernel: z.string().nullable(),
  /** Whether base had this task (false: a new task; no base timings). */
  inBase: z.boolean(),
  verification: verificationSchema.nullable(),
  timings: z.array(timingConfigSchema),
  /** Head against base; null when either was not timed. */
  speedup: speedupSummarySchema.nullable(),
  /** Head slower than base beyond the noise and the threshold on a configuration that counts. */
  regression: z.boolean(),
  /** Head faster than base beyond the noise (the lower bound above 1). */
  improvement: z.boolean(),
  /** The optimize run on head, when one ran. */
  optimize: resultSchema.nullable(),
  /** The inputs' seed of the timing (null: not timed, or results before it was kept). */
  benchSeed: z.number().int().nullable().default(null),
  /** Base's kernel file, relative to the repository root, when base had one (timed beside head). */
  baseKernel: z.string().nullable().default(null),
  /**
   * The lines that reproduce the verdicts (src/shared/reproduce.ts), for `--json` readers; the
   * app renders its own from the fields above, trusting no command text from an artifact.
   */
  reproduce: z
    .object({ verify: z.string().nullable(), bench: z.string().nullable() })
    .nullable()
    .default(null),
  /** The evolved kernel as a change to the head kernel file, when the run found a win. */
  suggestion: z.object({ path: z.string(), before: z.string(), after: z.string() }).nullable(),
});
export type TaskReview = z.infer<typeof taskReviewSchema>;

export const reviewDeviceSchema = z.object({
  gpu: z.string(),
  driver: z.string().nullable(),
  cuda: z.string().nullable(),
  torch: z.string(),
  python: z.string(),
  evokernel: z.string(),
  /**
   * How candidate code ran: in the runner's sandbox, or without it (EVOKERNEL_SANDBOX=off on
   * the runner). Absent in results of runners before the sandbox.
   */
  sandbox: z.enum(["namespaces", "off"]).optional(),
});
export type ReviewDevice = z.infer<typeof reviewDeviceSchema>;

export const reviewResultSchema = z.object({
  schema: z.literal(1),
  kind: z.literal("review"),
  /** The job that ran (for `evokernel review`, the one it built from the two refs). */
  job: jobSpecSchema,
  /** Percent: the regression threshold the statuses were computed with. */
  threshold: z.number().min(0),
  tasks: z.array(taskReviewSchema),
  device: reviewDeviceSchema,
  startedAt: z.string(),
  finishedAt: z.string(),
});
export type ReviewResult = z.infer<typeof reviewResultSchema>;

/** A reviewed result read from an artifact: parsed, never cast (artifacts are untrusted). */
export function parseReviewResult(
  data: unknown,
): { ok: true; result: ReviewResult } | { ok: false; errors: string[] } {
  const parsed = reviewResultSchema.safeParse(data);
  if (parsed.success) return { ok: true, result: parsed.data };
  return {
    ok: false,
    errors: parsed.error.issues.map(
      (issue) => `${issue.path.map(String).join(".")}: ${issue.message}`,
    ),
  };
}

/**
 * A task's reproduction lines (src/shared/reproduce.ts): verify from the verification's seed,
 * bench from the timing's (naming the configurations that were slower, when any was), each
 * null where its seed is not known.
 */
export function reproductionOf(
  task: TaskReview,
  version: string,
  commits: { sha: string; baseSha?: string | undefined },
): { verify: string | null; bench: string | null } {
  const kernel = task.kernel;
  if (kernel === null) return { verify: null, bench: null };
  const verify =
    task.verification === null
      ? null
      : verifyLine(version, task.task.path, kernel, task.verification);
  const slower = task.timings.filter((config) => config.change === "slower").map((c) => c.name);
  const base =
    task.baseKernel !== null && commits.baseSha !== undefined
      ? { baseSha: commits.baseSha, headSha: commits.sha, kernel: task.baseKernel }
      : null;
  const bench =
    task.benchSeed === null
      ? null
      : benchLine(version, task.task.path, kernel, task.benchSeed, { configs: slower, base });
  return { verify, bench };
}

/**
 * The thresholds a review was judged with: its regression threshold and the job's rules per
 * task and configuration (src/shared/thresholds.ts); a win needs any gain beyond the noise
 * unless a rule sets more.
 */
export function reviewThresholds(review: ReviewResult): Thresholds {
  return { regression: review.threshold, win: 0, rules: review.job.thresholds ?? [] };
}
