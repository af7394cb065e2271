// The shape-keyed tuner (`--proposer shape-tuner`): the offline tuner, run once per
// configuration class (shape-classes.ts), whose candidates carry a dispatch table
// (dispatch-source.ts). Short rows may want fewer threads than long ones; one value per knob
// for every shape passes both over.
//
// Each class has a tuner of its own (tuner.ts), which sees each candidate as the kernel its
// class ran and, as fitness, the geometric mean of the speedups on that class's visible
// configurations alone (the harness times every configuration, so one candidate is one trial
// for every class at once). A proposal asks each class's tuner for its next values and builds
// one source that dispatches each class to its own copy; when every class chose the same
// values it is the plain kernel, as the tuner would have proposed it. Once ASSEMBLE_EVERY
// proposals have passed since the last such one, and in the last the budget allows, a proposal
// instead puts each class at the best values it has seen, when that combination is new: each
// class's tuner keeps moving to new values, so otherwise no candidate need hold every class's
// best at once. The winner goes through
// the same final checks as any candidate: held-out configurations and the rule that no
// configuration may be slower.
//
// Limits, said plainly: nvcc flags are not searched (one compilation unit has one set); a
// candidate that fails to build counts against every class's new values (the tuner sets
// values aside only until they build elsewhere); a class whose tuner has tried everything
// keeps its best values while the others go on. The classes come from the first proposal's
// task (observations before it, from a resumed archive, wait for it).
import { deriveSeed } from "../evolve/rng.js";
import {
  ZERO_USAGE,
  type Individual,
  type ProposalContext,
  type ProposalResult,
  type Proposer,
} from "../evolve/types.js";
import { applyTunables, detectTunables, type TunableValue } from "./detect-tunables.js";
import {
  dispatchSource,
  entryOf,
  tableOf,
  type ShapeTable,
  type Variant,
} from "./dispatch-source.js";
import {
  classesOf,
  classRule,
  describeRule,
  type ClassRule,
  type ShapeClass,
} from "./shape-classes.js";
import { createTuner, type Tuner } from "./tuner.js";

export type ShapeTunerOptions = {
  seed: number;
  baselineSource: string;
  tunables: Readonly<Record<string, readonly (string | number)[]>>;
  /** task.json "constraints": every class's tuner keeps them. */
  constraints?: readonly string[];
  poolSize?: number;
};

type Values = Record<string, TunableValue>;

/**
 * How often a proposal assembles each class's best values. Replayed on the H100's template
 * sweeps (40 candidates, 40 seeds, results branch: results/search-assemble-2026-11-26.txt): every 8th
 * kept more than never on 6 of the 10 tasks (layernorm_bf16 +3.7 %, softmax_bf16 +2.0 %),
 * the same on 3, 0.3 % less on cross_entropy; every 4th, less on the bf16 tasks.
 */
export const ASSEMBLE_EVERY = 8;
type Setup = { rule: ClassRule; classes: ShapeClass[]; tuners: Tuner[] };

export function createShapeTuner(options: ShapeTunerOptions): Proposer & {
  observe(individual: Individual): void;
} {
  const tunables = detectTunables(options.baselineSource, options.tunables);
  const baselineValues: Values = Object.fromEntries(tunables.map((t) => [t.id, t.current]));
  let setup: Setup | null = null;
  const waiting: Individual[] = [];
  /** Per class: the fittest values seen, for a class whose tuner has nothing left. */
  let bestOf: { values: Values; fitness: number }[] = [];
  /** Every combination of class values proposed or seen, as keyOf gives it. */
  const tried = new Set<string>();
  let sinceAssembly = 0;

  function start(task: ProposalContext["task"]): Setup {
    if (setup !== null) return setup;
    const rule = classRule(task.visibleConfigs);
    const classes = classesOf(rule, task.visibleConfigs);
    const kept =
      classes.length > 0 ? classes : [{ id: "all", short: null, small: null, configs: [] }];
    const tuners = kept.map((_, k) =>
      createTuner({
        seed: deriveSeed(options.seed, 7919, k),
        baselineSource: options.baselineSource,
        tunables: options.tunables,
        ...(options.constraints === undefined ? {} : { constraints: options.constraints }),
        ...(options.poolSize === undefined ? {} : { poolSize: options.poolSize }),
      }),
    );
    setup = { rule: { row: rule.row, size: rule.size }, classes: kept, tuners };
    bestOf = kept.map(() => ({ values: baselineValues, fitness: 0 }));
    for (const individual of waiting.splice(0)) observe(individual);
    return setup;
  }

  /** The kernel class k ran in `individual`, and its fitness on class k's configurations. */
  function asClass(individual: Individual, k: number, s: Setup): Individual | null {
    const table = tableOf(individual.source);
    let variant: { source: string; defines: Record<string, string>; flags: string[] };
    if (table === null) {
      variant = { source: individual.source, defines: individual.defines, flags: individual.flags };
    } else {
      const cls = s.classes[k];
      const at = cls === undefined ? -1 : table.classes.indexOf(cls.id);
      const values = table.values[at];
      if (values === undefined) return null; // a table of other classes: not this search's
      variant = { ...variantOf(values), flags: [] };
    }
    const { evaluation } = individual;
    const configs = new Set(s.classes[k]?.configs ?? []);
    const ratios = evaluation.timings
      .filter((t) => configs.has(t.config) && t.medianMs > 0)
      .map((t) => t.baselineMs / t.medianMs);
    const fitness =
      !evaluation.ok || evaluation.fitness === null
        ? null
        : ratios.length === 0
          ? evaluation.fitness
          : Math.exp(ratios.reduce((sum, r) => sum + Math.log(r), 0) / ratios.length);
    return { ...individual, ...variant, evaluation: { ...evaluation, fitness } };
  }

  function variantOf(values: Values): { source: string; defines: Record<string, string> } {
    return applyTunables(
      options.baselineSource,
      tunables,
      tunables.map((t) => (t.id in values ? (values[t.id] ?? null) : t.current)),
    );
  }

  function observe(individual: Individual): void {
    if (setup === null) {
      waiting.push(individual);
      return;
    }
    const s = setup;
    const seenValues: (Values | null)[] = [];
    s.tuners.forEach((tuner, k) => {
      const seen = asClass(individual, k, s);
      if (seen === null) return;
      tuner.observe(seen);
      const values = tuner.valuesOf(seen);
      seenValues.push(values);
      const fitness = seen.evaluation.fitness;
      const best = bestOf[k];
      if (values !== null && fitness !== null && best !== undefined && fitness > best.fitness) {
        bestOf[k] = { values, fitness };
      }
    });
    if (seenValues.length === s.tuners.length && seenValues.every((v) => v !== null))
      tried.add(keyOf(seenValues));
  }

  /** One key per combination of class values (a class's values in the tunables' order). */
  function keyOf(chosen: readonly Values[]): string {
    return JSON.stringify(chosen.map((values) => tunables.map((t) => values[t.id] ?? null)));
  }

  /** Each class at its best values, when due and not tried yet; else null. */
  function assembly(s: Setup, left: number | undefined): ProposalResult | null {
    sinceAssembly += 1;
    const due = sinceAssembly >= ASSEMBLE_EVERY || left === 0;
    if (!due || !bestOf.some((b) => b.fitness > 0)) return null;
    const chosen = bestOf.map((b) => b.values);
    const key = keyOf(chosen);
    if (tried.has(key)) return null;
    sinceAssembly = 0;
    tried.add(key);
    const notes = chosen.map((values, k) => `${s.classes[k]?.id ?? "all"}: ${label(values)}.`);
    const insight =
      `Shape-keyed tuner (${describeRule(s.rule)}): each class at the best values it has seen. ` +
      notes.join(" ") +
      " The algorithm is the baseline's; only these knobs differ, per class.";
    return { ok: true, proposal: build(s, chosen, insight), usage: ZERO_USAGE };
  }

  async function propose(context: ProposalContext): Promise<ProposalResult> {
    if (entryOf(options.baselineSource) === null) {
      return {
        ok: false,
        reason: "nothing-to-tune",
        final: true,
        message:
          "the shape-keyed tuner needs an evk kernel (evk_forward or evk_backward); use " +
          "--proposer tuner for this kernel",
        usage: ZERO_USAGE,
      };
    }
    const s = start(context.task);
    const assembled = assembly(s, context.left);
    if (assembled !== null) return assembled;
    const chosen: Values[] = [];
    const notes: string[] = [];
    let fresh = 0;
    for (const [k, tuner] of s.tuners.entries()) {
      const mapped = (individual: Individual) => asClass(individual, k, s) ?? individual;
      const result = await tuner.propose({
        ...context,
        best: mapped(context.best),
        parents: context.parents.map(mapped),
      });
      const cls = s.classes[k]?.id ?? "all";
      if (result.ok) {
        const values = tuner.valuesOf({ ...result.proposal, flags: result.proposal.flags ?? [] });
        if (values === null) throw new Error("the class tuner does not know its own proposal");
        chosen.push(values);
        const what = result.proposal.insight
          .replace(/^Tuner \([^)]*\): /, "")
          .replace(/\. The algorithm is the baseline's; only these knobs differ\.$/, "");
        notes.push(`${cls}: ${what}.`);
        fresh += 1;
        continue;
      }
      if (result.final !== true) return result;
      chosen.push(bestOf[k]?.values ?? baselineValues);
      notes.push(`${cls}: every value tried, its best kept`);
    }
    if (fresh === 0) {
      return {
        ok: false,
        reason: "search-exhausted",
        final: true,
        message: `every class (${s.classes.map((c) => c.id).join(", ")}) has tried all its values`,
        usage: ZERO_USAGE,
      };
    }
    tried.add(keyOf(chosen));
    const insight =
      `Shape-keyed tuner (${describeRule(s.rule)}): ` +
      notes.join(" ") +
      " The algorithm is the baseline's; only these knobs differ, per class.";
    return { ok: true, proposal: build(s, chosen, insight), usage: ZERO_USAGE };
  }

  function build(s: Setup, chosen: readonly Values[], insight: string) {
    const keys = chosen.map((values) => JSON.stringify(tunables.map((t) => values[t.id] ?? null)));
    const distinct = [...new Set(keys)];
    const name = `tune-shapes ${chosen.map((values, k) => `${s.classes[k]?.id}{${label(values)}}`).join(" ")}`;
    if (distinct.length === 1) {
      const plain = variantOf(chosen[0] ?? baselineValues);
      return { name, source: plain.source, defines: plain.defines, insight, flags: [] };
    }
    const variants: Variant[] = distinct.map((key) => variantOf(chosen[keys.indexOf(key)] ?? {}));
    const table: ShapeTable = {
      rule: s.rule,
      classes: s.classes.map((c) => c.id),
      values: chosen.map((values) => ({ ...values })),
    };
    const source = dispatchSource({
      baseline: options.baselineSource,
      table,
      kept: s.classes,
      variants,
      classVariant: keys.map((key) => distinct.indexOf(key)),
      labels: chosen.map(label),
    });
    return { name, source, defines: {}, insight, flags: [] };
  }

  function label(values: Values): string {
    const changed = tunables.filter((t) => (values[t.id] ?? null) !== t.current);
    return changed.length === 0
      ? "the baseline's values"
      : changed.map((t) => `${t.id}=${String(values[t.id])}`).join(" ");
  }

  // each class is judged on its own configurations: a candidate that loses on the first may
  // win another class's, so the search times every candidate everywhere
  return { name: "shape-tuner", racing: false, propose, observe };
}
