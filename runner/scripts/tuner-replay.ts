// The offline tuners replayed against a template sweep's measured table (no GPU): the real
// engine (evolve/engine.ts) and proposer (tuner or shape-tuner) propose as in `optimize`, and a
// stand-in evaluator answers each candidate with the times lab/template-sweep.py measured
// for its combination (round 1's median per configuration; the kernel to beat is the
// template's defaults). With racing on (as in `optimize`), a candidate is stopped once its
// speedups on the configurations timed so far, with the most a kernel could gain on the rest
// (the sweep's floors), cannot reach its context's leader's over them all, as the harness's
// screen does (bench.py _race), with a ±1 % band standing for the noise.
//   npm run build && node dist/runner/scripts/tuner-replay.js SWEEP.json
//     [--proposer tuner|shape-tuner] [--candidates 40] [--seeds 1-20] [--parallel 8] [--no-race]
//     [--json]
// Prints the fitness (geometric mean speedup over the defaults, in the table) of the best the
// search kept, beside the table's best single combination and its best with one combination
// per class of shapes (the shape-keyed tuner's ceiling): how much of what the template allows
// a search of that size finds. Not modelled: nvcc flags, knobs the sweep did not vary (they
// count as the defaults'), noise beyond the band, and the final checks.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { memoryArchive } from "../src/evolve/archive.js";
import { runEngine } from "../src/evolve/engine.js";
import { noFasterWhereLost } from "../src/evolve/final.js";
import { geometricMean, judgeTimings } from "../src/evolve/noise.js";
import type {
  ConfigTiming,
  Evaluation,
  Evaluator,
  Individual,
  Variant,
} from "../src/evolve/types.js";
import { repoRoot } from "../src/paths.js";
import { createProposer } from "../src/proposers/index.js";
import { classOf, classRule, classesOf } from "../src/proposers/shape-classes.js";
import { parseExpression } from "../src/tasks/expression.js";

const BAND = 0.01;
/** bench.py's BELOW_FLOOR: a time under 85 % of the floor is refused, so none is faster. */
const BELOW_FLOOR = 0.85;

type Values = Record<string, string | number>;
export type Sweep = {
  task: string;
  default: Values;
  rows: { combo: Values; ok: boolean }[];
  timing: {
    round1: Record<string, Record<string, number>>;
    /** Each configuration's roofline floor, as the sweep measured it. */
    configs?: { name: string; floorMs: number }[];
  };
};
type Spec = {
  name: string;
  kernel: string;
  inputs: { shape: (number | string)[] }[];
  configs: { name: string; dims: Record<string, number> }[];
  tunables: Record<string, (string | number)[]>;
  constraints?: string[];
};
type Config = Spec["configs"][number] & { shapes: number[][] };
export type ReplayOptions = {
  proposer: "tuner" | "shape-tuner";
  candidates: number;
  seeds: number[];
  race: boolean;
  /** Proposals in flight (the engine's lag): optimize's default for the tuners, 8. */
  parallel?: number;
};
export type Replay = {
  optimum: number;
  classOptimum: number;
  /** best: the fittest the search kept; kept: what the final checks' rule would keep (keptByFinalRule). */
  runs: { seed: number; best: number; kept: number; raced: number; outside: number }[];
};

const keyOf = (values: Values, names: string[]) =>
  names.map((name) => `${name}=${String(values[name])}`).join(" ");

/** Each input's shape in a configuration (sizes are numbers, or expressions over the dims). */
function shapesOf(spec: Spec, dims: Record<string, number>): number[][] {
  return spec.inputs.map((input) =>
    input.shape.map((size) =>
      typeof size === "number" ? size : parseExpression(size).evaluate(dims),
    ),
  );
}

export async function replay(sweep: Sweep, options: ReplayOptions): Promise<Replay> {
  const root = repoRoot();
  const spec = JSON.parse(
    readFileSync(join(root, "kernels", sweep.task, "task.json"), "utf8"),
  ) as Spec;
  const source = readFileSync(join(root, "kernels", sweep.task, spec.kernel), "utf8");
  const names = Object.keys(sweep.default);
  const times = new Map<string, Record<string, number>>();
  sweep.rows.forEach((row, i) => {
    const medians = sweep.timing.round1[String(i)];
    if (row.ok && medians !== undefined) times.set(keyOf(row.combo, names), medians);
  });
  const base = times.get(keyOf(sweep.default, names));
  if (base === undefined) throw new Error("the sweep did not time the template's defaults");
  const configs: Config[] = spec.configs.map((c) => ({ ...c, shapes: shapesOf(spec, c.dims) }));
  const floors = Object.fromEntries(
    (sweep.timing.configs ?? []).map((c) => [c.name, c.floorMs] as const),
  );
  const best = (within: readonly Config[]) =>
    Math.max(
      ...[...times.values()].map((m) =>
        geometricMean(within.map((c) => (base[c.name] ?? NaN) / (m[c.name] ?? NaN))),
      ),
    );
  const rule = classRule(configs);
  const perClass = classesOf(rule, configs).map((cls) => ({
    n: cls.configs.length,
    best: best(configs.filter((c) => cls.configs.includes(c.name))),
  }));
  const classOptimum = Math.exp(
    perClass.reduce((s, c) => s + c.n * Math.log(c.best), 0) / configs.length,
  );
  // the sweep's space: the task's tunables, with what it held fixed (UNROLL) at the defaults'
  const varied = new Set(
    sweep.rows.flatMap((row) => names.filter((n) => row.combo[n] !== sweep.default[n])),
  );
  const tunables = Object.fromEntries(
    Object.entries(spec.tunables).map(([name, values]) => [
      name,
      varied.has(name) ? values : [sweep.default[name] ?? values[0] ?? 0],
    ]),
  );
  const runs: Replay["runs"] = [];
  for (const seed of options.seeds) {
    const stats = { raced: 0, outside: 0 };
    const proposer = createProposer(options.proposer, {
      seed,
      taskPath: join(root, "kernels", sweep.task),
      baselineSource: source,
      tunables,
      ...(spec.constraints === undefined ? {} : { constraints: spec.constraints }),
      compiled: false,
      env: {},
    });
    let now = 0;
    const result = await runEngine({
      task: {
        name: spec.name,
        reference: "",
        visibleConfigs: configs,
        format: "evk",
        gpu: "replay",
        cuda: "",
      },
      config: "insight",
      seed,
      proposer,
      evaluator: standIn({ times, names, base, configs, defaults: sweep.default, stats, floors }),
      archive: memoryArchive(),
      clock: { now: () => (now += 1) },
      budget: { candidates: options.candidates, seconds: 1e9, usd: 1e9 },
      baseline: { source },
      language: "c",
      populationSize: 5,
      parallel: options.parallel ?? 8,
      ...(options.race ? {} : { race: false }),
    });
    runs.push({
      seed,
      best: result.best.evaluation.fitness ?? 1,
      kept: keptByFinalRule(result.population),
      ...stats,
    });
  }
  return { optimum: best(configs), classOptimum, runs };
}

/** Whether the search's timing saw it slower than the kernel to beat beyond the band somewhere. */
function slowerSomewhere(individual: Individual): boolean {
  return judgeTimings(individual.evaluation.timings)?.clearlySlower.includes(true) ?? false;
}

/**
 * What the final checks would keep of a population (evolve/final.ts, with the table's times for
 * their timing): contenders faster than the kernel to beat, those seen slower somewhere last;
 * one slower beyond the band on a configuration is passed over (a try), one no faster there
 * than one passed over is skipped (no try), three tries at most of nine; the first that is not
 * slower anywhere is kept. 1 when none is.
 */
export function keptByFinalRule(population: readonly Individual[]): number {
  const contenders = population
    .filter((individual) => (individual.evaluation.fitness ?? 0) > 1)
    .map((individual, rank) => ({ individual, rank, slower: slowerSomewhere(individual) }))
    .sort((a, b) => Number(a.slower) - Number(b.slower) || a.rank - b.rank);
  const lost: { individual: Individual; configs: string[] }[] = [];
  let tried = 0;
  for (const { individual, slower } of contenders.slice(0, 9)) {
    if (tried >= 3) break;
    if (noFasterWhereLost(individual, lost) !== null) continue;
    tried += 1;
    if (!slower) return individual.evaluation.fitness ?? 1;
    const judged = judgeTimings(individual.evaluation.timings);
    lost.push({
      individual,
      configs: individual.evaluation.timings
        .filter((_, i) => judged?.clearlySlower[i] === true)
        .map((t) => t.config),
    });
  }
  return 1;
}

function standIn(table: {
  times: Map<string, Record<string, number>>;
  names: string[];
  base: Record<string, number>;
  configs: Config[];
  defaults: Values;
  stats: { raced: number; outside: number };
  floors: Record<string, number>;
}): Evaluator {
  const { times, names, base, configs, defaults, stats, floors } = table;
  const seconds = { compile: 0, verify: 0, time: 0 };
  return {
    evaluate(variant: Variant, _signal, race): Promise<Evaluation> {
      const line = /evk-shape-table: (\{.*\})/.exec(variant.source);
      const shaped =
        line === null
          ? null
          : (JSON.parse(line[1] ?? "{}") as {
              rule: ReturnType<typeof classRule>;
              classes: string[];
              values: Values[];
            });
      const timings: ConfigTiming[] = [];
      for (const config of configs) {
        // a shape-keyed candidate: its values for the class of the configuration's first input
        const values =
          shaped === null
            ? { ...defaults, ...variant.defines }
            : {
                ...defaults,
                ...shaped.values[
                  shaped.classes.indexOf(classOf(shaped.rule, config.shapes[0] ?? []).id)
                ],
              };
        const ms = times.get(keyOf(values, names))?.[config.name];
        const b = base[config.name];
        if (ms === undefined || b === undefined) {
          stats.outside += 1;
          return Promise.resolve({
            ok: false,
            stage: "compile",
            reason: "compile-error",
            message: "not in the sweep's table",
            timings: [],
            fitness: null,
            profile: null,
            seconds,
          });
        }
        const floor = floors[config.name];
        timings.push({
          config: config.name,
          medianMs: ms,
          p20Ms: ms * (1 - BAND),
          p80Ms: ms * (1 + BAND),
          baselineMs: b,
          baselineP20Ms: b * (1 - BAND),
          baselineP80Ms: b * (1 + BAND),
          ...(floor === undefined ? {} : { floorMs: floor }),
        });
        if (race !== undefined && timings.length < configs.length) {
          // bench.py _race: the rest at the most a kernel could gain there; none known, go on
          const rest = configs.slice(timings.length).map((c) => race.ceilings[c.name]);
          const upper = geometricMean([
            ...timings.map((t) => t.baselineP80Ms / t.p20Ms),
            ...rest.map((ceiling) => (ceiling ?? NaN) / BELOW_FLOOR),
          ]);
          const lower = geometricMean(configs.map((c) => race.leader[c.name] ?? NaN));
          if (rest.every((ceiling) => ceiling !== undefined) && upper < lower) {
            stats.raced += 1;
            return Promise.resolve({
              ok: true,
              stage: "time",
              reason: "raced",
              message: "",
              timings,
              fitness: null,
              profile: null,
              seconds,
              raced: {
                config: config.name,
                timed: timings.map((t) => t.config),
                speedupUpper: upper,
                leaderLower: lower,
              },
            });
          }
        }
      }
      return Promise.resolve({
        ok: true,
        stage: "done",
        reason: null,
        message: "",
        timings,
        fitness: geometricMean(timings.map((t) => t.baselineMs / t.medianMs)),
        profile: null,
        seconds,
      });
    },
  };
}

const USAGE = `usage: node dist/runner/scripts/tuner-replay.js SWEEP.json [--proposer tuner|shape-tuner]
  [--candidates N] [--seeds A-B] [--parallel N] [--no-race] [--json]`;

async function main(argv: string[]): Promise<number> {
  const value = (flag: string) => {
    const i = argv.indexOf(flag);
    return i === -1 ? undefined : argv[i + 1];
  };
  const flagged = new Set(["--proposer", "--candidates", "--seeds", "--parallel"]);
  const file = argv.find((arg, i) => !arg.startsWith("--") && !flagged.has(argv[i - 1] ?? ""));
  if (argv.includes("--help")) {
    console.log(USAGE);
    return 0;
  }
  const proposer = value("--proposer") ?? "tuner";
  const [from = 1, to = from] = (value("--seeds") ?? "1-10").split("-").map(Number);
  const candidates = Number(value("--candidates") ?? "40");
  const parallel = Number(value("--parallel") ?? "8");
  if (
    !Number.isInteger(parallel) ||
    parallel < 1 ||
    file === undefined ||
    (proposer !== "tuner" && proposer !== "shape-tuner") ||
    !Number.isInteger(from) ||
    !Number.isInteger(to) ||
    to < from ||
    !Number.isInteger(candidates) ||
    candidates < 1
  ) {
    console.error(USAGE);
    return 2;
  }
  const race = !argv.includes("--no-race");
  const seeds = Array.from({ length: to - from + 1 }, (_, i) => from + i);
  const sweep = JSON.parse(readFileSync(file, "utf8")) as Sweep;
  const result = await replay(sweep, { proposer, candidates, seeds, race, parallel });
  const bests = result.runs.map((r) => r.best).sort((a, b) => a - b);
  const median = bests[Math.floor(bests.length / 2)] ?? 1;
  const kept = result.runs.map((r) => r.kept).sort((a, b) => a - b);
  const keptMedian = kept[Math.floor(kept.length / 2)] ?? 1;
  const mean = (pick: (r: Replay["runs"][number]) => number) =>
    result.runs.reduce((s, r) => s + pick(r), 0) / result.runs.length;
  if (argv.includes("--json")) {
    console.log(
      JSON.stringify(
        { task: sweep.task, proposer, race, candidates, parallel, ...result },
        null,
        2,
      ),
    );
    return 0;
  }
  const pct = (x: number) => `${(100 * x).toFixed(0)} %`;
  console.log(
    `${sweep.task} ${proposer}${race ? "" : " (no racing)"}, ${candidates} candidates, ` +
      `${parallel} in flight, ` +
      `${seeds.length} seeds: best kept ${median.toFixed(3)}× median (${(bests[0] ?? 1).toFixed(3)}–` +
      `${(bests.at(-1) ?? 1).toFixed(3)}); the table's best single set ${result.optimum.toFixed(3)}× ` +
      `(${pct(median / result.optimum)}), one set per class of shapes ` +
      `${result.classOptimum.toFixed(3)}× (${pct(median / result.classOptimum)}); ` +
      `raced ${mean((r) => r.raced).toFixed(1)} a run, ${mean((r) => r.outside).toFixed(1)} outside the table; ` +
      `the final checks' rule keeps ${keptMedian.toFixed(3)}× median (${(kept[0] ?? 1).toFixed(3)}–` +
      `${(kept.at(-1) ?? 1).toFixed(3)}), ${result.runs.filter((r) => r.kept > 1).length} of ${result.runs.length} runs a win`,
  );
  return 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  process.exitCode = await main(process.argv.slice(2));
}
