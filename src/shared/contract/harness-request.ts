// The harness's requests and the fork server's protocol (docs/DESIGN.md, "The fork server"),
// declared once. A harness command is one typed request (harnessCommandSchema): the runner
// builds these (runner/src/harness/client.ts) and sends them either as one line to the fork
// server or as one JSON argument of `python -m evokernel_harness request`; the harness turns
// one into its command's dataclass (evokernel_harness/command_request.py), the one its command
// line's flags give, so a request's fields are the command line's options, camelCased (--baseline-artifact →
// baselineArtifact, --define → defines, --nvcc-flag → nvccFlags). Defaults are the harness's.
// The harness's tests hold server.py and the command line to the generated JSON Schemas.
import { z } from "zod";
import { staticRecordSchema } from "./records.js";

const path = z.string();
/**
 * A native task's task.json as the runner read and checked it (runner/src/workspace/target.ts):
 * the harness takes it instead of reading the file again, so a run reads it once.
 */
const taskSpec = { taskSpec: z.record(z.string(), z.unknown()).optional() };
/** Where the command writes its JSON record (the harness prints it when absent). */
const out = { out: path.optional() };
/** A candidate's build: its artifact (from `build`), or how to build it. */
const built = {
  artifact: path.optional(),
  cache: path.optional(),
  /** NAME=VALUE, each passed to the compiler as -D. */
  defines: z.array(z.string()).optional(),
  /** Precision-keeping nvcc flags, each one argument (e.g. "-maxrregcount=64"). */
  nvccFlags: z.array(z.string()).optional(),
  seed: z.number().int().optional(),
  /**
   * Only these configurations, by name (held-out ones run too): each gets the inputs the seed
   * gives it in a run of every configuration (a verdict's reproduction).
   */
  config: z.array(z.string()).optional(),
};
const checked = {
  /**
   * This candidate's static-check record (from `static`, as the runner ran it): the harness
   * carries its findings into the record instead of checking the source again.
   */
  static: staticRecordSchema.optional(),
  /** Include the held-out configurations (the final verification). */
  heldout: z.boolean().optional(),
  device: z.enum(["cuda", "cpu"]).optional(),
  trials: z.number().int().optional(),
};
const timed = {
  baseline: path.optional(),
  baselineArtifact: path.optional(),
  noBaseline: z.boolean().optional(),
  /** Skip the torch.compile baseline. */
  noCompile: z.boolean().optional(),
  /** The file caching this GPU's measured ceilings. */
  ceilings: path.optional(),
  /** Seconds of timing per configuration. */
  budget: z.number().optional(),
  /** Profile the reference on every configuration, never reading the probe cache. */
  noProbeCache: z.boolean().optional(),
  /**
   * The search's screen only: configuration → the leader's least favourable speedup there; a
   * candidate that can no longer reach it over every configuration stops (`raceCeilings`).
   */
  race: z.record(z.string(), z.number()).optional(),
  /**
   * The search's screen only: configuration → the kernel to beat's time there over the roofline
   * floor, from the leader's run. A configuration not yet timed counts at the most a kernel
   * could gain there; one with no ceiling keeps every candidate timed to the end.
   */
  raceCeilings: z.record(z.string(), z.number().positive()).optional(),
};

/**
 * The stages of `evaluate`, the search's cascade, in the order the harness runs them; it stops
 * after the first record that is not ok. Each has its record's file (`<stage>Out`).
 */
export const EVALUATE_STAGES = ["quick", "verify", "bench"] as const;
export const evaluateStageSchema = z.enum(EVALUATE_STAGES);
export type EvaluateStage = z.infer<typeof evaluateStageSchema>;

/** One harness command and its options. */
export const harnessCommandSchema = z.discriminatedUnion("command", [
  z.strictObject({ command: z.literal("device"), ...out }),
  z.strictObject({
    command: z.literal("static"),
    ...out,
    candidate: path,
    task: path.optional(),
    ...taskSpec,
    /** Flag only the reference's own ops (CPU runs, where a py candidate is plain torch). */
    relaxed: z.boolean().optional(),
    /** The task's reference ops (from static-context), instead of task. */
    referenceOps: z.array(z.string()).optional(),
    /** With referenceOps: the task's library rule. */
    libraries: z.enum(["allow", "deny"]).optional(),
  }),
  z.strictObject({ command: z.literal("static-context"), ...out, task: path, ...taskSpec }),
  z.strictObject({
    command: z.literal("build"),
    ...out,
    candidate: path,
    cache: path.optional(),
    defines: built.defines,
    nvccFlags: built.nvccFlags,
    arch: z.string().optional(),
    /** Seconds (the harness's default: 120 for evk, 900 for torch extensions). */
    timeout: z.number().int().optional(),
    /**
     * The task it is built for: a KernelBench ModelNew that builds its extension when
     * constructed is constructed in the build, off the GPU lock (issue 33.7).
     */
    task: path.optional(),
    ...taskSpec,
  }),
  z.strictObject({
    command: z.literal("inspect"),
    ...out,
    task: path,
    ...taskSpec,
    /** Run the reference (CPU) and the degenerate-task check. */
    probe: z.boolean().optional(),
  }),
  z.strictObject({
    command: z.literal("verify"),
    ...out,
    task: path,
    ...taskSpec,
    candidate: path.optional(),
    ...built,
    ...checked,
    /** The smallest visible configuration only (a cheap first gate). */
    quick: z.boolean().optional(),
  }),
  z.strictObject({
    command: z.literal("bench"),
    ...out,
    task: path,
    ...taskSpec,
    candidate: path.optional(),
    ...built,
    ...timed,
    /** Time as the search's screen does (beside the baseline only, short head start). */
    screen: z.boolean().optional(),
    /**
     * The reference alone (with noBaseline): torch.compile compiled before the GPU's lock is
     * taken, then eager and torch.compile timed as a judged bench's judge times them.
     */
    warmCompile: z.boolean().optional(),
  }),
  // three records, one file each: no out
  z.strictObject({
    command: z.literal("evaluate"),
    task: path,
    ...taskSpec,
    candidate: path,
    ...built,
    ...checked,
    ...timed,
    quickOut: path,
    verifyOut: path,
    benchOut: path,
  }),
  z.strictObject({ command: z.literal("ceilings"), ...out }),
]);
export type HarnessCommand = z.infer<typeof harnessCommandSchema>;
export type HarnessCommandName = HarnessCommand["command"];

/** One harness command to run in a forked child, and its deadline. */
export const harnessRequestSchema = z.strictObject({
  id: z.string(),
  request: harnessCommandSchema,
  timeoutS: z.number().nonnegative(),
});
export type HarnessRequest = z.infer<typeof harnessRequestSchema>;

/** How the child ended. */
export const harnessResponseSchema = z.object({
  id: z.string(),
  exit: z.number().int().nullable(),
  signal: z.union([z.string(), z.number()]).nullable(),
  seconds: z.number(),
  timedOut: z.boolean(),
  memKilled: z.boolean(),
  log: z.string(),
});
export type HarnessResponse = z.infer<typeof harnessResponseSchema>;

// Sent before the answer: the server waits for the GPU's machine-wide lock (another process's
// GPU work) before it starts the child, and says when the request's deadline starts.
export const harnessStartedSchema = z.object({ id: z.string(), started: z.literal(true) });
export const harnessWaitingSchema = z.object({ id: z.string(), waiting: z.literal(true) });
