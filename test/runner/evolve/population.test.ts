// Selection under a fixed seed: parents by rank with p ∝ 1/(rank + N), survivors by fitness,
// and the PRNG that makes both reproducible.
import { describe, expect, it } from "vitest";
import {
  rankProbabilities,
  sampleInsights,
  selectParents,
  survivors,
} from "../../../runner/src/evolve/population.js";
import { createRng, deriveSeed, sample } from "../../../runner/src/evolve/rng.js";
import type { Individual } from "../../../runner/src/evolve/types.js";
import { evaluationOf } from "./fakes.js";

function individual(id: string, source: string, insight = ""): Individual {
  return {
    id,
    hash: id,
    source,
    defines: {},
    flags: [],
    parents: [],
    insight,
    proposer: "fake",
    evaluation: evaluationOf(source),
  };
}

const population = [1.9, 1.7, 1.5, 1.3, 1.1].map((speed, rank) =>
  individual(`r${rank}`, `speed=${speed}`, `insight ${rank}`),
);

describe("the seeded PRNG", () => {
  it("gives the same sequence for the same seed, another for another seed", () => {
    const draw = (seed: number) => {
      const rng = createRng(seed);
      return Array.from({ length: 5 }, () => rng.next());
    };
    expect(draw(42)).toEqual(draw(42));
    expect(draw(42)).not.toEqual(draw(43));
    for (const value of draw(7)) expect(value).toBeGreaterThanOrEqual(0);
    for (const value of draw(7)) expect(value).toBeLessThan(1);
  });

  it("mulberry32: the first draws of seed 1 are the published ones", () => {
    const rng = createRng(1);
    expect(rng.next()).toBeCloseTo(0.6270739405881613, 12);
    expect(rng.next()).toBeCloseTo(0.002735721180215478, 12);
  });

  it("derives distinct, stable sub-seeds", () => {
    expect(deriveSeed(7, 1, 0)).toBe(deriveSeed(7, 1, 0));
    const seeds = new Set([deriveSeed(7, 1, 0), deriveSeed(7, 1, 1), deriveSeed(7, 2, 0)]);
    expect(seeds.size).toBe(3);
  });

  it("samples without replacement", () => {
    const drawn = sample(createRng(3), [1, 2, 3, 4, 5], 3);
    expect(new Set(drawn).size).toBe(3);
    expect(sample(createRng(3), [1, 2], 5)).toHaveLength(2);
  });
});

describe("parents by rank", () => {
  it("p ∝ 1/(rank + N): the published weights for N = 5", () => {
    const p = rankProbabilities(5);
    const weights = [1 / 5, 1 / 6, 1 / 7, 1 / 8, 1 / 9];
    const total = weights.reduce((a, b) => a + b);
    expect(p.map((x) => x.toFixed(6))).toEqual(weights.map((w) => (w / total).toFixed(6)));
  });

  it("draws each rank as often as its probability says (fixed seed, 100 000 draws)", () => {
    const rng = createRng(2024);
    const counts = new Map<string, number>();
    const draws = 100_000;
    for (let i = 0; i < draws; i += 1) {
      const [parent] = selectParents(rng, population, 1);
      if (parent !== undefined) counts.set(parent.id, (counts.get(parent.id) ?? 0) + 1);
    }
    const expected = rankProbabilities(5);
    for (const [rank, probability] of expected.entries()) {
      const observed = (counts.get(`r${rank}`) ?? 0) / draws;
      // 100 000 draws: a standard error under 0.0015; 0.005 is over three of them
      expect(Math.abs(observed - probability)).toBeLessThan(0.005);
    }
    // the best is drawn more often than the worst, by the ratio of their weights (9/5)
    const ratio = (counts.get("r0") ?? 0) / (counts.get("r4") ?? 1);
    expect(ratio).toBeGreaterThan(1.7);
    expect(ratio).toBeLessThan(1.9);
  });

  it("crossover gets two distinct parents; a population of one gives one", () => {
    const rng = createRng(5);
    for (let i = 0; i < 200; i += 1) {
      const [a, b] = selectParents(rng, population, 2);
      expect(a?.id).not.toBe(b?.id);
    }
    expect(selectParents(rng, population.slice(0, 1), 2)).toHaveLength(1);
  });

  it("is the same draw for the same seed", () => {
    const ids = (seed: number) =>
      Array.from({ length: 20 }, () => seed).map((_, i) =>
        selectParents(createRng(seed + i), population, 2)
          .map((p) => p.id)
          .join(","),
      );
    expect(ids(11)).toEqual(ids(11));
  });
});

describe("survivors by fitness", () => {
  it("keeps the N fittest verified candidates, best first; failures never survive", () => {
    const candidates = [
      individual("a", "speed=1.2"),
      individual("b", "speed=2.0 fail=verify"),
      individual("c", "speed=1.5"),
      individual("d", "fail=compile"),
      individual("e", "speed=0.9"),
      individual("f", "speed=1.4"),
    ];
    expect(survivors(candidates, 3).map((s) => s.id)).toEqual(["c", "f", "a"]);
    expect(survivors(candidates, 10).map((s) => s.id)).toEqual(["c", "f", "a", "e"]);
  });

  it("breaks ties by age: the earlier candidate stays", () => {
    const candidates = [individual("old", "speed=1.5"), individual("new", "speed=1.5")];
    expect(survivors(candidates, 1).map((s) => s.id)).toEqual(["old"]);
  });

  it("selecting per generation equals selecting once over everything", () => {
    const all = Array.from({ length: 12 }, (_, i) =>
      individual(`c${i}`, `speed=${((i * 7) % 11) / 5 + 0.5}`),
    );
    let population: Individual[] = [];
    for (let start = 0; start < all.length; start += 4) {
      population = survivors([...population, ...all.slice(start, start + 4)], 5);
    }
    // per generation the earlier candidates come first too, so ties resolve the same way
    expect(population.map((p) => p.id)).toEqual(survivors(all, 5).map((p) => p.id));
  });

  it("samples distinct, non-empty insights", () => {
    const withEmpty = [...population, individual("x", "speed=1", "  ")];
    const insights = sampleInsights(createRng(1), withEmpty, 3);
    expect(insights).toHaveLength(3);
    expect(new Set(insights).size).toBe(3);
    expect(insights.every((text) => text.startsWith("insight"))).toBe(true);
  });
});
