// Configuration classes for shape-keyed tuning: a rule that sorts a call's shapes into at
// most four classes (rows short or long, size small or large), derived once from the task's
// visible configurations. Pure.
//
// The rule reads the first input of a call: its last dimension is the row length, its
// element count the size. On each axis, the visible configurations' distinct values are
// sorted and the axis is split at the widest gap between neighbours when that gap is at
// least ×4 (a 2× change in size rarely changes which launch shape wins; the row length of a
// short-row and a long-row task differ by far more). The threshold is the geometric middle
// of the gap, rounded down: a value at or under it is "short" (or "small"). Classes that no
// visible configuration falls in are kept out of the search; a call in one of them goes to
// the class of the same row length (else of the same size) — see `targetOf`.
//
// softmax (rows 1024, 5003, 8192; sizes 20.5M, 33.5M, 67.1M): rows split at 2263 (the 1024
// → 5003 gap, ×4.9), sizes not split (widest gap ×2.0) — two classes: short rows
// (32768x1024, and the held-out 12289x999) and long rows (8192x8192, 4097x5003, 777x65537).

export type ClassRule = {
  /** Rows of at most this many elements are short; null: the rows are not split. */
  row: number | null;
  /** Calls of at most this many elements are small; null: sizes are not split. */
  size: number | null;
};

export type ShapeClass = {
  /** "short-rows", "long-rows-large", … ("all" when nothing is split). */
  id: string;
  short: boolean | null;
  small: boolean | null;
  /** The visible configurations in this class. */
  configs: string[];
};

export type ShapedConfig = { name: string; shapes?: readonly (readonly number[])[] };

/** The widest gap a split needs (ratio of neighbouring distinct values). */
export const SPLIT_GAP = 4;

export function classRule(configs: readonly ShapedConfig[]): ClassRule {
  const firsts = configs.flatMap((config) => {
    const shape = config.shapes?.[0];
    return shape === undefined ? [] : [shape];
  });
  return {
    row: splitOf(firsts.map((shape) => shape.at(-1) ?? 1)),
    size: splitOf(firsts.map(numel)),
  };
}

/** The class of a call whose first input has `shape` (it may be one no configuration has). */
export function classOf(rule: ClassRule, shape: readonly number[]): ShapeClass {
  const short = rule.row === null ? null : (shape.at(-1) ?? 1) <= rule.row;
  const small = rule.size === null ? null : numel(shape) <= rule.size;
  return { id: idOf(short, small), short, small, configs: [] };
}

/** The classes the visible configurations fall in, in a fixed order, each with its configs. */
export function classesOf(rule: ClassRule, configs: readonly ShapedConfig[]): ShapeClass[] {
  const found = new Map<string, ShapeClass>();
  for (const config of configs) {
    const shape = config.shapes?.[0];
    if (shape === undefined) continue;
    const cls = classOf(rule, shape);
    const known = found.get(cls.id) ?? cls;
    known.configs.push(config.name);
    found.set(cls.id, known);
  }
  return allClasses(rule).flatMap((cls) => {
    const known = found.get(cls.id);
    return known === undefined ? [] : [known];
  });
}

/** Every class the rule can give, kept ones or not: short before long, small before large. */
export function allClasses(rule: ClassRule): ShapeClass[] {
  const rows = rule.row === null ? [null] : [true, false];
  const sizes = rule.size === null ? [null] : [true, false];
  return rows.flatMap((short) =>
    sizes.map((small) => ({ id: idOf(short, small), short, small, configs: [] })),
  );
}

/**
 * Which of the `kept` classes a call in `cls` is served by: itself when kept, else the kept
 * class with its row length, else the one with its size, else the first.
 */
export function targetOf(cls: ShapeClass, kept: readonly ShapeClass[]): number {
  const exact = kept.findIndex((k) => k.id === cls.id);
  if (exact >= 0) return exact;
  const sameRows = kept.findIndex((k) => k.short === cls.short);
  if (sameRows >= 0) return sameRows;
  const sameSize = kept.findIndex((k) => k.small === cls.small);
  return Math.max(0, sameSize);
}

/** A person's description of the rule: "rows ≤ 2263 elements are short". */
export function describeRule(rule: ClassRule): string {
  const parts = [
    rule.row === null ? null : `rows of at most ${rule.row} elements are short`,
    rule.size === null ? null : `calls of at most ${rule.size} elements are small`,
  ].filter((part): part is string => part !== null);
  return parts.length === 0 ? "one class: the configurations' shapes are alike" : parts.join("; ");
}

function splitOf(values: readonly number[]): number | null {
  const distinct = [...new Set(values.filter((v) => v > 0))].sort((a, b) => a - b);
  let best: { ratio: number; at: number } | null = null;
  for (let i = 1; i < distinct.length; i++) {
    const [lo, hi] = [distinct[i - 1] ?? 1, distinct[i] ?? 1];
    const ratio = hi / lo;
    if (ratio >= SPLIT_GAP && (best === null || ratio > best.ratio)) {
      best = { ratio, at: Math.floor(Math.sqrt(lo * hi)) };
    }
  }
  return best?.at ?? null;
}

function numel(shape: readonly number[]): number {
  return shape.reduce((n, d) => n * d, 1);
}

function idOf(short: boolean | null, small: boolean | null): string {
  const parts = [
    short === null ? null : short ? "short-rows" : "long-rows",
    small === null ? null : small ? "small" : "large",
  ].filter((part): part is string => part !== null);
  return parts.length === 0 ? "all" : parts.join("-");
}
