// The engine with a fake proposer and evaluator: what each configuration shows a proposal,
// when each budget stops the run, resuming from an archive, and dedup.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { TaskError, UsageError } from "../../../runner/src/errors.js";
import {
  fileArchive,
  memoryArchive,
  type Archive,
  type ArchiveEntry,
} from "../../../runner/src/evolve/archive.js";
import {
  runEngine,
  type EngineEvent,
  type EngineOptions,
} from "../../../runner/src/evolve/engine.js";
import { createRng, deriveSeed } from "../../../runner/src/evolve/rng.js";
import { proposalTask } from "../../../runner/src/evolve/task-context.js";
import type {
  Evaluator,
  EvoConfig,
  ProposalContext,
  ProposalResult,
  Proposer,
  Race,
} from "../../../runner/src/evolve/types.js";
import { h100, taskInfo } from "../../helpers/records.js";
import {
  BASELINE,
  evaluationOf,
  fakeClock,
  fakeEvaluator,
  fakeProposer,
  proposalFor,
  task,
  usage,
} from "./fakes.js";

type Setup = Partial<EngineOptions> & { config?: EvoConfig };

function engineOptions(setup: Setup = {}): EngineOptions {
  return {
    task,
    config: "insight",
    seed: 7,
    proposer: fakeProposer().proposer,
    evaluator: fakeEvaluator().evaluator,
    archive: memoryArchive(),
    clock: fakeClock(),
    budget: { candidates: 12, seconds: 3600, usd: 100 },
    baseline: { source: BASELINE },
    language: "c",
    ...setup,
  };
}

const range = (count: number) => Array.from({ length: count }, (_, index) => index);

const summary = (population: { id: string; evaluation: { fitness: number | null } }[]) =>
  population.map((individual) => `${individual.id} ${individual.evaluation.fitness}`);

describe("the loop", () => {
  it("evaluates the baseline, then one proposal a number, each archived as its own generation", async () => {
    const { proposer, contexts } = fakeProposer();
    const { evaluator, evaluated } = fakeEvaluator();
    const archive = memoryArchive();
    const result = await runEngine(
      engineOptions({
        proposer,
        evaluator,
        archive,
        budget: { candidates: 10, seconds: 1e6, usd: 1e6 },
      }),
    );
    expect(evaluated[0]).toBe(BASELINE);
    expect(contexts).toHaveLength(10);
    // each proposal is told how many the candidate budget allows after it
    expect(contexts.map((context) => context.left).sort((a, b) => (b ?? 0) - (a ?? 0))).toEqual(
      range(10).map((k) => 9 - k),
    );
    expect(archive.entries.map((entry) => [entry.generation, entry.slot])).toEqual(
      Array.from({ length: 11 }, (_, number) => [number, 0]),
    );
    expect(result.baseline.id).toBe("c0");
    expect(result.population.length).toBeGreaterThan(0);
    expect(result.population.length).toBeLessThanOrEqual(5);
    expect(result.best).toBe(result.population[0]);
    // the population is the five fittest viable candidates, best first
    const fitness = result.population.map((individual) => individual.evaluation.fitness ?? 0);
    expect(fitness).toEqual([...fitness].sort((a, b) => b - a));
    // the best-so-far history only ever rises, and ends at the best
    const history = result.history.map((point) => point.fitness);
    expect(history).toEqual([...history].sort((a, b) => a - b));
    expect(result.history.at(-1)?.id).toBe(result.best.id);
    expect(result.history[0]).toMatchObject({ candidate: 0, id: "c0" });
  });

  it("tells a learning proposer of every candidate once, in proposal order", async () => {
    const archive = memoryArchive();
    const seen: string[] = [];
    const learning = () => {
      const { proposer } = fakeProposer();
      return {
        ...proposer,
        observe: (individual: { id: string }) => void seen.push(individual.id),
      };
    };
    const budget = { candidates: 6, seconds: 1e6, usd: 1e6 };
    await runEngine(engineOptions({ archive, proposer: learning(), budget }));
    expect(seen).toEqual(["c0", "c1", "c2", "c3", "c4", "c5", "c6"]);
    // a resumed run learns the archive first, then its own candidates
    seen.length = 0;
    await runEngine(
      engineOptions({ archive, proposer: learning(), budget: { ...budget, candidates: 8 } }),
    );
    expect(seen).toEqual(["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"]);
  });

  it("a kernel to beat that fails its own checks ends the run (exit 1)", async () => {
    const run = runEngine(engineOptions({ baseline: { source: "fail=verify" } }));
    await expect(run).rejects.toBeInstanceOf(TaskError);
  });

  it("the same seed and proposals give the same run; another seed another", async () => {
    const populationOf = async (seed: number) =>
      summary((await runEngine(engineOptions({ seed, config: "full" }))).population);
    expect(await populationOf(3)).toEqual(await populationOf(3));
    expect(await populationOf(3)).not.toEqual(await populationOf(4));
  });

  it("an unusable reply is recorded, counted, and shown to the next proposal", async () => {
    const { proposer, contexts } = fakeProposer({
      propose: (_context, call) =>
        call === 2
          ? {
              ok: false,
              reason: "no-code",
              message: "the reply had no code block",
              usage: usage(0.1),
            }
          : {
              ok: true,
              proposal: { name: "k", source: `k${call} speed=1.1`, defines: {}, insight: "" },
              usage: usage(0.1),
            },
    });
    const result = await runEngine(
      engineOptions({ proposer, budget: { candidates: 8, seconds: 1e6, usd: 1e6 } }),
    );
    expect(result.counts.proposalFailures).toBe(1);
    // proposal n sees proposals 1 … n-4: the failure of 2 is first shown to 6
    expect(contexts[4]?.lastFailure).toBeNull();
    expect(contexts[5]?.lastFailure).toEqual({
      source: "",
      reason: "no-code",
      message: "the reply had no code block",
    });
  });
});

describe("the three configurations", () => {
  async function contextsOf(config: EvoConfig) {
    const { proposer, contexts } = fakeProposer();
    await runEngine(
      engineOptions({ config, proposer, budget: { candidates: 24, seconds: 1e6, usd: 1e6 } }),
    );
    return contexts;
  }

  it("free: a new kernel from the current best, nothing else", async () => {
    const contexts = await contextsOf("free");
    for (const context of contexts) {
      expect(context.operator).toBe("new");
      expect(context.parents).toEqual([]);
      expect(context.insights).toEqual([]);
      expect(context.config).toBe("free");
    }
  });

  it("insight: a new kernel from the best, with up to three insights of the population", async () => {
    const contexts = await contextsOf("insight");
    for (const context of contexts) {
      expect(context.operator).toBe("new");
      expect(context.parents).toEqual([]);
      expect(context.insights.length).toBeLessThanOrEqual(3);
      for (const insight of context.insights) expect(insight).toMatch(/^insight of \d+$/);
    }
    // the baseline has no insight: the first generation sees none, later ones three
    expect(contexts[0]?.insights).toEqual([]);
    expect(contexts.at(-1)?.insights).toHaveLength(3);
  });

  it("full: mutation of one parent or crossover of two, chosen by rank", async () => {
    const contexts = await contextsOf("full");
    const operators = new Set(contexts.map((context) => context.operator));
    expect(operators).toEqual(new Set(["mutation", "crossover"]));
    for (const context of contexts) {
      const [a, b] = context.parents;
      if (context.operator === "mutation") expect(context.parents).toHaveLength(1);
      else {
        expect(context.parents).toHaveLength(2);
        expect(a?.id).not.toBe(b?.id);
      }
      expect(context.insights.length).toBeLessThanOrEqual(3);
    }
    // the first generation has the baseline alone: mutation only
    expect(contexts.slice(0, 4).map((context) => context.operator)).toEqual(
      Array(4).fill("mutation"),
    );
  });

  it("never shows a held-out configuration", async () => {
    const info = taskInfo();
    info.configs.push({
      name: "tall-12289x999",
      heldout: true,
      derived: false,
      dims: { M: 12289, N: 999 },
      init: "normal",
      inputs: [{ name: "x", shape: [12289, 999], dtype: "float32" }],
    });
    const shown = proposalTask(info, "def forward(x): ...", "evk", h100);
    expect(shown.visibleConfigs.map((config) => config.name)).toEqual(["odd"]);
    expect(shown).toMatchObject({ gpu: h100.name, cuda: h100.cuda, format: "evk" });

    const { proposer, contexts } = fakeProposer();
    await runEngine(engineOptions({ task: shown, proposer, config: "full" }));
    expect(JSON.stringify(contexts)).not.toContain("tall-12289x999");
  });

  it("shows the last failed child, so the next proposal can fix it", async () => {
    const { proposer, contexts } = fakeProposer({
      propose: (_context, call) => ({
        ok: true,
        proposal: {
          name: "k",
          source: call === 3 ? "k3 fail=compile" : `k${call} speed=1.${call}`,
          defines: {},
          insight: "",
        },
        usage: usage(),
      }),
    });
    await runEngine(engineOptions({ proposer, budget: { candidates: 8, seconds: 1e6, usd: 1e6 } }));
    expect(contexts[0]?.lastFailure).toBeNull();
    expect(contexts[5]?.lastFailure).toBeNull(); // proposal 6 sees 1 and 2 only
    expect(contexts[6]?.lastFailure).toEqual({
      source: "k3 fail=compile",
      reason: "compile-error",
      message: "failed at compile",
    });
  });
});

describe("budgets", () => {
  it("candidates: exactly N proposals", async () => {
    const { proposer, calls } = fakeProposer();
    const result = await runEngine(
      engineOptions({ proposer, budget: { candidates: 10, seconds: 1e6, usd: 1e6 } }),
    );
    expect(calls()).toBe(10);
    expect(result.stoppedBy).toBe("candidates");
    expect(result.spent.candidates).toBe(10);
  });

  it("wall time: no proposal begins once it is spent", async () => {
    const clock = fakeClock();
    const { proposer, calls } = fakeProposer();
    const { evaluator } = fakeEvaluator(clock, 100);
    const result = await runEngine(
      engineOptions({
        proposer,
        evaluator,
        clock,
        budget: { candidates: 100, seconds: 500, usd: 1e6 },
      }),
    );
    // the baseline (100 s) and the four proposals in flight before any finished (400 s)
    expect(calls()).toBe(4);
    expect(result.stoppedBy).toBe("seconds");
    expect(result.spent.seconds).toBe(500);
  });

  it("money: stops once the proposals' cost reaches it", async () => {
    const { proposer, calls } = fakeProposer({ usd: 0.1 });
    const result = await runEngine(
      engineOptions({ proposer, parallel: 2, budget: { candidates: 100, seconds: 1e6, usd: 0.5 } }),
    );
    // proposal n begins while 1 … n-2 cost under 0.5: the sixth (0.4) does, the seventh
    // (0.5) does not
    expect(calls()).toBe(6);
    expect(result.stoppedBy).toBe("usd");
    expect(result.usage.usd).toBeCloseTo(0.6);
    expect(result.usage.inputTokens).toBe(600);
  });
});

describe("resume", () => {
  let dir: string | undefined;
  afterEach(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it("an interrupted run resumed from its archive ends where the uninterrupted run ends", async () => {
    const budget = { candidates: 20, seconds: 1e6, usd: 1e6 };
    const whole = await runEngine(engineOptions({ config: "full", budget }));

    dir = await mkdtemp(join(tmpdir(), "evokernel-archive-"));
    const file = join(dir, "archive.jsonl");
    // proposal 7 crashes: 8, 9 and 10 (which need only 1 … 6) still run and are archived;
    // 11 needs 7 and does not begin
    const crashing = fakeProposer({ crashOn: 7 });
    const first = runEngine(
      engineOptions({
        config: "full",
        budget,
        proposer: crashing.proposer,
        archive: fileArchive(file),
      }),
    );
    await expect(first).rejects.toThrow("the proposer crashed");
    const lines = (await readFile(file, "utf8")).trim().split("\n");
    expect(lines).toHaveLength(1 + 6 + 3);
    expect(lines.map((line) => (JSON.parse(line) as { generation: number }).generation)).toEqual([
      0, 1, 2, 3, 4, 5, 6, 8, 9, 10,
    ]);

    const { proposer, calls } = fakeProposer();
    const { evaluator, evaluated } = fakeEvaluator();
    const resumed = await runEngine(
      engineOptions({ config: "full", budget, proposer, evaluator, archive: fileArchive(file) }),
    );
    expect(calls()).toBe(20 - 9);
    expect(evaluated).not.toContain(BASELINE);
    expect(summary(resumed.population)).toEqual(summary(whole.population));
    expect(resumed.spent.candidates).toBe(20);
    expect(resumed.history).toEqual(whole.history);
    expect(resumed.entries.map((entry) => entry.individual?.hash)).toEqual(
      whole.entries.map((entry) => entry.individual?.hash),
    );
  });

  it("an interrupt: proposals in flight are not evaluated, their cost counts, and a resumed run asks again", async () => {
    const budget = { candidates: 12, seconds: 1e6, usd: 1e6 };
    const whole = await runEngine(engineOptions({ budget }));

    const archive = memoryArchive();
    const controller = new AbortController();
    // the user presses Ctrl-C while the sixth proposal is asked for
    const interrupted = fakeProposer({
      usd: 0.25,
      propose: (context, call) => {
        if (call === 6) controller.abort();
        return { ok: true, proposal: proposalFor(context), usage: usage(0.25) };
      },
    });
    const first = await runEngine(
      engineOptions({ budget, archive, proposer: interrupted.proposer, signal: controller.signal }),
    );
    expect(first.stoppedBy).toBe("interrupted");
    // 1 … 5 were evaluated before it; the sixth, in flight, was not
    expect(first.spent.candidates).toBe(5);
    expect(interrupted.calls()).toBe(6);
    expect(first.usage.usd).toBeCloseTo(6 * 0.25, 10); // all 6 proposals were paid for
    const lost = archive.entries.filter((line) => line.failure?.reason === "interrupted");
    expect(lost.map((line) => line.generation)).toEqual([6]);

    const { proposer, calls } = fakeProposer({ usd: 0.25 });
    const resumed = await runEngine(engineOptions({ budget, archive, proposer }));
    expect(calls()).toBe(12 - 5);
    expect(resumed.spent.candidates).toBe(12);
    expect(resumed.usage.usd).toBeCloseTo((6 + 7) * 0.25, 10);
    expect(summary(resumed.population)).toEqual(summary(whole.population));
  });

  it("continues counting the budget: time and money already spent count", async () => {
    const archive = memoryArchive();
    const clock = fakeClock();
    const { evaluator } = fakeEvaluator(clock, 100);
    const budget = { candidates: 100, seconds: 500, usd: 1e6 };
    await runEngine(engineOptions({ archive, clock, evaluator, budget }));
    const again = fakeProposer();
    const result = await runEngine(
      engineOptions({ archive, proposer: again.proposer, clock: fakeClock(), budget }),
    );
    expect(again.calls()).toBe(0);
    expect(result.stoppedBy).toBe("seconds");
    expect(result.spent.candidates).toBe(4);
  });

  it("refuses an archive written with another seed or configuration", async () => {
    const archive = memoryArchive();
    await runEngine(engineOptions({ archive, budget: { candidates: 2, seconds: 1e6, usd: 1e6 } }));
    await expect(runEngine(engineOptions({ archive, seed: 8 }))).rejects.toBeInstanceOf(UsageError);
    await expect(runEngine(engineOptions({ archive, config: "free" }))).rejects.toBeInstanceOf(
      UsageError,
    );
  });
});

describe("dedup", () => {
  const variants = [
    "__global__ void k() { y = x * 2; } // speed=1.3",
    "// same kernel\n__global__ void k()\n{\n  y = x*2;\n}  /* speed=1.3 */ // speed=1.3",
    "__global__  void  k() {y=x * 2;}\n\n// speed=1.3",
  ];

  function repeating() {
    return fakeProposer({
      propose: (_context, call) => ({
        ok: true,
        proposal: { name: "k", source: variants[call % 3] ?? "", defines: {}, insight: "" },
        usage: usage(),
      }),
    });
  }

  it("a proposal identical up to comments and blank space is not evaluated twice", async () => {
    const { proposer } = repeating();
    const { evaluator, evaluated } = fakeEvaluator();
    const archive: Archive & { entries: unknown[] } = memoryArchive();
    const result = await runEngine(
      engineOptions({
        proposer,
        evaluator,
        archive,
        budget: { candidates: 9, seconds: 1e6, usd: 1e6 },
      }),
    );
    // the baseline and one of the variants; the rest share that evaluation
    expect(evaluated).toHaveLength(2);
    expect(result.counts.evaluated).toBe(1);
    expect(result.counts.duplicates).toBe(8);
    expect(result.population.filter((individual) => individual.id !== "c0")).toHaveLength(1);
  });

  it("a proposal that is the baseline again is a duplicate of c0", async () => {
    const { proposer } = fakeProposer({
      propose: () => ({
        ok: true,
        proposal: { name: "k", source: `// unchanged\n${BASELINE}`, defines: {}, insight: "" },
        usage: usage(),
      }),
    });
    const archive = memoryArchive();
    const { evaluator, evaluated } = fakeEvaluator();
    await runEngine(
      engineOptions({
        proposer,
        evaluator,
        archive,
        budget: { candidates: 2, seconds: 1e6, usd: 1e6 },
      }),
    );
    expect(evaluated).toEqual([BASELINE]);
    expect(archive.entries.slice(1).map((entry) => entry.duplicateOf)).toEqual(["c0", "c0"]);
  });

  it("the same source under other defines is another candidate", async () => {
    const { proposer } = fakeProposer({
      propose: (_context, call) => ({
        ok: true,
        proposal: {
          name: "k",
          source: BASELINE,
          defines: { BLOCK: String(64 * call) },
          insight: "",
        },
        usage: usage(),
      }),
    });
    const { evaluator, evaluated } = fakeEvaluator();
    const result = await runEngine(
      engineOptions({ proposer, evaluator, budget: { candidates: 4, seconds: 1e6, usd: 1e6 } }),
    );
    expect(evaluated).toHaveLength(5);
    expect(result.counts.duplicates).toBe(0);
  });

  it("the same source under other nvcc flags is another candidate, evaluated with them", async () => {
    const flagSets = [
      [],
      ["-maxrregcount=64"],
      ["-maxrregcount=64"],
      ["-extra-device-vectorization"],
    ];
    const { proposer } = fakeProposer({
      propose: (_context, call) => ({
        ok: true,
        proposal: {
          name: "k",
          source: BASELINE,
          defines: {},
          flags: flagSets[call - 1] ?? [],
          insight: "",
        },
        usage: usage(),
      }),
    });
    const seen: (readonly string[])[] = [];
    const { evaluator } = fakeEvaluator();
    const result = await runEngine(
      engineOptions({
        proposer,
        evaluator: {
          evaluate: (variant, signal) => {
            seen.push(variant.flags);
            return evaluator.evaluate(variant, signal);
          },
        },
        budget: { candidates: 4, seconds: 1e6, usd: 1e6 },
        parallel: 1,
      }),
    );
    expect(seen).toEqual([[], ["-maxrregcount=64"], ["-extra-device-vectorization"]]);
    expect(result.counts.duplicates).toBe(2); // the baseline again, and the repeated flag
    const flagged = result.entries.find((entry) => entry.individual?.flags.length === 1);
    expect(flagged?.individual?.flags).toEqual(["-maxrregcount=64"]);
  });

  it("stops when the proposer has nothing more to try", async () => {
    const { proposer, calls } = fakeProposer({
      propose: (context, call) =>
        call <= 5
          ? { ok: true, proposal: proposalFor(context), usage: usage() }
          : {
              ok: false,
              reason: "search-exhausted",
              message: "every combination was tried",
              usage: usage(),
              final: true,
            },
    });
    const result = await runEngine(
      engineOptions({ proposer, budget: { candidates: 40, seconds: 1e6, usd: 1e6 }, parallel: 4 }),
    );
    expect(result.stoppedBy).toBe("proposer");
    // the sixth says so; 7, 8 and 9 (which need only 1 … 5) are still asked, 10 is not
    expect(calls()).toBe(9);
    expect(result.counts.proposalFailures).toBe(4);
  });
});

describe("the pipeline: proposal n begins once 1 … n−P have finished", () => {
  const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
  /** Lets every promise that can settle settle. */
  const flush = () => sleep(0);

  /** Evaluations that take a random time (another one each run), or a fixed one. */
  function timedEvaluator(delay: () => number): Evaluator {
    return {
      async evaluate({ source }) {
        await sleep(delay());
        return evaluationOf(source);
      },
    };
  }

  /**
   * A learning proposer whose proposals also follow from what it has been told (as the
   * tuner's do), with replies that take a random time or a fixed one.
   */
  function learningProposer(delay: () => number) {
    const told: string[] = [];
    const contexts: ProposalContext[] = [];
    const proposer: Proposer = {
      name: "learning",
      async propose(context) {
        contexts.push(context);
        const heard = told.length;
        await sleep(delay());
        const proposal = proposalFor(context);
        const source = `${proposal.source}// heard ${heard}\n`;
        return { ok: true, proposal: { ...proposal, source }, usage: usage(0.01) };
      },
      observe: (individual) => void told.push(individual.id),
    };
    return { proposer, told, contexts };
  }

  /** An entry without what the clock wrote on it. */
  const timeless = ({ elapsedS: _elapsed, at: _at, ...rest }: ArchiveEntry) => rest;

  async function run(delay: () => number, setup: Setup = {}) {
    const archive = memoryArchive();
    const { proposer, told, contexts } = learningProposer(delay);
    const result = await runEngine(
      engineOptions({
        config: "full",
        seed: 11,
        proposer,
        evaluator: timedEvaluator(delay),
        archive,
        parallel: 4,
        budget: { candidates: 24, seconds: 1e6, usd: 1e6 },
        ...setup,
      }),
    );
    return { result, lines: archive.entries.map(timeless), told, contexts };
  }

  it("the same seed gives the same archive however long each evaluation takes", async () => {
    const random = () => Math.floor(Math.random() * 6);
    const a = await run(random);
    const b = await run(random);
    const even = await run(() => 1);
    expect(a.lines).toHaveLength(25);
    // sources, contexts, parents, duplicates, and the order of the lines
    expect(a.lines).toEqual(even.lines);
    expect(b.lines).toEqual(even.lines);
    expect(a.contexts).toEqual(even.contexts);
    expect(b.contexts).toEqual(even.contexts);
    expect(a.told).toEqual(even.told);
    expect(summary(a.result.population)).toEqual(summary(even.result.population));
    expect(a.result.history.map((point) => point.id)).toEqual(
      even.result.history.map((point) => point.id),
    );
    // the proposer was told of exactly 1 … n−4 (and the baseline) before proposal n
    const heard = even.lines
      .slice(1)
      .map((line) => /heard (\d+)/.exec(line.individual?.source ?? "")?.[1]);
    expect(heard).toEqual(range(24).map((index) => String(Math.max(1, index + 1 - 4 + 1))));
  });

  /**
   * Evaluations the test finishes by hand (by proposal number), and a log of the proposals
   * that began, the generation events and the entries recorded.
   */
  function handEvaluator(
    proposalOf: (context: ProposalContext, call: number) => { source: string } = (_c, call) => ({
      source: `p${call} speed=1.${call}`,
    }),
  ) {
    const log: string[] = [];
    const numbers = new Map<string, number>();
    const finish = new Map<number, () => void>();
    const evaluator: Evaluator = {
      evaluate({ source }) {
        const number = numbers.get(source);
        if (number === undefined) return Promise.resolve(evaluationOf(source));
        return new Promise((resolve) => {
          finish.set(number, () => resolve(evaluationOf(source)));
        });
      },
    };
    const { proposer, contexts } = fakeProposer({
      propose: (context, call): ProposalResult => {
        log.push(`begin ${call}`);
        const proposal = { name: "k", defines: {}, insight: "", ...proposalOf(context, call) };
        numbers.set(proposal.source, call);
        return { ok: true, proposal, usage: usage(0.25) };
      },
    });
    const onEvent = (event: EngineEvent) => {
      if (event.type === "candidate" && event.number > 0) log.push(`record ${event.number}`);
      if (event.type === "generation") log.push(`generation ${event.generation}: ${event.slots}`);
    };
    const taken = () => log.splice(0);
    async function end(number: number) {
      finish.get(number)?.();
      await flush();
      return taken();
    }
    return { evaluator, proposer, contexts, onEvent, end, taken };
  }

  it("a proposal begins when the one P before it finishes, not when its batch does", async () => {
    const hand = handEvaluator();
    const run = runEngine(
      engineOptions({
        ...hand,
        parallel: 4,
        budget: { candidates: 10, seconds: 1e6, usd: 1e6 },
      }),
    );
    await flush();
    expect(hand.taken()).toEqual(["generation 1: 4", "begin 1", "begin 2", "begin 3", "begin 4"]);
    // 5 needs 1 alone: it begins while 2, 3 and 4 are still being evaluated
    expect(await hand.end(1)).toEqual(["record 1", "generation 2: 4", "begin 5"]);
    expect(await hand.end(2)).toEqual(["record 2", "begin 6"]);
    // 5 finishing early is recorded after 3 and 4, and lets nothing begin: 7 needs 3
    expect(await hand.end(5)).toEqual([]);
    expect(await hand.end(3)).toEqual(["record 3", "begin 7"]);
    expect(await hand.end(4)).toEqual([
      "record 4",
      "record 5",
      "begin 8",
      "generation 3: 2",
      "begin 9",
    ]);
    expect(await hand.end(6)).toEqual(["record 6", "begin 10"]);
    for (const number of [7, 8, 9, 10]) {
      expect(await hand.end(number)).toEqual([`record ${number}`]);
    }
    const result = await run;
    expect(result.spent.candidates).toBe(10);
    // each context holds 1 … n−4 only (the best: the last of them), though 5, the fittest
    // yet, had finished when 7 and 8 began
    expect(hand.contexts.map((context) => context.best.id)).toEqual([
      "c0",
      "c0",
      "c0",
      "c0",
      "c1",
      "c2",
      "c3",
      "c4",
      "c5",
      "c6",
    ]);
  });

  it("a slow first proposal holds back only what the lag says: 5 … 8 need it", async () => {
    const hand = handEvaluator();
    const run = runEngine(
      engineOptions({ ...hand, parallel: 4, budget: { candidates: 8, seconds: 1e6, usd: 1e6 } }),
    );
    await flush();
    hand.taken();
    expect(await hand.end(2)).toEqual([]);
    expect(await hand.end(3)).toEqual([]);
    expect(await hand.end(4)).toEqual([]);
    const log = await hand.end(1);
    expect([...log].sort()).toEqual(
      ["record 1", "record 2", "record 3", "record 4", "generation 2: 4"]
        .concat(["begin 5", "begin 6", "begin 7", "begin 8"])
        .sort(),
    );
    // each begins once the one four before it is recorded
    for (const number of [5, 6, 7, 8]) {
      expect(log.indexOf(`begin ${number}`)).toBeGreaterThan(log.indexOf(`record ${number - 4}`));
    }
    for (const number of [5, 6, 7, 8]) await hand.end(number);
    expect((await run).spent.candidates).toBe(8);
  });

  it("an interrupt with proposals in flight, resumed, ends with the uninterrupted run's archive", async () => {
    const budget = { candidates: 14, seconds: 1e6, usd: 1e6 };
    const whole = memoryArchive();
    const wholeRun = fakeProposer({ usd: 0.25 });
    await runEngine(
      engineOptions({ config: "full", budget, archive: whole, proposer: wholeRun.proposer }),
    );

    const hand = handEvaluator(proposalFor);
    const controller = new AbortController();
    const archive = memoryArchive();
    const first = runEngine(
      engineOptions({
        config: "full",
        budget,
        archive,
        proposer: hand.proposer,
        evaluator: hand.evaluator,
        signal: controller.signal,
      }),
    );
    await flush();
    for (const number of [1, 2, 4, 6]) await hand.end(number);
    // 1, 2 are recorded; 4 and 6 are evaluated but wait on 3 to be recorded; 3 and 5 are
    // being evaluated when Ctrl-C comes, and so are lost
    controller.abort();
    for (const number of [3, 5]) await hand.end(number);
    const stopped = await first;
    expect(stopped.stoppedBy).toBe("interrupted");
    expect(hand.contexts).toHaveLength(6);
    const kept = archive.entries.filter((line) => line.failure === null).map((l) => l.generation);
    expect(kept).toEqual([0, 1, 2, 4, 6]);

    // the resumed run asks for 3 and 5 again with the contexts they had, then goes on
    const again = fakeProposer({ usd: 0.25 });
    const resumed = await runEngine(
      engineOptions({ config: "full", budget, archive, proposer: again.proposer }),
    );
    expect(again.calls()).toBe(14 - 4);
    expect(resumed.spent.candidates).toBe(14);
    expect(again.contexts.slice(0, 2)).toEqual([wholeRun.contexts[2], wholeRun.contexts[4]]);
    const timelessOf = (entries: ArchiveEntry[]) =>
      entries
        .filter((line) => line.failure?.reason !== "interrupted")
        .map(timeless)
        .sort((a, b) => a.generation - b.generation);
    expect(timelessOf(archive.entries)).toEqual(timelessOf(whole.entries));
  });

  it("with --parallel 1 it is the sequential loop: each proposal sees every one before it", async () => {
    const log: string[] = [];
    const fake = fakeProposer();
    const proposer: Proposer = {
      name: "fake",
      propose: (context, signal) => {
        log.push(`propose ${fake.calls() + 1}`);
        return fake.proposer.propose(context, signal);
      },
      observe: (individual) => void log.push(`observe ${individual.id}`),
    };
    const { evaluator: plain } = fakeEvaluator();
    const evaluator: Evaluator = {
      evaluate: (variant, signal) => {
        log.push("evaluate");
        return plain.evaluate(variant, signal);
      },
    };
    const events: string[] = [];
    const archive = memoryArchive();
    await runEngine(
      engineOptions({
        config: "free",
        proposer,
        evaluator,
        archive,
        parallel: 1,
        budget: { candidates: 6, seconds: 1e6, usd: 1e6 },
        onEvent: (event) => {
          if (event.type === "generation") events.push(`${event.generation}: ${event.slots}`);
        },
      }),
    );
    // one at a time: each proposed, evaluated and learnt from before the next is asked
    expect(log).toEqual([
      "evaluate",
      "observe c0",
      ...range(6).flatMap((index) => [`propose ${index + 1}`, "evaluate", `observe c${index + 1}`]),
    ]);
    expect(events).toEqual(range(6).map((index) => `${index + 1}: 1`));
    expect(archive.entries.map((entry) => [entry.generation, entry.slot])).toEqual(
      range(7).map((number) => [number, 0]),
    );
    // the PRNG stream of generation n, slot 0, as the generational loop drew it
    expect(fake.contexts.map((context) => context.seed)).toEqual(
      range(6).map((index) => createRng(deriveSeed(7, index + 1, 0)).seed()),
    );
    // the best shown to proposal n is the fittest of everything before it
    fake.contexts.forEach((context, index) => {
      const before = archive.entries
        .slice(0, index + 1)
        .filter((entry) => entry.individual?.evaluation.ok === true);
      const fittest = Math.max(...before.map((entry) => entry.individual?.evaluation.fitness ?? 0));
      expect(context.best.evaluation.fitness).toBe(fittest);
    });
  });

  it("an archive written in generations of several slots resumes in its last generation", async () => {
    const archive = memoryArchive();
    const budget = { candidates: 6, seconds: 1e6, usd: 1e6 };
    await runEngine(engineOptions({ archive, budget }));
    // as the generational loop wrote it: 1 … 4 in generation 1, 5 and 6 in slots 0 and 1 of
    // generation 2 (its slots 2 and 3 were never recorded)
    for (const [index, entry] of archive.entries.entries()) {
      if (index === 0) continue;
      entry.generation = index <= 4 ? 1 : 2;
      entry.slot = index <= 4 ? index - 1 : index - 5;
    }
    const { proposer, calls } = fakeProposer();
    const { evaluator, evaluated } = fakeEvaluator();
    const resumed = await runEngine(
      engineOptions({ archive, proposer, evaluator, budget: { ...budget, candidates: 9 } }),
    );
    expect(calls()).toBe(3);
    expect(evaluated).not.toContain(BASELINE);
    const keys = (entries: ArchiveEntry[]) =>
      entries.map((entry) => `${entry.generation}.${entry.slot} ${entry.individual?.id}`);
    expect(keys(archive.entries.slice(7))).toEqual(["2.2 c7", "2.3 c8", "2.4 c9"]);
    expect(resumed.spent.candidates).toBe(9);
    for (const point of resumed.history) expect(point.id).toBe(`c${point.candidate}`);
    // and it goes on there when resumed again
    const again = await runEngine(
      engineOptions({
        archive,
        proposer: fakeProposer().proposer,
        budget: { ...budget, candidates: 10 },
      }),
    );
    expect(keys(archive.entries.slice(10))).toEqual(["2.5 c10"]);
    expect(again.spent.candidates).toBe(10);
  });
});

describe("racing (issue 20)", () => {
  /**
   * An evaluator that races as the harness does on its one configuration (timed, so no
   * ceiling counts): slower than the leader's bound → raced.
   */
  function racingEvaluator() {
    const races: (Race | undefined)[] = [];
    const evaluator: Evaluator = {
      async evaluate({ source }, _signal, race) {
        races.push(race);
        await Promise.resolve();
        const evaluation = evaluationOf(source);
        const [timing] = evaluation.timings;
        if (race === undefined || timing === undefined || !evaluation.ok) return evaluation;
        const upper = timing.baselineP80Ms / timing.p20Ms;
        const bound = race.leader[timing.config];
        if (bound === undefined || upper >= bound) return evaluation;
        return {
          ...evaluation,
          stage: "time",
          reason: "raced",
          fitness: null,
          raced: {
            config: timing.config,
            timed: [timing.config],
            speedupUpper: upper,
            leaderLower: bound,
          },
        };
      },
    };
    return { evaluator, races };
  }

  it("races each candidate against its context's best; the raced ones pass but never survive", async () => {
    const { evaluator, races } = racingEvaluator();
    const { proposer, contexts } = fakeProposer();
    const result = await runEngine(engineOptions({ evaluator, proposer, parallel: 1 }));
    expect(races[0]).toBeUndefined(); // the kernel to beat is timed in full
    contexts.forEach((context, i) => {
      const [timing] = context.best.evaluation.timings;
      expect(races[i + 1], `proposal ${i + 1}`).toEqual(
        timing === undefined
          ? undefined
          : {
              leader: { [timing.config]: timing.baselineP20Ms / timing.p80Ms },
              // the kernel to beat's p80 over the floor: 1.01 / 0.25
              ceilings: { [timing.config]: 4.04 },
            },
      );
    });
    const raced = result.entries.filter(
      (entry) => entry.individual?.evaluation.raced !== undefined,
    );
    expect(raced.length).toBeGreaterThan(0);
    for (const entry of raced) {
      expect(entry.individual?.evaluation).toMatchObject({
        ok: true,
        fitness: null,
        reason: "raced",
      });
    }
    const ids = new Set(raced.map((entry) => entry.individual?.id));
    expect(result.population.some((individual) => ids.has(individual.id))).toBe(false);
    expect(result.counts.passed).toBeGreaterThanOrEqual(raced.length);
    expect(result.counts.failedAt["time"]).toBeUndefined();
  });

  it("gives each evaluation its proposal number as its place in the GPU queue", async () => {
    const orders: (number | undefined)[] = [];
    const evaluator: Evaluator = {
      async evaluate({ source }, _signal, _race, order) {
        orders.push(order);
        await Promise.resolve();
        return evaluationOf(source);
      },
    };
    const result = await runEngine(
      engineOptions({ evaluator, proposer: fakeProposer().proposer, parallel: 1 }),
    );
    const numbers = result.entries
      .filter((entry) => entry.generation > 0 && entry.duplicateOf === null && entry.individual)
      .map((entry) => Number(entry.individual?.id.slice(1)));
    expect(orders[0]).toBeUndefined(); // the baseline, before any proposal
    expect(orders.slice(1)).toEqual(numbers);
  });

  it("does not race for a proposer that judges configurations apart, nor when turned off", async () => {
    for (const setup of [{ racing: false }, { engineRace: false }]) {
      const { evaluator, races } = racingEvaluator();
      const { proposer } = fakeProposer();
      if ("racing" in setup) proposer.racing = false;
      await runEngine(
        engineOptions({
          evaluator,
          proposer,
          parallel: 1,
          ...("engineRace" in setup ? { race: false } : {}),
        }),
      );
      expect(races.every((race) => race === undefined)).toBe(true);
    }
  });
});
