// The contract between the runner and the harness (src/shared/contract): the JSON Schemas the
// harness's tests load are the zod schemas' (no drift), and the TypeScript detector of
// candidate formats gives the harness's answer on every shared case.
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  CANDIDATE_FORMATS,
  detectCandidateFormat,
  FORMAT_DETECTION_CASES,
} from "../../../src/shared/contract/formats.js";
import { EXPRESSION_CASES } from "../../../src/shared/contract/expressions.js";
import {
  contractFileText,
  contractJsonSchemas,
} from "../../../src/shared/contract/json-schemas.js";
import { HACK_CLASSES, REASONS } from "../../../src/shared/contract/reasons.js";
import { parseExpression } from "../../../runner/src/tasks/expression.js";
import { repo } from "../../helpers/cli.js";

const folder = join(repo, "runner", "harness", "evokernel_harness", "contract");
const files = contractJsonSchemas();

describe("runner/harness/evokernel_harness/contract", () => {
  it.each(Object.keys(files))("%s is what `npm run contract` writes", async (name) => {
    const text = await readFile(join(folder, name), "utf8");
    expect(text, `run \`npm run contract\`: ${name} differs from the zod contract`).toBe(
      contractFileText(files[name]),
    );
  });

  it("holds no file the contract does not write", async () => {
    const present = (await readdir(folder)).filter((name) => name.endsWith(".json")).sort();
    // task.schema.json: `npm run schema`'s (test/runner/tasks/schema.test.ts)
    expect(present).toEqual([...Object.keys(files), "task.schema.json"].sort());
  });
});

describe("candidate formats", () => {
  it.each(FORMAT_DETECTION_CASES.map((entry) => [entry.file, entry.format, entry.source]))(
    "%s is %s: %s",
    (file, format, source) => {
      expect(detectCandidateFormat(file, source)).toBe(format);
    },
  );

  it("has a case for every format and for a refused source", () => {
    const seen = new Set(FORMAT_DETECTION_CASES.map((entry) => entry.format));
    expect([...CANDIDATE_FORMATS, null].filter((format) => !seen.has(format))).toEqual([]);
  });

  // The disagreement the contract settled: TORCH_LIBRARY alone is an extension to the
  // harness, which builds and loads it; the runner's prompt once called it evk.
  it("reads TORCH_LIBRARY as a torch extension, as the harness does", () => {
    expect(detectCandidateFormat("k.cu", "TORCH_LIBRARY(ops, m) {}")).toBe("torch-ext");
  });
});

describe("task.json's expressions", () => {
  // the harness's exprs.py is held to the same cases (test_contract.py)
  it.each(EXPRESSION_CASES.map((entry) => [JSON.stringify(entry.source), entry]))(
    "%s",
    (_source, entry) => {
      const value = () => parseExpression(entry.source).evaluate(entry.dims);
      if ("error" in entry) expect(value).toThrow();
      else expect(value()).toBe(entry.value);
    },
  );
});

describe("reasons and hack classes", () => {
  it("gives a hack class only to reasons of the contract", () => {
    const reasons: readonly string[] = REASONS;
    expect(Object.keys(HACK_CLASSES).filter((reason) => !reasons.includes(reason))).toEqual([]);
  });

  it("has no reason twice", () => {
    expect(new Set(REASONS).size).toBe(REASONS.length);
  });
});
