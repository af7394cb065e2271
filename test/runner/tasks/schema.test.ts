import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { checkNativeTask } from "../../../runner/src/workspace/native-task.js";
import { discoverTasks } from "../../../runner/src/workspace/discover.js";
import { parseExpression } from "../../../runner/src/tasks/expression.js";
import { taskJsonSchema } from "../../../runner/src/tasks/schema.js";
import { repo } from "../../helpers/cli.js";

const MIN_BUILT_IN_TASKS = 8;

async function folders(path: string): Promise<string[]> {
  const entries = await readdir(path, { withFileTypes: true }).catch(() => []);
  return entries.filter((entry) => entry.isDirectory()).map((entry) => join(path, entry.name));
}

const builtIn = await discoverTasks([join(repo, "kernels")]);
const fixtureTasks = await discoverTasks([join(repo, "test", "fixtures", "tasks")]);

describe("built-in tasks (kernels/)", () => {
  it(`has at least ${MIN_BUILT_IN_TASKS} tasks`, () => {
    expect(builtIn.length).toBeGreaterThanOrEqual(MIN_BUILT_IN_TASKS);
  });

  it.each(builtIn.map((task) => [task.name, task.path]))("%s is valid", async (_name, path) => {
    const checked = await checkNativeTask(path);
    expect(checked.ok ? [] : checked.errors).toEqual([]);
  });
});

describe("fixture tasks (test/fixtures/tasks)", () => {
  it.each(
    fixtureTasks.filter((task) => task.format === "native").map((task) => [task.name, task.path]),
  )("%s passes the schema", async (_name, path) => {
    const checked = await checkNativeTask(path);
    expect(checked.ok ? [] : checked.errors).toEqual([]);
  });
});

// What each invalid fixture's message must say (the path into the JSON and what to fix).
const EXPECTED: Record<string, readonly string[]> = {
  "bad-dtype": ["inputs[0].dtype", "dtype is one of"],
  "config-missing-dim": ["configs[1].dims", 'does not bind dimension "N"', "inputs[0].shape[1]"],
  "duplicate-config-names": ["configs[1].name", '"small" is used twice'],
  "missing-reference": ["reference", '"reference.py" does not exist'],
  "non-integer-dims": ["configs[0].dims.N", "configs[1].dims.M", "positive integer"],
  "no-odd-size": ["configs:", "divides by neither 32 nor 8", "hard-code"],
  "backward-without-grad": ["inputs:", '"requiresGrad": true'],
  "unknown-key": ['"heldOut" (did you mean "heldout"?)', "allowed:"],
  "bad-expression": ["inputs[0].shape[1]", '"N/" ends too early'],
  "fractional-shape": ["inputs[0].shape[1]", '"N/2" is 128.5 in configuration "odd"'],
  "bad-init": ["inputs[0].init", "init is one of"],
  "one-config": ["configs:", "at least 2 visible configurations"],
  "bad-name": ["name:", "lower-case"],
  "unbound-flops": ["configs[0].dims", '"K" (used in flops)', 'add "K"'],
  "int-requires-grad": ["inputs[0].requiresGrad", "only float inputs"],
  "not-json": ["not valid JSON"],
  "constraint-unknown-name": ["constraints[0]", "names no tunable: ROWS_PER_BLOK"],
  "constraint-syntax": ["constraints[0]", "a ( is not closed"],
};

const invalid = [
  ...(await folders(join(repo, "test", "fixtures", "invalid"))),
  ...(await folders(join(repo, "test", "fixtures", "invalid-ts"))),
];

describe("invalid tasks are rejected with a useful message", () => {
  it("has invalid fixtures to check", () => {
    expect(invalid.length).toBeGreaterThanOrEqual(10);
  });

  it.each(invalid.map((path) => [path.split("/").slice(-2).join("/"), path]))(
    "%s",
    async (_name, path) => {
      const checked = await checkNativeTask(path);
      expect(checked.ok).toBe(false);
      const text = checked.ok ? "" : checked.errors.join("\n");
      expect(text).toContain("task.json");
      for (const part of EXPECTED[path.split("/").at(-1) ?? ""] ?? []) expect(text).toContain(part);
    },
  );
});

describe("expressions", () => {
  it.each([
    ["N/2", { N: 10 }, 5],
    ["2*K+1", { K: 3 }, 7],
    ["(M+1)//2", { M: 4 }, 2],
    ["-N % 3", { N: 4 }, 2],
    ["2**K", { K: 10 }, 1024],
    ["5*M*N", { M: 2, N: 3 }, 30],
  ])("%s with %o is %d", (source, dims, value) => {
    expect(parseExpression(source).evaluate(dims)).toBe(value);
  });

  it("lists the names it uses, once each", () => {
    expect(parseExpression("M*N + M").names).toEqual(["M", "N"]);
  });

  it.each(["", "N/", "2 $ N", "(N", "N N"])("rejects %j", (source) => {
    expect(() => parseExpression(source)).toThrow();
  });
});

describe("task.json's JSON Schema", () => {
  it.each([
    ["runner", "schema", "task.schema.json"],
    ["runner", "harness", "evokernel_harness", "contract", "task.schema.json"],
  ])("%s/%s/%s… is what `npm run schema` writes from the zod schema", async (...path) => {
    const committed: unknown = JSON.parse(await readFile(join(repo, ...path), "utf8"));
    expect(committed, "run `npm run schema`").toEqual(JSON.parse(JSON.stringify(taskJsonSchema())));
  });
});
