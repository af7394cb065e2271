// Thresholds as code (issue 36.3): the repository-wide regression threshold and minimum win,
// refined per task and configuration by `.github/evokernel.yml`'s `thresholds` rules. One
// resolver for the runner's statuses, the renderers' recomputation, the optimize suggestion
// and the nightly's proposals, so that they cannot disagree.
import { z } from "zod";
import { globMatcher, globProblem } from "./glob.js";

const percent = z.number().min(0);

/** One rule: the tasks (and configurations) it covers, and the thresholds it sets there. */
export const thresholdRuleSchema = z
  .object({
    task: z
      .string()
      .min(1)
      .superRefine((pattern, context) => {
        const problem = globProblem(pattern, { negation: false });
        if (problem !== null) context.addIssue({ code: "custom", message: problem });
      })
      .describe("a task path or glob from the repository root, e.g. `kernels/softmax`"),
    config: z
      .string()
      .min(1)
      .optional()
      .describe("a configuration name or glob (`odd-*`); every configuration when absent"),
    regression: percent
      .optional()
      .describe("percent: slower than base beyond the noise by more than this fails the check"),
    win: percent
      .optional()
      .describe(
        "percent: a kernel is a win (an improvement, a suggestion, a nightly proposal) only " +
          "when faster beyond the noise by at least this much (its speedup's lower bound)",
      ),
  })
  .strict()
  .refine((rule) => rule.regression !== undefined || rule.win !== undefined, {
    message: "a rule sets `regression`, `win` or both",
  });
export type ThresholdRule = z.infer<typeof thresholdRuleSchema>;

/** The thresholds in force: the defaults and the rules refining them (the last match wins). */
export type Thresholds = {
  /** Percent, repository-wide: `regressionThreshold`. */
  regression: number;
  /** Percent, repository-wide minimum effect for a win (0: any speedup beyond the noise). */
  win: number;
  rules: readonly ThresholdRule[];
};

/** A plain number is the regression threshold alone, as before rules existed. */
export type ThresholdInput = number | Thresholds;

export function thresholdsOf(input: ThresholdInput): Thresholds {
  return typeof input === "number" ? { regression: input, win: 0, rules: [] } : input;
}

/**
 * The thresholds for a task (its path from the repository root) and one of its configurations
 * (null: the task as a whole, rules naming a configuration left out): each value from the last
 * rule that covers it and sets it, else the default.
 */
export function thresholdFor(
  input: ThresholdInput,
  task: string,
  config: string | null,
): { regression: number; win: number } {
  const thresholds = thresholdsOf(input);
  let { regression, win } = thresholds;
  for (const rule of thresholds.rules) {
    if (!globMatcher(rule.task)(task)) continue;
    if (rule.config !== undefined && (config === null || !configMatches(rule.config, config)))
      continue;
    if (rule.regression !== undefined) regression = rule.regression;
    if (rule.win !== undefined) win = rule.win;
  }
  return { regression, win };
}

function configMatches(pattern: string, name: string): boolean {
  // a configuration name is one path segment: the glob matches it whole
  return pattern === name || globMatcher(pattern)(name);
}
