// The offline proposer: a seeded genetic search over a kernel's tunable parameters (see
// detect-tunables.ts), and optionally over precision-keeping nvcc flags. It needs no API key
// and never changes the algorithm, only the values the author left as knobs.
//
// How it learns: every vector it proposes is remembered by the candidate it became (source
// and -D values); a candidate of an earlier run (a resumed archive) is read back from its -D
// values and edit sites. Fitness comes back two ways: `observe(individual)`, which the
// engine calls for every evaluated candidate (failed ones included), and the `best` and
// `parents` of each ProposalContext. A vector is never proposed twice, whatever became of
// it. When none is left it says "search-exhausted"; with no knob at all, "nothing-to-tune":
// proposing again is then pointless, and the engine stops.
//
// Values that do not compile: when a vector fails to build, each of its values that differs
// from the baseline and has never been part of a vector that built is set aside, and no
// vector holding one is proposed (a macro value that breaks a static_assert, say). A value
// that later builds in another vector is cleared.
//
// Search: the pool is the best `poolSize` vectors with a known fitness (the baseline counts,
// at fitness 1, until measured). For a "new" proposal, most of the time (CLIMB) the child is
// an untried vector on one axis through the fittest vector: every other parameter as the
// fittest has it, this one at any value, the nearest first (coordinate descent: a
// template's structural knobs, a vector width or a cache, are reached in one step from
// wherever the climb stands, not one neighbouring value at a time).
// The task's "constraints" (constraints.ts) say which combinations exist: no vector that
// breaks one is proposed, and the space counts only those that keep them. Otherwise it is a
// genetic child: of the context's parents when the engine chose tuner-made ones (crossover:
// two, mutation: one), else of two tournament winners from the pool; uniform crossover, then
// each gene moves to a neighbouring value with probability 1/genes (now and then a jump
// anywhere), which can cross a valley the climb would stop at. Same seed, same results →
// same proposals.
import { FLAG_DIMENSIONS, isPrecisionSafeFlag } from "./compile-flags.js";
import {
  applyTunables,
  detectTunables,
  type Tunable,
  type TunableValue,
} from "./detect-tunables.js";
import {
  ZERO_USAGE,
  type Individual,
  type ProposalContext,
  type ProposalResult,
  type Proposer,
} from "../evolve/types.js";
import { createRng, deriveSeed, type Rng } from "../evolve/rng.js";
import { parseConstraints, satisfies } from "../tasks/constraints.js";

export type TunerOptions = {
  seed: number;
  baselineSource: string;
  /** The task's declared tunables (task.json "tunables"): macro name → values. */
  tunables: Readonly<Record<string, readonly (string | number)[]>>;
  /** Rules every proposed combination satisfies (task.json "constraints", constraints.ts). */
  constraints?: readonly string[];
  /** Also search precision-keeping nvcc flags (compile-flags.ts): .cu kernels only. */
  compileFlags?: boolean;
  /** How many of the fittest vectors parents are drawn from. */
  poolSize?: number;
};

/** One axis of the search: a tunable or a flag, its values, and the baseline's choice. */
export type Dimension = {
  id: string;
  label: string;
  values: readonly TunableValue[];
  baseline: number;
};

export type Tuner = Proposer & {
  observe(individual: Individual): void;
  /**
   * The tunables' values (by id) that made a candidate this tuner proposed or recognised;
   * null for any other candidate.
   */
  valuesOf(
    candidate: Pick<Individual, "source" | "defines" | "flags">,
  ): Record<string, TunableValue> | null;
  readonly dimensions: readonly Dimension[];
  /** How many distinct vectors the space holds, the baseline's included. */
  readonly spaceSize: number;
};

type Trial = {
  vector: number[];
  /** undefined: proposed, no result yet; null: failed; a number: its fitness. */
  fitness: number | null | undefined;
  order: number;
};

type Scored = Trial & { fitness: number };

const DEFAULT_POOL = 6;
const CLIMB = 0.7;
const JUMP = 0.1;
const ATTEMPTS = 64;
const ENUMERATE_LIMIT = 200_000;

export function createTuner(options: TunerOptions): Tuner {
  const tunables = detectTunables(options.baselineSource, options.tunables);
  const flagDims = options.compileFlags === true ? FLAG_DIMENSIONS : [];
  const dimensions: Dimension[] = [
    ...tunables.map((t) => ({
      id: t.id,
      label: t.label,
      values: t.values,
      baseline: Math.max(0, t.values.indexOf(t.current)),
    })),
    ...flagDims.map((f) => ({ id: `flag:${f.id}`, label: f.label, values: f.values, baseline: 0 })),
  ];
  const rules = parseConstraints(options.constraints);
  const valid = (vector: readonly number[]) =>
    rules.length === 0 ||
    satisfies(
      rules,
      Object.fromEntries(
        tunables.map((t, i) => [t.id, dimensions[i]?.values[vector[i] ?? 0] ?? null]),
      ),
    );
  const product = dimensions.reduce((size, d) => size * d.values.length, 1);
  const spaceSize =
    rules.length === 0 || product > ENUMERATE_LIMIT
      ? product
      : Array.from({ length: product }, (_, n) => decode(n)).filter(valid).length;
  const poolSize = options.poolSize ?? DEFAULT_POOL;
  const baselineVector = dimensions.map((d) => d.baseline);
  const trials = new Map<string, Trial>();
  const byCandidate = new Map<string, string[]>();
  let proposals = 0;
  /** "dimension:gene" of values seen in a vector that built, and in one that did not. */
  const built = new Set<string>();
  const unbuildable = new Set<string>();

  trials.set(keyOf(baselineVector), { vector: baselineVector, fitness: 1, order: -1 });
  byCandidate.set(candidateKey(options.baselineSource, {}, []), [keyOf(baselineVector)]);

  function observe(individual: Individual): void {
    const candidate = candidateKey(individual.source, individual.defines, individual.flags);
    let keys = byCandidate.get(candidate);
    if (keys === undefined) {
      // Made by an earlier run of this search (a resumed archive), or not one of ours.
      const vector = recognise(individual, candidate);
      if (vector === null) return;
      const key = keyOf(vector);
      keys = [key];
      byCandidate.set(candidate, keys);
      if (!trials.has(key)) trials.set(key, { vector, fitness: undefined, order: -1 });
    }
    const { ok, fitness, stage } = individual.evaluation;
    const builds = stage !== "static" && stage !== "compile";
    for (const key of keys) {
      const trial = trials.get(key);
      if (trial === undefined) continue;
      trial.fitness = ok && fitness !== null ? fitness : null;
      trial.vector.forEach((gene, i) => {
        if (gene === dimensions[i]?.baseline) return;
        (builds ? built : unbuildable).add(`${i}:${gene}`);
      });
    }
  }

  /** Proposed before, breaks a constraint, or holds a value that has only ever failed to build. */
  function skip(vector: readonly number[]): boolean {
    if (trials.has(keyOf(vector))) return true;
    if (!valid(vector)) return true;
    return vector.some((gene, i) => {
      const value = `${i}:${gene}`;
      return unbuildable.has(value) && !built.has(value);
    });
  }

  /**
   * The vector that made `individual`, read back from its -D values and the text at each
   * edit site (offsets shifted by the edits before it); null unless re-applying that vector
   * gives the very same candidate. Its nvcc flags are read back from `flags`.
   */
  function recognise(individual: Individual, candidate: string): number[] | null {
    if (Object.keys(individual.defines).some((name) => !tunables.some((t) => t.id === name))) {
      return null;
    }
    if (individual.flags.some((flag) => !flagDims.some((d) => d.values.includes(flag)))) {
      return null;
    }
    const chosen: (TunableValue | undefined)[] = tunables.map((t) =>
      t.kind === "define" ? (individual.defines[t.id] ?? t.current) : undefined,
    );
    const sites = tunables
      .flatMap((t, index) => t.sites.map((site) => ({ t, index, site })))
      .sort((a, b) => a.site.start - b.site.start);
    let shift = 0;
    for (const { t, index, site } of sites) {
      const rest = individual.source.slice(site.start + shift);
      const token =
        t.kind === "min-blocks"
          ? (/^, *(\d+)/.exec(rest) ?? ["", null])
          : t.kind === "macro" && typeof t.current !== "number"
            ? (/^[^\n]*?(?=[ \t]*(\n|$))/.exec(rest) ?? [""])
            : (/^\w+/.exec(rest) ?? [""]);
      const text = t.kind === "min-blocks" ? token[1] : token[0];
      const value =
        text === null || text === undefined ? null : /^\d+$/.test(text) ? Number(text) : text;
      if (chosen[index] !== undefined && chosen[index] !== value) return null;
      chosen[index] = value;
      shift += token[0].length - (site.end - site.start);
    }
    const vector = dimensions.map((d, i) => {
      if (i >= tunables.length) {
        // the one value of this flag dimension the candidate was built with; none: left out
        const given = d.values.flatMap((v, gene) =>
          v !== null && individual.flags.includes(String(v)) ? [gene] : [],
        );
        return given.length > 1 ? -1 : (given[0] ?? d.baseline);
      }
      const value = chosen[i] ?? null;
      return d.values.findIndex((v) => v === value || String(v) === String(value));
    });
    if (vector.some((gene) => gene < 0)) return null;
    const choice = vector
      .slice(0, tunables.length)
      .map((gene, i) => dimensions[i]?.values[gene] ?? null);
    const rebuilt = applyTunables(options.baselineSource, tunables, choice);
    const flags = flagsOf(vector);
    return candidateKey(rebuilt.source, rebuilt.defines, flags) === candidate ? vector : null;
  }

  function pool(): Scored[] {
    return [...trials.values()]
      .filter((t): t is Scored => typeof t.fitness === "number")
      .sort((a, b) => b.fitness - a.fitness || a.order - b.order)
      .slice(0, poolSize);
  }

  function known(individual: Individual | undefined): number[] | null {
    if (individual === undefined) return null;
    const key = byCandidate.get(
      candidateKey(individual.source, individual.defines, individual.flags),
    )?.[0];
    return key === undefined ? null : (trials.get(key)?.vector ?? null);
  }

  function parentsFor(context: ProposalContext, rng: Rng): [number[], number[]] {
    const [a, b] = context.parents.map(known);
    if (context.operator === "crossover" && a && b) return [a, b];
    if (context.operator === "mutation" && a) return [a, a];
    const candidates = pool();
    const tournament = () => {
      const x = candidates[rng.int(candidates.length)];
      const y = candidates[rng.int(candidates.length)];
      const winner = x && y ? (y.fitness > x.fitness ? y : x) : (x ?? y);
      return winner?.vector ?? baselineVector;
    };
    return [tournament(), tournament()];
  }

  function mutate(vector: number[], rng: Rng, force: boolean): number[] {
    const out = [...vector];
    const rate = 1 / dimensions.length;
    let changed = false;
    dimensions.forEach((d, i) => {
      if (rng.next() >= rate) return;
      out[i] = move(d, out[i] ?? d.baseline, rng);
      changed = true;
    });
    if (force && !changed) {
      const i = rng.int(dimensions.length);
      const d = dimensions[i];
      if (d !== undefined) out[i] = move(d, out[i] ?? d.baseline, rng);
    }
    return out;
  }

  function child(context: ProposalContext, rng: Rng): number[] | null {
    // Half the time, a step from the fittest to an untried neighbour (hill climbing); the
    // rest, a genetic child, which can leap across a valley the climb would stop at.
    const fittest = pool()[0]?.vector ?? baselineVector;
    if (context.operator === "new" && rng.next() < CLIMB) {
      const step = neighbour(rng, fittest);
      if (step !== null) return step;
    }
    const [a, b] = parentsFor(context, rng);
    let vector = a.map((gene, i) => (rng.next() < 0.5 ? gene : (b[i] ?? gene)));
    vector = mutate(vector, rng, skip(vector));
    for (let attempt = 0; attempt < ATTEMPTS && skip(vector); attempt++)
      vector = mutate(vector, rng, true);
    if (!skip(vector)) return vector;
    return untried(rng, pool()[0]?.vector ?? baselineVector);
  }

  /**
   * An untried vector on one axis through `near` (one dimension changed, to any value), or
   * null: an axis drawn at random among those with one left, and on it the value nearest to
   * `near`'s (ties: either side at random).
   */
  function neighbour(rng: Rng, near: number[]): number[] | null {
    const lines: number[][][] = [];
    dimensions.forEach((d, i) => {
      const here = near[i] ?? 0;
      const line: number[][] = [];
      for (let gene = 0; gene < d.values.length; gene++) {
        if (gene === here) continue;
        const vector = [...near];
        vector[i] = gene;
        if (!skip(vector)) line.push(vector);
      }
      if (line.length > 0) lines.push(line);
    });
    const line = lines[rng.int(lines.length)];
    if (line === undefined) return null;
    const axis = line[0]?.findIndex((gene, i) => gene !== near[i]) ?? 0;
    const distance = (v: number[]) => Math.abs((v[axis] ?? 0) - (near[axis] ?? 0));
    const nearest = Math.min(...line.map(distance));
    const closest = line.filter((v) => distance(v) === nearest);
    return closest[rng.int(closest.length)] ?? null;
  }

  /** An untried vector: a neighbour of `near` if one is left, else any (random) one. */
  function untried(rng: Rng, near: number[]): number[] | null {
    const step = neighbour(rng, near);
    if (step !== null) return step;
    if (trials.size >= spaceSize) return null;
    if (spaceSize <= ENUMERATE_LIMIT) {
      const left: number[][] = [];
      for (let n = 0; n < spaceSize; n++) {
        const vector = decode(n);
        if (!skip(vector)) left.push(vector);
      }
      return left[rng.int(left.length)] ?? null;
    }
    for (let attempt = 0; attempt < ATTEMPTS * 16; attempt++) {
      const vector = dimensions.map((d) => rng.int(d.values.length));
      if (!skip(vector)) return vector;
    }
    return null;
  }

  function decode(n: number): number[] {
    return dimensions.map((d) => {
      const gene = n % d.values.length;
      n = Math.floor(n / d.values.length);
      return gene;
    });
  }

  /** The nvcc flags a vector chooses (its genes after the tunables'). */
  function flagsOf(vector: readonly number[]): string[] {
    return vector
      .slice(tunables.length)
      .map((gene, i) => dimensions[tunables.length + i]?.values[gene])
      .filter((flag): flag is string => typeof flag === "string");
  }

  function build(vector: number[], from: string): ProposalResult {
    const choice = vector.map((gene, i) => dimensions[i]?.values[gene] ?? null);
    const { source, defines } = applyTunables(
      options.baselineSource,
      tunables,
      choice.slice(0, tunables.length),
    );
    const flags = flagsOf(vector);
    const unsafe = flags.find((flag) => !isPrecisionSafeFlag(flag));
    if (unsafe !== undefined)
      throw new Error(`the tuner chose a flag off its allow-list: ${unsafe}`);
    const changes = describe(vector, dimensions, tunables);
    const key = candidateKey(source, defines, flags);
    byCandidate.set(key, [...(byCandidate.get(key) ?? []), keyOf(vector)]);
    const proposal = {
      name: `tune ${changes.map((c) => c.short).join(" ") || "baseline"}`,
      source,
      defines,
      insight:
        `Tuner (genetic search over ${dimensions.length} parameters, ${from}): ` +
        (changes.map((c) => c.long).join("; ") || "the baseline's values") +
        ". The algorithm is the baseline's; only these knobs differ.",
      ...(flagDims.length > 0 ? { flags } : {}),
    };
    return { ok: true, proposal, usage: ZERO_USAGE };
  }

  async function propose(context: ProposalContext): Promise<ProposalResult> {
    if (dimensions.length === 0) {
      return {
        ok: false,
        reason: "nothing-to-tune",
        final: true,
        message:
          "nothing to tune: the task declares no tunables and the kernel has no #define or " +
          "constexpr knob, literal block size, #pragma unroll N or __launch_bounds__",
        usage: ZERO_USAGE,
      };
    }
    for (const individual of [context.best, ...context.parents]) observe(individual);
    const rng = createRng(deriveSeed(options.seed, context.seed, proposals));
    const vector = child(context, rng);
    if (vector === null) {
      return {
        ok: false,
        reason: "search-exhausted",
        final: true,
        message: `every one of the ${spaceSize} combinations of ${dimensions.length} parameters was tried`,
        usage: ZERO_USAGE,
      };
    }
    trials.set(keyOf(vector), { vector, fitness: undefined, order: proposals });
    proposals += 1;
    const from =
      context.operator === "crossover" && context.parents.length === 2
        ? "crossover of two parents"
        : context.operator === "mutation"
          ? "mutation of a parent"
          : "from the fittest so far";
    return await Promise.resolve(build(vector, from));
  }

  function valuesOf(
    candidate: Pick<Individual, "source" | "defines" | "flags">,
  ): Record<string, TunableValue> | null {
    const key = byCandidate.get(candidateKey(candidate.source, candidate.defines, candidate.flags));
    const vector = key?.[0] === undefined ? undefined : trials.get(key[0])?.vector;
    if (vector === undefined) return null;
    return Object.fromEntries(
      tunables.map((t, i) => [t.id, dimensions[i]?.values[vector[i] ?? 0] ?? null]),
    );
  }

  return { name: "tuner", propose, observe, valuesOf, dimensions, spaceSize };
}

function move(d: Dimension, gene: number, rng: Rng): number {
  const n = d.values.length;
  if (n < 2) return gene;
  if (rng.next() < JUMP) {
    const jump = rng.int(n - 1);
    return jump >= gene ? jump + 1 : jump;
  }
  if (gene <= 0) return 1;
  if (gene >= n - 1) return n - 2;
  return rng.next() < 0.5 ? gene - 1 : gene + 1;
}

function describe(
  vector: number[],
  dimensions: readonly Dimension[],
  tunables: readonly Tunable[],
) {
  const out: { short: string; long: string }[] = [];
  vector.forEach((gene, i) => {
    const d = dimensions[i];
    if (d === undefined || gene === d.baseline) return;
    const show = (v: TunableValue | undefined) =>
      v === null || v === undefined ? "unset" : String(v);
    const value = d.values[gene];
    const kind = tunables[i]?.kind;
    out.push({
      short: `${d.id}=${show(value)}`,
      long:
        `${d.label} ${show(d.values[d.baseline])} → ${show(value)}` +
        (kind === "define" ? " (-D)" : kind === undefined ? "" : " (source edit)"),
    });
  });
  return out;
}

function keyOf(vector: readonly number[]): string {
  return vector.join(",");
}

/** What identifies a candidate the tuner made: its source (blank space folded) and -D values. */
function candidateKey(
  source: string,
  defines: Readonly<Record<string, string>>,
  flags: readonly string[],
): string {
  const sorted = Object.entries(defines).sort(([a], [b]) => a.localeCompare(b));
  const flagList = [...flags].sort();
  return `${source.replace(/\s+/g, " ").trim()}\0${JSON.stringify([sorted, flagList])}`;
}
