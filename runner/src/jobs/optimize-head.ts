// A job's optimize step: `evokernel optimize` on the head kernel, called as the command
// itself (flags in, result JSON out) so a job searches exactly as a user's run does. Its
// archive and outputs stay in the job's own folder.
import { join } from "node:path";
import { resultSchema, type Result } from "../../../src/shared/result.js";
import type { JobBudget } from "../../../src/shared/job.js";
import type { Io } from "../commands/command.js";
import { optimizeCommand } from "../commands/optimize.js";

export type OptimizeRequest = {
  /** The task in the head tree (absolute). */
  task: string;
  /** Folder for the archive and result. */
  work: string;
  budget: JobBudget;
  /** auto: the command's own default (llm with an API key, else tuner). */
  proposer: "auto" | "llm" | "tuner";
  model?: string | undefined;
  seed?: number | undefined;
  /** Progress lines (stderr of the command). */
  say: (line: string) => void;
};

export type OptimizeOutcome = { ok: true; result: Result } | { ok: false; message: string };

/** The seam a job searches through; tests put a stand-in here. */
export type Optimizer = (request: OptimizeRequest) => Promise<OptimizeOutcome>;

export const runOptimizeCommand: Optimizer = async function optimizeHead(request) {
  let stdout = "";
  let pending = "";
  const io: Io = {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      pending += text;
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) if (line.trim() !== "") request.say(line);
    },
    stderrIsTTY: false,
    cwd: request.work,
  };
  const values: Record<string, string | boolean> = {
    json: true,
    archive: join(request.work, "archive.jsonl"),
    out: join(request.work, "out"),
    candidates: String(request.budget.candidates),
    minutes: String(request.budget.minutes),
    usd: String(request.budget.usd),
  };
  if (request.proposer !== "auto") values["proposer"] = request.proposer;
  if (request.seed !== undefined) values["seed"] = String(request.seed);
  if (request.model !== undefined && request.proposer !== "tuner") values["model"] = request.model;
  try {
    const code = await optimizeCommand.run({ values, positionals: [request.task] }, io);
    if (code !== 0 && code !== 1) return { ok: false, message: `optimize exited ${code}` };
  } catch (error) {
    return { ok: false, message: error instanceof Error ? error.message : String(error) };
  }
  let data: unknown;
  try {
    data = JSON.parse(stdout);
  } catch {
    return { ok: false, message: "optimize printed no result" };
  }
  const parsed = resultSchema.safeParse(data);
  if (!parsed.success) return { ok: false, message: "optimize printed a result we cannot read" };
  return { ok: true, result: parsed.data };
};
