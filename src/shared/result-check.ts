// Whether a job's result adds up before it counts (issue 16.7). The schema says a result is
// well-formed; this says its claims follow from its own records: a passed task verified on at
// least one configuration and failed on none, every timed configuration among the verified
// ones, every speedup, change, improvement and regression what the recorded times give, an
// evolved kernel suggested only from a win its own times and verification support. A result
// that does not add up is a runner error: the app fails the check and says why, and the
// runner refuses to report it. What counts afterwards is derived from the times, never read
// from the result's free fields.
import type { Result } from "./result.js";
import type { ReviewResult, TaskReview, TimingConfig } from "./review.js";
import type { Spread } from "./result.js";
import { reviewThresholds } from "./review.js";
import {
  compareSpreads,
  isImprovement,
  isRegression,
  summarizeSpeedup,
  type PerConfig,
} from "./speedup.js";
import { taskFolder } from "./task-id.js";
import { thresholdFor, type Thresholds } from "./thresholds.js";

/** A task's regression threshold per configuration. */
function regressionAt(thresholds: Thresholds, task: TaskReview): (config: string) => number {
  return (config) => thresholdFor(thresholds, task.task.path, config).regression;
}

/** Relative slack for a ratio the runner computed from the same times (rounding, not more). */
const SLACK = 0.01;

export type ResultCheck =
  | { readonly ok: true; readonly review: ReviewResult }
  | { readonly ok: false; readonly problems: readonly string[] };

/**
 * The result with its derived fields recomputed, or what does not add up. `planned`: the task
 * paths the job named (the app's own spec; empty when the job reviews every changed task), so
 * a result cannot report a task the job never ran, or one task twice.
 */
export function checkReviewResult(
  review: ReviewResult,
  planned: readonly string[] = [],
): ResultCheck {
  const problems = review.tasks.flatMap((task) =>
    taskProblems(task, reviewThresholds(review)).map((problem) => `${task.task.path}: ${problem}`),
  );
  const seen = new Set<string>();
  for (const { task } of review.tasks) {
    if (seen.has(task.path)) problems.push(`${task.path}: reported twice`);
    seen.add(task.path);
    if (planned.length > 0 && !planned.some((path) => withinPlanned(task.path, path)))
      problems.push(`${task.path}: not a task this job was asked to run`);
  }
  if (problems.length > 0) return { ok: false, problems };
  return {
    ok: true,
    review: {
      ...review,
      tasks: review.tasks.map((task) => derived(task, reviewThresholds(review))),
    },
  };
}

function taskProblems(task: TaskReview, thresholds: Thresholds): string[] {
  const threshold = regressionAt(thresholds, task);
  const problems: string[] = [];
  const verified = new Set(
    (task.verification?.configs ?? []).filter((config) => config.ok).map((config) => config.name),
  );
  const quiet =
    task.status === "unchanged" || task.status === "removed" || task.status === "skipped";
  if (quiet && (task.timings.length > 0 || task.suggestion !== null || task.optimize !== null))
    problems.push(`${task.status}, yet it carries timings or a suggestion`);
  if (task.status === "passed") problems.push(...passedProblems(task));
  const names = new Set<string>();
  for (const config of task.timings) {
    if (names.has(config.name)) problems.push(`configuration ${config.name} is timed twice`);
    names.add(config.name);
    if ((config.head !== null || config.evolved !== null) && !verified.has(config.name))
      problems.push(`configuration ${config.name} is timed but was not verified`);
    problems.push(...timingProblems(config, threshold(config.name)));
  }
  problems.push(
    ...summaryProblems(task, threshold, thresholdFor(thresholds, task.task.path, null).win),
  );
  if (task.suggestion !== null) problems.push(...suggestionProblems(task));
  // A win is claimed in the comment ("Evolved: a kernel 20 % faster") with or without a
  // suggestion: its records must support it either way.
  else if (task.optimize?.win === true) problems.push(...winProblems(task.optimize));
  return problems;
}

function passedProblems(task: TaskReview): string[] {
  const verification = task.verification;
  if (verification === null || verification.configs.length === 0)
    return ["passed, yet verified on no configuration"];
  const failed = verification.configs.filter((config) => !config.ok).map((config) => config.name);
  if (!verification.ok || failed.length > 0)
    return [
      `passed, yet its verification failed${failed.length > 0 ? ` on ${failed.join(", ")}` : ""}`,
    ];
  return [];
}

function timingProblems(config: TimingConfig, threshold: number): string[] {
  const problems: string[] = [];
  for (const [label, spread] of [
    ["base", config.base],
    ["head", config.head],
    ["evolved", config.evolved],
  ] as const) {
    if (spread !== null && !saneSpread(spread))
      problems.push(
        `configuration ${config.name}: the ${label} time is not a spread (0 < p20 ≤ median ≤ p80)`,
      );
  }
  const { base, head } = config;
  const both = base !== null && head !== null;
  const speedup = both && head.medianMs > 0 ? base.medianMs / head.medianMs : null;
  if (!sameRatio(config.speedup, speedup))
    problems.push(
      `configuration ${config.name}: speedup ${String(config.speedup)} is not base/head from its times (${String(speedup)})`,
    );
  const change = both ? compareSpreads(base, head, threshold) : null;
  if (config.change !== change)
    problems.push(
      `configuration ${config.name}: change ${String(config.change)}, yet its times say ${String(change)}`,
    );
  return problems;
}

function summaryProblems(task: TaskReview, threshold: PerConfig, win: number): string[] {
  const problems: string[] = [];
  const summary = summarizeSpeedup(task.timings);
  const claimed = task.speedup;
  const agrees =
    claimed === null || summary === null
      ? claimed === summary
      : claimed.configs === summary.configs &&
        sameRatio(claimed.median, summary.median) &&
        sameRatio(claimed.lowerBound, summary.lowerBound) &&
        sameRatio(claimed.upperBound, summary.upperBound);
  if (!agrees) problems.push("its speedup summary is not what its times give");
  if (task.improvement !== isImprovement(task.timings, threshold, win))
    problems.push(`improvement ${String(task.improvement)}, yet its times say otherwise`);
  if (task.regression !== isRegression(task.timings, threshold))
    problems.push(`regression ${String(task.regression)}, yet its times say otherwise`);
  return problems;
}

/** A suggestion only from a winning search whose verification and times support the win. */
function suggestionProblems(task: TaskReview): string[] {
  if (task.status !== "passed") return [`${task.status}, yet it suggests a kernel`];
  const result = task.optimize;
  if (result === null || !result.win) return ["it suggests a kernel without a winning search"];
  if (result.best === null || result.best.source !== task.suggestion?.after)
    return ["the suggested kernel is not the search's best kernel"];
  return winProblems(result);
}

function winProblems(result: Result): string[] {
  const problems: string[] = [];
  const verification = result.verification;
  const verified = new Set(
    verification.configs.filter((config) => config.ok).map((config) => config.name),
  );
  if (
    !verification.ok ||
    verification.configs.length === 0 ||
    verified.size !== verification.configs.length
  )
    problems.push("the evolved kernel's win has no passing verification on every configuration");
  if (result.configs.length === 0)
    problems.push("the evolved kernel's win has no timed configuration");
  const usable: { baseline: Spread; best: Spread; launchBound: boolean }[] = [];
  for (const config of result.configs) {
    if (!verified.has(config.name))
      problems.push(`the evolved kernel is timed on ${config.name}, which was not verified`);
    if (config.best === null || !saneSpread(config.best) || !saneSpread(config.baseline)) {
      problems.push(`the evolved kernel has no usable time on ${config.name}`);
      continue;
    }
    if (!sameRatio(config.speedup.baseline, config.baseline.medianMs / config.best.medianMs))
      problems.push(`the evolved kernel's speedup on ${config.name} is not what its times give`);
    usable.push({ baseline: config.baseline, best: config.best, launchBound: config.launchBound });
  }
  if (problems.length > 0) return problems;
  const measured = usable.filter((config) => !config.launchBound);
  const headline = measured.length > 0 ? measured : usable;
  const speedup = geomean(headline.map((c) => c.baseline.medianMs / c.best.medianMs));
  const lowerBound = geomean(headline.map((c) => c.baseline.p20Ms / c.best.p80Ms));
  const clearlySlower = usable.some((c) => c.best.p20Ms > c.baseline.p80Ms);
  if (!(lowerBound > 1) || clearlySlower)
    problems.push("the evolved kernel's times do not show a win beyond the noise");
  if (
    !sameRatio(result.speedup.baseline, speedup) ||
    !sameRatio(result.speedup.lowerBound, lowerBound)
  )
    problems.push("the evolved kernel's speedup is not what its times give");
  return problems;
}

/** The task with every number the report shows derived from its times. */
function derived(task: TaskReview, thresholds: Thresholds): TaskReview {
  const threshold = regressionAt(thresholds, task);
  const percent = (floorMs: number, spread: Spread | null) =>
    spread === null || spread.medianMs <= 0 || floorMs <= 0
      ? null
      : (floorMs / spread.medianMs) * 100;
  const timings = task.timings.map((config) => ({
    ...config,
    percentOfFloor: {
      base: percent(config.floorMs, config.base),
      head: percent(config.floorMs, config.head),
    },
    speedup:
      config.base !== null && config.head !== null && config.head.medianMs > 0
        ? config.base.medianMs / config.head.medianMs
        : null,
    change:
      config.base !== null && config.head !== null
        ? compareSpreads(config.base, config.head, threshold(config.name))
        : null,
  }));
  return {
    ...task,
    timings,
    speedup: summarizeSpeedup(timings),
    improvement: isImprovement(
      timings,
      threshold,
      thresholdFor(thresholds, task.task.path, null).win,
    ),
    regression: isRegression(timings, threshold),
  };
}

function saneSpread(spread: Spread): boolean {
  const { p20Ms, medianMs, p80Ms } = spread;
  return (
    [p20Ms, medianMs, p80Ms].every(Number.isFinite) &&
    p20Ms > 0 &&
    p20Ms <= medianMs * (1 + 1e-9) &&
    medianMs <= p80Ms * (1 + 1e-9)
  );
}

function sameRatio(claimed: number | null, actual: number | null): boolean {
  if (claimed === null || actual === null) return claimed === actual;
  if (!Number.isFinite(claimed) || !Number.isFinite(actual)) return false;
  return Math.abs(claimed - actual) <= SLACK * Math.max(Math.abs(claimed), Math.abs(actual));
}

/** A named task path, a task under a named folder, or a variant (#backward) of a named task. */
function withinPlanned(path: string, planned: string): boolean {
  return (
    path === planned ||
    path.startsWith(`${taskFolder(planned)}/`) ||
    taskFolder(path) === taskFolder(planned)
  );
}

function geomean(values: readonly number[]): number {
  return Math.exp(values.reduce((sum, value) => sum + Math.log(value), 0) / values.length);
}
