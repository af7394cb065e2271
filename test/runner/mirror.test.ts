// The runner's tests mirror its source (issue 37.4): test/runner/<folder>/ holds the tests of
// runner/src/<folder>/, and a test beside this one those of a module of runner/src itself, so
// a reader finds a module's tests without searching.
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const tests = join(root, "test", "runner");
const source = join(root, "runner", "src");

describe("test/runner mirrors runner/src", () => {
  it("each folder of test/runner is a folder of runner/src", () => {
    const strays = readdirSync(tests)
      .filter((name) => name !== "__snapshots__" && statSync(join(tests, name)).isDirectory())
      .filter((name) => !statSync(join(source, name), { throwIfNoEntry: false })?.isDirectory())
      .map((name) => `test/runner/${name}/ (no runner/src/${name}/)`);
    expect(strays).toEqual([]);
  });

  it("each test directly in test/runner is a module of runner/src", () => {
    const strays = readdirSync(tests)
      .filter((name) => name.endsWith(".test.ts") && name !== "mirror.test.ts")
      .filter(
        (name) =>
          !statSync(join(source, name.replace(/\.test\.ts$/, ".ts")), {
            throwIfNoEntry: false,
          })?.isFile(),
      )
      .map((name) => `test/runner/${name}`);
    expect(strays).toEqual([]);
  });
});
