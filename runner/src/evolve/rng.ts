// The run's only source of randomness: a seeded PRNG (mulberry32), so that a run with the
// same --seed and the same proposals makes the same choices. Each proposal gets a stream
// of its own (derived from the seed and its number, archived as its generation with slot
// 0), so a resumed run draws exactly what the uninterrupted run would have drawn.

export type Rng = {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [0, n). */
  int(n: number): number;
  /** A 32-bit unsigned integer: a seed for something else. */
  seed(): number;
};

export function createRng(seed: number): Rng {
  let state = seed >>> 0;
  function next(): number {
    // mulberry32 (Tommy Ettinger): one 32-bit state, passes gjrand's tests, tiny.
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  return {
    next,
    int: (n) => Math.floor(next() * n),
    seed: () => Math.floor(next() * 4294967296) >>> 0,
  };
}

/** A seed for a sub-stream: the same parts always give the same seed (a murmur3 finaliser). */
export function deriveSeed(seed: number, ...parts: readonly number[]): number {
  let hash = seed >>> 0;
  for (const part of parts) {
    hash = Math.imul(hash ^ (part >>> 0), 0x9e3779b1) >>> 0;
    hash ^= hash >>> 16;
    hash = Math.imul(hash, 0x85ebca6b) >>> 0;
    hash ^= hash >>> 13;
    hash = Math.imul(hash, 0xc2b2ae35) >>> 0;
    hash ^= hash >>> 16;
  }
  return hash >>> 0;
}

/** An index drawn with probability proportional to its weight (weights ≥ 0, not all 0). */
export function weightedIndex(rng: Rng, weights: readonly number[]): number {
  const total = weights.reduce((sum, weight) => sum + weight, 0);
  let point = rng.next() * total;
  for (const [index, weight] of weights.entries()) {
    point -= weight;
    if (point < 0) return index;
  }
  return weights.length - 1;
}

/** Up to `count` distinct items, in the order drawn. */
export function sample<T>(rng: Rng, items: readonly T[], count: number): T[] {
  const pool = [...items];
  const drawn: T[] = [];
  while (drawn.length < count && pool.length > 0) {
    const [item] = pool.splice(rng.int(pool.length), 1);
    if (item !== undefined) drawn.push(item);
  }
  return drawn;
}
