// Review results for the renderers' snapshots: one builder, small overrides per case.
import type { z } from "zod";
import { resultSchema, type Result } from "../../src/shared/result.js";
import type { ReviewResult, TaskReview, TimingConfig } from "../../src/shared/review.js";
import { summarizeSpeedup, isImprovement, isRegression } from "../../src/shared/speedup.js";

export const HEAD = "1111111111111111111111111111111111111111";
export const BASE = "2222222222222222222222222222222222222222";

const spread = (ms: number, noise = 0.02) => ({
  medianMs: ms,
  p20Ms: ms * (1 - noise),
  p80Ms: ms * (1 + noise),
});

export function timing(
  name: string,
  baseMs: number | null,
  headMs: number | null,
  extra: Partial<TimingConfig> = {},
): TimingConfig {
  const base = baseMs === null ? null : spread(baseMs);
  const head = headMs === null ? null : spread(headMs);
  return {
    name,
    floorMs: 0.25,
    base,
    head,
    eager: spread(2),
    compile: spread(1.5),
    evolved: null,
    percentOfFloor: {
      base: baseMs === null ? null : (0.25 / baseMs) * 100,
      head: headMs === null ? null : (0.25 / headMs) * 100,
    },
    launchBound: false,
    speedup: baseMs !== null && headMs !== null ? baseMs / headMs : null,
    change: null,
    ...extra,
  };
}

const CONFIGS = [
  { name: "8192x8192", heldout: false },
  { name: "32768x1024", heldout: false },
  { name: "odd-4097x5003", heldout: false },
  { name: "tall-12289x999", heldout: true },
];

export function passedTask(
  name: string,
  timings: TimingConfig[],
  extra: Partial<TaskReview> = {},
): TaskReview {
  return {
    task: { name, path: `kernels/${name}`, format: "native" },
    status: "passed",
    summary: "passed 8 trials on 4 configurations",
    kernel: `kernels/${name}/kernel.cu`,
    inBase: true,
    verification: {
      ok: true,
      seed: 4021,
      status: "passed",
      reason: null,
      message: "passed 8 trials on 4 configurations",
      failed: null,
      configs: CONFIGS.map((config) => ({ ...config, ok: true, reason: null, maxAbs: 1.2e-7 })),
    },
    timings,
    benchSeed: timings.length > 0 ? 7717 : null,
    baseKernel: `kernels/${name}/kernel.cu`,
    reproduce: null,
    speedup: summarizeSpeedup(timings),
    regression: isRegression(timings, 3),
    improvement: isImprovement(timings, 3),
    optimize: null,
    suggestion: null,
    ...extra,
  };
}

export function wrongTask(name: string): TaskReview {
  return {
    task: { name, path: `kernels/${name}`, format: "native" },
    status: "wrong",
    summary: "wrong result",
    kernel: `kernels/${name}/kernel.cu`,
    inBase: true,
    verification: {
      ok: false,
      seed: 1804289383,
      status: "rejected",
      reason: "mismatch",
      message:
        "wrong result. configuration odd-4097x5003, trial 0, out; worst element [4096, 5002]: got 0.031, expected 0.0001; max abs error 0.031, relative norm error 0.2",
      failed: {
        config: "odd-4097x5003",
        output: "out",
        index: [4096, 5002],
        got: 0.031,
        expected: 0.0001,
        maxAbs: 0.031,
        maxRel: 310,
        normRel: 0.2,
        atol: 1e-5,
        rtol: 1e-5,
      },
      configs: [
        { name: "8192x8192", heldout: false, ok: true, reason: null, maxAbs: 1e-7 },
        { name: "odd-4097x5003", heldout: false, ok: false, reason: "mismatch", maxAbs: 0.031 },
      ],
    },
    timings: [],
    benchSeed: null,
    baseKernel: `kernels/${name}/kernel.cu`,
    reproduce: null,
    speedup: null,
    regression: false,
    improvement: false,
    optimize: null,
    suggestion: null,
  };
}

export function compileErrorTask(name: string): TaskReview {
  return {
    ...wrongTask(name),
    status: "error",
    summary: 'kernel.cu(12): error: identifier "blockDimx" is undefined',
    verification: {
      ok: false,
      seed: 846930886,
      status: "compile-error",
      reason: "compile-error",
      message: 'kernel.cu(12): error: identifier "blockDimx" is undefined\n1 error detected',
      failed: null,
      configs: [],
    },
  };
}

export function quietTask(name: string, status: "unchanged" | "removed"): TaskReview {
  return {
    ...wrongTask(name),
    status,
    summary:
      status === "removed" ? "removed in this change" : "its files are the same at base and head",
    kernel: null,
    verification: null,
  };
}

/** Parsed, so fields the schema defaults (as later harness versions add them) fill in. */
export function optimizeResult(overrides: Partial<Result> = {}): Result {
  const config = (name: string) => ({
    name,
    floorMs: 0.25,
    baseline: spread(0.5),
    best: spread(0.4),
    eager: spread(2),
    compile: spread(1.5),
    speedup: { baseline: 1.25, eager: 5, compile: 3.75 },
    percentOfFloor: { baseline: 50, best: 62.5 },
    clearlyFaster: true,
    clearlySlower: false,
  });
  const input: z.input<typeof resultSchema> = {
    schema: 1,
    kind: "optimize",
    task: { name: "softmax", format: "native", path: "/tmp/head/kernels/softmax" },
    run: {
      config: "insight",
      proposer: "tuner",
      model: null,
      seed: 7,
      populationSize: 5,
      archive: "/tmp/archive.jsonl",
      startedAt: "2026-11-23T15:00:00.000Z",
      finishedAt: "2026-11-23T15:04:00.000Z",
    },
    win: true,
    verdict: "1.25× faster than the baseline beyond the noise on every configuration",
    speedup: { baseline: 1.25, lowerBound: 1.2, eager: 5, compile: 3.75 },
    configs: [config("8192x8192"), config("32768x1024"), config("odd-4097x5003")],
    verification: {
      ok: true,
      status: "passed",
      reason: null,
      message: "passed",
      configs: [],
      rejected: [],
    },
    best: {
      id: "c7",
      hash: "abc",
      proposer: "tuner",
      parents: ["c0"],
      insight: "BLOCK_SIZE 512",
      defines: { BLOCK_SIZE: "512" },
      flags: [],
      source: "#define BLOCK_SIZE 512\n",
      file: "kernels/softmax/kernel.cu",
      diff: "--- a/kernel.cu\n+++ b/kernel.cu\n@@ -1 +1 @@\n-#define BLOCK_SIZE 256\n+#define BLOCK_SIZE 512\n",
    },
    history: [
      { candidate: 0, id: "c0", seconds: 1, fitness: 1 },
      { candidate: 3, id: "c3", seconds: 40, fitness: 1.1 },
      { candidate: 7, id: "c7", seconds: 90, fitness: 1.25 },
    ],
    search: {
      candidates: 12,
      evaluated: 11,
      passed: 9,
      duplicates: 1,
      proposalFailures: 0,
      failedAt: { build: 2 },
      seconds: 240,
      stoppedBy: "candidates",
      budget: { candidates: 12, seconds: 900, usd: 5 },
    },
    usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, usd: 0 },
    device: {
      gpu: "NVIDIA H100 80GB HBM3",
      driver: "580.159.04",
      cuda: "13.0",
      torch: "2.11.0",
      python: "3.12.3",
      evokernel: "0.1.0",
    },
  };
  return { ...resultSchema.parse(input), ...overrides };
}

export function review(tasks: TaskReview[], extra: Partial<ReviewResult> = {}): ReviewResult {
  return {
    schema: 1,
    kind: "review",
    job: {
      schema: 1,
      id: "review-42-1111111",
      kind: "review",
      repo: { owner: "acme", name: "kernels" },
      sha: HEAD,
      baseSha: BASE,
      pr: 42,
      tasks: tasks.map((task) => task.task.path),
    },
    threshold: 3,
    tasks,
    device: {
      gpu: "NVIDIA H100 80GB HBM3",
      driver: "580.159.04",
      cuda: "13.0",
      torch: "2.11.0",
      python: "3.12.3",
      evokernel: "0.1.0",
    },
    startedAt: "2026-11-23T15:00:00.000Z",
    finishedAt: "2026-11-23T15:05:00.000Z",
    ...extra,
  };
}
