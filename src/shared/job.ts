// A job: what the app asks a GPU runner to do, bound to one head SHA. The app builds it, the
// workflow passes it through `workflow_dispatch` (one input, `spec`), and `evokernel job
// --spec` runs it. Both sides parse it with this schema: the runner trusts nothing it did
// not validate, and neither does the app when it reads a result back.
import { z } from "zod";
import { thresholdRuleSchema } from "./thresholds.js";

/** A full object name: SHA-1 (40 hex digits) or SHA-256 (64). */
const sha = z
  .string()
  .regex(/^[0-9a-f]{40}(?:[0-9a-f]{24})?$/, { message: "a full commit SHA (40 hex digits)" });

/** A path inside the repository: relative, forward slashes, never climbing out of it. */
export const repoPathSchema = z
  .string()
  .min(1)
  .refine(
    (path) =>
      !path.startsWith("/") &&
      !path.includes("\\") &&
      !path.split("/").some((part) => part === ".."),
    { message: "a path relative to the repository root, without .. or backslashes" },
  );

export const jobBudgetSchema = z
  .object({
    candidates: z.number().int().min(0),
    minutes: z.number().min(0),
    usd: z.number().min(0),
  })
  .strict();
export type JobBudget = z.infer<typeof jobBudgetSchema>;

export const jobKindSchema = z.enum(["review", "optimize", "verify", "bench"]);
export type JobKind = z.infer<typeof jobKindSchema>;

export const jobSpecSchema = z
  .object({
    schema: z.literal(1),
    /** Unique per dispatch: the app finds the run and its artifact by it. */
    id: z.string().min(1).max(200),
    /**
     * review: verify head, time it beside base (with `baseSha`), optimize head when the
     * budget allows (`optimize: true`); optimize: verify, time, and search; verify: verify
     * head only; bench: verify and time head (beside base when `baseSha` is given).
     */
    kind: jobKindSchema,
    repo: z.object({ owner: z.string().min(1), name: z.string().min(1) }).strict(),
    /** The head commit the job is bound to: the workflow checks out exactly this. */
    sha,
    baseSha: sha.optional(),
    pr: z.number().int().positive().optional(),
    /**
     * Task paths relative to the repository root. Empty with `baseSha`: the job reviews
     * every task under `roots` whose files changed between baseSha and sha.
     */
    tasks: z.array(repoPathSchema),
    /** Where tasks live (the config's `tasks`), for a job that finds the changed ones. */
    roots: z.array(z.string().min(1)).optional(),
    /** The config's `paths`, for a job that finds the changed tasks. */
    paths: z.array(z.string().min(1)).optional(),
    /** Also search for a faster head kernel (review jobs; optimize jobs always do). */
    optimize: z.boolean().optional(),
    budget: jobBudgetSchema.optional(),
    proposer: z.enum(["auto", "llm", "tuner"]).optional(),
    model: z.string().min(1).optional(),
    /** Seed of the search's random choices, to reproduce a run (default: random). */
    seed: z.number().int().min(0).optional(),
    /** Percent beyond the noise that counts as a regression (default 3). */
    regressionThreshold: z.number().min(0).optional(),
    /** The config's `thresholds`: rules per task and configuration (src/shared/thresholds.ts). */
    thresholds: z.array(thresholdRuleSchema).optional(),
    /**
     * The config's `runner`: the labels of the self-hosted GPU runners the job runs on (the
     * workflow's `runs-on: ${{ fromJSON(inputs.spec).runner }}`).
     */
    runner: z.array(z.string().min(1).max(100)).min(1).max(20).optional(),
    /** The GitHub login whose comment or push asked for the job. */
    requestedBy: z.string().min(1).optional(),
  })
  .strict();
export type JobSpec = z.infer<typeof jobSpecSchema>;

/**
 * Whether the job runs the LLM proposer, as the runner decides (runner/src/jobs/run-job.ts):
 * it searches (an optimize job, a review with `optimize`) with a proposer other than the
 * tuner (`auto` asks the LLM where a key is given). Only such a job gets the LLM's key.
 */
export function jobUsesLlm(spec: Pick<JobSpec, "kind" | "optimize" | "proposer">): boolean {
  const searches = spec.kind === "optimize" || (spec.kind === "review" && spec.optimize === true);
  return searches && (spec.proposer ?? "auto") !== "tuner";
}

/** workflow_dispatch allows 65,535 characters of inputs in all. */
export const MAX_INPUTS_CHARS = 65_535;

export type JobInputs = { spec: string };

/** The workflow_dispatch inputs for a job: one input, `spec`, holding the JSON. */
export function encodeJobInputs(spec: JobSpec): JobInputs {
  const checked = jobSpecSchema.parse(spec);
  const text = JSON.stringify(checked);
  if (text.length > MAX_INPUTS_CHARS) {
    throw new Error(
      `the job spec is ${text.length} characters, over workflow_dispatch's ${MAX_INPUTS_CHARS}: ` +
        "name fewer tasks per job (split it into several)",
    );
  }
  return { spec: text };
}

export type JobDecode = { ok: true; spec: JobSpec } | { ok: false; errors: string[] };

/** Reads the inputs back (the Action's `spec` input, or a spec file's text), validated. */
export function decodeJobInputs(inputs: unknown): JobDecode {
  const text =
    typeof inputs === "string"
      ? inputs
      : typeof inputs === "object" && inputs !== null && "spec" in inputs
        ? inputs.spec
        : undefined;
  if (typeof text !== "string") {
    return { ok: false, errors: ['no job spec: pass { "spec": "<the job JSON>" }'] };
  }
  if (text.length > MAX_INPUTS_CHARS) {
    return { ok: false, errors: [`the spec is over ${MAX_INPUTS_CHARS} characters`] };
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    return { ok: false, errors: [`the spec is not JSON: ${(error as Error).message}`] };
  }
  const parsed = jobSpecSchema.safeParse(data);
  if (parsed.success) return { ok: true, spec: parsed.data };
  return { ok: false, errors: parsed.error.issues.map(describeIssue) };
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const where = ["spec", ...issue.path.map(String)].join(".");
  if (issue.code === "unrecognized_keys") {
    return `${where}: unknown key${issue.keys.length === 1 ? "" : "s"} ${issue.keys.join(", ")}: a job spec of schema 1 has none such; build it with jobSpecSchema`;
  }
  return `${where}: ${issue.message}`;
}
