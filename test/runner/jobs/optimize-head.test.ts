// A job's optimize step calls optimize's pipeline as a function (no command, no flags, no
// stdout parsed back) and searches as `evokernel optimize --no-nvcc-flags` does with the same settings:
// both against the stand-in for the harness on a GPU machine.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { resultSchema } from "../../../src/shared/result.js";
import { optimizeHead } from "../../../runner/src/jobs/optimize-head.js";
import { repo, runCli } from "../../helpers/cli.js";

const fakeHarness = fileURLToPath(new URL("../../helpers/fake-gpu-harness.mjs", import.meta.url));
let dir = "";

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "evokernel-optimize-head-"));
  vi.stubEnv("ANTHROPIC_API_KEY", "");
  vi.stubEnv("EVOKERNEL_PYTHON", fakeHarness);
  vi.stubEnv("EVOKERNEL_SANDBOX", "off");
  vi.stubEnv("EVOKERNEL_CACHE", join(dir, "cache"));
});

afterAll(async () => {
  vi.unstubAllEnvs();
  await rm(dir, { recursive: true, force: true });
});

describe("a job's optimize step", () => {
  it("runs the pipeline in its folder and returns the result the command prints", async () => {
    const work = join(dir, "job");
    const lines: string[] = [];
    const outcome = await optimizeHead({
      task: join(repo, "kernels", "softmax"),
      work,
      budget: { candidates: 4, minutes: 10, usd: 1 },
      proposer: "tuner",
      seed: 1,
      say: (line) => lines.push(line),
    });
    if (!outcome.ok) throw new Error(outcome.message);
    expect(outcome.result.search).toMatchObject({ candidates: 4, stoppedBy: "candidates" });
    expect(outcome.result.run).toMatchObject({ proposer: "tuner", seed: 1 });
    expect(outcome.result.run.archive).toBe(join(work, "archive.jsonl"));
    expect(lines).toContain("starting the harness: Python imports torch (10–30 s) …");
    expect(lines.some((line) => line.startsWith("[0/4] c0 ok"))).toBe(true);
    // its outputs stay in the job's folder
    const written = resultSchema.parse(
      JSON.parse(await readFile(join(work, "out", "result.json"), "utf8")),
    );
    expect(written.history).toEqual(outcome.result.history);

    const cli = await runCli(
      [
        "optimize",
        join(repo, "kernels", "softmax"),
        "--proposer",
        "tuner",
        "--seed",
        "1",
        "--candidates",
        "4",
        "--minutes",
        "10",
        "--usd",
        "1",
        "--archive",
        join(dir, "cli", "archive.jsonl"),
        "--no-nvcc-flags",
        "--json",
      ],
      {
        env: {
          ANTHROPIC_API_KEY: "",
          EVOKERNEL_PYTHON: fakeHarness,
          EVOKERNEL_SANDBOX: "off",
          EVOKERNEL_CACHE: join(dir, "cache"),
        },
      },
    );
    const printed = resultSchema.parse(JSON.parse(cli.stdout));
    const ids = (result: typeof printed) => result.history.map((entry) => entry.id);
    expect(ids(outcome.result)).toEqual(ids(printed));
    expect({ ...outcome.result.search, seconds: 0 }).toEqual({ ...printed.search, seconds: 0 });
    expect(outcome.result.win).toBe(printed.win);
    // a job's winner becomes a change to the kernel file: nothing it cannot carry is searched
    const archived = (await readFile(join(work, "archive.jsonl"), "utf8"))
      .split("\n")
      .filter((line) => line.trim() !== "")
      .map((line) => JSON.parse(line) as { flags?: string[] });
    expect(archived.length).toBeGreaterThan(0);
    expect(archived.every((entry) => (entry.flags ?? []).length === 0)).toBe(true);
  });
});
