// runner/scripts/tuner-replay.ts: the real engine and tuners against the H100's template sweep
// of softmax (results branch: results/gpu-2026-11-26c; the sweeps in
// test/fixtures/lab/tuner-replay keep of each row only its combination and verdict, what the
// replay reads). A plain tuner's candidate is one value set, so it can never beat the table's best single set; the shape-keyed tuner's can go past that, up to
// the best with one set per class of shapes; racing stops candidates only when it is on.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { keptByFinalRule, replay, type Sweep } from "../../runner/scripts/tuner-replay.js";
import type { Individual } from "../../runner/src/evolve/types.js";
import { repo } from "../helpers/cli.js";

const sweep = JSON.parse(
  readFileSync(join(repo, "test/fixtures/lab/tuner-replay/softmax.json"), "utf8"),
) as Sweep;

// results branch: results/gpu-2026-11-26g/sweep_softmax_bf16_layernorm_bf16_fused_elementwise_
// rmsnorm_backward_gemm_bias_relu/sweep/softmax_bf16.json
const bf16 = JSON.parse(
  readFileSync(join(repo, "test/fixtures/lab/tuner-replay/softmax_bf16.json"), "utf8"),
) as Sweep;

describe("the tuners replayed on a measured sweep", () => {
  it("races without losing what racing off finds, where short and long rows want different kernels", async () => {
    // softmax_bf16: the sets that win overall lose the first configuration (long rows); a
    // race on the configurations timed so far stopped them (1.49-1.51x kept, not 1.61-1.74x)
    const raced = await replay(bf16, {
      proposer: "tuner",
      candidates: 40,
      seeds: [1, 2, 3],
      race: true,
    });
    const plain = await replay(bf16, {
      proposer: "tuner",
      candidates: 40,
      seeds: [1, 2, 3],
      race: false,
    });
    expect(raced.runs.map((run) => run.best)).toEqual(plain.runs.map((run) => run.best));
    for (const run of raced.runs) expect(run.best).toBeGreaterThan(1.6);
    expect(raced.runs.every((run) => run.raced > 0)).toBe(true);
  });

  it("the plain tuner stays within the best single set, and races only when racing is on", async () => {
    const raced = await replay(sweep, {
      proposer: "tuner",
      candidates: 24,
      seeds: [1, 2],
      race: true,
    });
    expect(raced.classOptimum).toBeGreaterThan(raced.optimum);
    for (const run of raced.runs) {
      expect(run.best).toBeGreaterThan(1);
      expect(run.best).toBeLessThanOrEqual(raced.optimum + 1e-9);
      expect(run.outside).toBe(0);
    }
    expect(raced.runs.some((run) => run.raced > 0)).toBe(true);
    const plain = await replay(sweep, {
      proposer: "tuner",
      candidates: 24,
      seeds: [1],
      race: false,
    });
    expect(plain.runs[0]?.raced).toBe(0);
  });

  it("the shape-keyed tuner goes past the best single set, up to one set per class", async () => {
    const shaped = await replay(sweep, {
      proposer: "shape-tuner",
      candidates: 40,
      seeds: [1],
      race: true,
    });
    const best = shaped.runs[0]?.best ?? 0;
    expect(best).toBeGreaterThan(shaped.optimum);
    expect(best).toBeLessThanOrEqual(shaped.classOptimum + 1e-9);
  });
});

/** A survivor timed on two configurations: its times against the kernel to beat's (1 ms), ±1 %. */
function timed(id: string, a: number, b: number): Individual {
  const timing = (config: string, ms: number) => ({
    config,
    medianMs: ms,
    p20Ms: ms * 0.99,
    p80Ms: ms * 1.01,
    baselineMs: 1,
    baselineP20Ms: 0.99,
    baselineP80Ms: 1.01,
  });
  const timings = [timing("long", a), timing("short", b)];
  return {
    id,
    evaluation: { ok: true, fitness: 1 / Math.sqrt(a * b), timings },
  } as unknown as Individual;
}

describe("what the final checks' rule keeps of a replayed population", () => {
  it("passes over a kernel slower on a configuration, and keeps the next that is not", () => {
    // c1 is fastest overall but 5 % slower on "short": the final checks refuse it
    const population = [timed("c1", 0.5, 1.05), timed("c2", 0.8, 0.99), timed("c3", 0.9, 1)];
    expect(keptByFinalRule(population)).toBeCloseTo(1 / Math.sqrt(0.8 * 0.99), 6);
  });

  it("keeps nothing when every contender is slower somewhere, or none is faster", () => {
    expect(keptByFinalRule([timed("c1", 0.5, 1.05), timed("c2", 0.6, 1.04)])).toBe(1);
    expect(keptByFinalRule([timed("c1", 1.01, 1)])).toBe(1);
  });
});
