// Thresholds as code (issue 36.3): `.github/evokernel.yml`'s rules per task and
// configuration, how they resolve, how a bad rule is refused, and that the review's statuses,
// the renderers and the nightly all read the same rule.
import { describe, expect, it } from "vitest";
import { selectWins } from "../../src/app/nightly/night.js";
import { renderCheckRun, renderComment } from "../../src/report/index.js";
import { parseConfig } from "../../src/shared/config.js";
import { checkReviewResult } from "../../src/shared/result-check.js";
import type { ReviewResult } from "../../src/shared/review.js";
import { thresholdFor, type Thresholds } from "../../src/shared/thresholds.js";
import { optimizeResult, passedTask, review, timing } from "../helpers/review-fixtures.js";

const rules: Thresholds = {
  regression: 3,
  win: 0,
  rules: [
    { task: "kernels/*", win: 2 },
    { task: "kernels/softmax", regression: 8 },
    { task: "kernels/softmax", config: "odd-*", regression: 20, win: 5 },
  ],
};

describe("thresholds per task and configuration", () => {
  it("the last rule that covers a task and configuration and sets a value wins", () => {
    expect(thresholdFor(rules, "kernels/softmax", "8192x8192")).toEqual({ regression: 8, win: 2 });
    expect(thresholdFor(rules, "kernels/softmax", "odd-4097x5003")).toEqual({
      regression: 20,
      win: 5,
    });
    expect(thresholdFor(rules, "kernels/layernorm", "odd-1")).toEqual({ regression: 3, win: 2 });
    expect(thresholdFor(rules, "ops/gelu", "any")).toEqual({ regression: 3, win: 0 });
    // the task as a whole: rules naming a configuration left out
    expect(thresholdFor(rules, "kernels/softmax", null)).toEqual({ regression: 8, win: 2 });
    expect(thresholdFor(5, "kernels/softmax", "odd-1")).toEqual({ regression: 5, win: 0 });
  });

  it("are read from the config file", () => {
    const parsed = parseConfig({
      thresholds: [{ task: "kernels/softmax", config: "odd-*", regression: 8, win: 5 }],
    });
    expect(parsed).toMatchObject({
      ok: true,
      config: { thresholds: [{ task: "kernels/softmax", config: "odd-*", regression: 8, win: 5 }] },
    });
  });

  it.each([
    [
      [{ task: "kernels/softmax", regresion: 3 }],
      "`thresholds.regresion`: unknown key; did you mean `regression`? the keys here are `task`, `config`, `regression`, `win`",
    ],
    [[{ task: "kernels/softmax" }], "`thresholds`: a rule sets `regression`, `win` or both"],
    [
      [{ task: "kernels/softmax", regression: -1 }],
      "`thresholds.regression`: too small: expected number to be >=0; write a percentage ≥ 0, e.g. `regression: 8`",
    ],
    [{ task: "kernels/softmax" }, "`thresholds`: invalid input: expected array, received object"],
    [[{ regression: 3 }], "`thresholds.task`: invalid input: expected string, received undefined"],
  ])("refuses %j with a clear error", (thresholds, error) => {
    const parsed = parseConfig({ thresholds });
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.errors.join("\n")).toContain(error);
  });
});

describe("the same rule wherever a verdict is made", () => {
  // rmsnorm 12 % slower on both configurations: a regression at the default 3 %
  const slower = passedTask("rmsnorm", [
    timing("8192x8192", 1, 1.12, { change: "slower" }),
    timing("odd-4097x5003", 0.5, 0.56, { change: "slower" }),
  ]);
  slower.regression = true;
  const lenient = (config?: string): ReviewResult => {
    const result = review([slower]);
    const rule = { task: "kernels/rmsnorm", regression: 20, ...(config ? { config } : {}) };
    return { ...result, job: { ...result.job, thresholds: [rule] } };
  };

  it("the check run and the comment judge by the rule of the task and configuration", () => {
    expect(renderCheckRun(review([slower])).conclusion).toBe("failure");
    expect(renderCheckRun(lenient()).conclusion).toBe("success");
    // a rule for one configuration leaves the other at the default
    expect(renderCheckRun(lenient("odd-*")).conclusion).toBe("failure");
    expect(renderComment(lenient()).split("\n")[2]).toMatch(/^### ✅ /);
    expect(renderCheckRun(lenient()).summary).toContain("`thresholds`");
  });

  it("the app's own rules decide its check run, not the artifact's", () => {
    const trusted = { regression: 3, win: 0, rules: [] };
    expect(renderCheckRun(lenient(), trusted).conclusion).toBe("failure");
  });

  it("a result adds up only with the statuses its rules give", () => {
    expect(checkReviewResult(review([slower])).ok).toBe(true);
    // judged by the rule, the same times are no regression: the claim no longer adds up
    expect(checkReviewResult(lenient()).ok).toBe(false);
    const agreeing = lenient();
    agreeing.tasks = agreeing.tasks.map((task) => ({
      ...task,
      regression: false,
      timings: task.timings.map((config) => ({ ...config, change: "same" as const })),
    }));
    expect(checkReviewResult(agreeing).ok).toBe(true);
  });

  it("a win needs the minimum effect its rule sets: improvements and nightly proposals", () => {
    const faster = passedTask("softmax", [timing("8192x8192", 1.1, 1)]);
    const result = review([faster]);
    expect(renderCheckRun(result).title).toContain("1 improvement");
    const strict = {
      ...result,
      job: { ...result.job, thresholds: [{ task: "kernels/softmax", win: 20 }] },
    };
    expect(renderCheckRun(strict).title).not.toContain("improvement");
    const won = passedTask("softmax", [timing("8192x8192", 1, 1)], {
      optimize: optimizeResult(),
      suggestion: { path: "kernels/softmax/kernel.cu", before: "a\n", after: "b\n" },
    });
    const night = review([won]);
    expect(selectWins(night, [], { regression: 3, win: 3, rules: [] }, "n")).toHaveLength(1);
    const rules = [{ task: "kernels/softmax", win: 50 }];
    expect(selectWins(night, [], { regression: 3, win: 3, rules }, "n")).toHaveLength(0);
  });
});
