// The evolution loop (EvoEngineer), with every effect behind a seam: the proposer, the
// evaluator, the archive and the clock. It runs as a pipeline with a fixed lag: proposals are
// numbered 1, 2, 3, … (the baseline is 0), and proposal n begins as soon as proposals
// 1 … n−P have finished (P = --parallel), with a context drawn from the baseline and those
// entries alone, never from n−P+1 … n−1 even when some of them are done, and a PRNG stream
// of its own derived from the seed. So at most P proposals are in flight, the next one
// begins the moment the oldest finishes (evaluations queue for the GPU inside the
// evaluator), and no proposal waits for a whole batch. Entries are recorded, and the
// proposer told of them, in proposal order; survivors are chosen over everything so far.
// Nothing depends on the order in which parallel work finishes, so a run that resumes its
// archive ends where the uninterrupted run would have. With P = 1 it is the sequential loop.
import type { StoppedBy } from "#shared/result.js";
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
  Race,
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
  /** The kernel to beat: evaluated first (proposal 0), and the first parent. */
  baseline: { source: string; defines?: Record<string, string>; flags?: string[] };
  language: Language;
  /** EvoEngineer's default: 5. */
  populationSize?: number;
  /**
   * Proposals in flight together (EvoEngineer: 4), and the lag: proposal n's context holds
   * proposals 1 … n − parallel.
   */
  parallel?: number;
  /** Insights shown per proposal (insight and full configurations). */
  insights?: number;
  /**
   * Race candidates (on unless false, or the proposer says racing: false): each is timed
   * against its context's best, and one slower than it beyond the noise after a
   * configuration is not timed on the rest (Evaluation.raced).
   */
  race?: boolean;
  techniques?: string;
  signal?: AbortSignal;
  onEvent?: (event: EngineEvent) => void;
};

export type Spent = { candidates: number; seconds: number; usd: number };

export type EngineEvent =
  | { type: "resumed"; entries: number; spent: Spent }
  /**
   * Progress: proposals (generation−1)·parallel+1 … generation·parallel, `slots` of which are
   * still to be asked, begin (as places free up: it is no longer a barrier). With
   * --parallel 1 each proposal is a generation of its own.
   */
  | { type: "generation"; generation: number; slots: number }
  | { type: "candidate"; entry: ArchiveEntry; number: number; best: Individual; spent: Spent };

export type HistoryPoint = { candidate: number; id: string; seconds: number; fitness: number };

export type EngineResult = {
  baseline: Individual;
  /** The survivors, best first. */
  population: Individual[];
  best: Individual;
  /** Every archive entry, in proposal order. */
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

/**
 * What a candidate races against, from the leader's own screen: on each configuration its
 * speedup at its least favourable (its baseline's p20 over its own p80), and the kernel to
 * beat's time over the floor (its p80 over the floor: what a kernel at the floor would gain);
 * undefined when the leader has no timings to race against. Without a floor a configuration
 * has no ceiling, and the harness then times every candidate to the end.
 */
export function raceAgainst(leader: Individual): Race | undefined {
  const { evaluation } = leader;
  if (!evaluation.ok || evaluation.fitness === null) return undefined;
  const timed = evaluation.timings.filter(
    (t) => t.launchBound !== true && t.p80Ms > 0 && t.baselineP20Ms > 0,
  );
  if (timed.length === 0) return undefined;
  return {
    leader: Object.fromEntries(timed.map((t) => [t.config, t.baselineP20Ms / t.p80Ms])),
    ceilings: Object.fromEntries(
      timed.flatMap((t) =>
        t.floorMs !== undefined && t.floorMs > 0 && t.baselineP80Ms > 0
          ? [[t.config, t.baselineP80Ms / t.floorMs]]
          : [],
      ),
    ),
  };
}

export async function runEngine(options: EngineOptions): Promise<EngineResult> {
  const run = new Run(options, await options.archive.load());
  await run.search();
  return run.result();
}

/**
 * The reason on an archive line that records only what an interrupted proposal cost: the
 * money counts, the slot does not (a resumed run asks for that proposal again).
 */
const INTERRUPTED = "interrupted";

function isLost(entry: ArchiveEntry): boolean {
  return entry.individual === null && entry.failure?.reason === INTERRUPTED;
}

/** Where proposal n is kept in the archive. */
type Key = Pick<ArchiveEntry, "generation" | "slot">;

/**
 * Archives written when the engine ran in generations of --parallel hold several slots in a
 * generation; such an archive goes on in its last generation, slot after slot. Every
 * earlier generation of it is complete (a generation began only once the one before ended),
 * so its entries are numbered in order; in the last one, a slot's number follows from the
 * entries before it.
 */
type Generational = { generation: number; before: number; numbers: Map<ArchiveEntry, number> };

/** What became of a proposal, recorded once every proposal before it is. */
type Outcome =
  | { kind: "lost"; usage: Usage }
  | { kind: "failed"; usage: Usage; failure: { reason: string; message: string } }
  | { kind: "candidate"; usage: Usage; individual: Individual };

class Run {
  /** The archive's entries (interrupted proposals aside), in proposal order. */
  private readonly entries: ArchiveEntry[];
  /** What proposals cut short by an interrupt cost (they hold no slot). */
  private readonly lost: Usage[];
  /** Each fingerprint's evaluation, shared by every proposal of it (in flight or done). */
  private readonly seen = new Map<string, Promise<Evaluation>>();
  /** The numbers of the entries the proposer has been told of. */
  private readonly observed = new Set<number>();
  private readonly generational: Generational | null;
  private readonly started: number;
  private readonly offsetS: number;
  private readonly size: number;
  private readonly parallel: number;
  private stoppedBy: StoppedBy = "candidates";
  /** The first proposal whose proposer said it has nothing more to offer. */
  private finalAt: number | null = null;
  /** Proposals whose proposer threw, in proposal order. */
  private readonly crashes: { number: number; error: unknown }[] = [];
  private runningBest: Individual | null = null;

  constructor(
    private readonly options: EngineOptions,
    loaded: ArchiveEntry[],
  ) {
    assertResumable(loaded, options);
    this.entries = sortEntries(loaded.filter((entry) => !isLost(entry)));
    this.lost = loaded.filter(isLost).map((entry) => entry.usage);
    this.generational = generationalLayout(this.entries);
    this.started = options.clock.now();
    this.offsetS = Math.max(0, ...loaded.map((entry) => entry.elapsedS));
    this.size = options.populationSize ?? DEFAULTS.populationSize;
    this.parallel = Math.max(1, options.parallel ?? DEFAULTS.parallel);
    for (const entry of this.entries) {
      const individual = entry.individual;
      if (individual === null || this.seen.has(individual.hash)) continue;
      this.seen.set(individual.hash, Promise.resolve(individual.evaluation));
    }
    this.runningBest = survivors(this.individuals(Infinity), 1)[0] ?? null;
    this.observeUpTo(Infinity);
    if (loaded.length > 0) {
      options.onEvent?.({ type: "resumed", entries: loaded.length, spent: this.spent() });
    }
  }

  /**
   * Proposal n begins once 1 … n−P have finished (recorded, or lost to an interrupt): the
   * pipeline keeps P in flight and never waits for more than the oldest of them. The budgets
   * stop proposals from beginning; those in flight finish and are recorded.
   */
  async search(): Promise<void> {
    await this.evaluateBaseline();
    const { budget } = this.options;
    const recorded = new Set(this.entries.map((entry) => this.numberOf(entry)));
    const inFlight = new Map<number, Promise<void>>();
    let previous: Promise<void> = Promise.resolve();
    let generation = 0;
    this.stoppedBy = "candidates";
    for (let number = 1; number <= budget.candidates; number += 1) {
      if (recorded.has(number)) continue;
      const limit = number - this.parallel;
      const due = [...inFlight].filter(([other]) => other <= limit);
      for (const [other] of due) inFlight.delete(other);
      await Promise.all(due.map(([, settled]) => settled));
      // a proposer that threw stops what would begin after it, as a budget does (the error
      // is thrown once those in flight are recorded)
      if (this.crashes.some((crash) => crash.number <= limit)) break;
      const stop = this.stopBefore(limit);
      if (stop !== null) {
        this.stoppedBy = stop;
        break;
      }
      this.observeUpTo(limit);
      const round = Math.ceil(number / this.parallel);
      if (round !== generation) {
        generation = round;
        const last = Math.min(round * this.parallel, budget.candidates);
        const slots = range(last - number + 1).filter((k) => !recorded.has(number + k)).length;
        this.options.onEvent?.({ type: "generation", generation, slots });
      }
      const context = this.contextFor(number);
      previous = this.runProposal(number, context, previous).catch((error: unknown) => {
        this.crashes.push({ number, error });
      });
      inFlight.set(number, previous);
    }
    await Promise.all(inFlight.values());
    this.observeUpTo(Infinity);
    const crash = this.crashes[0];
    if (crash !== undefined) throw crash.error;
    if (this.stoppedBy === "candidates") {
      if (this.options.signal?.aborted) this.stoppedBy = "interrupted";
      else if (this.finalAt !== null) this.stoppedBy = "proposer";
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
    const existing = this.entries.find((entry) => entry.generation === 0)?.individual;
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
    this.seen.set(hash, evaluation);
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
    this.observeUpTo(0);
    return individual;
  }

  /**
   * Tells the proposer of the entries numbered up to `limit` it has not heard of, in
   * proposal order: before proposal n, exactly what n's context is drawn from (a resumed
   * run first hears the whole archive), so what a proposer learns does not depend on timing.
   */
  private observeUpTo(limit: number): void {
    const { proposer } = this.options;
    for (const entry of this.entries) {
      const number = this.numberOf(entry);
      if (number > Math.max(0, limit) || this.observed.has(number)) continue;
      this.observed.add(number);
      if (entry.individual !== null) proposer.observe?.(entry.individual);
    }
  }

  /** Why proposal limit+P may not begin, from the budgets and what 1 … limit said. */
  private stopBefore(limit: number): StoppedBy | null {
    const { budget, signal } = this.options;
    if (signal?.aborted) return "interrupted";
    if (this.finalAt !== null && this.finalAt <= limit) return "proposer";
    // the money of the proposals the context holds (and of interrupted ones): not of those
    // in flight, which may or may not have finished by now
    const paid = this.entries.filter((entry) => this.numberOf(entry) <= limit);
    const usd = sumUsage([...paid.map((entry) => entry.usage), ...this.lost]).usd;
    if (usd >= budget.usd) return "usd";
    if (this.spent().seconds >= budget.seconds) return "seconds";
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
   * Proposal n's context: the population and the last failure of the baseline and proposals
   * 1 … n−P, and a PRNG stream of its own (from the seed and where n is archived).
   */
  private contextFor(number: number): ProposalContext {
    const { options } = this;
    const limit = number - this.parallel;
    const population = survivors(this.individuals(limit), this.size);
    const best = population[0];
    if (best === undefined) throw new Error("a proposal began with an empty population");
    const { generation, slot } = this.keyOf(number);
    const rng = createRng(deriveSeed(options.seed, generation, slot));
    const common = {
      task: options.task,
      config: options.config,
      best,
      lastFailure: this.lastFailureUpTo(limit),
      techniques: options.techniques ?? "",
      ...(Number.isFinite(options.budget.candidates)
        ? { left: Math.max(0, options.budget.candidates - number) }
        : {}),
    };
    const insightCount = options.insights ?? DEFAULTS.insights;
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
  }

  /**
   * Proposes and evaluates proposal n at once, then records it once `previous` (proposal
   * n−1, or the last one before it this run asked for) has settled: entries, archive lines
   * and candidate events come in proposal order, whatever finishes first.
   */
  private async runProposal(
    number: number,
    context: ProposalContext,
    previous: Promise<void>,
  ): Promise<void> {
    let outcome: Outcome;
    try {
      outcome = await this.propose(number, context);
    } finally {
      await previous;
    }
    const { generation, slot } = this.keyOf(number);
    if (outcome.kind === "lost") return this.recordLost(generation, slot, outcome.usage);
    if (outcome.kind === "failed") {
      const { usage, failure } = outcome;
      return this.record({ generation, slot, individual: null, usage, failure }, number);
    }
    const { usage, individual } = outcome;
    // the first proposal of this fingerprint is the original: every one before this one has
    // been recorded (or lost), so it does not matter which of them proposed it first
    const original = this.entries.find(
      (entry) => this.numberOf(entry) < number && entry.individual?.hash === individual.hash,
    );
    const duplicateOf = original?.individual?.id ?? null;
    await this.record({ generation, slot, individual, usage, duplicateOf }, number);
  }

  private async propose(number: number, context: ProposalContext): Promise<Outcome> {
    const { options } = this;
    const proposed: ProposalResult = await options.proposer.propose(context, options.signal);
    if (options.signal?.aborted) return { kind: "lost", usage: proposed.usage };
    if (!proposed.ok) {
      if (proposed.final === true) this.finalAt = Math.min(this.finalAt ?? number, number);
      const failure = { reason: proposed.reason, message: proposed.message };
      return { kind: "failed", usage: proposed.usage, failure };
    }
    const { source, defines, insight, flags = [] } = proposed.proposal;
    const hash = fingerprint(source, defines, options.language, flags);
    // one evaluation per fingerprint: a proposal of one in flight or done waits for it
    let evaluation = this.seen.get(hash);
    if (evaluation === undefined) {
      const race =
        options.race === false || options.proposer.racing === false
          ? undefined
          : raceAgainst(context.best);
      // the GPU takes proposal n before n+1 whichever was built first: proposal n+P waits on
      // n, so n's evaluation finishing first lets the next proposals begin soonest
      evaluation = options.evaluator.evaluate(
        { source, defines, flags },
        options.signal,
        race,
        number,
      );
      this.seen.set(hash, evaluation);
    }
    const parents = context.parents.length > 0 ? context.parents : [context.best];
    const individual: Individual = {
      id: `c${number}`,
      hash,
      source,
      defines,
      flags,
      parents: parents.map((parent) => parent.id),
      insight,
      proposer: options.proposer.name,
      evaluation: await evaluation,
    };
    if (options.signal?.aborted) return { kind: "lost", usage: proposed.usage };
    return { kind: "candidate", usage: proposed.usage, individual };
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

  /** An entry's proposal number (the baseline is 0): its generation, one per proposal. */
  private numberOf(entry: ArchiveEntry): number {
    if (entry.generation === 0) return 0;
    const old = this.generational;
    if (old === null) return entry.generation;
    if (entry.generation === old.generation) return old.before + entry.slot + 1;
    return old.numbers.get(entry) ?? 0;
  }

  /** Where proposal n is archived: generation n, slot 0 (an old archive: see Generational). */
  private keyOf(number: number): Key {
    const old = this.generational;
    if (old === null) return { generation: number, slot: 0 };
    return { generation: old.generation, slot: number - old.before - 1 };
  }

  /** Each fingerprint once (its first proposal), of the baseline and proposals 1 … limit. */
  private individuals(limit: number): Individual[] {
    const hashes = new Set<string>();
    const individuals: Individual[] = [];
    for (const entry of this.entries) {
      const individual = entry.individual;
      if (this.numberOf(entry) > Math.max(0, limit) || individual === null) continue;
      if (hashes.has(individual.hash)) continue;
      hashes.add(individual.hash);
      individuals.push(individual);
    }
    return individuals;
  }

  private lastFailureUpTo(limit: number): ProposalContext["lastFailure"] {
    const failures = this.entries.filter(
      (entry) =>
        entry.generation > 0 &&
        this.numberOf(entry) <= limit &&
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
      points.push({
        candidate: this.numberOf(entry),
        id: individual.id,
        seconds: entry.elapsedS,
        fitness,
      });
    }
    return points;
  }
}

/** The layout of an archive written in generations of several slots; null for any other. */
function generationalLayout(entries: readonly ArchiveEntry[]): Generational | null {
  const candidates = entries.filter((entry) => entry.generation > 0);
  if (!candidates.some((entry) => entry.slot > 0)) return null;
  const generation = Math.max(...candidates.map((entry) => entry.generation));
  const earlier = candidates.filter((entry) => entry.generation < generation);
  const numbers = new Map(earlier.map((entry, index) => [entry, index + 1]));
  return { generation, before: earlier.length, numbers };
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
