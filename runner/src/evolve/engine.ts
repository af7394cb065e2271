// The evolution loop (EvoEngineer), with every effect behind a seam: the proposer, the
// evaluator, the archive and the clock. It runs in generations: each generation's proposal
// contexts are drawn from the population as it stood when the generation began, with a PRNG
// stream per proposal derived from the seed; the generation's proposals run in parallel
// (evaluations queue for the GPU inside the evaluator); survivors are chosen over everything
// so far. Nothing depends on the order in which parallel work finishes, so a run that
// resumes its archive ends where the uninterrupted run would have.
import type { StoppedBy } from "../../../src/shared/result.js";
import { TaskError } from "../errors.js";
import { assertResumable, type Archive, type ArchiveEntry } from "./archive.js";
import { fingerprint, type Language } from "./fingerprint.js";
import { isViable, sampleInsights, selectParents, survivors } from "./population.js";
import { createRng, deriveSeed } from "./rng.js";
import type {
  Budget,
  Clock,
  EvoConfig,
  Evaluation,
  Evaluator,
  Individual,
  ProposalContext,
  ProposalResult,
  Proposer,
  Usage,
} from "./types.js";
import { ZERO_USAGE } from "./types.js";

export type EngineOptions = {
  task: ProposalContext["task"];
  config: EvoConfig;
  seed: number;
  proposer: Proposer;
  evaluator: Evaluator;
  archive: Archive;
  clock: Clock;
  budget: Budget;
  /** The kernel to beat: evaluated first (generation 0), and the first parent. */
  baseline: { source: string; defines?: Record<string, string>; flags?: string[] };
  language: Language;
  /** EvoEngineer's default: 5. */
  populationSize?: number;
  /** Proposals per generation, in flight together (EvoEngineer: 4). */
  parallel?: number;
  /** Insights shown per proposal (insight and full configurations). */
  insights?: number;
  techniques?: string;
  signal?: AbortSignal;
  onEvent?: (event: EngineEvent) => void;
};

export type Spent = { candidates: number; seconds: number; usd: number };

export type EngineEvent =
  | { type: "resumed"; entries: number; spent: Spent }
  | { type: "generation"; generation: number; slots: number }
  | { type: "candidate"; entry: ArchiveEntry; number: number; best: Individual; spent: Spent };

export type HistoryPoint = { candidate: number; id: string; seconds: number; fitness: number };

export type EngineResult = {
  baseline: Individual;
  /** The survivors, best first. */
  population: Individual[];
  best: Individual;
  /** Every archive entry, in proposal order (generation, then slot). */
  entries: ArchiveEntry[];
  history: HistoryPoint[];
  usage: Usage;
  spent: Spent;
  stoppedBy: StoppedBy;
  counts: {
    evaluated: number;
    passed: number;
    duplicates: number;
    proposalFailures: number;
    failedAt: Record<string, number>;
  };
};

export const DEFAULTS = { populationSize: 5, parallel: 4, insights: 3 } as const;

export async function runEngine(options: EngineOptions): Promise<EngineResult> {
  const run = new Run(options, await options.archive.load());
  await run.search();
  return run.result();
}

type Seen = { id: string; evaluation: Promise<Evaluation> };

/**
 * The reason on an archive line that records only what an interrupted proposal cost: the
 * money counts, the slot does not (a resumed run asks for that proposal again).
 */
const INTERRUPTED = "interrupted";

function isLost(entry: ArchiveEntry): boolean {
  return entry.individual === null && entry.failure?.reason === INTERRUPTED;
}

class Run {
  private readonly entries: ArchiveEntry[];
  /** What proposals cut short by an interrupt cost (they hold no slot). */
  private readonly lost: Usage[];
  private readonly seen = new Map<string, Seen>();
  private readonly started: number;
  private readonly offsetS: number;
  private readonly size: number;
  private readonly parallel: number;
  private stoppedBy: StoppedBy = "candidates";
  /** Set when a proposer says it has nothing more to offer. */
  private proposerDone = false;
  private runningBest: Individual | null = null;

  constructor(
    private readonly options: EngineOptions,
    loaded: ArchiveEntry[],
  ) {
    assertResumable(loaded, options);
    this.entries = sortEntries(loaded.filter((entry) => !isLost(entry)));
    this.lost = loaded.filter(isLost).map((entry) => entry.usage);
    this.started = options.clock.now();
    this.offsetS = Math.max(0, ...loaded.map((entry) => entry.elapsedS));
    this.size = options.populationSize ?? DEFAULTS.populationSize;
    this.parallel = options.parallel ?? DEFAULTS.parallel;
    for (const entry of this.entries) {
      const individual = entry.individual;
      if (individual === null || this.seen.has(individual.hash)) continue;
      this.seen.set(individual.hash, {
        id: individual.id,
        evaluation: Promise.resolve(individual.evaluation),
      });
    }
    this.runningBest = survivors(this.individuals(Infinity), 1)[0] ?? null;
    this.observe(this.entries);
    if (loaded.length > 0) {
      options.onEvent?.({ type: "resumed", entries: loaded.length, spent: this.spent() });
    }
  }

  async search(): Promise<void> {
    await this.evaluateBaseline();
    for (let generation = 1; ; generation += 1) {
      const slots = this.slotsOf(generation);
      if (slots <= 0) {
        this.stoppedBy = "candidates";
        return;
      }
      const done = new Set(this.entriesOf(generation).map((entry) => entry.slot));
      const missing = range(slots).filter((slot) => !done.has(slot));
      if (missing.length === 0) continue;
      const exhausted = this.exhausted();
      if (exhausted !== null) {
        this.stoppedBy = exhausted;
        return;
      }
      this.options.onEvent?.({ type: "generation", generation, slots: missing.length });
      const contexts = this.contextsFor(generation);
      const settled = await Promise.allSettled(
        missing.map((slot) => this.runSlot(generation, slot, contexts(slot))),
      );
      this.observe(this.entriesOf(generation).filter((entry) => missing.includes(entry.slot)));
      const failed = settled.find((outcome) => outcome.status === "rejected");
      if (failed !== undefined) throw failed.reason;
      if (this.options.signal?.aborted) {
        this.stoppedBy = "interrupted";
        return;
      }
      if (this.proposerDone) {
        this.stoppedBy = "proposer";
        return;
      }
    }
  }

  result(): EngineResult {
    const all = this.individuals(Infinity);
    const baseline = all[0];
    if (baseline === undefined) throw new Error("the engine ended without a baseline");
    const population = survivors(all, this.size);
    const candidates = this.entries.filter((entry) => entry.generation > 0);
    const evaluated = candidates.filter(
      (entry) => entry.individual !== null && entry.duplicateOf === null,
    );
    const failedAt: Record<string, number> = {};
    for (const entry of evaluated) {
      const evaluation = entry.individual?.evaluation;
      if (evaluation !== undefined && !evaluation.ok) {
        failedAt[evaluation.stage] = (failedAt[evaluation.stage] ?? 0) + 1;
      }
    }
    return {
      baseline,
      population,
      best: population[0] ?? baseline,
      entries: this.entries,
      history: this.history(),
      usage: this.usage(),
      spent: this.spent(),
      stoppedBy: this.stoppedBy,
      counts: {
        evaluated: evaluated.length,
        passed: evaluated.filter((entry) => entry.individual?.evaluation.ok === true).length,
        duplicates: candidates.filter((entry) => entry.duplicateOf !== null).length,
        proposalFailures: candidates.filter((entry) => entry.individual === null).length,
        failedAt,
      },
    };
  }

  private async evaluateBaseline(): Promise<void> {
    const existing = this.entriesOf(0)[0]?.individual;
    const baseline = existing ?? (await this.evaluateNewBaseline());
    if (!baseline.evaluation.ok) {
      const { stage, reason, message } = baseline.evaluation;
      throw new TaskError(
        `the kernel to beat does not pass its own checks (${stage}: ${reason ?? "failed"}):\n${message}`,
      );
    }
  }

  private async evaluateNewBaseline(): Promise<Individual> {
    const { source, defines = {}, flags = [] } = this.options.baseline;
    const hash = fingerprint(source, defines, this.options.language, flags);
    const evaluation = this.options.evaluator.evaluate(
      { source, defines, flags },
      this.options.signal,
    );
    this.seen.set(hash, { id: "c0", evaluation });
    const individual: Individual = {
      id: "c0",
      hash,
      source,
      defines,
      flags,
      parents: [],
      insight: "",
      proposer: "baseline",
      evaluation: await evaluation,
    };
    await this.record({ generation: 0, slot: 0, individual, usage: ZERO_USAGE }, 0);
    this.observe(this.entriesOf(0));
    return individual;
  }

  /** Tells the proposer of evaluated candidates, in proposal order (entries are sorted). */
  private observe(entries: readonly ArchiveEntry[]): void {
    const { proposer } = this.options;
    if (proposer.observe === undefined) return;
    for (const entry of entries) if (entry.individual !== null) proposer.observe(entry.individual);
  }

  /** Proposals in a generation: the parallelism, or what the candidate budget has left. */
  private slotsOf(generation: number): number {
    const before = this.entries.filter(
      (entry) => entry.generation > 0 && entry.generation < generation,
    ).length;
    return Math.min(this.parallel, this.options.budget.candidates - before);
  }

  private exhausted(): StoppedBy | null {
    const spent = this.spent();
    if (this.options.signal?.aborted) return "interrupted";
    if (spent.usd >= this.options.budget.usd) return "usd";
    if (spent.seconds >= this.options.budget.seconds) return "seconds";
    return null;
  }

  /** Every proposal's cost: the archived candidates', and the interrupted ones'. */
  private usage(): Usage {
    return sumUsage([...this.entries.map((entry) => entry.usage), ...this.lost]);
  }

  private spent(): Spent {
    return {
      candidates: this.entries.filter((entry) => entry.generation > 0).length,
      seconds: this.offsetS + (this.options.clock.now() - this.started) / 1000,
      usd: this.usage().usd,
    };
  }

  /**
   * The context of each slot of a generation, from the population and the last failure as
   * they stood before it, and a PRNG stream of the slot's own.
   */
  private contextsFor(generation: number): (slot: number) => ProposalContext {
    const { options } = this;
    const population = survivors(this.individuals(generation), this.size);
    const best = population[0];
    if (best === undefined) throw new Error("a generation began with an empty population");
    const lastFailure = this.lastFailureBefore(generation);
    const insightCount = options.insights ?? DEFAULTS.insights;
    return function contextOf(slot) {
      const rng = createRng(deriveSeed(options.seed, generation, slot));
      const common = {
        task: options.task,
        config: options.config,
        best,
        lastFailure,
        techniques: options.techniques ?? "",
      };
      if (options.config === "free") {
        return { ...common, parents: [], operator: "new", insights: [], seed: rng.seed() };
      }
      if (options.config === "insight") {
        const insights = sampleInsights(rng, population, insightCount);
        return { ...common, parents: [], operator: "new", insights, seed: rng.seed() };
      }
      const operator = population.length >= 2 && rng.next() < 0.5 ? "crossover" : "mutation";
      const parents = selectParents(rng, population, operator === "crossover" ? 2 : 1);
      const insights = sampleInsights(rng, population, insightCount);
      return { ...common, parents, operator, insights, seed: rng.seed() };
    };
  }

  private async runSlot(generation: number, slot: number, context: ProposalContext) {
    const { options } = this;
    const proposed: ProposalResult = await options.proposer.propose(context, options.signal);
    if (options.signal?.aborted) return this.recordLost(generation, slot, proposed.usage);
    const number = this.numberOf(generation, slot);
    if (!proposed.ok) {
      if (proposed.final === true) this.proposerDone = true;
      const failure = { reason: proposed.reason, message: proposed.message };
      await this.record(
        { generation, slot, individual: null, usage: proposed.usage, failure },
        number,
      );
      return;
    }
    const { source, defines, insight, flags = [] } = proposed.proposal;
    const hash = fingerprint(source, defines, options.language, flags);
    const id = `c${number}`;
    const known = this.seen.get(hash);
    const evaluation =
      known?.evaluation ?? options.evaluator.evaluate({ source, defines, flags }, options.signal);
    if (known === undefined) this.seen.set(hash, { id, evaluation });
    const parents = context.parents.length > 0 ? context.parents : [context.best];
    const individual: Individual = {
      id,
      hash,
      source,
      defines,
      flags,
      parents: parents.map((parent) => parent.id),
      insight,
      proposer: options.proposer.name,
      evaluation: await evaluation,
    };
    if (options.signal?.aborted) return this.recordLost(generation, slot, proposed.usage);
    const duplicateOf = known?.id ?? null;
    await this.record({ generation, slot, individual, usage: proposed.usage, duplicateOf }, number);
  }

  private async record(
    entry: Pick<ArchiveEntry, "generation" | "slot" | "individual" | "usage"> &
      Partial<Pick<ArchiveEntry, "duplicateOf" | "failure">>,
    number: number,
  ): Promise<void> {
    const full: ArchiveEntry = {
      v: 1,
      seed: this.options.seed,
      config: this.options.config,
      generation: entry.generation,
      slot: entry.slot,
      elapsedS: this.spent().seconds,
      at: new Date().toISOString(),
      usage: entry.usage,
      individual: entry.individual,
      duplicateOf: entry.duplicateOf ?? null,
      failure: entry.failure ?? null,
    };
    await this.options.archive.append(full);
    this.entries.push(full);
    this.entries.splice(0, this.entries.length, ...sortEntries(this.entries));
    const individual = full.individual;
    if (individual !== null && isViable(individual)) {
      const best = this.runningBest;
      if (best === null || (individual.evaluation.fitness ?? 0) > (best.evaluation.fitness ?? 0)) {
        this.runningBest = individual;
      }
    }
    if (this.runningBest !== null) {
      this.options.onEvent?.({
        type: "candidate",
        entry: full,
        number,
        best: this.runningBest,
        spent: this.spent(),
      });
    }
  }

  /** An interrupted proposal's cost, kept in the archive so a resumed run still counts it. */
  private async recordLost(generation: number, slot: number, usage: Usage): Promise<void> {
    if (usage.usd === 0 && usage.inputTokens === 0 && usage.outputTokens === 0) return;
    const line: ArchiveEntry = {
      v: 1,
      seed: this.options.seed,
      config: this.options.config,
      generation,
      slot,
      elapsedS: this.spent().seconds,
      at: new Date().toISOString(),
      usage,
      individual: null,
      duplicateOf: null,
      failure: {
        reason: INTERRUPTED,
        message: "the run was interrupted before this proposal was evaluated; its cost counts",
      },
    };
    await this.options.archive.append(line);
    this.lost.push(usage);
  }

  /** Candidate numbers count proposals in order: generation, then slot (the baseline is 0). */
  private numberOf(generation: number, slot: number): number {
    const before = this.entries.filter(
      (entry) => entry.generation > 0 && entry.generation < generation,
    ).length;
    return before + slot + 1;
  }

  private entriesOf(generation: number): ArchiveEntry[] {
    return this.entries.filter((entry) => entry.generation === generation);
  }

  /** Each fingerprint once (its first proposal), from generations before `generation`. */
  private individuals(generation: number): Individual[] {
    const hashes = new Set<string>();
    const individuals: Individual[] = [];
    for (const entry of this.entries) {
      const individual = entry.individual;
      if (entry.generation >= generation || individual === null) continue;
      if (hashes.has(individual.hash)) continue;
      hashes.add(individual.hash);
      individuals.push(individual);
    }
    return individuals;
  }

  private lastFailureBefore(generation: number): ProposalContext["lastFailure"] {
    const failures = this.entries.filter(
      (entry) =>
        entry.generation > 0 &&
        entry.generation < generation &&
        (entry.individual === null || !entry.individual.evaluation.ok),
    );
    const last = failures.at(-1);
    if (last === undefined) return null;
    if (last.individual === null) {
      return {
        source: "",
        reason: last.failure?.reason ?? null,
        message: last.failure?.message ?? "",
      };
    }
    const { reason, message } = last.individual.evaluation;
    return { source: last.individual.source, reason, message };
  }

  private history(): HistoryPoint[] {
    const points: HistoryPoint[] = [];
    let best = -Infinity;
    for (const entry of this.entries) {
      const individual = entry.individual;
      const fitness = individual?.evaluation.fitness ?? null;
      if (individual === null || !isViable(individual) || fitness === null || fitness <= best)
        continue;
      best = fitness;
      const candidate = entry.generation === 0 ? 0 : this.numberOf(entry.generation, entry.slot);
      points.push({ candidate, id: individual.id, seconds: entry.elapsedS, fitness });
    }
    return points;
  }
}

function sortEntries(entries: readonly ArchiveEntry[]): ArchiveEntry[] {
  return [...entries].sort((a, b) => a.generation - b.generation || a.slot - b.slot);
}

function range(count: number): number[] {
  return Array.from({ length: count }, (_, index) => index);
}

export function sumUsage(usages: readonly Usage[]): Usage {
  return usages.reduce(
    (total, usage) => ({
      inputTokens: total.inputTokens + usage.inputTokens,
      outputTokens: total.outputTokens + usage.outputTokens,
      cacheReadTokens: total.cacheReadTokens + usage.cacheReadTokens,
      cacheWriteTokens: total.cacheWriteTokens + usage.cacheWriteTokens,
      usd: total.usd + usage.usd,
    }),
    ZERO_USAGE,
  );
}
