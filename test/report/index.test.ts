// Snapshots of every comment and check run a person reads, and the rules behind them: the
// headline, the gate's conclusion, launch-bound rows kept out, GitHub's length limits.
import { describe, expect, it } from "vitest";
import { marked, type Token, type Tokens } from "marked";
import { progressChart } from "../../src/report/comment.js";
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
} from "../helpers/review-fixtures.js";

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

function tokens(markdown: string): Token[] {
  const all: Token[] = [];
  void marked.walkTokens(marked.lexer(markdown, { gfm: true }), (token) => {
    all.push(token);
  });
  return all;
}

const isTable = (token: Token): token is Tokens.Table => token.type === "table";

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
      "### ⚡ 1 improvement: `softmax` 1.81×\u00A0faster than base, verified on 4 shapes",
    );
    expect(renderComment(CASES.slower).split("\n")[2]).toBe(
      "### ❌ 1 regression: `rmsnorm` 1.12×\u00A0slower than base",
    );
    expect(renderComment(CASES.wrong).split("\n")[2]).toBe(
      "### ❌ 1 wrong: `layernorm` is wrong on odd-4097x5003: its output differs from the reference (`mismatch`)",
    );
    expect(renderComment(CASES["several tasks, worst first"]).split("\n")[2]).toBe(
      "### ❌ 3 kernels: 1 wrong, 1 regression, 1 improvement",
    );
  });

  it("one unit per time column, no ± anywhere, and the change column agrees with the headline", () => {
    for (const [name, result] of Object.entries(CASES)) {
      const comment = renderComment(result);
      expect(comment, name).not.toContain("±");
      for (const table of tokens(comment).filter(isTable)) {
        table.header.forEach((header, column) => {
          const cells = table.rows.map((row) => row[column]?.text ?? "");
          if (/\u00A0(ms|µs)$/.test(header.text)) {
            for (const cell of cells)
              expect(cell, `${name}: ${header.text}`).toMatch(/^[\d.]+$|^—$/);
          }
        });
      }
    }
    // rmsnorm: 1.12× slower in the headline; the rows 1.12× slower each, bold beyond the noise.
    const slower = renderComment(CASES.slower);
    expect(slower).toContain("1.12×\u00A0slower than base");
    expect(slower.match(/\*\*1\.12×\u00A0slower\*\*/g)).toHaveLength(2);
  });

  it("a verdict in words with its code beside, never the code alone", () => {
    const comment = renderComment(CASES.wrong);
    expect(comment).toContain("its output differs from the reference (`mismatch`)");
    expect(comment).toContain("❌ its output differs from the reference (`mismatch`)");
    expect(renderComment(CASES["compile error"])).toContain(
      "it does not compile (`compile-error`)",
    );
  });

  it("the diff names the file by its path in the repository, with no jsdiff banner", () => {
    const comment = renderComment(CASES["optimized, with a suggestion"]);
    expect(comment).toContain("--- a/kernels/softmax/kernel.cu\n+++ b/kernels/softmax/kernel.cu");
    expect(comment).not.toContain("====");
    expect(comment).not.toContain("a/kernel.cu");
  });

  it("names a failed output once, whether the harness calls it by name or 'output N'", () => {
    const named = renderComment(CASES.wrong);
    expect(named).toContain("on odd-4097x5003, output `out` at [");
    const task = wrongTask("layernorm");
    task.verification!.failed!.output = "output 0";
    const numbered = renderComment(review([task]));
    expect(numbered).toContain("on odd-4097x5003, output 0 at [");
    expect(numbered).not.toContain("output output");
  });

  it("the heading's icon is the check's conclusion: a regression fails both", () => {
    for (const [name, result] of Object.entries(CASES)) {
      const icon = renderComment(result).split("\n")[2]?.slice(4, 6) ?? "";
      const { conclusion } = renderCheckRun(result, 3);
      expect(conclusion === "failure", `${name}: ${icon} ${conclusion}`).toBe(
        icon.startsWith("❌"),
      );
    }
  });

  it("says whether applying the suggestion would make the check pass, per configuration against base", () => {
    const passes = renderComment(CASES["optimized, with a suggestion"]);
    expect(passes).toContain(
      "**If applied:** the check would pass on timing: the suggestion is not slower than base on any of the 2 configurations that count.",
    );
    // faster than the PR's kernel, still slower than base on two of three configurations
    const still = passedTask(
      "softmax",
      [
        timing("a", 1, 2, { evolved: { medianMs: 1.6, p20Ms: 1.59, p80Ms: 1.61 } }),
        timing("b", 1, 2, { evolved: { medianMs: 0.9, p20Ms: 0.89, p80Ms: 0.91 } }),
        timing("c", 1, 2, { evolved: { medianMs: 1.5, p20Ms: 1.49, p80Ms: 1.51 } }),
      ],
      { optimize: optimizeResult(), suggestion: evolved.suggestion },
    );
    expect(renderComment(review([still]))).toContain(
      "**If applied:** the check would still fail: the suggestion is slower than base on 2 of 3 configurations (a, c).",
    );
  });

  it("a win built with nvcc flags is said as such: no suggestion, no empty diff", () => {
    const base = optimizeResult();
    const flagged = optimizeResult({
      best:
        base.best === null
          ? null
          : {
              ...base.best,
              defines: {},
              flags: ["-maxrregcount=32"],
              source: "#define BLOCK_SIZE 256\n",
              diff: "--- a/kernel.cu\n+++ b/kernel.cu\n",
            },
    });
    const task = passedTask("softmax", [timing("8192x8192", 1, 1)], {
      optimize: flagged,
      suggestion: null,
    });
    const text = renderComment(review([task]));
    expect(text).toContain(
      "built with nvcc `-maxrregcount=32`: not suggested, since a change to the kernel file cannot carry nvcc flags",
    );
    expect(text).not.toContain("suggested below");
    expect(text).not.toContain("The evolved kernel's diff");
  });

  it("a torch.compile column only where torch.compile was measured", () => {
    const header = (task: ReturnType<typeof passedTask>) =>
      tokens(renderComment(review([task])))
        .find(isTable)
        ?.header.map((cell) => cell.text);
    expect(header(faster)).toContain("compile\u00A0ms");
    const uncompiled = passedTask("softmax", [timing("8192x8192", 1, 0.5, { compile: null })]);
    expect(header(uncompiled)).not.toContain("compile\u00A0µs");
    expect(header(uncompiled)).toContain("%\u00A0of\u00A0floor");
  });

  it("charts every candidate's best so far, the y axis fitted to the values", () => {
    const comment = renderComment(CASES["optimized, with a suggestion"]);
    expect(comment).toContain("xychart-beta");
    // 12 candidates; the best improved at candidates 3 and 7 (1.1×, then 1.25×).
    expect(comment).toContain('x-axis "candidate" 1 --> 12');
    expect(comment).toContain("line [1, 1, 1, 1.1, 1.1, 1.1, 1.1, 1.25, 1.25, 1.25, 1.25, 1.25]");
    expect(comment).toContain('y-axis "speedup vs PR, ×" 0.97 --> 1.28');
  });

  it("draws no chart where there is no trend", () => {
    const flat = optimizeResult({ history: [{ candidate: 0, id: "c0", seconds: 1, fitness: 1 }] });
    expect(progressChart(flat)).toBeNull();
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
