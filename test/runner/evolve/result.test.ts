// The result the app will post: built from a run, valid against the shared schema, with a
// diff that turns the original into the winner; and the summary a person reads.
import { applyPatch } from "diff";
import { describe, expect, it } from "vitest";
import { resultSchema } from "../../../src/shared/result.js";
import { memoryArchive } from "../../../runner/src/evolve/archive.js";
import { runEngine } from "../../../runner/src/evolve/engine.js";
import { finalize } from "../../../runner/src/evolve/final.js";
import {
  buildResult,
  materializeDefines,
  type ResultInput,
} from "../../../runner/src/evolve/result.js";
import type { Rechecker } from "../../../runner/src/evolve/types.js";
import { renderOptimizeSummary } from "../../../runner/src/render/optimize-summary.js";
import {
  BASELINE,
  fakeClock,
  fakeEvaluator,
  fakeProposer,
  fakeRechecker,
  finalConfig,
  task,
} from "./fakes.js";

const ORIGINAL = `#include "evokernel.h"
#ifndef BLOCK_SIZE
#define BLOCK_SIZE 256 // threads a block
#endif

__global__ void softmax() {} // speed=1
`;

async function resultOf(rechecker: Rechecker = fakeRechecker().rechecker) {
  const clock = fakeClock();
  const engine = await runEngine({
    task,
    config: "insight",
    seed: 11,
    proposer: fakeProposer({ usd: 0.05 }).proposer,
    evaluator: fakeEvaluator(clock, 30).evaluator,
    archive: memoryArchive(),
    clock,
    budget: { candidates: 8, seconds: 3600, usd: 5 },
    baseline: { source: BASELINE },
    language: "c",
  });
  const final = await finalize({
    population: engine.population,
    baseline: engine.baseline,
    rechecker,
  });
  const input: ResultInput = {
    task: { name: "softmax", format: "native", path: "/repo/kernels/softmax" },
    run: {
      config: "insight",
      proposer: "fake",
      model: "claude-test",
      seed: 11,
      populationSize: 5,
      archive: ".evokernel/softmax/archive.jsonl",
      startedAt: "2026-11-21T12:00:00.000Z",
      finishedAt: "2026-11-21T12:05:00.000Z",
    },
    budget: { candidates: 8, seconds: 3600, usd: 5 },
    engine,
    final,
    original: { file: "kernels/softmax/kernel.cu", source: ORIGINAL },
    language: "c",
    device: {
      gpu: "NVIDIA H100 80GB HBM3",
      driver: "580.159.04",
      cuda: "13.0",
      torch: "2.11.0",
      python: "3.12.3",
      evokernel: "0.1.0",
    },
  };
  return buildResult(input);
}

describe("the result", () => {
  it("validates against the shared schema and says where the win comes from", async () => {
    const result = await resultOf();
    expect(resultSchema.safeParse(JSON.parse(JSON.stringify(result))).success).toBe(true);
    expect(result.win).toBe(true);
    expect(result.best?.id).toBe(result.history.at(-1)?.id);
    expect(result.search).toMatchObject({ candidates: 8, stoppedBy: "candidates" });
    expect(result.usage.usd).toBeCloseTo(0.4);
    const [config] = result.configs;
    expect(config?.speedup.eager).toBeCloseTo(2 / (config?.best?.medianMs ?? 1), 10);
    expect(config?.percentOfFloor.baseline).toBeCloseTo(25, 10);
  });

  it("keeps the harness's phases of the final checks out of it (they are for the log)", async () => {
    const { rechecker } = fakeRechecker({
      verify: () => ({
        ok: true,
        status: "passed",
        reason: null,
        message: "passed",
        configs: [],
        phases: { candidate: 3.2 },
      }),
    });
    const result = await resultOf(rechecker);
    expect(result.verification.ok).toBe(true);
    expect(Object.keys(result.verification)).not.toContain("phases");
  });

  it("carries a unified diff that turns the original into the best kernel", async () => {
    const result = await resultOf();
    const best = result.best;
    if (best === null) throw new Error("no best kernel");
    expect(best.diff).toContain("--- a/kernels/softmax/kernel.cu");
    expect(best.diff).toContain("+++ b/kernels/softmax/kernel.cu");
    expect(applyPatch(ORIGINAL, best.diff)).toBe(best.source);
  });

  it("has no best kernel when nothing passed, and is no win", async () => {
    const { rechecker } = fakeRechecker({
      verify: () => ({
        ok: false,
        status: "rejected",
        reason: "shape-specific",
        message: "",
        configs: [],
      }),
      time: () => ({
        ok: true,
        reason: null,
        message: "",
        configs: [finalConfig("8192x8192", null)],
      }),
    });
    const result = await resultOf(rechecker);
    expect(result.win).toBe(false);
    expect(result.best).toBeNull();
    expect(result.verification.rejected).toHaveLength(3);
    expect(result.configs[0]?.speedup.baseline).toBeNull();
    expect(result.configs[0]?.speedup.eager).toBeCloseTo(2, 10);
    expect(resultSchema.safeParse(result).success).toBe(true);
  });

  it("the summary a person reads", async () => {
    expect(
      renderOptimizeSummary(await resultOf(), ["out/result.json", "out/best.cu"]),
    ).toMatchSnapshot();
  });
});

describe("a tuner's defines, written into the source", () => {
  it("replace the default of an #ifndef guard in place (a one-line diff)", () => {
    const written = materializeDefines(ORIGINAL, { BLOCK_SIZE: "512" }, "c");
    expect(written).toContain("#define BLOCK_SIZE 512 // threads a block");
    expect(written.split("\n")).toHaveLength(ORIGINAL.split("\n").length);
  });

  it("go on top where the source has no default of its own", () => {
    expect(materializeDefines("__global__ void k() {}\n", { VEC: "4", A: "1" }, "c")).toBe(
      "#define A 1\n#define VEC 4\n__global__ void k() {}\n",
    );
    expect(materializeDefines("def forward(x): ...\n", { VEC: "4" }, "python")).toBe(
      "def forward(x): ...\n",
    );
  });
});
