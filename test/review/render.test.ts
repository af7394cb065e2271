// Snapshots of every comment and check run a person reads, and the rules behind them: the
// headline, the gate's conclusion, launch-bound rows kept out, GitHub's length limits.
import { describe, expect, it } from "vitest";
import {
  COMMENT_LIMIT,
  COMMENT_MARKER,
  renderCheckRun,
  renderComment,
} from "../../src/report/index.js";
import { reviewResultSchema } from "../../src/shared/review.js";
import {
  compileErrorTask,
  optimizeResult,
  passedTask,
  quietTask,
  review,
  timing,
  wrongTask,
} from "./fixtures.js";

const faster = passedTask("softmax", [
  timing("8192x8192", 1.8, 1),
  timing("32768x1024", 0.9, 0.5),
  timing("odd-4097x5003", 1.1, 0.6),
]);
const slower = passedTask("rmsnorm", [
  timing("8192x8192", 1, 1.12),
  timing("odd-4097x5003", 0.5, 0.56),
]);
const same = passedTask("layernorm", [timing("8192x8192", 1, 1.01), timing("odd-33x257", 1, 0.99)]);
const launchBound = passedTask("rowsum", [
  timing("8192x8192", 1, 0.8),
  // Slower here, but the launch sets the time: no regression, no headline.
  timing("tiny-7x33", 0.004, 0.006, { launchBound: true }),
]);
const added = passedTask("gelu", [timing("8192x8192", null, 0.7)], { inBase: false });
const evolved = passedTask(
  "softmax",
  [
    timing("8192x8192", 0.5, 0.5, { evolved: { medianMs: 0.4, p20Ms: 0.39, p80Ms: 0.41 } }),
    timing("32768x1024", 0.5, 0.5, { evolved: { medianMs: 0.4, p20Ms: 0.39, p80Ms: 0.41 } }),
  ],
  {
    optimize: optimizeResult(),
    suggestion: {
      path: "kernels/softmax/kernel.cu",
      before: "#define BLOCK_SIZE 256\n",
      after: "#define BLOCK_SIZE 512\n",
    },
  },
);

const CASES = {
  faster: review([faster]),
  slower: review([slower]),
  "same within the noise": review([same]),
  wrong: review([wrongTask("layernorm")]),
  "compile error": review([compileErrorTask("softmax")]),
  "launch-bound configuration": review([launchBound]),
  "new task": review([added]),
  "optimized, with a suggestion": review([evolved]),
  "several tasks, worst first": review([
    faster,
    wrongTask("layernorm"),
    slower,
    quietTask("relu", "removed"),
  ]),
  "nothing changed": review([]),
  "only unchanged tasks": review([quietTask("softmax", "unchanged")]),
};

describe("renderComment", () => {
  for (const [name, result] of Object.entries(CASES)) {
    it(name, () => {
      expect(reviewResultSchema.safeParse(result).success).toBe(true);
      const comment = renderComment(result, {
        runUrl: "https://github.com/acme/kernels/actions/runs/1",
      });
      expect(comment.split("\n")[0]).toBe(COMMENT_MARKER);
      expect(comment).toMatchSnapshot();
    });
  }

  it("says the outcome on its first line", () => {
    expect(renderComment(CASES.faster).split("\n")[2]).toBe(
      "### ✅ `softmax` 1.8× faster, verified on 4 shapes",
    );
    expect(renderComment(CASES.slower).split("\n")[2]).toBe(
      "### ⚠️ `rmsnorm` 12% slower than base",
    );
    expect(renderComment(CASES.wrong).split("\n")[2]).toBe(
      "### ❌ `layernorm` is wrong on odd-4097x5003: max abs error 3.1e-2 > atol 1e-5",
    );
  });

  it("names a failed output once, whether the harness calls it by name or 'output N'", () => {
    const named = renderComment(CASES.wrong);
    expect(named).toContain("on odd-4097x5003, output out at [");
    const task = wrongTask("layernorm");
    task.verification!.failed!.output = "output 0";
    const numbered = renderComment(review([task]));
    expect(numbered).toContain("on odd-4097x5003, output 0 at [");
    expect(numbered).not.toContain("output output");
  });

  it("charts the evolution from the run's history", () => {
    const comment = renderComment(CASES["optimized, with a suggestion"]);
    expect(comment).toContain("xychart-beta");
    expect(comment).toContain('x-axis "candidate" [0, 3, 7]');
    expect(comment).toContain("line [1, 1.1, 1.25]");
  });

  it("fits GitHub's limit, with a link to the full result", () => {
    const many = Array.from({ length: 400 }, (_, index) =>
      passedTask(`kernel_${index}`, [
        timing("8192x8192", 1, 0.5),
        timing("32768x1024", 1, 0.5),
        timing("odd-4097x5003", 1, 0.5),
      ]),
    );
    const comment = renderComment(review(many), { fullResultUrl: "https://example.test/full" });
    expect(comment.length).toBeLessThanOrEqual(COMMENT_LIMIT);
    expect(comment.startsWith(COMMENT_MARKER)).toBe(true);
    expect(comment).toContain("[the full result](https://example.test/full)");
  });
});

describe("renderCheckRun", () => {
  for (const [name, result] of Object.entries(CASES)) {
    it(name, () => {
      expect(renderCheckRun(result, 3)).toMatchSnapshot();
    });
  }

  it("fails a wrong kernel, a compile error and a regression; passes a win and noise", () => {
    expect(renderCheckRun(CASES.wrong, 3).conclusion).toBe("failure");
    expect(renderCheckRun(CASES["compile error"], 3).conclusion).toBe("failure");
    expect(renderCheckRun(CASES.slower, 3).conclusion).toBe("failure");
    expect(renderCheckRun(CASES.faster, 3).conclusion).toBe("success");
    expect(renderCheckRun(CASES["same within the noise"], 3).conclusion).toBe("success");
    expect(renderCheckRun(CASES["launch-bound configuration"], 3).conclusion).toBe("success");
    expect(renderCheckRun(CASES["nothing changed"], 3).conclusion).toBe("neutral");
    expect(renderCheckRun(CASES["only unchanged tasks"], 3).conclusion).toBe("neutral");
  });

  it("takes the threshold it is given: 12% slower passes a 20% threshold", () => {
    expect(renderCheckRun(CASES.slower, 20).conclusion).toBe("success");
  });

  it("keeps summary and text within GitHub's limits", () => {
    const many = Array.from({ length: 1000 }, (_, index) =>
      passedTask(`kernel_${index}`, [timing("8192x8192", 1, 1.5)]),
    );
    const output = renderCheckRun(review(many), 3);
    expect(output.summary.length).toBeLessThanOrEqual(65_535);
    expect((output.text ?? "").length).toBeLessThanOrEqual(65_535);
  });
});
