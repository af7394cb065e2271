// lab/llm-throughput.mjs on the CPU, with the stand-in harness: the stand-in for
// Anthropic's API answers every proposal with the template and one combination of its
// tunables, and the script counts what became of each (on the GPU machine it measures the
// LLM path's throughput: lab/gpu-batch.sh llm-throughput).
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const run = promisify(execFile);
const script = fileURLToPath(new URL("../../lab/llm-throughput.mjs", import.meta.url));
const fakeHarness = fileURLToPath(new URL("../helpers/fake-gpu-harness.mjs", import.meta.url));

describe("llm-throughput.mjs", () => {
  it("turns each reply into a distinct template kernel and reports the run's rate", async () => {
    const dir = await mkdtemp(join(tmpdir(), "evokernel-llm-throughput-"));
    try {
      const out = join(dir, "softmax");
      const { stdout } = await run(
        process.execPath,
        [script, "--task", "softmax", "--replies", "5", "--parallel", "3", "--out", out],
        {
          env: {
            ...process.env,
            EVOKERNEL_PYTHON: fakeHarness,
            EVOKERNEL_SANDBOX: "off",
            EVOKERNEL_CACHE: join(dir, "cache"),
          },
        },
      );
      expect(stdout).toMatch(/whole run [\d.]+ s .*: 5 evaluated/);
      expect(stdout).toMatch(/replies 5, candidates 5, passed 5\n/);
      const lines = (await readFile(join(out, "archive.jsonl"), "utf8"))
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as { individual: { id: string; source: string } });
      const proposed = lines.filter((line) => line.individual.id !== "c0");
      // every reply a different combination, written above the template's own source
      const heads = new Set(proposed.map((line) => line.individual.source.split("\n// ")[0]));
      expect(heads.size).toBe(5);
      expect(
        proposed.every((line) => line.individual.source.startsWith("#define THREADS_PER_ROW")),
      ).toBe(true);
      const requests = (await readFile(join(out, "requests.jsonl"), "utf8")).trim().split("\n");
      expect(requests).toHaveLength(5);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it("says what to do when asked for more replies than the template has combinations", async () => {
    const failed = await run(process.execPath, [
      script,
      "--task",
      "softmax",
      "--replies",
      "100000",
    ]).then(
      () => null,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failed?.code).toBe(2);
    expect(failed?.stderr).toMatch(
      /allows \d+ combinations of its tunables: ask for that many replies or fewer/,
    );
  });
});
