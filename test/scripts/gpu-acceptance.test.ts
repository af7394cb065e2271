// scripts/gpu-acceptance.sh's command line, on the CPU (its paths need a GPU): the names a
// split run may pick are exactly the paths the script runs, an unknown name stops it before
// anything runs (exit 2, the names listed), and --help lists them.
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const run = promisify(execFile);
const script = fileURLToPath(new URL("../../scripts/gpu-acceptance.sh", import.meta.url));

describe("gpu-acceptance.sh", () => {
  it("offers for a split run exactly the paths it runs", async () => {
    const text = await readFile(script, "utf8");
    const offered = /^all_paths=\(([^)]*)\)$/m.exec(text)?.[1]?.split(/\s+/).sort();
    const runs = [...text.matchAll(/\bpath ([a-z][a-z0-9-]*) [a-z0-9_]+(?=[;)])/g)]
      .map((m) => m[1])
      .sort();
    expect(runs.length).toBeGreaterThan(5);
    expect(offered).toEqual(runs);
  });

  it("refuses a path it does not have, naming the ones it has, before running anything", async () => {
    const failed = await run("bash", [script, "selftest", "app-e2"]).then(
      () => undefined,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failed?.code).toBe(2);
    expect(failed?.stderr).toContain("no path named 'app-e2'");
    expect(failed?.stderr).toContain("app-e2e");
  });

  it("lists its paths with --help", async () => {
    const { stdout } = await run("bash", [script, "--help"]);
    expect(stdout).toContain("bash scripts/gpu-acceptance.sh selftest app-e2e");
    expect(stdout).toMatch(/^paths: selftest app-e2e review action readme/m);
  });
});
