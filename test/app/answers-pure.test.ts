// The pure parts of the answers to a verdict: the command's parser, the stored reason, the
// records' idempotence, the verdict block a check run keeps, and the conclusion an answer
// gives (src/app/comment-commands.ts, src/shared/answers.ts, src/report/answers.ts).
import { describe, expect, it } from "vitest";
import { parseComment } from "../../src/app/comment-commands.js";
import {
  type Accept,
  addAccept,
  cleanReason,
  EMPTY_ANSWERS,
  MAX_REASON,
  type VerdictData,
} from "../../src/shared/answers.js";
import {
  ACCEPT_ACTION,
  answerCheckRun,
  judgedSummary,
  readVerdictBlock,
  verdictBlock,
  WRONG_ACTION,
} from "../../src/report/answers.js";

const SHA = "a".repeat(40);

describe("/evokernel accept|wrong", () => {
  it("reads the task, an optional commit and the rest of the line as the reason", () => {
    expect(parseComment("/evokernel accept softmax uses less memory, see #12")).toMatchObject({
      kind: "command",
      command: { name: "accept", task: "softmax", reason: "uses less memory, see #12" },
    });
    expect(parseComment(`/evokernel wrong kernels/row_sum @${SHA} padding is ignored`)).toEqual({
      kind: "command",
      line: `/evokernel wrong kernels/row_sum @${SHA} padding is ignored`,
      command: { name: "wrong", task: "kernels/row_sum", sha: SHA, reason: "padding is ignored" },
    });
    // An `@` later in the reason is words, not a commit.
    expect(parseComment("/evokernel accept softmax as @bob said")).toMatchObject({
      command: { reason: "as @bob said" },
    });
  });

  it("refuses an answer without a task or a reason, or with a task that is no name", () => {
    expect(parseComment("/evokernel accept")).toMatchObject({ kind: "invalid" });
    expect(parseComment("/evokernel accept softmax")).toMatchObject({
      kind: "invalid",
      error: expect.stringContaining("give a reason") as unknown,
    });
    expect(parseComment("/evokernel wrong ../etc reason")).toMatchObject({ kind: "invalid" });
    expect(parseComment(`/evokernel accept softmax @${SHA}`)).toMatchObject({ kind: "invalid" });
  });

  it("takes any command after /evokernel, and /evokernel alone is the help", () => {
    expect(parseComment("/evokernel bench softmax")).toMatchObject({
      command: { name: "bench", tasks: ["softmax"] },
    });
    expect(parseComment("/evokernel")).toMatchObject({ command: { name: "help" } });
    expect(parseComment("/evokernel frobnicate")).toMatchObject({ kind: "invalid" });
  });
});

describe("a reason as stored", () => {
  it("is one line without control or direction-override characters, cut at MAX_REASON", () => {
    expect(cleanReason("  fine\n\tby\u202Eme\u0007 ")).toBe("fine by me");
    const long = cleanReason("x".repeat(1000));
    expect([...long]).toHaveLength(MAX_REASON);
    expect(long.endsWith("…")).toBe(true);
  });
});

describe("the records", () => {
  it("keep one accept per task, commit and pull request: the first stands", () => {
    const accept: Accept = {
      pr: 7,
      sha: SHA,
      task: "kernels/softmax",
      login: "a",
      reason: "first",
      at: "2026-11-29T00:00:00.000Z",
    };
    const once = addAccept(EMPTY_ANSWERS, accept);
    const twice = addAccept(once.answers, { ...accept, login: "b", reason: "second" });
    expect([once.added, twice.added]).toEqual([true, false]);
    expect(twice.answers.accepts.map((entry) => entry.reason)).toEqual(["first"]);
    // Another commit is another accept.
    expect(addAccept(once.answers, { ...accept, sha: "b".repeat(40) }).added).toBe(true);
  });
});

const DATA: VerdictData = {
  v: 1,
  conclusion: "failure",
  title: "2 kernels: 1 wrong, 1 regression",
  gpu: "H100",
  evokernel: "0.1.0",
  tasks: [
    {
      task: "kernels/row_sum",
      name: "row_sum --> <b>x</b>",
      outcome: "wrong",
      headline: "row_sum is wrong",
      kernel: "kernels/row_sum/kernel.cu",
      reason: "mismatch",
      verifySeed: 1,
      benchSeed: null,
      speedup: null,
    },
    {
      task: "kernels/softmax",
      name: "softmax",
      outcome: "slower",
      headline: "softmax 1.18× slower than base",
      kernel: "kernels/softmax/kernel.cu",
      reason: null,
      verifySeed: 1,
      benchSeed: 2,
      speedup: 0.85,
    },
  ],
};

const ACCEPT: Accept = {
  pr: 7,
  sha: SHA,
  task: "kernels/softmax",
  login: "lead",
  reason: "expected",
  at: "2026-11-29T00:00:00.000Z",
};

describe("the verdict block", () => {
  it("reads back what was written, whatever a task's name holds", () => {
    const block = verdictBlock(DATA);
    expect(block).not.toContain("<b>");
    expect(block.indexOf("-->")).toBe(block.length - 3);
    expect(readVerdictBlock(`${block}\nthe rest`)).toEqual(DATA);
  });

  it("is not read from text that does not start with it, or does not parse", () => {
    expect(readVerdictBlock(`text\n${verdictBlock(DATA)}`)).toBeUndefined();
    expect(readVerdictBlock("<!-- evokernel:verdicts {not json} -->")).toBeUndefined();
    expect(readVerdictBlock('<!-- evokernel:verdicts {"v":2} -->')).toBeUndefined();
    expect(readVerdictBlock(null)).toBeUndefined();
  });
});

describe("a check run answered", () => {
  it("passes only when every failing verdict is an accepted regression", () => {
    const both = answerCheckRun(DATA, "judged", { accepts: [ACCEPT], wrong: [] });
    expect(both.conclusion).toBe("failure");
    expect(both.title).toBe(DATA.title);
    expect(both.summary).toContain("Still failing: `row_sum --> <b>x</b>`");
    const regressionOnly = { ...DATA, tasks: DATA.tasks.slice(1) };
    const passed = answerCheckRun(regressionOnly, "judged", { accepts: [ACCEPT], wrong: [] });
    expect(passed).toMatchObject({
      conclusion: "success",
      title: "Regression accepted by @lead: expected",
    });
  });

  it("never lets an accept of a verdict that is not a regression count", () => {
    const wrongAccepted = { ...ACCEPT, task: "kernels/row_sum" };
    const onlyWrong = { ...DATA, tasks: DATA.tasks.slice(0, 1) };
    expect(
      answerCheckRun(onlyWrong, "judged", { accepts: [wrongAccepted], wrong: [] }),
    ).toMatchObject({ conclusion: "failure", title: DATA.title });
  });

  it("rebuilt from its own summary gives the same summary (the same answer updates once)", () => {
    const once = answerCheckRun(DATA, "judged text", { accepts: [ACCEPT], wrong: [] });
    const again = answerCheckRun(DATA, judgedSummary(once.summary), {
      accepts: [ACCEPT],
      wrong: [],
    });
    expect(again).toEqual(once);
    expect(judgedSummary(once.summary)).toBe("judged text");
  });
});

describe("the buttons", () => {
  it("fit GitHub's limits: label 20, description 40, identifier 20 characters", () => {
    for (const action of [ACCEPT_ACTION, WRONG_ACTION]) {
      expect(action.label.length).toBeLessThanOrEqual(20);
      expect(action.description.length).toBeLessThanOrEqual(40);
      expect(action.identifier.length).toBeLessThanOrEqual(20);
    }
  });
});
