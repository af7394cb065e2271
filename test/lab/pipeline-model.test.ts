// lab/pipeline-model.mjs: a search's recorded build and GPU seconds replayed through the
// engine's start rule (proposal n starts once 1 … n−P have finished). With one in flight
// nothing overlaps (the sum of every build and GPU second); with all in flight and builds
// side by side the GPU is the floor; on the H100's shape-keyed softmax_bf16 run (2026-11-26,
// results branch: results/gpu-2026-11-26m) the model at the run's own P lands near what the run took.
import { execa } from "execa";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const model = resolve("lab/pipeline-model.mjs");
const run = (...args: string[]) => execa(process.execPath, [model, ...args], { reject: false });

function archive(candidates: { build: number; gpu: number }[]): string {
  const line = (generation: number, seconds: { compile: number; verify: number; time: number }) =>
    JSON.stringify({
      generation,
      slot: 0,
      elapsedS: 0,
      individual: { evaluation: { seconds } },
    });
  return [
    line(0, { compile: 0, verify: 0, time: 0 }),
    ...candidates.map((c, i) =>
      line(i + 1, { compile: c.build, verify: c.gpu / 2, time: c.gpu / 2 }),
    ),
  ].join("\n");
}

describe("lab/pipeline-model.mjs", () => {
  it("adds everything up with one in flight, and is held to the GPU's seconds with all", async () => {
    const dir = await mkdtemp(join(tmpdir(), "evk-model-"));
    try {
      const file = join(dir, "archive.jsonl");
      const candidates = Array.from({ length: 10 }, () => ({ build: 2, gpu: 0.5 }));
      await writeFile(file, archive(candidates));
      const out = await run("--parallel", "1,10", "--cores", "16", file);
      expect(out.exitCode).toBe(0);
      expect(out.stdout).toContain("P=1 25.0 s");
      // all ten build at once (2 s), then the GPU takes them one after another (5 s)
      expect(out.stdout).toContain("P=10 7.0 s");
      // with two cores, five rounds of two builds; the last two GPU turns follow the last round
      const two = await run("--parallel", "10", "--cores", "2", file);
      expect(two.stdout).toContain("P=10 11.0 s");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("lands near a measured run at that run's own number in flight", async () => {
    // the run's archive (results branch: results/gpu-2026-11-26m/shape-tuner_softmax_bf16_
    // layernorm_bf16.tgz, in its optimize.tgz: optimize/softmax_bf16/archive.jsonl), each line
    // cut to the fields the model reads (generation, slot, elapsedS, evaluation.seconds):
    // 1.9 MB of kernel sources down to 6 kB
    const file = resolve("test/fixtures/lab/pipeline-model/softmax_bf16-archive.jsonl");
    const out = await run("--parallel", "8", file);
    expect(out.exitCode).toBe(0);
    const took = Number(/the run took ([\d.]+) s/.exec(out.stdout)?.[1]);
    const modelled = Number(/the model at P=8 ([\d.]+) s/.exec(out.stdout)?.[1]);
    expect(modelled).toBeGreaterThan(0.8 * took);
    expect(modelled).toBeLessThanOrEqual(took);
  });

  it("says how to call it when given no archive", async () => {
    const out = await run();
    expect(out.exitCode).toBe(2);
    expect(out.stdout).toMatch(/usage/);
  });
});
