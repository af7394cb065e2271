// The records the harness writes (docs/DESIGN.md, "Records"), declared once as zod schemas:
// the runner parses every record through them (runner/src/harness/records.ts, parsed, never
// cast) and the harness's tests validate its records against the JSON Schemas generated from
// them (runner/harness/evokernel_harness/contract/, `npm run contract`).
import { z } from "zod";
import { candidateFormatSchema, taskFormatSchema } from "./formats.js";

const ms = z.number().nonnegative();

export const deviceSchema = z.object({
  name: z.string(),
  backend: z.union([z.literal("cuda"), z.literal("cpu")]),
  driver: z.string().nullable(),
  torch: z.string(),
  cuda: z.string().nullable(),
  sms: z.number().int().nullable(),
  l2Bytes: z.number().int().nullable(),
  smClockMHz: z.number().nullable(),
  python: z.string(),
});
export type Device = z.infer<typeof deviceSchema>;

export const taskInfoSchema = z.object({
  schema: z.literal(1),
  kind: z.literal("task"),
  ok: z.boolean(),
  error: z.string().nullable(),
  name: z.string(),
  format: taskFormatSchema,
  path: z.string(),
  backward: z.boolean(),
  baseline: z.string().nullable(),
  configs: z.array(
    z.object({
      name: z.string(),
      heldout: z.boolean(),
      derived: z.boolean(),
      dims: z.record(z.string(), z.number()),
      init: z.string(),
      inputs: z.array(
        z.object({ name: z.string(), shape: z.array(z.number().int()), dtype: z.string() }),
      ),
    }),
  ),
  notes: z.array(z.string()),
  probe: z
    .object({ ok: z.boolean(), reason: z.string().nullable(), message: z.string() })
    .nullable(),
});
export type TaskInfo = z.infer<typeof taskInfoSchema>;

export const findingSchema = z.object({
  code: z.string(),
  hack: z.number().int().nullable(),
  line: z.number().int(),
  text: z.string(),
  message: z.string(),
  /** Only "reject" findings fail the check; "warn" ones are reported. */
  severity: z.union([z.literal("reject"), z.literal("warn")]).default("reject"),
});
export type Finding = z.infer<typeof findingSchema>;

export const staticRecordSchema = z.object({
  schema: z.literal(1),
  kind: z.literal("static"),
  ok: z.boolean(),
  format: z.string(),
  findings: z.array(findingSchema),
});
export type StaticRecord = z.infer<typeof staticRecordSchema>;

/** What the static check needs of a task, asked once per search (`static-context`). */
export const staticContextSchema = z.object({
  schema: z.literal(1),
  kind: z.literal("static-context"),
  task: z.string(),
  referenceOps: z.array(z.string()),
  libraries: z.enum(["allow", "deny"]),
});
export type StaticContext = z.infer<typeof staticContextSchema>;

export const buildRecordSchema = z.object({
  schema: z.literal(1),
  kind: z.literal("build"),
  ok: z.boolean(),
  format: candidateFormatSchema,
  artifact: z.string().nullable(),
  cached: z.boolean(),
  seconds: z.number().nonnegative(),
  hash: z.string(),
  log: z.string(),
});
export type BuildRecord = z.infer<typeof buildRecordSchema>;

export const mismatchSchema = z.object({
  config: z.string(),
  trial: z.number().int(),
  output: z.string(),
  index: z.array(z.number().int()),
  // null where the value is NaN or Inf (JSON has neither)
  got: z.number().nullable(),
  expected: z.number().nullable(),
  maxAbs: z.number().nullable(),
  maxRel: z.number().nullable(),
  normRel: z.number().nullable(),
  nonFinite: z.number().int(),
  ok: z.boolean(),
  // result-caching only: the kinds of input the same-buffer refill wrote ("activations" and
  // "parameters" for a module's task, "inputs" for a function's) and those the output ignored
  stale: z.object({ refilled: z.array(z.string()), ignored: z.array(z.string()) }).optional(),
});
export type Mismatch = z.infer<typeof mismatchSchema>;

export const verifyStatusSchema = z.union([
  z.literal("passed"),
  z.literal("rejected"),
  z.literal("compile-error"),
  z.literal("timeout"),
  z.literal("crash"),
  z.literal("error"),
]);
export type VerifyStatus = z.infer<typeof verifyStatusSchema>;

export const verifyRecordSchema = z
  .object({
    schema: z.literal(1),
    kind: z.literal("verify"),
    task: z.string(),
    candidate: z.string(),
    format: z.string(),
    ok: z.boolean(),
    status: verifyStatusSchema,
    reason: z.string().nullable(),
    hack: z.number().int().nullable(),
    message: z.string(),
    mismatch: mismatchSchema.nullable(),
    configs: z.array(
      z.object({
        name: z.string(),
        heldout: z.boolean(),
        derived: z.boolean(),
        ok: z.boolean(),
        trials: z.number().int(),
        maxAbs: z.number(),
        normRel: z.number(),
        reason: z.string().nullable(),
      }),
    ),
    checks: z.array(z.object({ name: z.string(), ok: z.boolean(), detail: z.string() })),
    warnings: z.array(z.string()),
    seconds: z.object({ load: z.number(), verify: z.number() }),
    /**
     * Seconds in each part of the run (start, load, inputs, reference, candidate, checks,
     * profiler: the own-kernel check); empty in records of runs that never got that far.
     */
    phases: z.record(z.string(), z.number().nonnegative()).default({}),
    device: deviceSchema,
    /** Reproduces the inputs; null only in a record made here for a run that never reported. */
    seed: z.number().int().nullable(),
    /**
     * Shares of the candidate's GPU time (summed over the visible configurations) in its own
     * kernels, vendor-library kernels (cuBLAS …), PyTorch's kernels and fills/copies; null when
     * not profiled (evk candidates, no GPU, a rejection before the profile).
     */
    kernelShares: z
      .object({ own: z.number(), library: z.number(), torch: z.number(), harmless: z.number() })
      .nullable()
      .default(null),
    libraryKernels: z.array(z.string()).default([]),
  })
  // A pass has to be a pass everywhere: a record that says both is not one we can trust.
  .refine((record) => record.ok === (record.status === "passed"), {
    message: "ok must be true exactly when status is passed",
    path: ["ok"],
  });
export type VerifyRecord = z.infer<typeof verifyRecordSchema>;

export const statSchema = z.object({
  medianMs: ms,
  p20Ms: ms,
  p80Ms: ms,
  minMs: ms,
  meanMs: ms,
  n: z.number().int().nonnegative(),
});
export type Stat = z.infer<typeof statSchema>;

export const ceilingsSchema = z.object({
  bandwidthGBs: z.number().nonnegative(),
  fp32Tflops: z.number().nonnegative(),
  bf16Tflops: z.number().nonnegative(),
  /** fp32-accurate products on the tensor cores (3xTF32); the fp32 floor uses the faster rate. */
  tf32x3Tflops: z.number().nonnegative().optional(),
  measuredAt: z.string(),
  device: z.string(),
});
export type Ceilings = z.infer<typeof ceilingsSchema>;

export const benchConfigSchema = z.object({
  name: z.string(),
  dims: z.record(z.string(), z.number()),
  bytes: z.number().nonnegative(),
  flops: z.number().nonnegative(),
  floorMs: ms,
  /** Null where eager was not timed: the search's screen times the candidate and baseline only. */
  eager: statSchema.nullable(),
  compile: statSchema.nullable(),
  baseline: statSchema.nullable(),
  candidate: statSchema.nullable(),
  reason: z.string().nullable(),
  /** A configuration the harness derived (KernelBench), not one the task declares. */
  derived: z.boolean().default(false),
  /** The reference's kernels run under 20 µs a call: timed, marked, out of the headline. */
  launchBound: z.boolean().default(false),
});
export type BenchConfig = z.infer<typeof benchConfigSchema>;

export const profileSchema = z.object({
  config: z.string(),
  kernels: z.array(
    z.object({
      name: z.string(),
      us: z.number().nonnegative(),
      calls: z.number().int().nonnegative(),
    }),
  ),
});
export type Profile = z.infer<typeof profileSchema>;

export const benchRecordSchema = z.object({
  schema: z.literal(1),
  kind: z.literal("bench"),
  task: z.string(),
  ok: z.boolean(),
  reason: z.string().nullable(),
  message: z.string(),
  device: deviceSchema,
  /** Null when nothing was timed (no GPU, a run that never finished). */
  ceilings: ceilingsSchema.nullable(),
  /** The inputs' seed (reproduces them); null in a record made here for a run that never reported. */
  seed: z.number().int().nullable().default(null),
  configs: z.array(benchConfigSchema),
  /** What a reader must know: launch-bound configurations, derived ones not timed. */
  notes: z.array(z.string()).default([]),
  /** Where the candidate spends its GPU time (one call, first configuration); null: no profiler. */
  profile: profileSchema.nullable().default(null),
  /**
   * Seconds in each part of the bench (load, start, probe: the reference's launched-kernel
   * profile, inputs, cost: the roofline's bytes and flops, compile, timing, checks, profiler).
   */
  phases: z.record(z.string(), z.number().nonnegative()).default({}),
  /**
   * The reference probes read from the harness's cache (hits) and measured (misses), and the
   * same for the configurations' roofline costs; null: no cache.
   */
  probeCache: z
    .object({
      hits: z.number().int().nonnegative(),
      misses: z.number().int().nonnegative(),
      costHits: z.number().int().nonnegative().default(0),
      costMisses: z.number().int().nonnegative().default(0),
    })
    .nullable()
    .default(null),
  /**
   * The search's screen raced the candidate out: after `config` (the configurations in
   * `timed` were timed, the rest not), the most it could still reach over every configuration
   * (`speedupUpper`: geometric mean of baseline p80 / candidate p20 where timed, and the most
   * a kernel could gain where not) was under the leader's least favourable speedup over
   * them all (`leaderLower`). Null: not raced (every configuration timed).
   */
  race: z
    .object({
      config: z.string(),
      timed: z.array(z.string()),
      speedupUpper: z.number().nonnegative(),
      leaderLower: z.number().positive(),
      message: z.string(),
    })
    .nullable()
    .default(null),
  seconds: z.number().nonnegative(),
});
export type BenchRecord = z.infer<typeof benchRecordSchema>;

export const deviceRecordSchema = z.object({
  schema: z.literal(1),
  kind: z.literal("device"),
  cuda: z.boolean(),
  device: deviceSchema,
});
export type DeviceRecord = z.infer<typeof deviceRecordSchema>;
