// A job's optimize step: optimize's pipeline (runner/src/pipeline/optimize.ts) on the head
// kernel, called as a function with the settings a user's `evokernel optimize` gets by
// default, so a job searches exactly as a user's run does. Its archive and outputs stay in
// the job's own folder.
import { join } from "node:path";
import type { JobBudget } from "#shared/job.js";
import { resultSchema, type Result } from "#shared/result.js";
import { DEFAULTS } from "../evolve/engine.js";
import { runOptimize } from "../pipeline/optimize.js";
import type { Target } from "../workspace/target.js";

export type OptimizeRequest = {
  /** The task in the head tree: its absolute path, or as the job loaded it (read once). */
  task: string | Target;
  /** Folder for the archive and result. */
  work: string;
  budget: JobBudget;
  /** auto: the pipeline's own default (llm with an API key, else tuner). */
  proposer: "auto" | "llm" | "tuner";
  model?: string | undefined;
  seed?: number | undefined;
  /** Progress lines. */
  say: (line: string) => void;
};

export type OptimizeOutcome = { ok: true; result: Result } | { ok: false; message: string };

/** The seam a job searches through; tests put a stand-in here. */
export type Optimizer = (request: OptimizeRequest) => Promise<OptimizeOutcome>;

export const optimizeHead: Optimizer = async function optimizeHead(request) {
  try {
    const run = await runOptimize({
      task: request.task,
      cwd: request.work,
      archive: join(request.work, "archive.jsonl"),
      out: join(request.work, "out"),
      budget: {
        candidates: request.budget.candidates,
        seconds: request.budget.minutes * 60,
        usd: request.budget.usd,
      },
      population: DEFAULTS.populationSize,
      proposer: request.proposer === "auto" ? undefined : request.proposer,
      seed: request.seed,
      // The tuner asks no model: a model named for the llm does not pass to it.
      model: request.proposer === "tuner" ? undefined : request.model,
      // its winner is suggested as a change to the kernel file, which cannot carry nvcc flags
      nvccFlags: false,
      env: process.env,
      say: (text) => {
        for (const line of text.split("\n")) if (line.trim() !== "") request.say(line);
      },
    });
    if (run.interrupted) return { ok: false, message: "optimize was interrupted" };
    // What the app reads back: held to the artifact's schema here, as it is there.
    const parsed = resultSchema.safeParse(run.result);
    if (!parsed.success) return { ok: false, message: "optimize made a result we cannot read" };
    return { ok: true, result: parsed.data };
  } catch (error) {
    return { ok: false, message: error instanceof Error ? error.message : String(error) };
  }
};
