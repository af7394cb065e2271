// One task of a job: verify the head kernel on every configuration (held-out ones too),
// time it beside the base kernel, eager PyTorch and torch.compile in one interleaved run,
// optionally search for a faster one, and turn the records into the task's review.
import { basename, isAbsolute, join, relative } from "node:path";
import type { JobBudget } from "#shared/job.js";
import { KERNEL_SOURCE, pathShapeProblem } from "#shared/suggestion-path.js";
import type { Result } from "#shared/result.js";
import type { TaskReview, TimingConfig, Verification } from "#shared/review.js";
import { compareSpreads, isImprovement, isRegression, summarizeSpeedup } from "#shared/speedup.js";
import { taskFolder } from "#shared/task-id.js";
import { thresholdFor, type ThresholdInput } from "#shared/thresholds.js";
import { loadTarget, taskRef } from "../workspace/target.js";
import type { Session } from "../pipeline/session.js";
import { TaskError } from "../errors.js";
import { runCascade, type CandidateResult, type CascadeEvent } from "../cascade.js";
import type { BenchConfig, Stat } from "#shared/contract/records.js";
import { isPlainFile, readText } from "../workspace/files.js";
import type { Task } from "../tasks/schema.js";
import type { Optimizer } from "./optimize-head.js";
import type { PlannedTask } from "./plan.js";

export type TaskWork = {
  session: Session;
  /** Time the head kernel (and base's beside it); false: verify only. */
  bench: boolean;
  /** Search for a faster head kernel; null: no search. */
  optimize: null | {
    optimizer: Optimizer;
    budget: JobBudget;
    proposer: "auto" | "llm" | "tuner";
    model?: string | undefined;
    seed?: number | undefined;
  };
  /** The regression threshold and the config's rules per task and configuration. */
  threshold: ThresholdInput;
  /** A folder of this task's own for the optimize archive. */
  work: string;
  say: (line: string) => void;
  onEvent: (event: CascadeEvent) => void;
};

/** Whether a task needs the GPU: head has it, and it changed (or the job names it). */
export function needsGpu(planned: PlannedTask, runUnchanged: boolean): boolean {
  return planned.head !== null && (planned.changed || runUnchanged);
}

/** The review of a task that needs no GPU: removed in head, or unchanged. */
export function quietReview(planned: PlannedTask): TaskReview {
  const empty = emptyReview(planned);
  if (planned.head === null)
    return { ...empty, status: "removed", summary: "removed in this change" };
  return { ...empty, status: "unchanged", summary: "its files are the same at base and head" };
}

function emptyReview(planned: PlannedTask): Omit<TaskReview, "status" | "summary"> {
  return {
    task: { name: planned.name, path: planned.path, format: planned.format },
    kernel: null,
    inBase: planned.base !== null,
    verification: null,
    benchSeed: null,
    baseKernel: null,
    reproduce: null,
    timings: [],
    speedup: null,
    regression: false,
    improvement: false,
    optimize: null,
    suggestion: null,
  };
}

/** Verifies and times a task that `needsGpu`; every failure of its kernel is data. */
export async function reviewTask(planned: PlannedTask, work: TaskWork): Promise<TaskReview> {
  const base = emptyReview(planned);
  if (planned.head === null) return quietReview(planned);
  const head = await loadTarget(planned.head.path, work.work).catch((error: unknown) => {
    if (error instanceof TaskError) return error;
    throw error;
  });
  if (head instanceof TaskError) return { ...base, status: "error", summary: head.message };
  if (head.baseline === null) {
    return { ...base, status: "skipped", summary: "the task has no kernel of its own to check" };
  }
  const headKernel = head.baseline;
  const kernel = `${taskFolder(planned.path)}/${relativeKernel(planned, headKernel)}`;
  const baseKernel = planned.base === null ? null : await kernelOf(planned.base.path, work.work);

  work.say(`${planned.path}: verifying${work.bench ? " and timing" : ""} the PR's kernel`);
  const [result] = await runCascade(taskRef(head), [headKernel], {
    heldout: true,
    bench: work.bench
      ? { compile: true, ...(baseKernel === null ? {} : { baseline: baseKernel }) }
      : false,
    knownDevice: work.session.device.device,
    server: work.session.server,
    onEvent: work.onEvent,
  });
  if (result === undefined) throw new Error("runCascade returned no result");

  const verification = verificationOf(result, toleranceOf(head.spec));
  const status = statusOf(result);
  const limits = (config: string | null) => thresholdFor(work.threshold, planned.path, config);
  const regressionAt = (config: string) => limits(config).regression;
  const timings = (result.bench?.configs ?? []).map((config) =>
    timingOf(config, baseKernel !== null, regressionAt(config.name)),
  );
  const reviewed: TaskReview = {
    ...base,
    kernel,
    benchSeed: result.bench?.seed ?? null,
    baseKernel:
      baseKernel === null || planned.base === null
        ? null
        : `${taskFolder(planned.path)}/${kernelWithin(planned.base.path, baseKernel)}`,
    status,
    summary: status === "passed" ? result.message : firstLine(result.message),
    verification,
    timings,
    speedup: summarizeSpeedup(timings),
    regression: isRegression(timings, regressionAt),
    improvement: isImprovement(timings, regressionAt, limits(null).win),
  };
  if (status !== "passed" || work.optimize === null) return reviewed;

  work.say(`${planned.path}: searching for a faster kernel`);
  const searched = await work.optimize.optimizer({
    task: head,
    work: join(work.work, "optimize"),
    budget: work.optimize.budget,
    proposer: work.optimize.proposer,
    model: work.optimize.model,
    seed: work.optimize.seed,
    say: (line) => work.say(`${planned.path}: ${line}`),
  });
  if (!searched.ok) {
    work.say(`${planned.path}: the search failed: ${searched.message}`);
    return { ...reviewed, summary: `${reviewed.summary}; the search failed: ${searched.message}` };
  }
  const suggestable = await suggestablePath(planned, headKernel, kernel);
  return withOptimize(
    reviewed,
    searched.result,
    suggestable,
    await readText(headKernel),
    limits(null).win,
  );
}

/**
 * The kernel's repository path when a suggestion may name it (the app checks again, trusting
 * none of this): a regular file inside the task's folder, its path canonical, not hidden, a
 * kernel source. Null: the evolved kernel is reported, not suggested.
 */
export async function suggestablePath(
  planned: PlannedTask,
  headKernel: string,
  kernel: string,
): Promise<string | null> {
  if (planned.head === null) return null;
  const folder = taskFolder(planned.head.path);
  const inside = relative(folder, headKernel);
  if (inside === "" || inside.startsWith("..") || isAbsolute(inside)) return null;
  if (pathShapeProblem(kernel) !== undefined || !KERNEL_SOURCE.test(kernel)) return null;
  return (await isPlainFile(headKernel)) ? kernel : null;
}

/** The evolved kernel's times beside the table's, and the change to suggest for a win. */
function withOptimize(
  review: TaskReview,
  result: Result,
  kernel: string | null,
  source: string,
  winPercent: number,
): TaskReview {
  const evolved = new Map(result.configs.map((config) => [config.name, config.best]));
  const timings = review.timings.map((config) => ({
    ...config,
    evolved: evolved.get(config.name) ?? null,
  }));
  // a win smaller than the minimum the config sets for this task is reported, not suggested
  const lowerBound = result.speedup.lowerBound;
  const bigEnough = lowerBound !== null && lowerBound >= 1 + winPercent / 100;
  // a kernel timed with nvcc flags is only that fast with them: its source alone is not it
  const flags = result.best?.flags ?? [];
  const suggestion =
    kernel !== null &&
    result.win &&
    bigEnough &&
    flags.length === 0 &&
    result.best !== null &&
    result.best.source !== source
      ? { path: kernel, before: source, after: result.best.source }
      : null;
  const summary =
    result.win && !bigEnough
      ? `${review.summary}; the evolved kernel is not suggested: its gain is under the ${winPercent} % the config's thresholds ask for a win`
      : result.win && flags.length > 0
        ? `${review.summary}; the evolved kernel is not suggested: it was built with nvcc ${flags.join(" ")}, which a change to the kernel file cannot carry`
        : review.summary;
  return { ...review, summary, timings, optimize: result, suggestion };
}

async function kernelOf(taskPath: string, cwd: string): Promise<string | null> {
  try {
    return (await loadTarget(taskPath, cwd)).baseline;
  } catch (error) {
    if (error instanceof TaskError) return null;
    throw error;
  }
}

/**
 * rejected or crashed: the kernel is wrong; compile errors, timeouts and harness errors:
 * it could not be checked. Both fail the check.
 */
function statusOf(result: CandidateResult): TaskReview["status"] {
  if (result.ok) return "passed";
  if (result.status === "rejected" || result.status === "crash") return "wrong";
  return "error";
}

type Tolerance = { atol: number | null; rtol: number | null };

function verificationOf(result: CandidateResult, tolerance: Tolerance): Verification {
  const record = result.verify;
  const mismatch = record?.mismatch ?? null;
  const failedConfig = record?.configs.find((config) => !config.ok) ?? null;
  const failed =
    mismatch !== null
      ? {
          config: mismatch.config,
          output: mismatch.output,
          index: mismatch.index,
          got: mismatch.got,
          expected: mismatch.expected,
          maxAbs: mismatch.maxAbs,
          maxRel: mismatch.maxRel,
          normRel: mismatch.normRel,
          ...tolerance,
        }
      : failedConfig !== null
        ? {
            config: failedConfig.name,
            output: null,
            index: [],
            got: null,
            expected: null,
            maxAbs: failedConfig.maxAbs,
            maxRel: null,
            normRel: failedConfig.normRel,
            ...tolerance,
          }
        : null;
  return {
    ok: result.ok,
    seed: record?.seed ?? null,
    status: result.status,
    reason: result.reason,
    message: result.message,
    failed: result.ok ? null : failed,
    configs: (record?.configs ?? []).map((config) => ({
      name: config.name,
      heldout: config.heldout,
      ok: config.ok,
      reason: config.reason,
      maxAbs: Number.isFinite(config.maxAbs) ? config.maxAbs : null,
    })),
  };
}

/** The tolerance a native task declares for its first input's dtype (else the harness's own). */
function toleranceOf(spec: Task | null): Tolerance {
  const none = { atol: null, rtol: null };
  if (spec === null) return none;
  const dtype = spec.inputs[0]?.dtype;
  const declared = dtype === undefined ? undefined : spec.tolerance?.[dtype];
  return { atol: declared?.atol ?? null, rtol: declared?.rtol ?? null };
}

function timingOf(config: BenchConfig, withBase: boolean, threshold: number): TimingConfig {
  const base = withBase ? spreadOf(config.baseline) : null;
  const head = spreadOf(config.candidate);
  return {
    name: config.name,
    floorMs: config.floorMs,
    base,
    head,
    eager: spreadOf(config.eager),
    compile: spreadOf(config.compile),
    evolved: null,
    percentOfFloor: {
      base: percentOfFloor(config.floorMs, base),
      head: percentOfFloor(config.floorMs, head),
    },
    launchBound: config.launchBound,
    speedup:
      base !== null && head !== null && head.medianMs > 0 ? base.medianMs / head.medianMs : null,
    change: base !== null && head !== null ? compareSpreads(base, head, threshold) : null,
  };
}

function spreadOf(stat: Stat | null): TimingConfig["head"] {
  return stat === null ? null : { medianMs: stat.medianMs, p20Ms: stat.p20Ms, p80Ms: stat.p80Ms };
}

function percentOfFloor(floorMs: number, spread: TimingConfig["head"]): number | null {
  if (spread === null || spread.medianMs <= 0 || floorMs <= 0) return null;
  return (floorMs / spread.medianMs) * 100;
}

/** The kernel's name within its task folder (native tasks name it in task.json). */
function relativeKernel(planned: PlannedTask, kernel: string): string {
  return kernelWithin(planned.head === null ? "" : planned.head.path, kernel);
}

/** A kernel's name within the task folder at `taskPath` (a tree's copy of the task). */
function kernelWithin(taskPath: string, kernel: string): string {
  const folder = taskFolder(taskPath);
  return kernel.startsWith(`${folder}/`)
    ? kernel
        .slice(folder.length + 1)
        .split("\\")
        .join("/")
    : basename(kernel);
}

function firstLine(text: string): string {
  return text.trim().split(/\r?\n/)[0] ?? "";
}
