// runner/scripts/tuner-replay.ts: the real engine and tuners against the H100's template sweep
// of softmax (docs/results/gpu-2026-11-26c). A plain tuner's candidate is one value set, so it
// can never beat the table's best single set; the shape-keyed tuner's can go past that, up to
// the best with one set per class of shapes; racing stops candidates only when it is on.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { replay, type Sweep } from "../../runner/scripts/tuner-replay.js";
import { repo } from "../helpers/cli.js";

const sweep = JSON.parse(
  readFileSync(join(repo, "docs/results/gpu-2026-11-26c/sweep_softmax/sweep/softmax.json"), "utf8"),
) as Sweep;

describe("the tuners replayed on a measured sweep", () => {
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
