// The repository's `.github/evokernel.yml`: one zod schema from which the defaults, the
// committed JSON Schema (schema/evokernel-config.schema.json) and the README's option table
// are produced (scripts/write-config-docs.mjs). The app reads the file from the default
// branch, so a pull request cannot change what runs on it; `evokernel review` reads it from
// the base it compares against.
import { z } from "zod";
import { parseCron } from "./cron.js";
import { globProblem } from "./glob.js";
import { thresholdRuleSchema } from "./thresholds.js";

const PROPOSERS = ["auto", "llm", "tuner"] as const;

/** Five cron fields (minute hour day month weekday), as GitHub's `schedule` takes them. */
const CRON = /^\s*(\S+\s+){4}\S+\s*$/;

const budgetSchema = z
  .object({
    candidates: z
      .number()
      .int()
      .min(0)
      .default(30)
      .describe("stop after this many proposed kernels"),
    minutes: z.number().min(0).default(15).describe("stop after this many minutes of search"),
    usd: z.number().min(0).default(5).describe("stop after this many dollars of LLM proposals"),
  })
  .strict();

/** Globs in GitHub's `paths:` dialect (shared/glob.ts); `!negations` only where a filter reads them. */
function globList(options: { negation: boolean }) {
  return z
    .array(
      z
        .string()
        .min(1)
        .superRefine((pattern, context) => {
          const problem = globProblem(pattern, options);
          if (problem !== null) context.addIssue({ code: "custom", message: problem });
        }),
    )
    .min(1)
    .refine((patterns) => patterns.length === 0 || patterns.some((p) => !p.startsWith("!")), {
      message: "a list of only negations (!) matches nothing: start with the files to include",
    });
}

export const configSchema = z
  .object({
    tasks: globList({ negation: false })
      .default(["kernels"])
      .describe("folders or globs (from the repository root) where kernel tasks live"),
    paths: globList({ negation: true })
      .optional()
      .describe(
        "globs (GitHub's `paths:` dialect: `*`, `**`, `[ab]`, `{a,b}`, a later `!glob` takes back; " +
          "no `?` or `+`) of the files whose change marks a kernel change; a match inside a task's " +
          "folder reviews that task, one outside every task reviews them all " +
          "(default: any file in a task's folder)",
      ),
    pullRequests: z
      .enum(["bench", "optimize", "off"])
      .default("bench")
      .describe(
        "what runs on a pull request that changes a task: bench (verify, then time base " +
          "against head), optimize (also search for a faster kernel and suggest it) or off",
      ),
    budget: budgetSchema
      .default({ candidates: 30, minutes: 15, usd: 5 })
      .describe("limits of one optimize run"),
    proposer: z
      .enum(PROPOSERS)
      .default("auto")
      .describe("who proposes kernels: llm, tuner, or auto (llm when an API key is set)"),
    model: z.string().min(1).optional().describe("the model the llm proposer asks"),
    regressionThreshold: z
      .number()
      .min(0)
      .default(3)
      .describe(
        "percent: a kernel slower than base beyond the noise by more than this fails the check",
      ),
    thresholds: z
      .array(thresholdRuleSchema)
      .optional()
      .describe(
        "per task and configuration: a list of rules `{ task, config?, regression?, win? }` " +
          "(task and config are paths or globs; the last rule that matches and sets a value " +
          "wins) refining `regressionThreshold` and the minimum effect for a win; used by " +
          "reviews, /optimize and the nightly alike",
      ),
    runner: z
      .union([z.string().min(1), z.array(z.string().min(1)).min(1)])
      .default(["self-hosted", "gpu"])
      .transform((labels) => (typeof labels === "string" ? [labels] : labels))
      .describe("the GPU runner label(s) the workflow runs on"),
    dispatch: z
      .enum(["actions", "local"])
      .default("actions")
      .describe(
        "actions (a workflow_dispatch on your GPU runners) or local (the app's own machine)",
      ),
    workflow: z
      .string()
      .min(1)
      .default("evokernel.yml")
      .describe("the workflow file under .github/workflows that runs jobs"),
    nightly: z
      .object({
        schedule: z
          .string()
          .regex(CRON, { message: "a cron line of five fields", abort: true })
          // The same parser the scheduler runs: a line it cannot read fails here, on the PR.
          .refine((line) => parseCron(line).ok, {
            error: (issue) => {
              const parsed = parseCron(String(issue.input));
              return parsed.ok ? "invalid" : `not a cron line (${parsed.error})`;
            },
          })
          .default("0 3 * * *")
          .describe("cron, UTC"),
        tasks: z
          .union([z.literal("all"), globList({ negation: false })])
          .default("all")
          .describe("task paths or globs, or all"),
        budget: budgetSchema.optional().describe("limits of each task's run"),
        proposer: z.enum(PROPOSERS).optional().describe("who proposes kernels at night"),
        threshold: z
          .number()
          .min(0)
          .default(3)
          .describe(
            "percent: an evolved kernel is proposed only when faster than the current one " +
              "beyond the noise by at least this much (its speedup's lower bound)",
          ),
      })
      .strict()
      .optional()
      .describe("a nightly tuning run over the tasks (off when absent)"),
  })
  .strict();

export type EvokernelConfig = z.infer<typeof configSchema>;
export type ConfigBudget = z.infer<typeof budgetSchema>;

export const DEFAULT_CONFIG: EvokernelConfig = configSchema.parse({});

export type ConfigParse = { ok: true; config: EvokernelConfig } | { ok: false; errors: string[] };

/** What to write instead, for each key path (keys of list items and records dropped). */
const HINTS: Record<string, string> = {
  "": "a mapping of options, e.g. `pullRequests: bench`",
  tasks: 'a list of folders or globs, e.g. `tasks: ["kernels"]`',
  paths: 'a list of globs, e.g. `paths: ["kernels/**/*.cu", "csrc/**/*.cuh"]`',
  pullRequests: "`bench`, `optimize` or `off`",
  budget: "a mapping, e.g. `budget: { candidates: 30, minutes: 15, usd: 5 }`",
  "budget.candidates": "a whole number ≥ 0, e.g. `candidates: 30`",
  "budget.minutes": "a number ≥ 0, e.g. `minutes: 15`",
  "budget.usd": "a number ≥ 0, e.g. `usd: 5`",
  proposer: "`auto`, `llm` or `tuner`",
  model: "a model name, e.g. `model: claude-sonnet-4-5`",
  regressionThreshold: "a percentage ≥ 0, e.g. `regressionThreshold: 3`",
  thresholds:
    'a list of rules, e.g. `thresholds: [{ task: kernels/softmax, config: "odd-*", regression: 8, win: 5 }]`',
  "thresholds.task": "a task path or glob, e.g. `task: kernels/softmax`",
  "thresholds.config": 'a configuration name or glob, e.g. `config: "odd-*"`',
  "thresholds.regression": "a percentage ≥ 0, e.g. `regression: 8`",
  "thresholds.win": "a percentage ≥ 0, e.g. `win: 5`",
  runner: 'a label or a list of labels, e.g. `runner: ["self-hosted", "gpu"]`',
  dispatch: "`actions` or `local`",
  workflow: "a file name under .github/workflows, e.g. `workflow: evokernel.yml`",
  nightly: 'a mapping, e.g. `nightly: { schedule: "0 3 * * *" }`',
  "nightly.schedule": 'five cron fields in UTC, e.g. `schedule: "0 3 * * *"`',
  "nightly.tasks": '`all` or a list of task paths, e.g. `tasks: ["kernels/softmax"]`',
  "nightly.budget": "a mapping, e.g. `budget: { candidates: 100, minutes: 60, usd: 20 }`",
  "nightly.budget.candidates": "a whole number ≥ 0",
  "nightly.budget.minutes": "a number ≥ 0",
  "nightly.budget.usd": "a number ≥ 0",
  "nightly.proposer": "`auto`, `llm` or `tuner`",
  "nightly.threshold": "a percentage ≥ 0, e.g. `threshold: 5`",
};

/**
 * Checks a parsed `.github/evokernel.yml` (an empty file is `null`: every default). Each
 * error names the key and what to write instead.
 */
export function parseConfig(raw: unknown): ConfigParse {
  const parsed = configSchema.safeParse(raw ?? {});
  if (parsed.success) return { ok: true, config: parsed.data };
  return { ok: false, errors: parsed.error.issues.flatMap(describeIssue) };
}

function describeIssue(issue: z.core.$ZodIssue): string[] {
  const at = issue.path.filter((key) => typeof key === "string").join(".");
  if (issue.code === "unrecognized_keys") {
    return issue.keys.map((key) => unknownKey(at, key));
  }
  const where = at === "" ? "the file" : `\`${at}\``;
  const hint = HINTS[at];
  const what = issue.code === "invalid_union" ? "has the wrong type" : lowerFirst(issue.message);
  return [`${where}: ${what}${hint === undefined ? "" : `; write ${hint}`}`];
}

function unknownKey(at: string, key: string): string {
  const full = at === "" ? key : `${at}.${key}`;
  const siblings = Object.keys(HINTS)
    .filter(
      (path) => path.includes(".") === (at !== "") && path.startsWith(at === "" ? "" : `${at}.`),
    )
    .map((path) => path.slice(at === "" ? 0 : at.length + 1))
    .filter((name) => name !== "" && !name.includes("."));
  const near = siblings.find(
    (name) =>
      editDistance(name.toLowerCase(), key.toLowerCase()) <= 2 ||
      name.toLowerCase().startsWith(key.toLowerCase()),
  );
  const instead = near === undefined ? "" : `did you mean \`${near}\`? `;
  return `\`${full}\`: unknown key; ${instead}the keys here are ${siblings.map((name) => `\`${name}\``).join(", ")}`;
}

function lowerFirst(text: string): string {
  return text.charAt(0).toLowerCase() + text.slice(1);
}

/** Levenshtein distance, for "did you mean" on a misspelt key. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitute = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitute));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}
