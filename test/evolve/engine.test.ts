// The engine with a fake proposer and evaluator: what each configuration shows a proposal,
// when each budget stops the run, resuming from an archive, and dedup.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { TaskError, UsageError } from "../../runner/src/errors.js";
import { fileArchive, memoryArchive, type Archive } from "../../runner/src/evolve/archive.js";
import { runEngine, type EngineOptions } from "../../runner/src/evolve/engine.js";
import { proposalTask } from "../../runner/src/evolve/task-context.js";
import type { EvoConfig } from "../../runner/src/evolve/types.js";
import { h100, taskInfo } from "../helpers/records.js";
import {
  BASELINE,
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

const summary = (population: { id: string; evaluation: { fitness: number | null } }[]) =>
  population.map((individual) => `${individual.id} ${individual.evaluation.fitness}`);

describe("the loop", () => {
  it("evaluates the baseline, then proposes in generations of --parallel", async () => {
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
    expect(archive.entries.map((entry) => entry.generation)).toEqual(
      expect.arrayContaining([0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3]),
    );
    expect(result.baseline.id).toBe("c0");
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
    expect(contexts[4]?.lastFailure).toEqual({
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
    expect(contexts[4]?.lastFailure).toEqual({
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

  it("wall time: stops at the first generation that begins after it is spent", async () => {
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
    // the baseline (100 s) and one generation of four (400 s) spend the 500 s
    expect(calls()).toBe(4);
    expect(result.stoppedBy).toBe("seconds");
    expect(result.spent.seconds).toBe(500);
  });

  it("money: stops once the proposals' cost reaches it", async () => {
    const { proposer, calls } = fakeProposer({ usd: 0.1 });
    const result = await runEngine(
      engineOptions({ proposer, parallel: 2, budget: { candidates: 100, seconds: 1e6, usd: 0.5 } }),
    );
    // 0.2, 0.4 (under), 0.6 (spent): three generations of two
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
    // a crash in the second generation: its other proposals still finish and are archived
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
    expect(lines).toHaveLength(1 + 4 + 3);

    const { proposer, calls } = fakeProposer();
    const { evaluator, evaluated } = fakeEvaluator();
    const resumed = await runEngine(
      engineOptions({ config: "full", budget, proposer, evaluator, archive: fileArchive(file) }),
    );
    expect(calls()).toBe(20 - 7);
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
    // the user presses Ctrl-C while the second generation's proposals are in flight
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
    expect(first.spent.candidates).toBe(4); // generation 1; none of generation 2 was evaluated
    expect(first.usage.usd).toBeCloseTo(8 * 0.25, 10); // all 8 proposals were paid for
    const lost = archive.entries.filter((line) => line.failure?.reason === "interrupted");
    expect(lost).toHaveLength(4);

    const { proposer, calls } = fakeProposer({ usd: 0.25 });
    const resumed = await runEngine(engineOptions({ budget, archive, proposer }));
    expect(calls()).toBe(12 - 4);
    expect(resumed.spent.candidates).toBe(12);
    expect(resumed.usage.usd).toBeCloseTo((8 + 8) * 0.25, 10);
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
    expect(calls()).toBe(8); // the generation that heard it ends, and no other begins
    expect(result.counts.proposalFailures).toBe(3);
  });
});
