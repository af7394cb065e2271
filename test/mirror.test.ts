// The tests mirror the source (issue 37.4), so a reader finds a module's tests without
// searching: test/shared/ and test/report/ hold the tests of src/shared/ and src/report/
// (a test directly there is named after its module: <module>.test.ts, or
// <module>.<aspect>.test.ts for a second file on one module; a folder is a folder of the
// source), test/app/<folder>/ those of src/app/<folder>/ (tests of the app as a whole stay
// directly in test/app/), test/runner/ those of runner/src/ (test/runner/mirror.test.ts).
// No test lies loose in test/: checks of the repository as a whole (docs, dependencies,
// Docker, the action, import cycles, the kernels and fixtures) are in test/repo/.
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("..", import.meta.url));
const tests = join(root, "test");

/** The folders test/ may hold, each with what it is for. */
const TOP = {
  app: "src/app",
  report: "src/report",
  shared: "src/shared",
  runner: "runner/src",
  repo: "checks of the repository as a whole",
  gpu: "tests that need a GPU",
  lab: "lab/",
  scripts: "scripts/",
  security: "the threat model's protections, across the app and the runner",
  helpers: "code the tests share",
  fixtures: "data the tests read",
};

const isDir = (path: string): boolean =>
  statSync(path, { throwIfNoEntry: false })?.isDirectory() ?? false;
const isFile = (path: string): boolean =>
  statSync(path, { throwIfNoEntry: false })?.isFile() ?? false;
const folders = (dir: string): string[] =>
  readdirSync(dir).filter((name) => name !== "__snapshots__" && isDir(join(dir, name)));

describe("test/ mirrors the source", () => {
  it("no test lies directly in test/, and each folder of test/ has a purpose", () => {
    const loose = readdirSync(tests)
      .filter((name) => name.endsWith(".test.ts") && name !== "mirror.test.ts")
      .map((name) => `test/${name} (move it beside its module's mirror, or to test/repo/)`);
    const unknown = folders(tests)
      .filter((name) => !(name in TOP))
      .map((name) => `test/${name}/ (not a folder test/mirror.test.ts knows)`);
    expect([...loose, ...unknown]).toEqual([]);
  });

  for (const area of ["shared", "report"]) {
    const dir = join(tests, area);
    const source = join(root, "src", area);

    it(`each folder of test/${area} is a folder of src/${area}`, () => {
      const strays = folders(dir)
        .filter((name) => !isDir(join(source, name)))
        .map((name) => `test/${area}/${name}/ (no src/${area}/${name}/)`);
      expect(strays).toEqual([]);
    });

    it(`each test directly in test/${area} is named after a module of src/${area}`, () => {
      const strays = readdirSync(dir)
        .filter((name) => name.endsWith(".test.ts"))
        .filter((name) => !isFile(join(source, `${name.split(".")[0] ?? name}.ts`)))
        .map((name) => `test/${area}/${name} (no src/${area}/${name.split(".")[0] ?? name}.ts)`);
      expect(strays).toEqual([]);
    });
  }

  it("each folder of test/app is a folder of src/app", () => {
    const strays = folders(join(tests, "app"))
      .filter((name) => !isDir(join(root, "src", "app", name)))
      .map((name) => `test/app/${name}/ (no src/app/${name}/)`);
    expect(strays).toEqual([]);
  });
});
