// task.json "constraints": the rules a tuner's combination of tunables keeps, in a small C-like
// language (runner/src/tasks/constraints.ts; lab/template-sweep.py reads the same).
import { describe, expect, it } from "vitest";
import { parseConstraint, satisfies } from "../../../runner/src/tasks/constraints.js";
import { createTuner } from "../../../runner/src/proposers/tuner.js";
import { context, individual } from "../proposers/helpers.js";

describe("constraints", () => {
  it("evaluates C's integer arithmetic, comparisons and logic", () => {
    const rule = parseConstraint("A * B <= 1024 && (C == 0 || !D)");
    expect(rule.names).toEqual(["A", "B", "C", "D"]);
    expect(rule.holds({ A: 32, B: 32, C: 0, D: 1 })).toBe(true);
    expect(rule.holds({ A: 64, B: 32, C: 0, D: 1 })).toBe(false);
    expect(rule.holds({ A: 1, B: 1, C: 1, D: 1 })).toBe(false);
    expect(rule.holds({ A: 1, B: 1, C: 1, D: 0 })).toBe(true);
    // / truncates toward zero, % is C's remainder, unary minus binds tightest
    expect(parseConstraint("A / 4 == 2 && A % 4 == 3 && -A < 0").holds({ A: 11 })).toBe(true);
    expect(parseConstraint("1 + 2 * 3 == 7").holds({})).toBe(true);
    expect(parseConstraint("A >= 2 != 0").holds({ A: 3 })).toBe(true);
  });

  it("reads -D strings as numbers, and leaves a rule over an unknown value alone", () => {
    const rule = parseConstraint("A * B <= 64");
    expect(rule.holds({ A: "8", B: "8" })).toBe(true);
    expect(rule.holds({ A: "16", B: 8 })).toBe(false);
    expect(rule.holds({ A: null, B: 8 })).toBe(true);
    expect(rule.holds({ A: "fast", B: 8 })).toBe(true);
  });

  it("breaks on a division by zero rather than guessing", () => {
    expect(parseConstraint("64 / A >= 1").holds({ A: 0 })).toBe(false);
  });

  it("says what is wrong with a rule that does not parse", () => {
    expect(() => parseConstraint("A * (B <= 4")).toThrow(/a \( is not closed/);
    expect(() => parseConstraint("A <= ")).toThrow(/ends too early/);
    expect(() => parseConstraint("A = 4")).toThrow(/unexpected "="|cannot read/);
    expect(() => parseConstraint("A.b > 1")).toThrow(/cannot read/);
    expect(() => parseConstraint("  ")).toThrow(/is empty/);
    expect(() => parseConstraint("A 4")).toThrow(/unexpected "4"/);
  });

  it("all rules must hold", () => {
    const rules = [parseConstraint("A <= 4"), parseConstraint("B <= 4")];
    expect(satisfies(rules, { A: 4, B: 4 })).toBe(true);
    expect(satisfies(rules, { A: 4, B: 8 })).toBe(false);
  });
});

describe("the tuner keeps the task's constraints", () => {
  const source = [
    "#ifndef THREADS_PER_ROW",
    "#define THREADS_PER_ROW 256",
    "#endif",
    "#ifndef ROWS_PER_BLOCK",
    "#define ROWS_PER_BLOCK 1",
    "#endif",
    "__global__ void k() {}",
    "",
  ].join("\n");
  const tunables = { THREADS_PER_ROW: [32, 64, 128, 256, 512, 1024], ROWS_PER_BLOCK: [1, 2, 4, 8] };
  const constraints = ["THREADS_PER_ROW * ROWS_PER_BLOCK <= 1024"];

  it("counts and proposes only the combinations that keep them, until none is left", async () => {
    const tuner = createTuner({ seed: 1, baselineSource: source, tunables, constraints });
    // 32, 64, 128: 4 rows each; 256: 1, 2, 4; 512: 1, 2; 1024: 1
    expect(tuner.spaceSize).toBe(4 + 4 + 4 + 3 + 2 + 1);
    const seen: Record<string, string>[] = [];
    for (let i = 0; i < 40; i++) {
      const result = await tuner.propose(context(individual("c0", source, 1), { seed: i }));
      if (!result.ok) {
        expect(result).toMatchObject({ reason: "search-exhausted", final: true });
        break;
      }
      seen.push(result.proposal.defines);
    }
    expect(seen).toHaveLength(tuner.spaceSize - 1);
    for (const defines of seen) {
      const threads = Number(defines["THREADS_PER_ROW"] ?? 256);
      const rows = Number(defines["ROWS_PER_BLOCK"] ?? 1);
      expect(threads * rows).toBeLessThanOrEqual(1024);
    }
  });

  it("without them, the whole product is the space", () => {
    expect(createTuner({ seed: 1, baselineSource: source, tunables }).spaceSize).toBe(24);
  });

  it("refuses a rule that does not parse, before proposing anything", () => {
    expect(() =>
      createTuner({
        seed: 1,
        baselineSource: source,
        tunables,
        constraints: ["THREADS_PER_ROW *"],
      }),
    ).toThrow(/ends too early/);
  });
});
