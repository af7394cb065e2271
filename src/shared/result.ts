// The result of `evokernel optimize`: one schema for the runner that writes it and the app
// that posts it. Times in milliseconds; speedups are baseline (or eager, torch.compile) time
// over the best kernel's time, so above 1 is faster.
import { z } from "zod";
import { taskFormatSchema } from "./contract/formats.js";

const ms = z.number().nonnegative();
const ratio = z.number().positive();

/** A time as the harness reports it: the median and the 20th and 80th percentiles. */
export const spreadSchema = z.object({ medianMs: ms, p20Ms: ms, p80Ms: ms });
export type Spread = z.infer<typeof spreadSchema>;

export const evoConfigSchema = z.enum(["free", "insight", "full"]);

export const usageSchema = z.object({
  inputTokens: z.number().int().nonnegative(),
  outputTokens: z.number().int().nonnegative(),
  cacheReadTokens: z.number().int().nonnegative(),
  cacheWriteTokens: z.number().int().nonnegative(),
  usd: z.number().nonnegative(),
});

export const resultConfigSchema = z.object({
  name: z.string(),
  floorMs: ms,
  /** The reference runs under 20 µs a call: timed, but out of the headline speedups. */
  launchBound: z.boolean().default(false),
  baseline: spreadSchema,
  /** Null when no candidate got as far as the final timing. */
  best: spreadSchema.nullable(),
  eager: spreadSchema,
  compile: spreadSchema.nullable(),
  speedup: z.object({
    baseline: ratio.nullable(),
    eager: ratio.nullable(),
    compile: ratio.nullable(),
  }),
  /** floor / time × 100: how close to the physical limit (roofline). */
  percentOfFloor: z.object({ baseline: z.number().nonnegative(), best: z.number().nullable() }),
  /** The best kernel's p80 is under the baseline's p20 here. */
  clearlyFaster: z.boolean(),
  /** The best kernel's p20 is above the baseline's p80 here (never so for a win). */
  clearlySlower: z.boolean().default(false),
});
export type ResultConfig = z.infer<typeof resultConfigSchema>;

export const stoppedBySchema = z.enum([
  "candidates",
  "seconds",
  "usd",
  "interrupted",
  /** The proposer had nothing more to try (the tuner's whole space, or no knob at all). */
  "proposer",
]);
export type StoppedBy = z.infer<typeof stoppedBySchema>;

export const resultSchema = z.object({
  schema: z.literal(1),
  kind: z.literal("optimize"),
  task: z.object({
    name: z.string(),
    format: taskFormatSchema,
    path: z.string(),
  }),
  run: z.object({
    config: evoConfigSchema,
    proposer: z.string(),
    model: z.string().nullable(),
    seed: z.number().int(),
    populationSize: z.number().int().positive(),
    archive: z.string(),
    startedAt: z.string(),
    finishedAt: z.string(),
  }),
  /**
   * A win: the best kernel passed every configuration, held-out ones included, and is faster
   * than the baseline beyond the measured noise (`speedup.lowerBound` > 1).
   */
  win: z.boolean(),
  /** One sentence: why it is a win, or why not. */
  verdict: z.string(),
  speedup: z.object({
    /** Geometric mean over configurations of baseline median / best median. */
    baseline: ratio.nullable(),
    /** The same from baseline p20 / best p80: the speedup the noise cannot explain away. */
    lowerBound: ratio.nullable(),
    eager: ratio.nullable(),
    compile: ratio.nullable(),
  }),
  configs: z.array(resultConfigSchema),
  verification: z.object({
    ok: z.boolean(),
    status: z.string(),
    reason: z.string().nullable(),
    message: z.string(),
    configs: z.array(
      z.object({
        name: z.string(),
        heldout: z.boolean(),
        ok: z.boolean(),
        reason: z.string().nullable(),
      }),
    ),
    /** Candidates re-verified before this one passed (each failed a held-out configuration, or timing). */
    rejected: z.array(z.object({ id: z.string(), reason: z.string().nullable() })),
  }),
  best: z
    .object({
      id: z.string(),
      hash: z.string(),
      proposer: z.string(),
      parents: z.array(z.string()),
      insight: z.string(),
      defines: z.record(z.string(), z.string()),
      /**
       * nvcc flags the winner was built and timed with (precision-keeping ones only). They
       * cannot be written into the source: whoever builds the kernel must pass them.
       */
      flags: z.array(z.string()).default([]),
      /** The source as it would be committed (the tuner's defines written into it). */
      source: z.string(),
      file: z.string(),
      /** Unified diff against the original kernel. */
      diff: z.string(),
    })
    .nullable(),
  /** Each time the best fitness (search timing, medians) improved. */
  history: z.array(
    z.object({
      candidate: z.number().int().nonnegative(),
      id: z.string(),
      seconds: z.number().nonnegative(),
      fitness: z.number(),
    }),
  ),
  search: z.object({
    candidates: z.number().int().nonnegative(),
    evaluated: z.number().int().nonnegative(),
    passed: z.number().int().nonnegative(),
    duplicates: z.number().int().nonnegative(),
    proposalFailures: z.number().int().nonnegative(),
    /** Failed candidates by the stage that ended them. */
    failedAt: z.record(z.string(), z.number().int().nonnegative()),
    seconds: z.number().nonnegative(),
    stoppedBy: stoppedBySchema,
    budget: z.object({
      candidates: z.number().int().nonnegative(),
      seconds: z.number().nonnegative(),
      usd: z.number().nonnegative(),
    }),
    /**
     * A search over several GPUs (--gpus): per lane, its GPU, the candidates it screened and
     * its seconds of GPU work, and why it was given up where its fork server died at every
     * start (its work went to the other lanes); absent on one GPU.
     */
    lanes: z
      .array(
        z.object({
          gpu: z.string(),
          evaluated: z.number().int().nonnegative(),
          busySeconds: z.number().nonnegative(),
          stopped: z.string().max(1000).optional(),
        }),
      )
      .optional(),
  }),
  usage: usageSchema,
  device: z.object({
    gpu: z.string(),
    driver: z.string().nullable(),
    cuda: z.string().nullable(),
    torch: z.string(),
    python: z.string(),
    evokernel: z.string(),
  }),
});
export type Result = z.infer<typeof resultSchema>;
