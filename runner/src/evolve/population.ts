// The population and EvoEngineer's two selections: parents by rank (p ∝ 1/(rank + N), the
// best at rank 0, N the population size) and survivors by fitness (the best N verified
// candidates). The population is always sorted best first.
import { sample, weightedIndex, type Rng } from "./rng.js";
import type { Individual } from "./types.js";

/** Passed every check and was timed: it can be a parent, a survivor, the best. */
export function isViable(individual: Individual): boolean {
  return individual.evaluation.ok && individual.evaluation.fitness !== null;
}

function fitnessOf(individual: Individual): number {
  return individual.evaluation.fitness ?? 0;
}

/**
 * The best `size` viable candidates, best first. `candidates` come in the order they were
 * proposed; ties keep that order (the older candidate wins), so the result depends on
 * nothing but the candidates. Taking the best N is associative: selecting after every
 * proposal gives the same population as selecting once over all of them.
 */
export function survivors(candidates: readonly Individual[], size: number): Individual[] {
  return candidates
    .filter(isViable)
    .map((individual, order) => ({ individual, order }))
    .sort((a, b) => fitnessOf(b.individual) - fitnessOf(a.individual) || a.order - b.order)
    .slice(0, size)
    .map(({ individual }) => individual);
}

/** p ∝ 1/(rank + N) for ranks 0 … N−1, normalised. */
export function rankProbabilities(size: number): number[] {
  const weights = Array.from({ length: size }, (_, rank) => 1 / (rank + size));
  const total = weights.reduce((sum, weight) => sum + weight, 0);
  return weights.map((weight) => weight / total);
}

/** `count` distinct parents drawn by rank (fewer when the population is smaller). */
export function selectParents(
  rng: Rng,
  population: readonly Individual[],
  count: number,
): Individual[] {
  const remaining = population.map((individual, rank) => ({ individual, rank }));
  const chosen: Individual[] = [];
  while (chosen.length < count && remaining.length > 0) {
    // Weights stay those of the original ranks: drawing the best does not promote the rest.
    const weights = remaining.map(({ rank }) => 1 / (rank + population.length));
    const [picked] = remaining.splice(weightedIndex(rng, weights), 1);
    if (picked !== undefined) chosen.push(picked.individual);
  }
  return chosen;
}

/** Up to `count` distinct non-empty insights of the population, drawn uniformly. */
export function sampleInsights(
  rng: Rng,
  population: readonly Individual[],
  count: number,
): string[] {
  const insights = [...new Set(population.map((individual) => individual.insight.trim()))];
  return sample(
    rng,
    insights.filter((insight) => insight !== ""),
    count,
  );
}
